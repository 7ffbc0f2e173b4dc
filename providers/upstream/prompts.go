package upstream

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/openhuman/openhuman-host/sdk"
)

// promptCatalog lists the prompts of every connected server that declares
// the prompts capability, in config order, named <prefix><prompt> (the
// tools' prefix; allowed_tools and disallowed_tools do not apply). A
// prompt whose exposed name an earlier one took, that the host's name
// rule refuses, or with an argument name holding control characters is
// skipped with a logged reason; failing to list is logged and skips the
// server's prompts.
func (p *Provider) promptCatalog(ctx context.Context, servers []*server, conns map[string]*conn) ([]sdk.Prompt, map[string]route) {
	var prompts []sdk.Prompt
	routes := map[string]route{}
	for _, s := range servers {
		c := conns[s.name]
		if c == nil || !hasPrompts(c) {
			continue
		}
		list, err := listPrompts(ctx, c)
		if err != nil {
			p.log.Warn("prompts not relayed", "server", s.name, "error", err)
			continue
		}
		for _, pr := range list {
			if pr == nil {
				continue
			}
			prompt, exposed, ok := exposeItem(p, s, "prompt", pr.Name, routes, func(exposed string) (sdk.Prompt, string) {
				return exposePrompt(exposed, pr)
			})
			if !ok {
				continue
			}
			routes[exposed] = route{srv: s, name: pr.Name}
			prompts = append(prompts, prompt)
		}
	}
	return prompts, routes
}

// exposePrompt converts an upstream prompt; a non-empty reason says why
// it cannot be exposed.
func exposePrompt(exposed string, pr *mcp.Prompt) (sdk.Prompt, string) {
	out := sdk.Prompt{Name: exposed, Title: sanitise(pr.Title, maxTitle), Description: sanitise(pr.Description, maxDescription)}
	for _, a := range pr.Arguments {
		if a == nil {
			continue
		}
		// Clients send argument names back as listed: one that
		// sanitising would change cannot be relayed faithfully.
		if a.Name == "" || sanitise(a.Name, 200) != a.Name {
			return sdk.Prompt{}, fmt.Sprintf("its argument name %q is empty, too long, or holds control characters", a.Name)
		}
		out.Arguments = append(out.Arguments, sdk.PromptArgument{Name: a.Name, Description: sanitise(a.Description, maxDescription), Required: a.Required})
	}
	return out, ""
}

// hasPrompts reports whether the server declared the prompts capability.
func hasPrompts(c *conn) bool {
	init := c.session.InitializeResult()
	return init != nil && init.Capabilities != nil && init.Capabilities.Prompts != nil
}

// hasCompletions reports whether the server declared the completions
// capability.
func hasCompletions(c *conn) bool {
	init := c.session.InitializeResult()
	return init != nil && init.Capabilities != nil && init.Capabilities.Completions != nil
}

// listPrompts reads every page of the server's prompts/list.
func listPrompts(ctx context.Context, c *conn) ([]*mcp.Prompt, error) {
	ctx, cancel := context.WithTimeout(ctx, c.srv.timeout)
	defer cancel()
	return listAll(ctx, c, "prompts",
		func(ctx context.Context, cursor string) (*mcp.ListPromptsResult, error) {
			return c.session.ListPrompts(ctx, &mcp.ListPromptsParams{Cursor: cursor})
		},
		func(res *mcp.ListPromptsResult) ([]*mcp.Prompt, string) { return res.Prompts, res.NextCursor })
}

// GetPrompt fills in a relayed prompt on the caller's session with the
// server that lists it, within the server's timeout_secs. A name Describe
// did not list is sdk.ErrPromptNotFound; arguments the server refuses
// (JSON-RPC -32602) are sdk.ErrInvalidParams with the server's message.
// It implements [sdk.PromptProvider].
func (p *Provider) GetPrompt(ctx context.Context, req *sdk.GetPromptRequest) (*sdk.GetPromptResult, error) {
	p.mu.RLock()
	rt, ok := p.promptRoutes[req.Name]
	p.mu.RUnlock()
	if !ok {
		return nil, fmt.Errorf("upstream provider: %w: %s", sdk.ErrPromptNotFound, req.Name)
	}
	s := rt.srv
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	params := &mcp.GetPromptParams{Name: rt.name, Arguments: req.Arguments, RequestState: req.RequestState}
	if len(req.InputResponses) > 0 {
		if err := json.Unmarshal(req.InputResponses, &params.InputResponses); err != nil {
			return nil, fmt.Errorf("upstream provider: %w: inputResponses: %v", sdk.ErrInvalidParams, err)
		}
	}
	var res *mcp.GetPromptResult
	err := p.onSession(ctx, s, req.Caller, func(c *conn) (err error) {
		res, err = c.session.GetPrompt(withCaller(ctx, req.Caller), params)
		return err
	})
	if err != nil {
		return nil, upstreamError(s, "get prompt "+rt.name, err)
	}
	if res.NeedsInput() || len(res.InputRequests) > 0 {
		// For a client that answers the server's input requests itself.
		raw, err := json.Marshal(res.InputRequests)
		if err != nil {
			return nil, fmt.Errorf("%s asked for input that cannot be passed on: %w", s.where(), err)
		}
		return &sdk.GetPromptResult{InputRequests: raw, RequestState: res.RequestState}, nil
	}
	out := &sdk.GetPromptResult{Description: sanitise(res.Description, maxDescription)}
	for _, m := range res.Messages {
		if m == nil {
			continue
		}
		content, ok := convertContent(m.Content)
		if !ok {
			p.log.Debug("prompt message dropped", "server", s.name, "type", fmt.Sprintf("%T", m.Content))
			continue
		}
		out.Messages = append(out.Messages, sdk.PromptMessage{Role: string(m.Role), Content: content})
	}
	return out, nil
}

// Complete asks the server that lists the prompt (sdk.RefPrompt, by its
// exposed name) or the resource template (sdk.RefResource, by its URI
// template, or a resource's URI) for argument suggestions, on the
// caller's session. A reference the provider does not relay is
// sdk.ErrInvalidParams; a server without the completions capability has
// no suggestions. It implements [sdk.Completer].
func (p *Provider) Complete(ctx context.Context, req *sdk.CompleteRequest) (*sdk.CompleteResult, error) {
	ref := &mcp.CompleteReference{Type: req.RefType}
	var s *server
	p.mu.RLock()
	switch req.RefType {
	case sdk.RefPrompt:
		if rt, ok := p.promptRoutes[req.RefName]; ok {
			s, ref.Name = rt.srv, rt.name
		}
	case sdk.RefResource:
		s, ref.URI = p.resourceRoutes[req.RefURI], req.RefURI
		for _, r := range p.templateRoutes {
			if r.template == req.RefURI {
				s = r.srv
				break
			}
		}
	}
	cat := (*conn)(nil)
	if s != nil {
		cat = p.conns[s.name]
	}
	p.mu.RUnlock()
	if s == nil {
		what := fmt.Sprintf("reference type %q", req.RefType)
		switch req.RefType {
		case sdk.RefPrompt:
			what = fmt.Sprintf("prompt %q", req.RefName)
		case sdk.RefResource:
			what = fmt.Sprintf("resource template %q", req.RefURI)
		}
		return nil, fmt.Errorf("upstream provider: %w: no %s to complete", sdk.ErrInvalidParams, what)
	}
	// Every session with a server declares the same capabilities: ask the
	// catalog's rather than open a client's session for nothing.
	if cat != nil && !hasCompletions(cat) {
		return &sdk.CompleteResult{}, nil
	}
	params := &mcp.CompleteParams{Ref: ref, Argument: mcp.CompleteParamsArgument{Name: req.ArgumentName, Value: req.ArgumentValue}}
	if len(req.Context) > 0 {
		params.Context = &mcp.CompleteContext{Arguments: req.Context}
	}
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	var res *mcp.CompleteResult
	err := p.onSession(ctx, s, req.Caller, func(c *conn) (err error) {
		if !hasCompletions(c) {
			res = &mcp.CompleteResult{}
			return nil
		}
		res, err = c.session.Complete(ctx, params)
		return err
	})
	if err != nil {
		return nil, upstreamError(s, "complete "+req.ArgumentName, err)
	}
	out := &sdk.CompleteResult{Values: res.Completion.Values, Total: res.Completion.Total, HasMore: res.Completion.HasMore}
	if len(out.Values) > sdk.MaxCompletionValues {
		out.Values, out.HasMore = out.Values[:sdk.MaxCompletionValues], true
	}
	return out, nil
}

// onSession runs f on caller's session with s. When the server forgot
// the session (HTTP 404) the request never ran: a new session is
// initialised once and f runs once more.
func (p *Provider) onSession(ctx context.Context, s *server, caller sdk.Caller, f func(*conn) error) error {
	c, release, err := p.session(ctx, s, caller)
	if err != nil {
		return err
	}
	err = f(c)
	release()
	if errors.Is(err, mcp.ErrSessionMissing) {
		p.log.Info("upstream session expired; initialising a new one", "server", s.name)
		p.dropSession(s, c, clientKey(caller))
		if c, release, err = p.session(ctx, s, caller); err != nil {
			return err
		}
		defer release()
		err = f(c)
	}
	return err
}

// upstreamError describes a failed request to s: a JSON-RPC -32602 wraps
// sdk.ErrInvalidParams with the server's message, sanitised; other errors
// name the server with URLs redacted.
func upstreamError(s *server, what string, err error) error {
	var werr *jsonrpc.Error
	if errors.As(err, &werr) {
		msg := sanitise(werr.Message, maxDescription)
		if werr.Code == jsonrpc.CodeInvalidParams {
			return fmt.Errorf("%s: %w: %s", s.where(), sdk.ErrInvalidParams, msg)
		}
		return fmt.Errorf("%s: %s: the server answered with error %d: %s", s.where(), what, werr.Code, msg)
	}
	return fmt.Errorf("%s: %s: %w", s.where(), what, redactedError{err})
}

// redactedError is err with the URLs in its text redacted; errors.Is and
// errors.As still see err.
type redactedError struct{ err error }

func (e redactedError) Error() string { return redactText(e.err.Error()) }
func (e redactedError) Unwrap() error { return e.err }

var (
	_ sdk.PromptProvider = (*Provider)(nil)
	_ sdk.Completer      = (*Provider)(nil)
)
