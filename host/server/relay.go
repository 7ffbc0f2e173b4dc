package server

//lint:file-ignore SA1019 sampling, roots and logging, deprecated from protocol 2026-07-28 (SEP-2577), stay supported for clients on earlier versions: providers relay them for upstream servers.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/yosida95/uritemplate/v3"

	"github.com/openhuman/openhuman-host/host/catalog"
	"github.com/openhuman/openhuman-host/sdk"
)

// This file serves what providers add through provider protocol 2:
// prompts, completion, resource subscriptions, the client's logging level
// and session ends on the way in; requests to the client, log messages
// and resource updates on the way out.

// sessionEventTimeout bounds telling providers about a session's logging
// level or its end.
const sessionEventTimeout = 5 * time.Second

// callEntry is a client's tools/call while it runs: its session, and the
// context of its handler, whose values relate requests sent for it to the
// call (on Streamable HTTP they travel on the call's stream).
type callEntry struct {
	session *mcp.ServerSession
	ctx     context.Context
	// cancel cancels the call (its session closed).
	cancel context.CancelFunc
	// ask, set for a client asked through multi-round-trip results,
	// sends it a request for input in place of a request on the session;
	// caps is what that client declared on the call.
	ask  func(ctx context.Context, req mcp.InputRequest) (mcp.InputResponse, error)
	caps *mcp.ClientCapabilities
	// profile is the profile the call runs under; calls a provider makes
	// within it run under it too.
	profile string
}

// related returns ctx (for its deadline and cancellation) carrying the
// values of values while values is not done, so the go-sdk sends what it
// sends under ctx as part of the request values belongs to while that
// request runs. Once it has ended (the client cancelled the call) its
// stream is gone, and what is still sent, such as the
// notifications/cancelled for a relayed request, goes out unrelated (on
// Streamable HTTP: the session's standalone stream) instead of nowhere.
//
// ctx's own values are dropped: a ctx derived from the call (a provider
// called in-process) would otherwise relate the request to the ended call
// all the same. The returned stop releases ctx's watch.
func related(ctx, values context.Context) (context.Context, context.CancelFunc) {
	base, cancel := context.WithCancelCause(context.Background())
	if d, ok := ctx.Deadline(); ok {
		var cancelDeadline context.CancelFunc
		base, cancelDeadline = context.WithDeadline(base, d)
		prev := cancel
		cancel = func(err error) { cancelDeadline(); prev(err) }
	}
	stopWatch := context.AfterFunc(ctx, func() { cancel(context.Cause(ctx)) })
	return relatedCtx{Context: base, values: values}, func() { stopWatch(); cancel(context.Canceled) }
}

type relatedCtx struct {
	context.Context
	values context.Context
}

func (c relatedCtx) Value(key any) any {
	if c.values.Err() == nil {
		if v := c.values.Value(key); v != nil {
			return v
		}
	}
	return c.Context.Value(key)
}

// target finds the session a provider's request or notice for caller goes
// to: the running call's (with its context) when CallToken names one, else
// the session SessionToken names. ok is false when neither is live.
func (s *Server) target(caller sdk.Caller) (ss *mcp.ServerSession, callCtx context.Context, ok bool) {
	if e := s.callOf(caller); e != nil {
		return e.session, e.ctx, true
	}
	if caller.SessionToken != "" {
		if v, found := s.tokens.Load(caller.SessionToken); found {
			return v.(*mcp.ServerSession), nil, true
		}
	}
	return nil, nil, false
}

// callOf returns the running call caller's CallToken names, or nil.
func (s *Server) callOf(caller sdk.Caller) *callEntry {
	if caller.CallToken == "" {
		return nil
	}
	if v, found := s.calls.Load(caller.CallToken); found {
		return v.(*callEntry)
	}
	return nil
}

// RequestClient sends a provider's request to the MCP client of
// req.Caller's session and returns the client's result as JSON: method
// sampling/createMessage (with tools when params has any),
// elicitation/create or roots/list (MCP 2025-11-25, client features).
// While the caller's call runs the request is related to it. Errors wrap
// [sdk.ErrClientUnavailable] when the session is gone, the client lacks
// the capability, or its protocol version rules requests during a call
// out; a JSON-RPC error from the client comes back as [*sdk.ClientError].
func (s *Server) RequestClient(ctx context.Context, req *sdk.ClientRequest) ([]byte, error) {
	if e := s.callOf(req.Caller); e != nil && e.ask != nil {
		return s.askClient(ctx, e, req)
	}
	ss, callCtx, ok := s.target(req.Caller)
	if !ok {
		return nil, fmt.Errorf("%w: %s needs a connected MCP client session, and the caller (%q) has none or it ended; call the tool from an MCP client that supports it, not the command line",
			sdk.ErrClientUnavailable, req.Method, req.Caller.SourceType)
	}
	if callCtx != nil {
		var stop context.CancelFunc
		ctx, stop = related(ctx, callCtx)
		defer stop()
	}
	var caps *mcp.ClientCapabilities
	version := ""
	if init := ss.InitializeParams(); init != nil {
		caps, version = init.Capabilities, init.ProtocolVersion
	}
	client := nonEmpty(req.Caller.ClientName, "the client")
	if !inRequestInputAllowed(version) {
		return nil, fmt.Errorf("%w: %s speaks MCP %s, where a server may not send %s while it serves a call (only protocol versions up to %s allow it)",
			sdk.ErrClientUnavailable, client, version, req.Method, lastInRequestElicitation)
	}
	in, err := clientInput(req, caps, declaresRoots(ss))
	if err != nil {
		return nil, err
	}
	var res any
	switch p := in.(type) {
	case *mcp.CreateMessageWithToolsParams:
		res, err = ss.CreateMessageWithTools(ctx, p)
	case *mcp.CreateMessageParams:
		res, err = ss.CreateMessage(ctx, p)
	case *mcp.ElicitParams:
		res, err = ss.Elicit(ctx, p)
	case *mcp.ListRootsParams:
		res, err = ss.ListRoots(ctx, p)
	}
	return clientAnswer(req.Method, res, err)
}

// clientInput checks that the client can take a provider's request (it
// declared the capability: caps, and roots for roots/list) and decodes its
// params: sampling/createMessage as CreateMessageWithToolsParams when it
// offers tools, else CreateMessageParams (one block per message, the form
// every client reads); elicitation/create; roots/list. Errors wrap
// [sdk.ErrClientUnavailable] or [sdk.ErrInvalidParams].
func clientInput(req *sdk.ClientRequest, caps *mcp.ClientCapabilities, roots bool) (mcp.InputRequest, error) {
	if caps == nil {
		caps = &mcp.ClientCapabilities{}
	}
	client := nonEmpty(req.Caller.ClientName, "the client")
	params := req.Params
	if len(params) == 0 {
		params = []byte("{}")
	}
	decode := func(p mcp.InputRequest) (mcp.InputRequest, error) {
		if err := json.Unmarshal(params, p); err != nil {
			return nil, fmt.Errorf("%s params: %w", req.Method, err)
		}
		return p, nil
	}
	switch req.Method {
	case sdk.MethodCreateMessage:
		var probe struct {
			Tools []json.RawMessage `json:"tools"`
		}
		if err := json.Unmarshal(params, &probe); err != nil {
			return nil, fmt.Errorf("%s params: %w", req.Method, err)
		}
		switch {
		case caps.Sampling == nil:
			return nil, fmt.Errorf("%w: %s did not declare the sampling capability", sdk.ErrClientUnavailable, client)
		case len(probe.Tools) > 0 && caps.Sampling.Tools == nil:
			return nil, fmt.Errorf("%w: %s can sample, but not with tools (it did not declare sampling.tools)", sdk.ErrClientUnavailable, client)
		case len(probe.Tools) > 0:
			return decode(&mcp.CreateMessageWithToolsParams{})
		}
		return decode(&mcp.CreateMessageParams{})
	case sdk.MethodElicit:
		if caps.Elicitation == nil {
			return nil, fmt.Errorf("%w: %s did not declare the elicitation capability", sdk.ErrClientUnavailable, client)
		}
		return decode(&mcp.ElicitParams{})
	case sdk.MethodListRoots:
		if !roots {
			return nil, fmt.Errorf("%w: %s did not declare the roots capability", sdk.ErrClientUnavailable, client)
		}
		return decode(&mcp.ListRootsParams{})
	}
	return nil, fmt.Errorf("%w: method %q: the host relays only %s, %s and %s", sdk.ErrInvalidParams, req.Method,
		sdk.MethodCreateMessage, sdk.MethodElicit, sdk.MethodListRoots)
}

// clientAnswer returns the client's answer to method as JSON; a JSON-RPC
// error from the client comes back as [*sdk.ClientError].
func clientAnswer(method string, res any, err error) ([]byte, error) {
	if err != nil {
		var werr *jsonrpc.Error
		if errors.As(err, &werr) {
			return nil, &sdk.ClientError{Code: werr.Code, Message: werr.Message}
		}
		return nil, fmt.Errorf("%s: %w", method, err)
	}
	out, err := json.Marshal(res)
	if err != nil {
		return nil, fmt.Errorf("encode the client's %s result: %w", method, err)
	}
	return out, nil
}

// askClient sends a provider's request to a multi-round-trip client as an
// input request of the call it belongs to (SEP-2322), after the same
// checks as [Server.RequestClient].
func (s *Server) askClient(ctx context.Context, e *callEntry, req *sdk.ClientRequest) ([]byte, error) {
	roots := e.caps != nil && (e.caps.RootsV2 != nil || e.caps.Roots.ListChanged)
	in, err := clientInput(req, e.caps, roots)
	if err != nil {
		return nil, err
	}
	res, err := e.ask(ctx, in)
	return clientAnswer(req.Method, res, err)
}

// declaresRoots reports whether the session's client declared the roots
// capability in initialize (the go-sdk records what it sent in RootsV2).
func declaresRoots(ss *mcp.ServerSession) bool {
	init := ss.InitializeParams()
	return init != nil && init.Capabilities != nil && init.Capabilities.RootsV2 != nil
}

// NotifyLog sends a provider's log message to the session caller stands
// for (MCP notifications/message), subject to the level the client set;
// it is dropped when that session is gone.
func (s *Server) NotifyLog(ctx context.Context, caller sdk.Caller, m sdk.LogMessage) error {
	ss, callCtx, ok := s.target(caller)
	if !ok {
		return nil
	}
	if callCtx != nil {
		var stop context.CancelFunc
		ctx, stop = related(ctx, callCtx)
		defer stop()
	}
	return ss.Log(ctx, &mcp.LoggingMessageParams{Level: mcp.LoggingLevel(m.Level), Logger: m.Logger, Data: m.Data})
}

// NotifyResourceUpdated tells every session subscribed to uri that it
// changed (MCP notifications/resources/updated).
func (s *Server) NotifyResourceUpdated(ctx context.Context, uri string) error {
	return s.mcp.ResourceUpdated(ctx, &mcp.ResourceUpdatedNotificationParams{URI: uri})
}

// promptHandler serves prompts/get for one prompt by asking its provider.
func (s *Server) promptHandler(name string) mcp.PromptHandler {
	return func(ctx context.Context, req *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
		v := s.view.Load()
		p, ok := v.prompt(name)
		if !ok {
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("unknown prompt %q", name)}
		}
		d, ok := v.providers[p.Provider].(sdk.PromptProvider)
		if !ok {
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("prompt %q: provider %s serves no prompts", name, p.Provider)}
		}
		caller := s.callerOf(req)
		greq := &sdk.GetPromptRequest{Name: p.Declared, Arguments: req.Params.Arguments, Caller: caller}
		mrtr := mrtrClient(req)
		var target, args, client string
		if mrtr {
			var err error
			if target, args, client, err = s.promptMRTR(ctx, req, p.Name, caller, greq); err != nil {
				return nil, err
			}
		}
		res, err := d.GetPrompt(ctx, greq)
		if err == nil && len(res.InputRequests) > 0 {
			if !mrtr {
				return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: fmt.Sprintf(
					"prompt %q: provider %s asked for input through a multi-round-trip result, which this client's protocol version cannot answer", name, p.Provider)}
			}
			return s.relayPromptInput(p.Name, target, args, client, res)
		}
		switch {
		case errors.Is(err, sdk.ErrPromptNotFound):
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("unknown prompt %q: %v", name, err)}
		case errors.Is(err, sdk.ErrInvalidParams):
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: err.Error()}
		case err != nil:
			s.log.Warn("prompt failed", "prompt", name, "provider", p.Provider, "error", err)
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: fmt.Sprintf("prompt %s: provider %s: %v", name, p.Provider, err)}
		}
		out := &mcp.GetPromptResult{Description: res.Description, Messages: []*mcp.PromptMessage{}}
		for _, m := range res.Messages {
			out.Messages = append(out.Messages, &mcp.PromptMessage{Role: mcp.Role(m.Role), Content: mcpContent(m.Content)})
		}
		return out, nil
	}
}

// mcpPrompt is the go-sdk's form of a catalog prompt.
func mcpPrompt(p *catalog.Prompt) *mcp.Prompt {
	out := &mcp.Prompt{Name: p.Name, Title: p.Title, Description: p.Description}
	for _, a := range p.Arguments {
		out.Arguments = append(out.Arguments, &mcp.PromptArgument{Name: a.Name, Description: a.Description, Required: a.Required})
	}
	return out
}

// complete serves completion/complete (MCP 2025-11-25,
// server/utilities/completion) by asking the provider of the prompt or
// resource template the reference names; providers without completion
// give an empty list.
func (s *Server) complete(ctx context.Context, req *mcp.CompleteRequest) (*mcp.CompleteResult, error) {
	empty := &mcp.CompleteResult{Completion: mcp.CompletionResultDetails{Values: []string{}}}
	ref := req.Params.Ref
	if ref == nil {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "completion/complete needs a ref"}
	}
	v := s.view.Load()
	provider, refName := "", ref.Name
	switch ref.Type {
	case sdk.RefPrompt:
		p, ok := v.prompt(ref.Name)
		if !ok {
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("unknown prompt %q", ref.Name)}
		}
		provider, refName = p.Provider, p.Declared
	case sdk.RefResource:
		if t, ok := v.templates[ref.URI]; ok {
			provider = t.Provider
		} else if r, ok := v.resources[ref.URI]; ok {
			provider = r.Provider
		} else {
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("unknown resource template %q", ref.URI)}
		}
	default:
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("ref type %q: must be %q or %q", ref.Type, sdk.RefPrompt, sdk.RefResource)}
	}
	d, ok := v.providers[provider].(sdk.Completer)
	if !ok {
		return empty, nil
	}
	creq := &sdk.CompleteRequest{
		RefType: ref.Type, RefName: refName, RefURI: ref.URI,
		ArgumentName: req.Params.Argument.Name, ArgumentValue: req.Params.Argument.Value,
		Caller: s.callerOf(req),
	}
	if req.Params.Context != nil {
		creq.Context = req.Params.Context.Arguments
	}
	res, err := d.Complete(ctx, creq)
	switch {
	case errors.Is(err, sdk.ErrNotImplemented):
		return empty, nil
	case errors.Is(err, sdk.ErrInvalidParams), errors.Is(err, sdk.ErrPromptNotFound):
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: err.Error()}
	case err != nil:
		s.log.Warn("completion failed", "provider", provider, "error", err)
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: fmt.Sprintf("completion by provider %s failed: %v", provider, err)}
	}
	out := mcp.CompletionResultDetails{Values: res.Values, Total: res.Total, HasMore: res.HasMore}
	if out.Values == nil {
		out.Values = []string{}
	}
	if len(out.Values) > sdk.MaxCompletionValues {
		out.Values, out.HasMore = out.Values[:sdk.MaxCompletionValues], true
	}
	return &mcp.CompleteResult{Completion: out}, nil
}

// resourceOwner returns the provider that serves uri: the one listing it,
// else the one whose resource template matches it.
func (v *view) resourceOwner(uri string) (string, bool) {
	if r, ok := v.resources[uri]; ok {
		return r.Provider, true
	}
	for _, t := range v.templates {
		tmpl, err := uritemplate.New(t.URITemplate)
		if err != nil {
			continue
		}
		if tmpl.Regexp().MatchString(uri) {
			return t.Provider, true
		}
	}
	return "", false
}

// subscribe serves resources/subscribe and resources/unsubscribe by
// telling the resource's provider; the go-sdk keeps the session's
// subscriptions. A provider that cannot report changes accepts the
// subscription, and no update ever comes.
func (s *Server) subscribe(ctx context.Context, ss *mcp.ServerSession, uri string, on bool) error {
	v := s.view.Load()
	provider, ok := v.resourceOwner(uri)
	if !ok {
		return mcp.ResourceNotFoundError(uri)
	}
	d, ok := v.providers[provider].(sdk.Subscriber)
	if !ok {
		return nil
	}
	req := &sdk.SubscribeRequest{URI: uri, Caller: s.caller(ss)}
	var err error
	if on {
		err = d.Subscribe(ctx, req)
	} else {
		err = d.Unsubscribe(ctx, req)
	}
	switch {
	case err == nil:
		s.session(ss).remember("", uri, on)
		return nil
	case errors.Is(err, sdk.ErrNotImplemented):
		return nil
	case errors.Is(err, sdk.ErrResourceNotFound):
		return mcp.ResourceNotFoundError(uri)
	case errors.Is(err, sdk.ErrInvalidParams):
		return &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: err.Error()}
	}
	s.log.Warn("subscription failed", "provider", provider, "error", err)
	return &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: fmt.Sprintf("provider %s: %v", provider, err)}
}

// sessionMiddleware passes a session's logging/setLevel on to every
// provider that keeps state per session, before the client gets its
// answer, so that the level is in place for its next call.
func (s *Server) sessionMiddleware(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		res, err := next(ctx, method, req)
		if err != nil || method != "logging/setLevel" {
			return res, err
		}
		params, ok := req.GetParams().(*mcp.SetLoggingLevelParams)
		ss, _ := req.GetSession().(*mcp.ServerSession)
		if !ok || params == nil || ss == nil {
			return res, err
		}
		info := s.session(ss)
		info.remember(string(params.Level), "", false)
		caller := info.caller()
		s.eachObserver(ctx, func(ctx context.Context, name string, o sdk.SessionObserver) {
			if err := o.SetLoggingLevel(ctx, &sdk.SetLoggingLevelRequest{Level: string(params.Level), Caller: caller}); err != nil && !errors.Is(err, sdk.ErrNotImplemented) {
				s.log.Warn("provider did not take the session's logging level", "provider", name, "error", err)
			}
		})
		return res, err
	}
}

// eachObserver runs fn for every provider that keeps state per session,
// in parallel, each bounded by sessionEventTimeout, and waits for them.
func (s *Server) eachObserver(ctx context.Context, fn func(ctx context.Context, name string, o sdk.SessionObserver)) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), sessionEventTimeout)
	defer cancel()
	var wg sync.WaitGroup
	for name, d := range s.view.Load().providers {
		if o, ok := d.(sdk.SessionObserver); ok {
			wg.Go(func() { fn(ctx, name, o) })
		}
	}
	wg.Wait()
}

// Replay tells the provider named provider, after it restarted (a new
// process knows nothing of the sessions), what each connected session
// asked of it: the session's logging level, and its subscriptions to the
// resources the provider serves. Failures are logged. Replay waits for
// every answer, each bounded by five seconds.
func (s *Server) Replay(ctx context.Context, provider string) {
	v := s.view.Load()
	d, ok := v.providers[provider]
	if !ok {
		return
	}
	observer, _ := d.(sdk.SessionObserver)
	subscriber, _ := d.(sdk.Subscriber)
	if observer == nil && subscriber == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), sessionEventTimeout)
	defer cancel()
	s.sessions.Range(func(_, value any) bool {
		info := value.(*sessionInfo)
		info.mu.Lock()
		level := info.level
		var uris []string
		for uri := range info.subs {
			if owner, ok := v.resourceOwner(uri); ok && owner == provider {
				uris = append(uris, uri)
			}
		}
		info.mu.Unlock()
		caller := info.caller()
		if level != "" && observer != nil {
			if err := observer.SetLoggingLevel(ctx, &sdk.SetLoggingLevelRequest{Level: level, Caller: caller}); err != nil && !errors.Is(err, sdk.ErrNotImplemented) {
				s.log.Warn("restarted provider did not take a session's logging level", "provider", provider, "error", err)
			}
		}
		for _, uri := range uris {
			if subscriber == nil {
				break
			}
			if err := subscriber.Subscribe(ctx, &sdk.SubscribeRequest{URI: uri, Caller: caller}); err != nil && !errors.Is(err, sdk.ErrNotImplemented) {
				s.log.Warn("restarted provider did not take a session's subscription", "provider", provider, "error", err)
			}
		}
		return true
	})
}

// sessionClosed tells providers that keep state per session that caller's
// session ended.
func (s *Server) sessionClosed(caller sdk.Caller) {
	s.eachObserver(context.Background(), func(ctx context.Context, name string, o sdk.SessionObserver) {
		if err := o.SessionClosed(ctx, caller); err != nil && !errors.Is(err, sdk.ErrNotImplemented) {
			s.log.Debug("provider was not told of a session's end", "provider", name, "error", err)
		}
	})
}
