package upstream

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"maps"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/openhuman/openhuman-host/sdk"
	"github.com/openhuman/openhuman-host/sdk/sdktest"
	"github.com/openhuman/openhuman-host/sdk/testwait"
)

// closedAddress returns the loopback address of a server that has
// closed: nothing listens on it until something takes its port.
func closedAddress() string {
	s := httptest.NewServer(http.NotFoundHandler())
	s.Close()
	return s.Listener.Addr().String()
}

// TestOneBadServerNeverHidesTheOthers configures a dead HTTP server, one
// that answers 401 and a healthy stdio server: the healthy one's tools are
// listed and callable, the others are reported, and once the dead one
// starts its tools appear without configuring again.
func TestOneBadServerNeverHidesTheOthers(t *testing.T) {
	deadAddr := closedAddress()
	unauthorized := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("WWW-Authenticate", `Bearer realm="test"`)
		http.Error(w, "sign in first", http.StatusUnauthorized)
	}))
	defer unauthorized.Close()

	host := newFakeHost()
	p := New(nil)
	defer p.Close()
	raw, err := json.Marshal(map[string]any{"servers": []any{
		map[string]any{"name": "dead", "endpoint": "http://" + deadAddr + "/mcp"},
		map[string]any{"name": "locked", "endpoint": unauthorized.URL},
		map[string]any{"name": "local", "command": stdioServer},
	}})
	if err != nil {
		t.Fatal(err)
	}
	ctx := testwait.Context(t)
	if err := p.Configure(ctx, &sdk.ConfigureRequest{Config: raw, Host: host}); err != nil {
		t.Fatalf("Configure: %v", err)
	}
	states := map[string]ServerStatus{}
	for _, s := range p.Servers() {
		states[s.Name] = s
	}
	if states["dead"].State != StateFailed || states["locked"].State != StateFailed || states["local"].State != StateConnected {
		t.Fatalf("Servers() = %+v, want dead and locked failed, local connected", p.Servers())
	}
	if !strings.Contains(states["locked"].Error, "401") && !strings.Contains(strings.ToLower(states["locked"].Error), "unauthorized") {
		t.Errorf("the 401 server's error = %q, want it to say so", states["locked"].Error)
	}
	cat, err := p.Describe(ctx)
	if err != nil {
		t.Fatalf("Describe with two servers down: %v", err)
	}
	if names := toolNames(cat); !slices.Contains(names, "local__echo") || slices.ContainsFunc(names, func(n string) bool { return !strings.HasPrefix(n, "local__") }) {
		t.Fatalf("tools = %v, want the local server's only", names)
	}
	res, err := p.CallTool(ctx, &sdk.CallToolRequest{Name: "local__echo", Arguments: json.RawMessage(`{"text":"hi"}`)})
	if err != nil || res.IsError {
		t.Fatalf("local__echo with two servers down: %v %+v", err, res)
	}

	// The dead server comes up at its address.
	srv := mcp.NewServer(&mcp.Implementation{Name: "late", Version: "1"}, nil)
	mcp.AddTool(srv, &mcp.Tool{Name: "hello"}, func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "late hello"}}}, nil, nil
	})
	late, err := net.Listen("tcp", deadAddr)
	if err != nil {
		t.Skipf("the dead server's port was taken meanwhile: %v", err)
	}
	hs := &http.Server{Handler: mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil)}
	go func() { _ = hs.Serve(late) }()
	defer hs.Close()
	testwait.Recv(t, host.catalog, "the host to be told the catalog changed")
	testwait.Until(t, "the late server's tools", func() bool {
		cat, err := p.Describe(ctx)
		return err == nil && slices.Contains(toolNames(cat), "dead__hello")
	})
	res, err = p.CallTool(ctx, &sdk.CallToolRequest{Name: "dead__hello", Arguments: json.RawMessage(`{}`)})
	if err != nil || res.IsError || res.Text() != "late hello" {
		t.Fatalf("dead__hello once it is up: %v %+v", err, res)
	}
}

// TestUnavailableServerIsReportedNotStarted: a server the host could not
// set up (a variable its env needs is unset) is reported and never
// started, and the others run.
func TestUnavailableServerIsReportedNotStarted(t *testing.T) {
	p, _ := configure(t, newFakeHost(),
		map[string]any{"name": "gh", "command": "no-such-command-xyz", "unavailable": "upstream server gh: env.A: environment variable A is not set"},
		map[string]any{"name": "local", "command": stdioServer})
	st := p.Servers()
	if len(st) != 2 || st[0].State != StateFailed || st[0].Attempts != 0 || !st[0].NextAttempt.IsZero() || st[1].State != StateConnected {
		t.Fatalf("Servers() = %+v", st)
	}
	_, err := p.CallTool(testwait.Context(t), &sdk.CallToolRequest{Name: "gh__x", Arguments: json.RawMessage(`{}`)})
	if err == nil || !strings.Contains(err.Error(), `upstream server "gh" cannot start: upstream server gh: env.A: environment variable A is not set`) {
		t.Errorf("calling a tool of the server: %v", err)
	}
}

// TestServerThatDiesIsReportedDown: a server that exits and cannot be
// started again is reported failed, not still connected.
func TestServerThatDiesIsReportedDown(t *testing.T) {
	marker := filepath.Join(t.TempDir(), "started")
	p, _ := configure(t, newFakeHost(), map[string]any{"name": "once", "command": "sh",
		"args": []string{"-c", `if [ -e "$0" ]; then echo "refusing to start again" >&2; exit 1; fi; touch "$0"; exec "$1"`, marker, stdioServer}})
	p.mu.RLock()
	c := p.conns["once"]
	p.mu.RUnlock()
	if err := c.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	testwait.Until(t, "the session to end", func() bool { return !c.alive() })
	res, err := p.CallTool(testwait.Context(t), &sdk.CallToolRequest{Name: "once__echo", Arguments: json.RawMessage(`{"text":"x"}`)})
	if err != nil || !res.IsError {
		t.Fatalf("a call once the server cannot start: %v %+v", err, res)
	}
	if st := p.Servers(); len(st) != 1 || st[0].State != StateFailed || !strings.Contains(st[0].Error, "refusing to start again") {
		t.Errorf("Servers() = %+v, want once failed with its stderr", st)
	}
}

// TestHTTPServerDownIsReported: a connected HTTP server that goes away is
// reported failed with why, not connected, without a call, whether the
// shared session or a client's serves its catalog; once it is back the
// provider reconnects it by itself.
func TestHTTPServerDownIsReported(t *testing.T) {
	t.Run("shared", func(t *testing.T) { testHTTPServerDown(t, false) })
	t.Run("client", func(t *testing.T) { testHTTPServerDown(t, true) })
}

func testHTTPServerDown(t *testing.T, client bool) {
	handler := echoHandler("flaky", "http:")
	serve := func(addr string) *http.Server {
		t.Helper()
		l, err := net.Listen("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		srv := &http.Server{Handler: handler}
		go func() { _ = srv.Serve(l) }()
		t.Cleanup(func() { _ = srv.Close() })
		return srv
	}
	addr := closedAddress()
	srv := serve(addr)
	// Pinged often, so that the test need not wait 30 s for it.
	p, state := startWeb(t, &Options{KeepAlive: 100 * time.Millisecond}, "http://"+addr+"/mcp")
	if client {
		callEcho(t, p, "web")
		testwait.Until(t, "the client's session to serve the catalog alone", func() bool {
			p.mu.RLock()
			defer p.mu.RUnlock()
			return p.conns["web"].key != "" && p.shared["web"] == nil
		})
	}
	_ = srv.Close()
	testwait.Until(t, "the server reported down", func() bool { return state().State == StateFailed })
	if st := state(); !strings.Contains(st.Error, "127.0.0.1") || st.Error == "" {
		t.Errorf("a server that went away: %+v, want its address and why", st)
	}
	serve(addr)
	testwait.Until(t, "the server reconnected by itself", func() bool { return state().State == StateConnected })
}

// TestUnansweredPingsEndTheCatalogSession: a client's session serving the
// catalog of a server that stops answering pings (its connection still
// open) is ended after two unanswered pings, and the server is reported
// failed; once it answers again it is reconnected and reported connected.
func TestUnansweredPingsEndTheCatalogSession(t *testing.T) {
	unansweredPings(t, &Options{KeepAlive: 100 * time.Millisecond}, nil)
}

// TestPingIntervalOfOneServer: a server's ping_interval_secs has its
// catalog session pinged though the provider's default pings none.
func TestPingIntervalOfOneServer(t *testing.T) {
	unansweredPings(t, &Options{KeepAlive: -1}, map[string]any{"ping_interval_secs": 1})
}

// unansweredPings runs TestUnansweredPingsEndTheCatalogSession with the
// provider's opts and extra keys in the server's entry.
func unansweredPings(t *testing.T, opts *Options, extra map[string]any) {
	handler := echoHandler("mute", "http:")
	var mute atomic.Bool
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if mute.Load() && bytes.Contains(body, []byte(`"method":"ping"`)) {
			<-r.Context().Done()
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		handler.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	p := New(opts)
	t.Cleanup(func() { _ = p.Close() })
	entry := map[string]any{"name": "web", "endpoint": srv.URL + "/mcp"}
	maps.Copy(entry, extra)
	sdktest.Start(t, p, &sdktest.Options{Config: map[string]any{"servers": []map[string]any{entry}}})
	callEcho(t, p, "web")
	p.mu.RLock()
	cat := p.conns["web"]
	p.mu.RUnlock()
	if cat.key == "" {
		t.Fatal("the client's session does not serve the catalog")
	}
	mute.Store(true)
	testwait.Recv(t, cat.done, "the unanswered session to end")
	testwait.Until(t, "the server reported down", func() bool {
		st := p.Servers()
		return len(st) == 1 && st[0].State == StateFailed
	})
	mute.Store(false)
	testwait.Until(t, "the server reconnected", func() bool {
		st := p.Servers()
		return len(st) == 1 && st[0].State == StateConnected
	})
}

// TestRefusedCatalogSessionIsNotReopened: a server that accepts the
// session but refuses its credentials on a later request (HTTP 403, as
// for a scope the sign-in cannot grant) is reported failed with what to
// do, and its shared session is not opened again in the background, which
// would be refused again and, with OAuth, start another authorization
// each time, until a new configuration (a reload, or a sign-in with
// `openhuman-host upstream login`) connects it again.
func TestRefusedCatalogSessionIsNotReopened(t *testing.T) {
	handler := echoHandler("strict", "")
	var refuse atomic.Bool
	var initializes atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(body))
		if bytes.Contains(body, []byte(`"method":"initialize"`)) {
			initializes.Add(1)
		} else if refuse.Load() && r.Method == http.MethodPost {
			http.Error(w, "insufficient scope", http.StatusForbidden)
			return
		}
		handler.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	p, state := startWeb(t, nil, srv.URL+"/mcp")
	refuse.Store(true)
	if _, err := p.Describe(testwait.Context(t)); err != nil {
		t.Fatal(err)
	}
	testwait.Until(t, "the server reported failed", func() bool { return state().State == StateFailed })
	if st := state(); !strings.Contains(st.Error, "refused its credentials") || !strings.Contains(st.Error, "auth table") {
		t.Errorf("Servers() = %+v, want the refusal and what to do", st)
	}
	p.mu.RLock()
	refused, reopening, shared := p.refused["web"], p.reopening["web"], p.shared["web"]
	p.mu.RUnlock()
	if !refused || reopening || (shared != nil && shared.alive()) {
		t.Errorf("after the refusal: refused %v, reopening %v, shared session %v; want refused, no reopening, none open", refused, reopening, shared)
	}
	refuse.Store(false)
	before := initializes.Load()
	raw, err := json.Marshal(map[string]any{"servers": []map[string]any{{"name": "web", "endpoint": srv.URL + "/mcp"}}})
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Configure(testwait.Context(t), &sdk.ConfigureRequest{Config: raw}); err != nil {
		t.Fatalf("configuring again: %v", err)
	}
	testwait.Until(t, "the server connected again after a new configuration", func() bool { return state().State == StateConnected })
	if initializes.Load() <= before {
		t.Error("the new configuration opened no session")
	}
	callEcho(t, p, "web")
}

// echoHandler is a Streamable HTTP MCP server named name with one tool,
// echo, which answers prefix followed by its text argument.
func echoHandler(name, prefix string) http.Handler {
	s := mcp.NewServer(&mcp.Implementation{Name: name, Version: "1"}, nil)
	mcp.AddTool(s, &mcp.Tool{Name: "echo", Description: "Echo."},
		func(_ context.Context, _ *mcp.CallToolRequest, in textArgs) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: prefix + in.Text}}}, nil, nil
		})
	return mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, nil)
}

// startWeb starts a provider with opts relaying one HTTP server, "web",
// at endpoint, waits until it is connected, and returns the provider and
// a func that reads the server's status.
func startWeb(t *testing.T, opts *Options, endpoint string) (*Provider, func() ServerStatus) {
	t.Helper()
	p := New(opts)
	t.Cleanup(func() { _ = p.Close() })
	sdktest.Start(t, p, &sdktest.Options{Config: map[string]any{"servers": []map[string]any{{"name": "web", "endpoint": endpoint}}}})
	state := func() ServerStatus {
		t.Helper()
		st := p.Servers()
		if len(st) != 1 {
			t.Fatalf("Servers() = %+v", st)
		}
		return st[0]
	}
	testwait.Until(t, "the server connected", func() bool { return state().State == StateConnected })
	return p, state
}
