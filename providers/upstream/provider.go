package upstream

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/hashicorp/go-hclog"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/openhuman/openhuman-host/sdk"
)

// Version is the provider's version, reported by Describe and sent as the
// client version when it initialises an upstream session.
const Version = "0.1.0"

// providerName is the provider's name in its catalog.
const providerName = "upstream"

// codeRejectedByTransport is the JSON-RPC code of the go-sdk's "rejected
// by transport" error (its internal jsonrpc2.ErrRejected): a request its
// client could not send, such as one on a connection the server closed.
const codeRejectedByTransport = -32005

const (
	// maxDescription caps a re-exposed tool's description, in characters.
	maxDescription = 2000
	// maxTitle caps a re-exposed tool's title, in characters.
	maxTitle = 200
	// maxListPages bounds the pages of one list (tools, prompts, resources,
	// templates) read from one server.
	maxListPages = 100
)

// exposedName is the name under which the host advertises one of s's
// tools or prompts: s's prefix and the upstream name, made client-safe by
// [sdk.ClientName] ("everything__get.env" becomes "everything__get_env");
// "" for an unnamed one.
func (s *server) exposedName(upstream string) string {
	if upstream == "" {
		return ""
	}
	return sdk.ClientName(s.prefix + upstream)
}

// takenReason says why a tool or prompt of s cannot have the exposed name
// that prev already has.
func takenReason(s *server, exposed string, prev route) string {
	if prev.srv == s {
		return fmt.Sprintf("the name %s is already taken by its %q, which maps to the same client-safe name (the first listed wins)", exposed, prev.name)
	}
	return fmt.Sprintf("the name %s is already taken by server %q (first in config order wins); set a prefix for one of them", exposed, prev.srv.name)
}

// exposeItem converts s's tool or prompt (kind) called name with convert,
// which gets the name it is exposed under and returns a non-empty reason
// when it cannot be exposed. ok is false, the reason logged, when it is
// skipped: it has no name, another tool or prompt in routes already has
// the exposed name, or convert refused it.
func exposeItem[T any](p *Provider, s *server, kind, name string, routes map[string]route, convert func(exposed string) (T, string)) (item T, exposed string, ok bool) {
	exposed = s.exposedName(name)
	if exposed == "" {
		p.log.Warn(kind+" skipped", "server", s.name, "reason", "the server lists a "+kind+" without a name")
		return item, "", false
	}
	if prev, dup := routes[exposed]; dup {
		p.log.Warn(kind+" skipped", "server", s.name, kind, sanitise(name, 200), "reason", takenReason(s, exposed, prev))
		return item, "", false
	}
	item, reason := convert(exposed)
	if reason != "" {
		p.log.Warn(kind+" skipped", "server", s.name, kind, name, "reason", reason)
		return item, "", false
	}
	return item, exposed, true
}

// Options configures [New]; a nil *Options uses every default.
type Options struct {
	// Logger receives the provider's log: servers, redacted endpoints,
	// skipped tools and failures, never arguments or results. Nil
	// discards it.
	Logger hclog.Logger
	// OpenBrowser opens an OAuth authorization URL for the user. Nil uses
	// $BROWSER, else the system's opener (open, rundll32, xdg-open).
	OpenBrowser func(ctx context.Context, url string) error
	// HTTPClient makes the OAuth requests (metadata, registration,
	// tokens). Nil uses http.DefaultClient.
	HTTPClient *http.Client
	// KeepAlive is how often the session each server's catalog is read
	// from (a client's, else the shared one) is pinged while no call is
	// in flight on it; two pings in a row that get no answer within half
	// of it end the session, and another client's session takes over or
	// the server is reported failed and reconnected in the background.
	// Default 0 means 30 s; a negative value disables it.
	KeepAlive time.Duration
}

// Provider re-exposes the tools, prompts and resources of upstream MCP
// servers. Create it with [New] and call Configure before anything else;
// its methods are safe for concurrent use once Configure has returned. It
// implements [sdk.Provider], [sdk.PromptProvider], [sdk.Completer],
// [sdk.Subscriber] and [sdk.SessionObserver].
type Provider struct {
	log hclog.Logger
	// keepAlive is Options.KeepAlive with its default applied; 0 disables.
	keepAlive time.Duration

	// closing tracks sessions being closed in the background (evicted
	// ones); Close waits for them.
	closing sync.WaitGroup
	mu      sync.RWMutex
	host    sdk.Host  // from Configure; nil when the host offers none
	servers []*server // in config order, enabled or not
	// conns holds, by server name, the session each connected server's
	// catalog is read from and pinged on (see catalog.go): one of the
	// clients' own sessions while a client has one with the server, else
	// the shared session. A session that ended stays until it is replaced.
	conns map[string]*conn
	// shared holds the shared sessions by server name: the one the
	// catalog is read from while no client has a session with the server,
	// also used by calls from no MCP session.
	shared map[string]*conn
	// retired holds sessions no longer wanted that a request still holds:
	// each is closed when its last hold is released, or by Close.
	retired map[*conn]bool
	// reopening marks, by server name, the background opening of a shared
	// session for a catalog that lost its last client session.
	reopening map[string]bool
	// refused marks, by server name, a server whose catalog session
	// ended on a refusal of its credentials (HTTP 401 or 403 after the
	// sign-in was tried): its shared session is not opened again in the
	// background, which would only be refused again (and, with OAuth,
	// start another authorization each time), until a new
	// configuration or a client's own session connects it.
	refused map[string]bool
	// health holds the state of every enabled server's catalog session,
	// by server name.
	health map[string]*health
	// gen numbers the configurations: a background connect of an earlier
	// one is dropped.
	gen uint64
	// configured is set once Configure has returned: a server that
	// connects after it makes the host list the catalog again.
	configured bool
	// stopConnect ends the background connects of the configuration.
	stopConnect context.CancelFunc
	// bg is the context stopConnect cancels: that of the configuration's
	// background connects and shared sessions' watchers.
	bg     context.Context
	routes map[string]route // by exposed tool name, from the last Describe
	// described numbers the Describe calls, so that an earlier one that
	// ends later does not replace the routes of a later one.
	described, routed uint64
	// promptRoutes routes prompts by exposed name, from the last Describe.
	promptRoutes map[string]route
	// resourceRoutes and templateRoutes route resource reads, from the
	// last Describe.
	resourceRoutes map[string]*server
	templateRoutes []templateRoute

	// clients holds per-client sessions by server name, NUL, client key
	// (see clientKey).
	clients map[string]*clientConn
	// states holds what each host session set up, by client key.
	states map[string]*clientState

	// opening serialises the opening of one session (shared or a
	// client's) so that concurrent requests open it once; different
	// sessions open in parallel.
	opening keyedMutex
	retryMu sync.Mutex
	retries map[string]retryState // by server name; guarded by retryMu

	// signIn runs the browser sign-ins of servers with oauth.
	signIn *browserSignIn
	// oauthClient makes the OAuth requests.
	oauthClient *http.Client

	tokens atomic.Uint64 // numbers upstream progress tokens
	notify debouncer     // coalesces notifications to the host
}

// route maps an exposed tool or prompt name to its server and upstream
// name.
type route struct {
	srv  *server
	name string
	// headers are the tool's arguments sent as Mcp-Param-* headers.
	headers []headerBinding
}

// Reconnection backoff after an upstream session ended: the first attempt
// is immediate, then the delay doubles from firstRetry up to maxRetry.
const (
	firstRetry = 250 * time.Millisecond
	maxRetry   = 30 * time.Second
)

// retryState is a server's reconnection backoff.
type retryState struct {
	failures int
	next     time.Time
}

// New returns an unconfigured upstream provider.
func New(opts *Options) *Provider {
	p := &Provider{log: hclog.NewNullLogger(), retries: map[string]retryState{}, keepAlive: keepAliveEvery}
	open := openBrowser
	if opts != nil {
		switch {
		case opts.KeepAlive < 0:
			p.keepAlive = 0
		case opts.KeepAlive > 0:
			p.keepAlive = opts.KeepAlive
		}
		if opts.Logger != nil {
			p.log = opts.Logger
		}
		if opts.OpenBrowser != nil {
			open = opts.OpenBrowser
		}
		p.oauthClient = opts.HTTPClient
	}
	p.signIn = &browserSignIn{log: p.log, open: open, gate: true}
	return p
}

// Configure reads {"servers": [...]} (see the package documentation for
// the keys of a server) and connects to every enabled server, all in
// parallel, each within its own start_timeout_secs. Unknown keys and bad
// values are errors naming upstream.servers[i].<key>. A server that
// cannot be reached is no error: it is logged, reported by [Provider.Servers]
// and the unknown-tool error, and tried again in the background, and its
// tools appear (the host is asked to list the catalog again) once it is up.
// Configure waits for every server's first attempt, for at most
// configureWait (5 s; with "wait_for_servers": true, which the host sets
// for one-shot commands, as long as ctx allows), and always returns a
// second before ctx's deadline, with slow servers still connecting. Configuring
// again replaces the servers and closes the old sessions.
func (p *Provider) Configure(ctx context.Context, req *sdk.ConfigureRequest) error {
	servers, waitAll, err := parseSettings(req.Config)
	if err != nil {
		return err
	}
	// In the host's process, os.Environ is the host's: a stdio server
	// gets the provider's environment, as it would in a process of its
	// own.
	environ, trace := req.Environ(), req.Getenv(tracesEnv) == "1"
	for _, s := range servers {
		// The host sets Env only for a provider in its own process.
		s.environ, s.trace, s.ownGroup = environ, trace, req.Env != nil
	}
	var store tokenStore
	var storeErr error
	if req.DataDir != "" {
		store, storeErr = newTokenStore(filepath.Join(req.DataDir, tokenDirName))
	}
	for _, s := range servers {
		if s.oauth == nil || s.unavailable != "" || !s.enabled {
			continue
		}
		if storeErr != nil {
			// Only the servers that sign in need the key.
			s.unavailable = storeErr.Error() + "; set it in the environment the MCP client starts openhuman-host with, or unset it"
			continue
		}
		flow := oauthFlow{store: store, log: p.log, client: p.oauthClient}
		if s.oauth.Interactive {
			flow.fetch = p.signIn.fetcher
		}
		if s.oauthHandler, err = newOAuthHandler(s, flow); err != nil {
			s.unavailable = err.Error()
		}
	}
	bg, stop := context.WithCancel(context.Background())
	p.mu.Lock()
	old := p.allConnsLocked()
	if p.stopConnect != nil {
		p.stopConnect()
	}
	// The handlers of the sessions about to open read the host service.
	p.host = req.Host
	p.gen++
	gen := p.gen
	p.servers, p.conns, p.shared, p.routes, p.promptRoutes, p.clients = servers, map[string]*conn{}, map[string]*conn{}, nil, nil, nil
	p.retired, p.reopening, p.refused = map[*conn]bool{}, map[string]bool{}, map[string]bool{}
	p.health, p.configured, p.stopConnect, p.bg = map[string]*health{}, false, stop, bg
	for _, s := range servers {
		if s.enabled && s.unavailable != "" {
			p.health[s.name] = &health{state: StateFailed, err: s.unavailable}
			p.log.Error("upstream server cannot start", "server", s.name, "error", s.unavailable)
		} else if s.enabled {
			p.health[s.name] = &health{state: StateConnecting}
		} else {
			p.log.Debug("server disabled", "server", s.name)
		}
	}
	p.mu.Unlock()
	for _, c := range old {
		c.close()
	}
	go p.reapIdle(bg, servers)
	p.connectAll(ctx, bg, gen, servers, waitAll)
	p.mu.Lock()
	if p.gen == gen {
		p.configured = true
	}
	p.mu.Unlock()
	return nil
}

// Describe lists the tools of every connected server, in config order,
// filtered by allowed_tools and disallowed_tools and named
// <prefix><tool>. A tool whose name is taken by an earlier one, whose
// exposed name the host would refuse, or whose input schema is not an
// object schema is skipped with a logged reason. A server whose tools
// cannot be listed is logged and left out, so the others' tools stay
// listed. Prompts (named
// <prefix><prompt>), resources and resource templates are listed too;
// failing to list them is logged and leaves that server's out.
func (p *Provider) Describe(ctx context.Context) (*sdk.Catalog, error) {
	// The catalog sessions are held while they are read: one that a
	// client's session replaces meanwhile is closed only afterwards.
	p.mu.Lock()
	servers, gen := p.servers, p.gen
	p.described++
	seq := p.described
	conns := make(map[string]*conn, len(p.conns))
	for name, c := range p.conns {
		c.holds++
		conns[name] = c
	}
	p.mu.Unlock()
	defer func() {
		for _, c := range conns {
			p.release(c)
		}
	}()
	var tools []sdk.Tool
	routes := map[string]route{}
	for _, s := range servers {
		c := conns[s.name]
		if c == nil {
			continue
		}
		list, err := listTools(ctx, c)
		if err != nil {
			// One server's failure leaves the others' tools listed.
			p.log.Warn("tools not listed; the server's tools are missing until it lists them", "server", s.name, "error", redactText(err.Error()))
			continue
		}
		for _, t := range list {
			if ok, key := s.toolAllowed(t.Name); !ok {
				p.log.Debug("tool not exposed", "server", s.name, "tool", t.Name, "reason", "refused by "+key)
				continue
			}
			tool, exposed, ok := exposeItem(p, s, "tool", t.Name, routes, func(exposed string) (sdk.Tool, string) {
				return exposeTool(s, exposed, t)
			})
			if !ok {
				continue
			}
			routes[exposed] = route{srv: s, name: t.Name, headers: headerBindings(t.InputSchema)}
			tools = append(tools, tool)
		}
	}
	prompts, promptRoutes := p.promptCatalog(ctx, servers, conns)
	resources, templates, byURI, tmplRoutes := p.resourceCatalog(ctx, servers, conns)
	p.mu.Lock()
	if p.gen == gen && seq > p.routed {
		p.routes, p.promptRoutes, p.resourceRoutes, p.templateRoutes = routes, promptRoutes, byURI, tmplRoutes
		p.routed = seq
	}
	p.mu.Unlock()
	return &sdk.Catalog{Name: providerName, Version: Version, Tools: tools, Prompts: prompts,
		Resources: resources, ResourceTemplates: templates}, nil
}

// listAll reads the pages of one of a server's lists (what names it in
// the error), at most maxListPages of them, following next cursors: list
// asks for the page at cursor ("" for the first) and items takes the
// page's items and next cursor ("" after the last page) out of its result.
func listAll[R, T any](ctx context.Context, c *conn, what string, list func(ctx context.Context, cursor string) (R, error), items func(R) ([]T, string)) ([]T, error) {
	var out []T
	cursor := ""
	for range maxListPages {
		res, err := list(ctx, cursor)
		if err != nil {
			return nil, fmt.Errorf("%s: cannot list its %s: %s", c.srv.where(), what, redactText(err.Error()))
		}
		page, next := items(res)
		out = append(out, page...)
		if cursor = next; cursor == "" {
			break
		}
	}
	return out, nil
}

// listTools reads every page of the server's tools/list (which also fills
// the session's tools cache, see conn.needsToolList).
func listTools(ctx context.Context, c *conn) ([]*mcp.Tool, error) {
	ctx, cancel := context.WithTimeout(ctx, c.srv.timeout)
	defer cancel()
	var gen uint64
	if c.relay != nil {
		gen = c.relay.listing()
	}
	out, err := listAll(ctx, c, "tools",
		func(ctx context.Context, cursor string) (*mcp.ListToolsResult, error) {
			return c.session.ListTools(ctx, &mcp.ListToolsParams{Cursor: cursor})
		},
		func(res *mcp.ListToolsResult) ([]*mcp.Tool, string) { return res.Tools, res.NextCursor })
	if err != nil {
		return nil, err
	}
	if c.relay != nil {
		c.relay.listed(gen)
	}
	return out, nil
}

// exposeTool converts an upstream tool; a non-empty reason says why it
// cannot be exposed.
func exposeTool(s *server, exposed string, t *mcp.Tool) (sdk.Tool, string) {
	in, err := json.Marshal(t.InputSchema)
	if err != nil || !objectSchema(in) {
		return sdk.Tool{}, "its input schema is not a JSON Schema with \"type\": \"object\""
	}
	tool := sdk.Tool{
		Name:        exposed,
		Title:       sanitise(t.Title, maxTitle),
		Description: sanitise(t.Description, maxDescription),
		InputSchema: in,
		Class:       sdk.ClassAct,
		Timeout:     s.timeout,
	}
	if t.OutputSchema != nil {
		out, err := json.Marshal(t.OutputSchema)
		if err != nil || !objectSchema(out) {
			return sdk.Tool{}, "its output schema is not a JSON Schema with \"type\": \"object\""
		}
		tool.OutputSchema = out
	}
	if a := t.Annotations; a != nil {
		tool.Annotations = sdk.Annotations{
			Title:           sanitise(a.Title, maxTitle),
			DestructiveHint: a.DestructiveHint,
			OpenWorldHint:   a.OpenWorldHint,
		}
		if a.ReadOnlyHint {
			tool.Annotations.ReadOnlyHint = sdk.Bool(true)
		}
		if a.IdempotentHint {
			tool.Annotations.IdempotentHint = sdk.Bool(true)
		}
	}
	if s.readOnly[t.Name] || (s.trust && t.Annotations != nil && t.Annotations.ReadOnlyHint) {
		tool.Class = sdk.ClassRead
	}
	return tool, ""
}

// objectSchema reports whether raw is a JSON object whose "type" is
// "object".
func objectSchema(raw []byte) bool {
	var m map[string]any
	if json.Unmarshal(raw, &m) != nil || m == nil {
		return false
	}
	return m["type"] == "object"
}

// sanitise strips control and format characters (keeping newlines and
// tabs) and invalid UTF-8 from upstream text, and caps it at max
// characters.
func sanitise(s string, max int) string {
	var b strings.Builder
	n := 0
	for _, r := range s {
		if n >= max {
			break
		}
		if r == utf8.RuneError || (unicode.IsControl(r) && r != '\n' && r != '\t') || unicode.Is(unicode.Cf, r) {
			continue
		}
		b.WriteRune(r)
		n++
	}
	return strings.TrimSpace(b.String())
}

// CallTool forwards a call to the server that owns the tool, within the
// server's timeout_secs, on the caller's own session with the server.
// The server's progress notifications and log messages during the call
// reach req's event sink, and its sampling and elicitation requests the
// caller's client. A tool refused by allowed_tools or disallowed_tools,
// an argument that cannot be sent as its x-mcp-header, an error the
// server answers with, and the timeout are isError results; an error is
// returned when ctx ends, the tool is unknown, or the server cannot be
// reached (naming the server, its endpoint redacted).
func (p *Provider) CallTool(ctx context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
	rt, refused, err := p.resolve(req.Name)
	if err != nil {
		return nil, err
	}
	if refused != "" {
		return sdk.ErrorResult("%s: this tool is refused by %s", req.Name, refused), nil
	}
	s := rt.srv
	args := json.RawMessage(req.Arguments)
	if len(args) == 0 {
		args = json.RawMessage("{}")
	}
	if msg := headerArgProblem(req.Name, rt.headers, args); msg != "" {
		return sdk.ErrorResult("%s", msg), nil
	}
	cctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	start := time.Now()
	client := clientKey(req.Caller)
	c, release, err := p.session(cctx, s, req.Caller)
	if err != nil {
		// No session, so nothing was sent.
		return sdk.ErrorResult("%s: %s; the call did not run", req.Name, redactText(err.Error())), nil
	}
	defer func() { release() }()
	res, err := p.forward(cctx, c, req, rt.name, args)
	if errors.Is(err, mcp.ErrSessionMissing) {
		// The server forgot the session (HTTP 404), so the call never
		// ran: initialise a new session once and send the call once more.
		p.log.Info("upstream session expired; initialising a new one", "server", s.name)
		release()
		p.dropSession(s, c, client)
		nc, nrelease, serr := p.session(cctx, s, req.Caller)
		if serr != nil {
			return sdk.ErrorResult("%s: %s; the call did not run", req.Name, redactText(serr.Error())), nil
		}
		c, release = nc, nrelease
		res, err = p.forward(cctx, c, req, rt.name, args)
	}
	elapsed := time.Since(start).Round(time.Millisecond)
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		if errors.Is(cctx.Err(), context.DeadlineExceeded) {
			p.log.Warn("call timed out", "server", s.name, "tool", rt.name, "duration", elapsed.String())
			return sdk.ErrorResult("%s: %s did not answer within %s (timeout_secs)", req.Name, s.where(), s.timeout), nil
		}
		var signIn *signInError
		if errors.As(err, &signIn) {
			return sdk.ErrorResult("%s: %s; the call did not run", req.Name, signIn), nil
		}
		if c.http != nil && c.http.refusedSince(start) {
			// A 401 or 403 answers the request without running it.
			p.dropSession(s, c, client)
			return sdk.ErrorResult("%s: %s refused the call's credentials (HTTP 401 or 403); the call did not run; %s",
				req.Name, s.where(), authHint(s)), nil
		}
		var werr *jsonrpc.Error
		if errors.As(err, &werr) && werr.Code == mcp.CodeMissingRequiredClientCapabilities {
			// The client's own capabilities fall short (SEP-2575): the
			// host answers it with the same protocol error.
			var data struct {
				Required json.RawMessage `json:"requiredCapabilities"`
			}
			_ = json.Unmarshal(werr.Data, &data)
			if !json.Valid(data.Required) || len(data.Required) == 0 {
				data.Required = json.RawMessage("{}")
			}
			return nil, &sdk.MissingCapabilityError{Required: data.Required, Message: sanitise(werr.Message, maxDescription)}
		}
		if errors.As(err, &werr) && werr.Code == codeRejectedByTransport {
			// The go-sdk's client could not send the request (a
			// connection refused or closed under it): the server did
			// not answer, so do not say it did.
			p.log.Warn("call not sent", "server", s.name, "tool", rt.name, "error", redactText(err.Error()))
			return sdk.ErrorResult("%s: the call could not be sent to %s: %s; try again", req.Name, s.where(),
				sanitise(redactText(err.Error()), maxDescription)), nil
		}
		if errors.As(err, &werr) {
			p.log.Debug("call refused by server", "server", s.name, "tool", rt.name, "code", werr.Code)
			return sdk.ErrorResult("%s: %s answered with an error: %s", req.Name, s.where(), sanitise(werr.Message, maxDescription)), nil
		}
		p.log.Warn("call failed", "server", s.name, "tool", rt.name, "duration", elapsed.String(), "error", redactText(err.Error()))
		if c.endedSoon(sessionEndGrace) {
			// The session ended under the call; the next call reconnects.
			p.dropSession(s, c, client)
			return sdk.ErrorResult("%s: %s ended the session during the call (the call may or may not have run); it is reconnected at the next call",
				req.Name, s.where()), nil
		}
		return nil, fmt.Errorf("%s: call of %s failed: %s", s.where(), rt.name, redactText(err.Error()))
	}
	if p.log.IsDebug() {
		p.log.Debug("call", "server", s.name, "tool", rt.name, "duration", elapsed.String(), "is_error", res.IsError)
	}
	return p.convertResult(s, res), nil
}

// forward sends the call of the upstream tool name with args on c,
// registered as in flight so that the session's notifications and server
// requests reach req: with a progress token of its own when the client
// asked for progress, and on protocol 2026-07-28 and later with the
// client's logging level in _meta (earlier sessions got logging/setLevel).
// An HTTP session of that protocol lists its tools first when it has not
// since they last changed, so that the go-sdk client sends the tool's
// x-mcp-header arguments as Mcp-Param-* headers.
func (p *Provider) forward(ctx context.Context, c *conn, req *sdk.CallToolRequest, name string, args json.RawMessage) (*mcp.CallToolResult, error) {
	if c.needsToolList() {
		if _, err := listTools(ctx, c); err != nil {
			p.log.Warn("tools not listed before a call; x-mcp-header arguments are not sent as headers", "server", c.srv.name, "error", err)
		}
	}
	params := &mcp.CallToolParams{Name: name, Arguments: args}
	if newProtocol(c) {
		p.mu.RLock()
		level := p.levelLocked(clientKey(req.Caller))
		p.mu.RUnlock()
		if level != "" {
			params.Meta = logLevelMeta(level)
		}
	}
	if len(req.InputResponses) > 0 || req.RequestState != "" {
		// The retry of a call whose result asked the client for input.
		if len(req.InputResponses) > 0 {
			if err := json.Unmarshal(req.InputResponses, &params.InputResponses); err != nil {
				return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "the client's inputResponses are not MCP input responses: " + err.Error()}
			}
		}
		params.RequestState = req.RequestState
	}
	call := c.relay.begin(ctx, req)
	defer c.relay.end(call)
	if call.token != nil {
		params.SetProgressToken(call.token)
	}
	return c.session.CallTool(withCaller(ctx, req.Caller), params)
}

// resolve finds the route of an exposed tool name; refused names the key
// that refuses it when the name is one of a server's tools that the lists
// exclude.
func (p *Provider) resolve(name string) (route, string, error) {
	p.mu.RLock()
	servers, conns, routes := p.servers, p.conns, p.routes
	p.mu.RUnlock()
	if conns == nil {
		return route{}, "", errors.New("upstream provider is not configured")
	}
	if rt, ok := routes[name]; ok {
		if ok, key := rt.srv.toolAllowed(rt.name); !ok {
			return route{}, key, nil
		}
		return rt, "", nil
	}
	for _, s := range servers {
		c := conns[s.name]
		prefix := sdk.ClientName(s.prefix)
		if c == nil || !strings.HasPrefix(name, prefix) {
			continue
		}
		up := strings.TrimPrefix(name, prefix)
		if ok, key := s.toolAllowed(up); !ok {
			return route{}, key, nil
		}
		if routes == nil {
			// Describe has not run: forward by prefix to the first server
			// whose prefix matches.
			return route{srv: s, name: up}, "", nil
		}
	}
	if why := p.downReason(name); why != "" {
		return route{}, "", fmt.Errorf("upstream provider has no tool %q: %s", name, why)
	}
	return route{}, "", fmt.Errorf("upstream provider has no tool %q", name)
}

// convertContent turns an upstream content block into the sdk's; false
// for a block of a kind the sdk has no place for.
func convertContent(c mcp.Content) (sdk.Content, bool) {
	switch c := c.(type) {
	case *mcp.TextContent:
		return sdk.TextContent(c.Text), true
	case *mcp.ImageContent:
		return sdk.Content{Type: "image", Data: c.Data, MIMEType: c.MIMEType}, true
	case *mcp.AudioContent:
		return sdk.Content{Type: "audio", Data: c.Data, MIMEType: c.MIMEType}, true
	case *mcp.ResourceLink:
		return sdk.Content{Type: "resource_link", URI: c.URI, Name: c.Name,
			Title: c.Title, Description: c.Description, MIMEType: c.MIMEType}, true
	case *mcp.EmbeddedResource:
		if c.Resource == nil {
			return sdk.Content{}, false
		}
		return sdk.Content{Type: "resource", URI: c.Resource.URI,
			MIMEType: c.Resource.MIMEType, Text: c.Resource.Text, Data: c.Resource.Blob}, true
	}
	return sdk.Content{}, false
}

// convertResult turns an upstream result into the sdk's. A result that
// asks for input (a client of protocol 2026-07-28 or later, served by a
// session that passes such results on) keeps the server's input requests,
// under their keys, and its requestState.
func (p *Provider) convertResult(s *server, res *mcp.CallToolResult) *sdk.CallToolResult {
	if res.NeedsInput() || len(res.InputRequests) > 0 {
		raw, err := json.Marshal(res.InputRequests)
		if err != nil {
			return sdk.ErrorResult("%s asked for input that cannot be passed on: %v", s.where(), err)
		}
		return &sdk.CallToolResult{InputRequests: raw, RequestState: res.RequestState}
	}
	out := &sdk.CallToolResult{IsError: res.IsError}
	for _, c := range res.Content {
		sc, ok := convertContent(c)
		if !ok {
			p.log.Debug("content block dropped", "server", s.name, "type", fmt.Sprintf("%T", c))
			continue
		}
		out.Content = append(out.Content, sc)
	}
	if res.StructuredContent != nil {
		raw, err := json.Marshal(res.StructuredContent)
		if err == nil && len(raw) > 0 && raw[0] == '{' {
			out.StructuredContent = raw
		} else {
			p.log.Debug("structured content dropped: not a JSON object", "server", s.name)
		}
	}
	return out
}

// Close ends every upstream session and stops the stdio servers; it is
// safe to call more than once and before Configure. The provider is
// unconfigured afterwards.
func (p *Provider) Close() error {
	p.mu.Lock()
	if p.stopConnect != nil {
		p.stopConnect()
		p.stopConnect = nil
	}
	p.gen++
	conns := p.allConnsLocked()
	p.conns, p.shared, p.retired, p.reopening, p.refused = nil, nil, nil, nil, nil
	p.routes, p.promptRoutes, p.servers, p.clients, p.states, p.health = nil, nil, nil, nil, nil, nil
	p.mu.Unlock()
	var wg sync.WaitGroup
	for _, c := range conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c.close()
		}()
	}
	wg.Wait()
	p.closing.Wait()
	return nil
}

var _ sdk.Provider = (*Provider)(nil)
