package upstream

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
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
