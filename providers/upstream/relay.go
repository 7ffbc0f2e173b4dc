//lint:file-ignore SA1019 sampling and logging, deprecated from protocol 2026-07-28 (SEP-2577), stay supported for upstream servers on earlier versions: the host relays them to its clients.

package upstream

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/openhuman/openhuman-host/sdk"
)

const (
	// notifyDelay coalesces bursts of list_changed and resources/updated
	// notifications: at most one host notification per kind (per URI for
	// updates) is pending, sent notifyDelay after the first of the burst.
	notifyDelay = 100 * time.Millisecond
	// notifyTimeout bounds one notification to the host.
	notifyTimeout = 10 * time.Second
	// progressPrefix starts the progress tokens the provider sends
	// upstream; a counter makes each unique.
	progressPrefix = "upstream-"
)

// relay connects the client handlers of one upstream session to the host:
// server requests (sampling, elicitation) go to the client of the call in
// flight or of the session's owner, notifications (progress, logging) to
// the call they belong to, list and resource changes to the host.
type relay struct {
	p   *Provider
	srv *server
	// owner is the caller whose host session the upstream session serves;
	// nil for the shared session (the catalog while no client has a
	// session with the server, command-line calls).
	owner *sdk.Caller
	// relaysElicitation is set once, before the session opens, when its
	// elicitation requests go to the client.
	relaysElicitation bool

	mu      sync.Mutex
	calls   []*inflight          // calls in flight, oldest first
	byToken map[string]*inflight // calls asking for progress, by upstream token
	// toolsGen counts tools/list_changed notifications; listedGen is the
	// count when the tools were last listed on the session, whose tools
	// cache the go-sdk client reads for x-mcp-header.
	toolsGen, listedGen uint64
}

// inflight is one call forwarded on a session.
type inflight struct {
	ctx   context.Context
	req   *sdk.CallToolRequest
	token any    // upstream progress token (string or int64); nil when the client asked for none
	key   string // token as JSON, the key in relay.byToken
	last  float64
	seen  bool // a progress report was relayed
	// handlers counts notification handlers relaying to this call, so
	// that none relays after the call returned.
	handlers sync.WaitGroup
}

func newRelay(p *Provider, s *server, owner *sdk.Caller) *relay {
	return &relay{p: p, srv: s, owner: owner, byToken: map[string]*inflight{}, toolsGen: 1}
}

// multiRoundTripVersion is the first protocol version whose clients are
// asked for input through results of the call (SEP-2322).
const multiRoundTripVersion = "2026-07-28"

// clientOptions are the go-sdk client options of a session relayed by r;
// nil r (upstream check) gets no handlers but declares sampling and
// elicitation. No roots are advertised;
// sampling and elicitation only when the host can relay them and, for a
// client's own session, only when that client declared them (elicitation
// with the modes it declared), so the server sees what the client can do.
func clientOptions(r *relay) *mcp.ClientOptions {
	opts := &mcp.ClientOptions{Capabilities: &mcp.ClientCapabilities{}}
	if r != nil && r.owner != nil && r.owner.ProtocolVersion >= multiRoundTripVersion {
		// The client answers the server's input requests itself: its
		// session passes results that ask for input on (keys and
		// requestState as the server sent them) instead of answering
		// them here.
		opts.MultiRoundTrip = &mcp.MultiRoundTripOptions{Disabled: true}
	}
	if r == nil {
		// upstream check only lists: it declares what the host's shared
		// session declares, since some servers list tools that sample
		// or elicit only to clients that can.
		opts.Capabilities.Sampling = &mcp.SamplingCapabilities{}
		opts.Capabilities.Elicitation = &mcp.ElicitationCapabilities{Form: &mcp.FormElicitationCapabilities{}}
		return opts
	}
	if r.p.hostService() != nil {
		declared := r.ownerCapabilities()
		if declared == nil || declared.Sampling != nil {
			opts.CreateMessageHandler = r.createMessage
		}
		if declared == nil || declared.Elicitation != nil {
			opts.ElicitationHandler = r.elicit
			r.relaysElicitation = true
			if declared != nil {
				opts.Capabilities.Elicitation = declared.Elicitation
			}
		}
	}
	opts.ProgressNotificationHandler = r.progress
	opts.LoggingMessageHandler = r.logMessage
	opts.ToolListChangedHandler = func(context.Context, *mcp.ToolListChangedRequest) {
		r.mu.Lock()
		r.toolsGen++
		r.mu.Unlock()
		r.p.catalogChanged(r.srv)
	}
	opts.PromptListChangedHandler = func(context.Context, *mcp.PromptListChangedRequest) { r.p.catalogChanged(r.srv) }
	opts.ResourceListChangedHandler = func(context.Context, *mcp.ResourceListChangedRequest) { r.p.catalogChanged(r.srv) }
	opts.ResourceUpdatedHandler = func(_ context.Context, req *mcp.ResourceUpdatedNotificationRequest) {
		if req.Params != nil && req.Params.URI != "" {
			r.p.resourceUpdated(r.srv, req.Params.URI)
		}
	}
	return opts
}

// begin registers a call about to be forwarded; end must follow. When
// the client asked for progress, a client's own session forwards the
// client's token unchanged (the client keeps its tokens unique among its
// requests in flight, and the session is that client's alone), so the
// server sees what it would see directly; the shared session, and a token
// already in flight, get a token of the provider's own, so that
// concurrent calls are still told apart.
func (r *relay) begin(ctx context.Context, req *sdk.CallToolRequest) *inflight {
	call := &inflight{ctx: ctx, req: req}
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(req.Caller.ProgressToken) > 0 {
		if tok, key, ok := clientToken(req.Caller.ProgressToken); ok && r.owner != nil && r.byToken[key] == nil {
			call.token, call.key = tok, key
		} else {
			own := fmt.Sprintf("%s%d", progressPrefix, r.p.tokens.Add(1))
			key, _ := json.Marshal(own)
			call.token, call.key = own, string(key)
		}
		r.byToken[call.key] = call
	}
	r.calls = append(r.calls, call)
	return call
}

// clientToken decodes a progress token the client sent (JSON): a string,
// or an integer that fits int64, as the go-sdk takes them; key is its
// canonical JSON. ok is false for anything else.
func clientToken(raw json.RawMessage) (tok any, key string, ok bool) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if dec.Decode(&v) != nil {
		return nil, "", false
	}
	switch v := v.(type) {
	case string:
		tok = v
	case json.Number:
		n, err := v.Int64()
		if err != nil {
			return nil, "", false
		}
		tok = n
	default:
		return nil, "", false
	}
	b, err := json.Marshal(tok)
	if err != nil {
		return nil, "", false
	}
	return tok, string(b), true
}

// end unregisters call and waits for the handlers relaying to it.
func (r *relay) end(call *inflight) {
	r.mu.Lock()
	r.calls = slices.DeleteFunc(r.calls, func(c *inflight) bool { return c == call })
	if call.key != "" {
		delete(r.byToken, call.key)
	}
	r.mu.Unlock()
	call.handlers.Wait()
}

// latest returns the most recent call in flight, registered as relaying
// (call handlers.Done when finished); nil when none is.
func (r *relay) latest() *inflight {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.calls) == 0 {
		return nil
	}
	call := r.calls[len(r.calls)-1]
	call.handlers.Add(1)
	return call
}

// needsToolList reports whether c's tools must be listed before a call so
// that the go-sdk client mirrors x-mcp-header arguments as headers: only
// HTTP sessions of protocol 2026-07-28 and later send them, reading the
// tool from the session's tools cache, which a tools/list_changed empties.
func (c *conn) needsToolList() bool {
	if c.relay == nil || c.srv.endpoint == nil || !newProtocol(c) {
		return false
	}
	c.relay.mu.Lock()
	defer c.relay.mu.Unlock()
	return c.relay.listedGen != c.relay.toolsGen
}

// listing returns the tools generation before a listing starts; listed
// records it once the listing succeeded.
func (r *relay) listing() uint64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.toolsGen
}

func (r *relay) listed(gen uint64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.listedGen = gen
}

// callerKey carries the caller a request to the upstream is made for, so
// that server requests made in answer to it (multi round-trip requests of
// protocol 2026-07-28, whose handlers get the request's context) reach
// that caller's client.
type callerKey struct{}

func withCaller(ctx context.Context, c sdk.Caller) context.Context {
	return context.WithValue(ctx, callerKey{}, c)
}

// clientCaller is the caller whose client a server request goes to: the
// caller of the request it answers (see callerKey), else of the most
// recent call in flight on the session, else the session's owner.
func (r *relay) clientCaller(ctx context.Context) (sdk.Caller, bool) {
	if c, ok := ctx.Value(callerKey{}).(sdk.Caller); ok {
		return c, true
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if n := len(r.calls); n > 0 {
		return r.calls[n-1].req.Caller, true
	}
	if r.owner != nil {
		return *r.owner, true
	}
	return sdk.Caller{}, false
}

// createMessage relays sampling/createMessage to the client.
func (r *relay) createMessage(ctx context.Context, req *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
	var out mcp.CreateMessageResult
	if err := r.requestClient(ctx, sdk.MethodCreateMessage, req.Params, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// elicit relays elicitation/create to the client.
func (r *relay) elicit(ctx context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
	var out mcp.ElicitResult
	if err := r.requestClient(ctx, sdk.MethodElicit, req.Params, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// ownerCapabilities returns what the client owning r's session declared,
// nil for the shared session or when the host did not say.
func (r *relay) ownerCapabilities() *mcp.ClientCapabilities {
	if r.owner == nil || len(r.owner.ClientCapabilities) == 0 {
		return nil
	}
	var caps mcp.ClientCapabilities
	if err := json.Unmarshal(r.owner.ClientCapabilities, &caps); err != nil {
		r.p.log.Debug("client capabilities not readable; relaying all", "error", err)
		return nil
	}
	return &caps
}

// passThroughElicitation answers elicitation/create before the go-sdk
// client checks the requested schema against its own reading of the spec:
// the client at the end of the relay is the one to judge the form (the
// go-sdk refuses a titled multi-select whose items carry "type": "string"
// next to their anyOf, which the TypeScript SDK and the go-sdk server
// accept), so the request reaches it as the upstream sent it.
func (r *relay) passThroughElicitation(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		if er, ok := req.(*mcp.ElicitRequest); ok && method == "elicitation/create" && er.Params != nil && r.relaysElicitation {
			return r.elicit(ctx, er)
		}
		return next(ctx, method, req)
	}
}

// requestClient sends method with params to the client through the host
// and decodes its result into out. A JSON-RPC error of the client comes
// back as the same *jsonrpc.Error, so that the upstream server sees the
// client's code and message.
func (r *relay) requestClient(ctx context.Context, method string, params, out any) error {
	host := r.p.hostService()
	if host == nil {
		return fmt.Errorf("%s cannot be relayed: the host offers no client requests", method)
	}
	caller, ok := r.clientCaller(ctx)
	if !ok {
		return fmt.Errorf("%s cannot be relayed: no client is connected to this session (it serves calls from the command line)", method)
	}
	raw, err := json.Marshal(params)
	if err != nil {
		return fmt.Errorf("marshal %s params: %w", method, err)
	}
	res, err := host.RequestClient(ctx, &sdk.ClientRequest{Caller: caller, Method: method, Params: raw})
	var cerr *sdk.ClientError
	if errors.As(err, &cerr) {
		r.p.log.Debug("client refused a relayed request", "server", r.srv.name, "method", method, "code", cerr.Code)
		return &jsonrpc.Error{Code: cerr.Code, Message: cerr.Message}
	}
	if err != nil {
		r.p.log.Debug("relayed request failed", "server", r.srv.name, "method", method, "error", err)
		return fmt.Errorf("relay %s to the client: %w", method, err)
	}
	if err := json.Unmarshal(res, out); err != nil {
		return fmt.Errorf("the client's %s result is not valid: %w", method, err)
	}
	return nil
}

// progress relays a progress notification to the call whose upstream
// token it carries. Reports that do not increase are dropped: the host
// requires progress to increase.
func (r *relay) progress(_ context.Context, req *mcp.ProgressNotificationClientRequest) {
	if req.Params == nil {
		return
	}
	key := progressKey(req.Params.ProgressToken)
	r.mu.Lock()
	call := r.byToken[key]
	if call == nil || (call.seen && req.Params.Progress <= call.last) {
		r.mu.Unlock()
		r.p.log.Trace("progress dropped", "server", r.srv.name, "reason", "no call in flight with its token, or no increase")
		return
	}
	call.seen, call.last = true, req.Params.Progress
	call.handlers.Add(1)
	r.mu.Unlock()
	defer call.handlers.Done()
	p := sdk.Progress{Progress: req.Params.Progress, Total: req.Params.Total, Message: req.Params.Message}
	if err := call.req.Progress(call.ctx, p); err != nil {
		r.p.log.Debug("progress not relayed", "server", r.srv.name, "error", err)
	}
}

// progressKey is the canonical JSON of a progress token the server sent
// back (a string, or a number the JSON decoder made a float64), "" when
// it is neither.
func progressKey(tok any) string {
	switch t := tok.(type) {
	case float64:
		if t != math.Trunc(t) || math.Abs(t) >= 1<<63 {
			return ""
		}
		tok = int64(t)
	case string, int64, int:
	default:
		return ""
	}
	b, err := json.Marshal(tok)
	if err != nil {
		return ""
	}
	return string(b)
}

// logMessage relays a log message to the most recent call in flight on
// the session; with none, to the owner's session outside any call, and
// for the shared session nowhere.
func (r *relay) logMessage(_ context.Context, req *mcp.LoggingMessageRequest) {
	if req.Params == nil {
		return
	}
	m := sdk.LogMessage{Level: string(req.Params.Level), Logger: req.Params.Logger, Data: req.Params.Data}
	if call := r.latest(); call != nil {
		defer call.handlers.Done()
		if err := call.req.Log(call.ctx, m); err != nil {
			r.p.log.Debug("log message not relayed", "server", r.srv.name, "error", err)
		}
		return
	}
	host := r.p.hostService()
	if r.owner == nil || host == nil {
		r.p.log.Trace("log message dropped", "server", r.srv.name, "reason", "no call in flight and no client session")
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), notifyTimeout)
	defer cancel()
	if err := host.NotifyLog(ctx, *r.owner, m); err != nil {
		r.p.log.Debug("log message not relayed", "server", r.srv.name, "error", err)
	}
}

// debouncer runs a function once per key for a burst of triggers.
type debouncer struct {
	mu      sync.Mutex
	pending map[string]bool
}

// trigger runs fn after delay unless a run for key is already pending.
func (d *debouncer) trigger(key string, delay time.Duration, fn func()) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.pending[key] {
		return
	}
	if d.pending == nil {
		d.pending = map[string]bool{}
	}
	d.pending[key] = true
	time.AfterFunc(delay, func() {
		d.mu.Lock()
		delete(d.pending, key)
		d.mu.Unlock()
		fn()
	})
}

// catalogChanged asks the host to call Describe again, once per burst of
// list_changed notifications, without blocking the handler.
func (p *Provider) catalogChanged(s *server) {
	host := p.hostService()
	if host == nil {
		return
	}
	p.log.Debug("upstream list changed", "server", s.name)
	p.notify.trigger("\x00catalog", notifyDelay, func() {
		ctx, cancel := context.WithTimeout(context.Background(), notifyTimeout)
		defer cancel()
		if err := host.NotifyCatalogChanged(ctx); err != nil {
			p.log.Warn("catalog change not notified", "error", err)
		}
	})
}

// resourceUpdated tells the host's subscribed clients that uri changed,
// once per burst: several clients subscribed through their own sessions
// each get the server's notification.
func (p *Provider) resourceUpdated(s *server, uri string) {
	host := p.hostService()
	if host == nil {
		return
	}
	p.log.Trace("upstream resource updated", "server", s.name)
	p.notify.trigger("uri:"+uri, notifyDelay, func() {
		ctx, cancel := context.WithTimeout(context.Background(), notifyTimeout)
		defer cancel()
		if err := host.NotifyResourceUpdated(ctx, uri); err != nil {
			p.log.Warn("resource update not notified", "server", s.name, "error", err)
		}
	})
}

// hostService returns the host service passed to Configure, nil when
// there is none.
func (p *Provider) hostService() sdk.Host {
	p.mu.RLock()
	defer p.mu.RUnlock()
	return p.host
}

// protocolWithHeaders is the first protocol version whose sessions carry
// the request _meta triple (log level included) and, over HTTP, the
// Mcp-Method, Mcp-Name and Mcp-Param-* headers (SEP-2243).
const protocolWithHeaders = "2026-07-28"

// logLevelMeta is the request _meta that carries the client's logging
// level on protocol 2026-07-28 and later.
func logLevelMeta(level string) mcp.Meta {
	return mcp.Meta{mcp.MetaKeyLogLevel: level}
}

// newProtocol reports whether c negotiated protocol 2026-07-28 or later.
func newProtocol(c *conn) bool {
	init := c.session.InitializeResult()
	return init != nil && init.ProtocolVersion >= protocolWithHeaders
}
