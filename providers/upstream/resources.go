package upstream

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/openhuman/openhuman-host/sdk"
)

// resourceCatalog lists the resources and resource templates of every
// connected server, URIs unchanged; a URI (or template) an earlier server
// already lists is skipped with a logged reason. A server without the
// resources capability contributes nothing; failing to list is logged and
// skips that server's resources, so its tools still load.
func (p *Provider) resourceCatalog(ctx context.Context, servers []*server, conns map[string]*conn) ([]sdk.Resource, []sdk.ResourceTemplate, map[string]*server, []templateRoute) {
	var resources []sdk.Resource
	var templates []sdk.ResourceTemplate
	byURI := map[string]*server{}
	var tmplRoutes []templateRoute
	seenTmpl := map[string]string{}
	for _, s := range servers {
		c := conns[s.name]
		if c == nil || !hasResources(c) {
			continue
		}
		list, tmpls, err := listResources(ctx, c)
		if err != nil {
			p.log.Warn("resources not relayed", "server", s.name, "error", err)
			continue
		}
		for _, r := range list {
			if r.URI == "" {
				continue
			}
			if prev, dup := byURI[r.URI]; dup {
				p.log.Warn("resource skipped", "server", s.name, "uri", sanitise(r.URI, 200), "reason", "already listed by server "+prev.name)
				continue
			}
			byURI[r.URI] = s
			resources = append(resources, sdk.Resource{URI: r.URI, Name: sanitise(r.Name, 200), Title: sanitise(r.Title, 200),
				Description: sanitise(r.Description, maxDescription), MIMEType: r.MIMEType, Size: r.Size})
		}
		for _, t := range tmpls {
			if t.URITemplate == "" {
				continue
			}
			if prev, dup := seenTmpl[t.URITemplate]; dup {
				p.log.Warn("resource template skipped", "server", s.name, "template", sanitise(t.URITemplate, 200), "reason", "already listed by server "+prev)
				continue
			}
			seenTmpl[t.URITemplate] = s.name
			tmplRoutes = append(tmplRoutes, templateRoute{template: t.URITemplate, prefix: templatePrefix(t.URITemplate), srv: s})
			templates = append(templates, sdk.ResourceTemplate{URITemplate: t.URITemplate, Name: sanitise(t.Name, 200), Title: sanitise(t.Title, 200),
				Description: sanitise(t.Description, maxDescription), MIMEType: t.MIMEType})
		}
	}
	return resources, templates, byURI, tmplRoutes
}

// templateRoute sends reads of URIs a server's template may produce to
// that server: those starting with the template's literal prefix.
type templateRoute struct {
	template string
	prefix   string
	srv      *server
}

// templatePrefix is the part of an RFC 6570 template before its first
// expression.
func templatePrefix(t string) string {
	if i := strings.IndexByte(t, '{'); i >= 0 {
		return t[:i]
	}
	return t
}

// canSubscribe reports whether the server declared resources.subscribe.
func canSubscribe(c *conn) bool {
	init := c.session.InitializeResult()
	return init != nil && init.Capabilities != nil && init.Capabilities.Resources != nil && init.Capabilities.Resources.Subscribe
}

// hasResources reports whether the server declared the resources
// capability.
func hasResources(c *conn) bool {
	init := c.session.InitializeResult()
	return init != nil && init.Capabilities != nil && init.Capabilities.Resources != nil
}

// listResources lists a server's resources and templates, all pages.
func listResources(ctx context.Context, c *conn) ([]*mcp.Resource, []*mcp.ResourceTemplate, error) {
	ctx, cancel := context.WithTimeout(ctx, c.srv.timeout)
	defer cancel()
	resources, err := listAll(ctx, c, "resources",
		func(ctx context.Context, cursor string) (*mcp.ListResourcesResult, error) {
			return c.session.ListResources(ctx, &mcp.ListResourcesParams{Cursor: cursor})
		},
		func(res *mcp.ListResourcesResult) ([]*mcp.Resource, string) { return res.Resources, res.NextCursor })
	if err != nil {
		return nil, nil, err
	}
	templates, err := listAll(ctx, c, "resource templates",
		func(ctx context.Context, cursor string) (*mcp.ListResourceTemplatesResult, error) {
			return c.session.ListResourceTemplates(ctx, &mcp.ListResourceTemplatesParams{Cursor: cursor})
		},
		func(res *mcp.ListResourceTemplatesResult) ([]*mcp.ResourceTemplate, string) {
			return res.ResourceTemplates, res.NextCursor
		})
	if err != nil {
		// Templates are optional even with the capability.
		templates = nil
	}
	return resources, templates, nil
}

// ReadResource reads a relayed resource from the server that lists it, or
// whose template's literal prefix the URI starts with (the longest such
// prefix wins), on the caller's session with it. An unknown URI, or one
// the server does not know, is sdk.ErrResourceNotFound.
func (p *Provider) ReadResource(ctx context.Context, req *sdk.ReadResourceRequest) (*sdk.ReadResourceResult, error) {
	if req.URI == StatusURI {
		b, err := json.Marshal(p.Servers())
		if err != nil {
			return nil, err
		}
		return &sdk.ReadResourceResult{Contents: []sdk.ResourceContents{{URI: StatusURI, MIMEType: "application/json", Text: string(b)}}}, nil
	}
	s, err := p.resourceServer(req.URI)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	var res *mcp.ReadResourceResult
	err = p.onSession(ctx, s, req.Caller, func(c *conn) (err error) {
		res, err = c.session.ReadResource(withCaller(ctx, req.Caller), &mcp.ReadResourceParams{URI: req.URI})
		return err
	})
	if err != nil {
		var werr *jsonrpc.Error
		if errors.As(err, &werr) && werr.Code == jsonrpc.CodeInvalidParams {
			return nil, fmt.Errorf("%s: %w: %s", s.where(), sdk.ErrResourceNotFound, req.URI)
		}
		return nil, fmt.Errorf("%s: read %s: %s", s.where(), sanitise(req.URI, 200), redactText(err.Error()))
	}
	out := &sdk.ReadResourceResult{}
	for _, rc := range res.Contents {
		out.Contents = append(out.Contents, sdk.ResourceContents{URI: rc.URI, MIMEType: rc.MIMEType, Text: rc.Text, Blob: rc.Blob})
	}
	return out, nil
}

// resourceServer returns the server that lists uri, or whose template's
// literal prefix uri starts with (the longest such prefix wins); for none,
// an error wrapping sdk.ErrResourceNotFound.
func (p *Provider) resourceServer(uri string) (*server, error) {
	p.mu.RLock()
	defer p.mu.RUnlock()
	if s := p.resourceRoutes[uri]; s != nil {
		return s, nil
	}
	var s *server
	best := -1
	for _, r := range p.templateRoutes {
		if strings.HasPrefix(uri, r.prefix) && len(r.prefix) > best {
			s, best = r.srv, len(r.prefix)
		}
	}
	if s == nil {
		return nil, fmt.Errorf("upstream provider: %w: %s", sdk.ErrResourceNotFound, uri)
	}
	return s, nil
}

// Subscribe subscribes req.Caller's session with the server that serves
// req.URI (routed as reads are) to the resource's updates, which reach
// the host as NotifyResourceUpdated. The subscription is remembered and
// renewed when the session is opened again. A server without
// resources.subscribe is accepted silently: no updates will come. An
// unknown URI, or one the server refuses, is sdk.ErrResourceNotFound. It
// implements [sdk.Subscriber].
func (p *Provider) Subscribe(ctx context.Context, req *sdk.SubscribeRequest) error {
	s, err := p.resourceServer(req.URI)
	if err != nil {
		return err
	}
	client := clientKey(req.Caller)
	p.mu.RLock()
	cat := p.conns[s.name]
	p.mu.RUnlock()
	// Every session with a server declares the same capabilities: ask the
	// catalog's rather than open a client's session for nothing.
	if cat != nil && !canSubscribe(cat) {
		p.log.Debug("subscription not relayed", "server", s.name, "reason", "the server does not declare resources.subscribe")
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	subscribed := false
	err = p.onSession(ctx, s, req.Caller, func(c *conn) error {
		if !canSubscribe(c) {
			return nil
		}
		subscribed = true
		return c.session.Subscribe(ctx, &mcp.SubscribeParams{URI: req.URI})
	})
	if err != nil {
		return subscribeError(s, req.URI, "subscribe", err)
	}
	if subscribed {
		p.mu.Lock()
		st := p.stateLocked(client)
		if st.subs[s.name] == nil {
			st.subs[s.name] = map[string]bool{}
		}
		st.subs[s.name][req.URI] = true
		p.mu.Unlock()
	}
	return nil
}

// Unsubscribe ends req.Caller's subscription to req.URI on its open
// session with the server (a session that is not open has none) and
// forgets it. An unknown URI is sdk.ErrResourceNotFound. It implements
// [sdk.Subscriber].
func (p *Provider) Unsubscribe(ctx context.Context, req *sdk.SubscribeRequest) error {
	s, err := p.resourceServer(req.URI)
	if err != nil {
		return err
	}
	client := clientKey(req.Caller)
	p.mu.Lock()
	if st := p.states[client]; st != nil {
		delete(st.subs[s.name], req.URI)
	}
	p.mu.Unlock()
	c := p.openSession(s, client)
	if c == nil || !canSubscribe(c) {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	if err := c.session.Unsubscribe(ctx, &mcp.UnsubscribeParams{URI: req.URI}); err != nil {
		return subscribeError(s, req.URI, "unsubscribe", err)
	}
	return nil
}

// subscribeError describes a failed (un)subscription: a JSON-RPC -32602
// (the server's resource-not-found) wraps sdk.ErrResourceNotFound.
func subscribeError(s *server, uri, what string, err error) error {
	var werr *jsonrpc.Error
	if errors.As(err, &werr) && werr.Code == jsonrpc.CodeInvalidParams {
		return fmt.Errorf("%s: %w: %s", s.where(), sdk.ErrResourceNotFound, uri)
	}
	return upstreamError(s, what+" "+sanitise(uri, 200), err)
}

var _ sdk.Subscriber = (*Provider)(nil)
