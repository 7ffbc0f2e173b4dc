package upstream

import (
	"context"
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
			tmplRoutes = append(tmplRoutes, templateRoute{prefix: templatePrefix(t.URITemplate), srv: s})
			templates = append(templates, sdk.ResourceTemplate{URITemplate: t.URITemplate, Name: sanitise(t.Name, 200), Title: sanitise(t.Title, 200),
				Description: sanitise(t.Description, maxDescription), MIMEType: t.MIMEType})
		}
	}
	return resources, templates, byURI, tmplRoutes
}

// templateRoute sends reads of URIs a server's template may produce to
// that server: those starting with the template's literal prefix.
type templateRoute struct {
	prefix string
	srv    *server
}

// templatePrefix is the part of an RFC 6570 template before its first
// expression.
func templatePrefix(t string) string {
	if i := strings.IndexByte(t, '{'); i >= 0 {
		return t[:i]
	}
	return t
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
	var resources []*mcp.Resource
	cursor := ""
	for range maxListPages {
		res, err := c.session.ListResources(ctx, &mcp.ListResourcesParams{Cursor: cursor})
		if err != nil {
			return nil, nil, fmt.Errorf("%s: cannot list its resources: %s", c.srv.where(), redactText(err.Error()))
		}
		resources = append(resources, res.Resources...)
		if cursor = res.NextCursor; cursor == "" {
			break
		}
	}
	var templates []*mcp.ResourceTemplate
	cursor = ""
	for range maxListPages {
		res, err := c.session.ListResourceTemplates(ctx, &mcp.ListResourceTemplatesParams{Cursor: cursor})
		if err != nil {
			// Templates are optional even with the capability.
			break
		}
		templates = append(templates, res.ResourceTemplates...)
		if cursor = res.NextCursor; cursor == "" {
			break
		}
	}
	return resources, templates, nil
}

// ReadResource reads a relayed resource from the server that lists it, or
// whose template's literal prefix the URI starts with (the longest such
// prefix wins). An unknown URI, or one the server does not know, is
// sdk.ErrResourceNotFound.
func (p *Provider) ReadResource(ctx context.Context, req *sdk.ReadResourceRequest) (*sdk.ReadResourceResult, error) {
	p.mu.RLock()
	s := p.resourceRoutes[req.URI]
	tmpls := p.templateRoutes
	p.mu.RUnlock()
	if s == nil {
		best := -1
		for _, r := range tmpls {
			if strings.HasPrefix(req.URI, r.prefix) && len(r.prefix) > best {
				s, best = r.srv, len(r.prefix)
			}
		}
	}
	if s == nil {
		return nil, fmt.Errorf("upstream provider: %w: %s", sdk.ErrResourceNotFound, req.URI)
	}
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	c, err := p.session(ctx, s, req.Caller.SessionHash)
	if err != nil {
		return nil, err
	}
	res, err := c.session.ReadResource(ctx, &mcp.ReadResourceParams{URI: req.URI})
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
