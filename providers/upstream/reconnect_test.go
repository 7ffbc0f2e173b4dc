package upstream

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// A stdio upstream that exits is started again at the next call.
func TestDeadStdioUpstreamIsRestarted(t *testing.T) {
	h, p := start(t, map[string]any{"name": "local", "command": stdioServer, "prefix": ""})
	ctx := context.Background()
	if res, err := h.Call(ctx, "echo", map[string]any{"text": "a"}); err != nil || text(res) != "stdio:a" {
		t.Fatalf("first call: %v %+v", err, res)
	}
	p.mu.RLock()
	old := p.conns["local"]
	p.mu.RUnlock()
	if err := old.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	select {
	case <-old.done:
	case <-time.After(5 * time.Second):
		t.Fatal("the session did not notice the exit")
	}
	res, err := h.Call(ctx, "echo", map[string]any{"text": "b"})
	if err != nil || res.IsError || text(res) != "stdio:b" {
		t.Fatalf("call after the exit: %v %+v", err, res)
	}
	p.mu.RLock()
	fresh := p.conns["local"]
	p.mu.RUnlock()
	if fresh == old || fresh.cmd.Process.Pid == old.cmd.Process.Pid {
		t.Error("no new process")
	}
}

// An HTTP upstream that forgets the session (404) gets a new one, and the
// call is sent once more.
func TestExpiredHTTPSessionIsInitialisedAgain(t *testing.T) {
	newHandler := func() http.Handler {
		s := mcp.NewServer(&mcp.Implementation{Name: "h", Version: "1"}, nil)
		mcp.AddTool(s, &mcp.Tool{Name: "echo", Description: "Echo."},
			func(_ context.Context, _ *mcp.CallToolRequest, in textArgs) (*mcp.CallToolResult, any, error) {
				return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "http:" + in.Text}}}, nil, nil
			})
		return mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, nil)
	}
	var current atomic.Pointer[http.Handler]
	first := newHandler()
	current.Store(&first)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { (*current.Load()).ServeHTTP(w, r) }))
	t.Cleanup(srv.Close)
	h, _ := start(t, map[string]any{"name": "web", "endpoint": srv.URL + "/mcp"})
	ctx := context.Background()
	if res, err := h.Call(ctx, "web__echo", map[string]any{"text": "a"}); err != nil || text(res) != "http:a" {
		t.Fatalf("first call: %v %+v", err, res)
	}
	// A restarted server knows no sessions: requests with the old id get 404.
	second := newHandler()
	current.Store(&second)
	res, err := h.Call(ctx, "web__echo", map[string]any{"text": "b"})
	if err != nil || res.IsError || text(res) != "http:b" {
		t.Fatalf("call after the session expired: %v %+v", err, res)
	}
}
