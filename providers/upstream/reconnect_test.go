package upstream

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/openhuman/openhuman-host/sdk"
	"github.com/openhuman/openhuman-host/sdk/testwait"
)

// A stdio upstream that exits is started again at the next call.
func TestDeadStdioUpstreamIsRestarted(t *testing.T) {
	h, p := start(t, map[string]any{"name": "local", "command": stdioServer, "prefix": ""})
	ctx := context.Background()
	if res, err := h.Call(ctx, "echo", map[string]any{"text": "a"}); err != nil || res.Text() != "stdio:a" {
		t.Fatalf("first call: %v %+v", err, res)
	}
	p.mu.RLock()
	old := p.conns["local"]
	p.mu.RUnlock()
	if err := old.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	testwait.Recv(t, old.done, "the session to notice the exit")
	res, err := h.Call(ctx, "echo", map[string]any{"text": "b"})
	if err != nil || res.IsError || res.Text() != "stdio:b" {
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
	if res, err := h.Call(ctx, "web__echo", map[string]any{"text": "a"}); err != nil || res.Text() != "http:a" {
		t.Fatalf("first call: %v %+v", err, res)
	}
	// A restarted server knows no sessions: requests with the old id get 404.
	second := newHandler()
	current.Store(&second)
	res, err := h.Call(ctx, "web__echo", map[string]any{"text": "b"})
	if err != nil || res.IsError || res.Text() != "http:b" {
		t.Fatalf("call after the session expired: %v %+v", err, res)
	}
}

// Each host session gets its own session with an upstream server, and
// one of them serves the catalog; a call from no session gets a shared
// session, closed once the call has ended while clients have sessions.
func TestSessionPerClient(t *testing.T) {
	h, p := start(t, map[string]any{"name": "local", "command": stdioServer, "prefix": ""})
	ctx := context.Background()
	call := func(hash string) {
		t.Helper()
		res, err := h.Provider.CallTool(ctx, &sdk.CallToolRequest{Name: "echo", Arguments: []byte(`{"text":"x"}`), Caller: sdk.Caller{SessionHash: hash}})
		if err != nil || res.IsError {
			t.Fatalf("call for %q: %v %+v", hash, err, res)
		}
	}
	call("sha256:aaaaaaaa")
	call("sha256:bbbbbbbb")
	call("sha256:aaaaaaaa")
	call("")
	testwait.Until(t, "the shared session to end", func() bool {
		p.mu.RLock()
		defer p.mu.RUnlock()
		return p.shared["local"] == nil && len(p.retired) == 0
	})
	p.mu.RLock()
	defer p.mu.RUnlock()
	if len(p.clients) != 2 {
		t.Fatalf("%d client sessions, want 2", len(p.clients))
	}
	pids := map[int]bool{}
	for _, cc := range p.clients {
		pids[cc.conn.cmd.Process.Pid] = true
	}
	if len(pids) != 2 {
		t.Errorf("%d distinct upstream processes for 2 clients, want 2", len(pids))
	}
	if cat := p.conns["local"]; cat == nil || !pids[cat.cmd.Process.Pid] {
		t.Error("the catalog is not served by a client's session")
	}
}

// Beyond maxClientSessions the least recently used client session closes.
func TestClientSessionsAreCapped(t *testing.T) {
	h, p := start(t, map[string]any{"name": "local", "command": stdioServer, "prefix": ""})
	ctx := context.Background()
	var first *conn
	for i := range maxClientSessions + 1 {
		hash := fmt.Sprintf("sha256:%08x", i)
		res, err := h.Provider.CallTool(ctx, &sdk.CallToolRequest{Name: "echo", Arguments: []byte(`{"text":"x"}`), Caller: sdk.Caller{SessionHash: hash}})
		if err != nil || res.IsError {
			t.Fatalf("call %d: %v %+v", i, err, res)
		}
		if i == 0 {
			p.mu.RLock()
			first = p.clients["local\x00"+hash].conn
			p.mu.RUnlock()
		}
	}
	p.mu.RLock()
	n, kept := len(p.clients), p.clients["local\x00sha256:00000000"] != nil
	p.mu.RUnlock()
	if n != maxClientSessions || kept {
		t.Errorf("%d client sessions (the oldest kept: %v), want %d without the oldest", n, kept, maxClientSessions)
	}
	testwait.Recv(t, first.done, "the evicted session to close")
}

// A session with a call in flight is not evicted under the call: the
// least recently used idle one goes instead, and the busy one once its
// call has ended.
func TestBusyClientSessionIsNotEvicted(t *testing.T) {
	h, p := start(t, map[string]any{"name": "local", "command": stdioServer, "prefix": ""})
	ctx := context.Background()
	callAs := func(i int) {
		t.Helper()
		res, err := h.Provider.CallTool(ctx, &sdk.CallToolRequest{Name: "echo", Arguments: []byte(`{"text":"x"}`), Caller: sdk.Caller{SessionHash: fmt.Sprintf("sha256:%08x", i)}})
		if err != nil || res.IsError {
			t.Fatalf("call %d: %v %+v", i, err, res)
		}
	}
	callAs(0)
	p.mu.RLock()
	busy := p.clients["local\x00sha256:00000000"].conn
	p.mu.RUnlock()
	call := busy.relay.begin(ctx, &sdk.CallToolRequest{Name: "echo"})
	for i := 1; i <= maxClientSessions; i++ {
		callAs(i)
	}
	p.mu.RLock()
	n, kept, second := len(p.clients), p.clients["local\x00sha256:00000000"] != nil, p.clients["local\x00sha256:00000001"] != nil
	p.mu.RUnlock()
	if !kept || second || n != maxClientSessions || !busy.alive() {
		t.Fatalf("with a call in flight on the oldest: %d sessions, oldest kept %v (alive %v), next oldest kept %v; want %d, true (true), false",
			n, kept, busy.alive(), second, maxClientSessions)
	}
	busy.relay.end(call)
	callAs(maxClientSessions + 1)
	p.mu.RLock()
	n, kept = len(p.clients), p.clients["local\x00sha256:00000000"] != nil
	p.mu.RUnlock()
	if kept || n != maxClientSessions {
		t.Errorf("after the call ended: %d sessions, oldest kept %v; want %d without it", n, kept, maxClientSessions)
	}
}

// Two clients' sessions with one server open in parallel: one slow
// initialize does not hold the other client's up.
func TestClientSessionsOpenInParallel(t *testing.T) {
	s := mcp.NewServer(&mcp.Implementation{Name: "h", Version: "1"}, nil)
	mcp.AddTool(s, &mcp.Tool{Name: "echo", Description: "Echo."},
		func(_ context.Context, _ *mcp.CallToolRequest, in textArgs) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "http:" + in.Text}}}, nil, nil
		})
	handler := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, nil)
	// After the shared session, every initialize waits until two are in
	// flight at once: opened one after the other, the first would wait
	// until the test's deadline, which fails the test.
	giveUp := testwait.Deadline(t)
	var inits atomic.Int32
	var alone atomic.Bool
	both := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(body))
		if bytes.Contains(body, []byte(`"method":"initialize"`)) {
			switch inits.Add(1) {
			case 1: // the shared session, at Configure
			case 3:
				close(both)
			default:
				select {
				case <-both:
				case <-time.After(time.Until(giveUp)):
					alone.Store(true)
				}
			}
		}
		handler.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	h, _ := start(t, map[string]any{"name": "web", "endpoint": srv.URL + "/mcp"})
	var wg sync.WaitGroup
	for i := range 2 {
		wg.Go(func() {
			res, err := h.Provider.CallTool(t.Context(), &sdk.CallToolRequest{Name: "web__echo", Arguments: []byte(`{"text":"x"}`),
				Caller: sdk.Caller{SessionToken: fmt.Sprintf("client-%d", i)}})
			if err != nil || res.IsError {
				t.Errorf("call of client %d: %v %+v", i, err, res)
			}
		})
	}
	wg.Wait()
	if alone.Load() {
		t.Fatal("one client's initialize waited alone until the test's deadline: the sessions were opened one after the other")
	}
}

// A stdio upstream that dies during a call fails that call saying the
// call may or may not have run, and the next call starts it again.
func TestStdioUpstreamDyingDuringACall(t *testing.T) {
	h, p := start(t, map[string]any{"name": "local", "command": stdioServer, "prefix": ""})
	caller := sdk.Caller{SessionToken: "dying"}
	type outcome struct {
		res *sdk.CallToolResult
		err error
	}
	done := make(chan outcome, 1)
	go func() {
		res, err := h.Provider.CallTool(t.Context(), &sdk.CallToolRequest{Name: "hang", Arguments: []byte(`{}`), Caller: caller})
		done <- outcome{res, err}
	}()
	var c *conn
	testwait.Until(t, "the hang call to start", func() bool {
		p.mu.RLock()
		defer p.mu.RUnlock()
		if cc := p.clients["local\x00"+clientKey(caller)]; cc != nil {
			c = cc.conn
		}
		return c != nil && c.busy()
	})
	if err := c.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	got := testwait.Recv(t, done, "the call to end after its server's death")
	want := `hang: upstream server "local" (command ` + stdioServer + `) ended the session during the call (the call may or may not have run); it is reconnected at the next call`
	if got.err != nil || got.res == nil || !got.res.IsError || got.res.Text() != want {
		t.Fatalf("call during the server's death: %v %+v\nwant isError %q", got.err, got.res, want)
	}
	res, err := h.Provider.CallTool(t.Context(), &sdk.CallToolRequest{Name: "echo", Arguments: []byte(`{"text":"again"}`), Caller: caller})
	if err != nil || res.IsError || res.Text() != "stdio:again" {
		t.Fatalf("next call: %v %+v", err, res)
	}
}
