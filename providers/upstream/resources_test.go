package upstream

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/openhuman/openhuman-host/sdk"
)

// Resources and resource templates are relayed with their URIs unchanged,
// and reads reach the server that lists them.
func TestResourcesRelayed(t *testing.T) {
	s := mcp.NewServer(&mcp.Implementation{Name: "notes", Version: "1"}, nil)
	s.AddResource(&mcp.Resource{URI: "note://welcome", Name: "welcome", Description: "The \x1b[31mwelcome\x1b[0m note.", MIMEType: "text/plain"},
		func(_ context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: req.Params.URI, MIMEType: "text/plain", Text: "hello"}}}, nil
		})
	s.AddResourceTemplate(&mcp.ResourceTemplate{URITemplate: "note://items/{id}", Name: "item", MIMEType: "text/plain"},
		func(_ context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			id := strings.TrimPrefix(req.Params.URI, "note://items/")
			if id == "missing" {
				return nil, mcp.ResourceNotFoundError(req.Params.URI)
			}
			return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: req.Params.URI, MIMEType: "text/plain", Text: "item " + id}}}, nil
		})
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, nil)
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)

	harness, _ := start(t, map[string]any{"name": "notes", "endpoint": srv.URL})
	cat := harness.Catalog
	if len(cat.Resources) != 1 || cat.Resources[0].URI != "note://welcome" || cat.Resources[0].Description != "The [31mwelcome[0m note." {
		t.Fatalf("resources = %+v", cat.Resources)
	}
	if len(cat.ResourceTemplates) != 1 || cat.ResourceTemplates[0].URITemplate != "note://items/{id}" {
		t.Fatalf("templates = %+v", cat.ResourceTemplates)
	}
	ctx := context.Background()
	res, err := harness.Read(ctx, "note://welcome")
	if err != nil || len(res.Contents) != 1 || res.Contents[0].Text != "hello" {
		t.Fatalf("read note://welcome: %+v %v", res, err)
	}
	res, err = harness.Read(ctx, "note://items/42")
	if err != nil || len(res.Contents) != 1 || res.Contents[0].Text != "item 42" {
		t.Fatalf("read through the template: %+v %v", res, err)
	}
	for _, uri := range []string{"note://items/missing", "other://x"} {
		if _, err := harness.Read(ctx, uri); !errors.Is(err, sdk.ErrResourceNotFound) {
			t.Errorf("read %s: %v, want ErrResourceNotFound", uri, err)
		}
	}
}

// subscribableNotes is a notes server whose (un)subscriptions are sent to
// subs as "sub <uri>" and "unsub <uri>", with a tool ping.
func subscribableNotes(subs chan<- string) *mcp.Server {
	s := mcp.NewServer(&mcp.Implementation{Name: "notes", Version: "1"}, &mcp.ServerOptions{
		SubscribeHandler: func(_ context.Context, req *mcp.SubscribeRequest) error {
			subs <- "sub " + req.Params.URI
			return nil
		},
		UnsubscribeHandler: func(_ context.Context, req *mcp.UnsubscribeRequest) error {
			subs <- "unsub " + req.Params.URI
			return nil
		},
	})
	read := func(_ context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
		return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: req.Params.URI, Text: "x"}}}, nil
	}
	s.AddResource(&mcp.Resource{URI: "note://welcome", Name: "welcome"}, read)
	s.AddResourceTemplate(&mcp.ResourceTemplate{URITemplate: "note://items/{id}", Name: "item"}, read)
	mcp.AddTool(s, &mcp.Tool{Name: "ping", Description: "Pong."},
		func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "pong"}}}, nil, nil
		})
	return s
}

// Subscriptions go to the caller's session with the server that serves
// the URI; the server's updates reach the host; an unsubscribed URI is
// not renewed, a subscribed one is when the session is opened again after
// the server restarted; a server without resources.subscribe accepts
// subscriptions silently.
func TestSubscriptionsRelayed(t *testing.T) {
	subs := make(chan string, 10)
	first := subscribableNotes(subs)
	var current atomic.Pointer[http.Handler]
	newHandler := func(s *mcp.Server) *http.Handler {
		h := http.Handler(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, nil))
		return &h
	}
	current.Store(newHandler(first))
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { (*current.Load()).ServeHTTP(w, r) }))
	t.Cleanup(srv.Close)

	plain := mcp.NewServer(&mcp.Implementation{Name: "plain", Version: "1"}, nil)
	plain.AddResource(&mcp.Resource{URI: "plain://r", Name: "r"}, func(context.Context, *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
		return &mcp.ReadResourceResult{}, nil
	})
	host := newFakeHost()
	p, _ := configure(t, host,
		map[string]any{"name": "notes", "endpoint": srv.URL},
		map[string]any{"name": "plain", "endpoint": serve(t, plain, false, nil)},
	)
	ctx := context.Background()
	a := caller("A", "")
	for _, uri := range []string{"note://welcome", "note://items/7"} {
		if err := p.Subscribe(ctx, &sdk.SubscribeRequest{URI: uri, Caller: a}); err != nil {
			t.Fatalf("subscribe %s: %v", uri, err)
		}
		if got := receive(t, subs, "the subscription"); got != "sub "+uri {
			t.Fatalf("upstream got %q, want sub %s", got, uri)
		}
	}
	got := until(t, host.updated, "NotifyResourceUpdated", func() {
		_ = first.ResourceUpdated(ctx, &mcp.ResourceUpdatedNotificationParams{URI: "note://welcome"})
	})
	if got != "note://welcome" {
		t.Errorf("NotifyResourceUpdated(%q)", got)
	}
	if err := p.Unsubscribe(ctx, &sdk.SubscribeRequest{URI: "note://items/7", Caller: a}); err != nil {
		t.Fatal(err)
	}
	if got := receive(t, subs, "the unsubscription"); got != "unsub note://items/7" {
		t.Fatalf("upstream got %q", got)
	}

	// The server restarts and forgets every session: A's next request
	// opens a new session, which subscribes again to what A still wants.
	second := subscribableNotes(subs)
	current.Store(newHandler(second))
	res, err := p.CallTool(ctx, &sdk.CallToolRequest{Name: "notes__ping", Arguments: json.RawMessage(`{}`), Caller: a})
	if err != nil || res.IsError || res.Text() != "pong" {
		t.Fatalf("ping after the restart: %v %+v", err, res)
	}
	if got := receive(t, subs, "the renewed subscription"); got != "sub note://welcome" {
		t.Fatalf("after the restart the upstream got %q, want sub note://welcome", got)
	}
	got = until(t, host.updated, "NotifyResourceUpdated after the restart", func() {
		_ = second.ResourceUpdated(ctx, &mcp.ResourceUpdatedNotificationParams{URI: "note://welcome"})
	})
	if got != "note://welcome" {
		t.Errorf("NotifyResourceUpdated(%q) after the restart", got)
	}
	select {
	case extra := <-subs:
		t.Errorf("unexpected upstream (un)subscription %q", extra)
	default:
	}

	if err := p.Subscribe(ctx, &sdk.SubscribeRequest{URI: "plain://r", Caller: a}); err != nil {
		t.Errorf("subscribe on a server without resources.subscribe: %v", err)
	}
	p.mu.RLock()
	_, opened := p.clients["plain\x00A"]
	p.mu.RUnlock()
	if opened {
		t.Error("a session was opened to subscribe on a server that cannot")
	}
	for _, f := range []func(context.Context, *sdk.SubscribeRequest) error{p.Subscribe, p.Unsubscribe} {
		if err := f(ctx, &sdk.SubscribeRequest{URI: "other://x", Caller: a}); !errors.Is(err, sdk.ErrResourceNotFound) {
			t.Errorf("unknown URI: %v, want ErrResourceNotFound", err)
		}
	}
}
