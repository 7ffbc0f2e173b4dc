//lint:file-ignore SA1019 the test upstreams sample, elicit and log, features deprecated from protocol 2026-07-28 (SEP-2577) that the provider relays for servers on earlier versions.

package upstream

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/openhuman/openhuman-host/sdk"
	"github.com/openhuman/openhuman-host/sdk/testwait"
)

// fakeHost is an sdk.Host that records what the provider asks of it.
// answer, when set, answers RequestClient.
type fakeHost struct {
	answer func(*sdk.ClientRequest) ([]byte, error)

	catalog chan struct{}
	updated chan string
	logs    chan hostLog

	mu       sync.Mutex
	requests []sdk.ClientRequest
}

// hostLog is one NotifyLog call.
type hostLog struct {
	caller sdk.Caller
	msg    sdk.LogMessage
}

func newFakeHost() *fakeHost {
	return &fakeHost{catalog: make(chan struct{}, 100), updated: make(chan string, 100), logs: make(chan hostLog, 100)}
}

func (h *fakeHost) CallTool(context.Context, *sdk.HostCallToolRequest) (*sdk.CallToolResult, error) {
	return nil, errors.New("not in this test")
}

func (h *fakeHost) ListTools(context.Context) ([]sdk.Tool, error) {
	return nil, errors.New("not in this test")
}

func (h *fakeHost) CreateMessage(context.Context, *sdk.CreateMessageRequest) (*sdk.CreateMessageResult, error) {
	return nil, errors.New("not in this test")
}

func (h *fakeHost) RequestClient(_ context.Context, req *sdk.ClientRequest) ([]byte, error) {
	h.mu.Lock()
	h.requests = append(h.requests, *req)
	h.mu.Unlock()
	if h.answer == nil {
		return nil, fmt.Errorf("fake host: %w", sdk.ErrClientUnavailable)
	}
	return h.answer(req)
}

func (h *fakeHost) clientRequests() []sdk.ClientRequest {
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.Clone(h.requests)
}

func (h *fakeHost) NotifyCatalogChanged(context.Context) error {
	select {
	case h.catalog <- struct{}{}:
	default:
	}
	return nil
}

func (h *fakeHost) NotifyResourceUpdated(_ context.Context, uri string) error {
	select {
	case h.updated <- uri:
	default:
	}
	return nil
}

func (h *fakeHost) NotifyLog(_ context.Context, caller sdk.Caller, m sdk.LogMessage) error {
	select {
	case h.logs <- hostLog{caller: caller, msg: m}:
	default:
	}
	return nil
}

var _ sdk.Host = (*fakeHost)(nil)

// sink records one call's events and closes gate at the event last says
// is the last.
type sink struct {
	last func(p *sdk.Progress, m *sdk.LogMessage) bool
	gate chan struct{}
	once sync.Once

	mu       sync.Mutex
	progress []sdk.Progress
	logs     []sdk.LogMessage
}

func (s *sink) Progress(_ context.Context, p sdk.Progress) error {
	s.mu.Lock()
	s.progress = append(s.progress, p)
	s.mu.Unlock()
	if s.last != nil && s.last(&p, nil) {
		s.once.Do(func() { close(s.gate) })
	}
	return nil
}

func (s *sink) Log(_ context.Context, m sdk.LogMessage) error {
	s.mu.Lock()
	s.logs = append(s.logs, m)
	s.mu.Unlock()
	if s.last != nil && s.last(nil, &m) {
		s.once.Do(func() { close(s.gate) })
	}
	return nil
}

func (s *sink) events() ([]sdk.Progress, []sdk.LogMessage) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.progress), slices.Clone(s.logs)
}

// gates let an upstream tool wait until the test saw what the tool sent
// before it returns: the go-sdk client handles notifications apart from
// responses, so without it a notification sent just before the result
// may be handled after the call returned.
type gates struct {
	m sync.Map
	// giveUp is when a tool stops waiting for a gate the test never
	// closed: the test's deadline.
	giveUp time.Time
}

func newGates(t *testing.T) *gates { return &gates{giveUp: testwait.Deadline(t)} }

// open registers a gate for name and returns it; a tool waiting on name
// returns once it is closed.
func (g *gates) open(name string) chan struct{} {
	ch := make(chan struct{})
	g.m.Store(name, ch)
	return ch
}

func (g *gates) wait(ctx context.Context, name string) {
	v, ok := g.m.Load(name)
	if !ok {
		return
	}
	select {
	case <-v.(chan struct{}):
	case <-ctx.Done():
	case <-time.After(time.Until(g.giveUp)):
	}
}

type gateArgs struct {
	Gate string `json:"gate"`
}

// gatedTool serves over Streamable HTTP (stateless when set) one tool,
// name, whose call runs send (the notifications under test), then waits
// at the gate its arguments name and answers "done <gate>". It returns
// the endpoint.
func gatedTool(t *testing.T, g *gates, name string, stateless bool, send func(ctx context.Context, req *mcp.CallToolRequest, gate string)) string {
	t.Helper()
	s := mcp.NewServer(&mcp.Implementation{Name: name, Version: "1"}, nil)
	mcp.AddTool(s, &mcp.Tool{Name: name, Description: "Sends what the test checks, then waits at its gate."},
		func(ctx context.Context, req *mcp.CallToolRequest, in gateArgs) (*mcp.CallToolResult, any, error) {
			send(ctx, req, in.Gate)
			g.wait(ctx, in.Gate)
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "done " + in.Gate}}}, nil, nil
		})
	return serve(t, s, stateless, nil)
}

// serve runs s as a Streamable HTTP server (stateless with new protocol
// support when stateless is set) and returns its URL; record, when set,
// sees every request first.
func serve(t *testing.T, s *mcp.Server, stateless bool, record func(*http.Request)) string {
	t.Helper()
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, &mcp.StreamableHTTPOptions{Stateless: stateless})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if record != nil {
			record(r)
		}
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv.URL + "/mcp"
}

// configure configures a provider with servers and host, directly (the
// test keeps the provider's own event sinks), and returns it with what
// Describe listed.
func configure(t *testing.T, host sdk.Host, servers ...map[string]any) (*Provider, *sdk.Catalog) {
	t.Helper()
	p := New(nil)
	t.Cleanup(func() { _ = p.Close() })
	raw, err := json.Marshal(map[string]any{"servers": servers})
	if err != nil {
		t.Fatal(err)
	}
	ctx := testwait.Context(t)
	if err := p.Configure(ctx, &sdk.ConfigureRequest{Config: raw, Host: host}); err != nil {
		t.Fatalf("configure: %v", err)
	}
	cat, err := p.Describe(ctx)
	if err != nil {
		t.Fatalf("describe: %v", err)
	}
	return p, cat
}

// caller is an MCP client's caller: session token session, call token
// call, with a progress token.
func caller(session, call string) sdk.Caller {
	return sdk.Caller{SourceType: "mcp:test", SessionHash: "sha256:0000" + session, ClientName: "test",
		SessionToken: session, CallToken: call, ProgressToken: json.RawMessage(`"` + call + `"`)}
}

// receive waits for a value on ch until the test's deadline.
func receive[T any](t *testing.T, ch <-chan T, what string) T {
	t.Helper()
	return testwait.Recv(t, ch, what)
}

// until runs trigger, and again every 100 ms, until ch yields a value.
// The go-sdk server sends notifications outside requests on the standalone
// SSE stream, and drops them while the client's GET for that stream has
// not arrived yet; there is no event to wait for instead.
func until[T any](t *testing.T, ch <-chan T, what string, trigger func()) T {
	t.Helper()
	return testwait.RecvRepeating(t, ch, what, 100*time.Millisecond, trigger)
}

// resultText returns a function that fails t unless the call succeeded,
// and returns the result's text.
func resultText(t *testing.T) func(*sdk.CallToolResult, error) string {
	return func(res *sdk.CallToolResult, err error) string {
		t.Helper()
		if err != nil {
			t.Fatalf("call: %v", err)
		}
		if res.IsError {
			t.Fatalf("call: isError result %q", res.Text())
		}
		return res.Text()
	}
}

// callEcho calls server's echo tool with the text "x" as client A's call
// "1", fails t unless the call succeeds, and returns the result's text.
func callEcho(t *testing.T, p *Provider, server string) string {
	t.Helper()
	return resultText(t)(p.CallTool(testwait.Context(t), &sdk.CallToolRequest{Name: server + "__echo", Arguments: json.RawMessage(`{"text":"x"}`), Caller: caller("A", "1")}))
}

// Progress notifications reach the call they belong to, in order, also
// when two calls run at once on one session; each call gets an upstream
// progress token of its own, and reports that do not increase are dropped.
func TestProgressRelayed(t *testing.T) {
	g := newGates(t)
	tokens := make(chan string, 2)
	endpoint := gatedTool(t, g, "steps", false, func(ctx context.Context, req *mcp.CallToolRequest, gate string) {
		tok := req.Params.GetProgressToken()
		tokens <- fmt.Sprint(tok)
		for _, n := range []float64{1, 1, 2, 3} {
			_ = req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: tok, Progress: n, Total: 3,
				Message: fmt.Sprintf("%s step %g", gate, n)})
		}
	})
	p, _ := configure(t, newFakeHost(), map[string]any{"name": "web", "endpoint": endpoint})

	var wg sync.WaitGroup
	sinks := map[string]*sink{}
	for _, name := range []string{"a", "b"} {
		sk := &sink{gate: g.open(name), last: func(p *sdk.Progress, _ *sdk.LogMessage) bool { return p != nil && p.Progress == 3 }}
		sinks[name] = sk
		wg.Add(1)
		go func() {
			defer wg.Done()
			req := (&sdk.CallToolRequest{Name: "web__steps", Arguments: json.RawMessage(`{"gate":"` + name + `"}`), Caller: caller("A", "call-"+name)}).WithEvents(sk)
			res, err := p.CallTool(context.Background(), req)
			if err != nil || res.IsError || res.Text() != "done "+name {
				t.Errorf("call %s: %v %+v", name, err, res)
			}
		}()
	}
	wg.Wait()
	for name, sk := range sinks {
		progress, _ := sk.events()
		want := []sdk.Progress{
			{Progress: 1, Total: 3, Message: name + " step 1"},
			{Progress: 2, Total: 3, Message: name + " step 2"},
			{Progress: 3, Total: 3, Message: name + " step 3"},
		}
		if diff := cmp.Diff(want, progress); diff != "" {
			t.Errorf("progress of call %s (-want +got):\n%s", name, diff)
		}
	}
	// A client's own session forwards the client's tokens unchanged.
	got := []string{receive(t, tokens, "a token"), receive(t, tokens, "a token")}
	slices.Sort(got)
	if !slices.Equal(got, []string{"call-a", "call-b"}) {
		t.Errorf("upstream progress tokens %q, want the clients' own [call-a call-b]", got)
	}
	p.mu.RLock()
	n := len(p.clients)
	p.mu.RUnlock()
	if n != 1 {
		t.Errorf("%d client sessions, want the one of session A", n)
	}
}

// A progress token is forwarded as the client sent it (string or
// integer); one already in flight on the session, and calls on the shared
// session, get a token of the provider's own.
func TestProgressTokens(t *testing.T) {
	g := newGates(t)
	tokens := make(chan any, 4)
	endpoint := gatedTool(t, g, "tok", false, func(ctx context.Context, req *mcp.CallToolRequest, gate string) {
		tok := req.Params.GetProgressToken()
		tokens <- tok
		_ = req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: tok, Progress: 1, Message: gate})
	})
	p, _ := configure(t, newFakeHost(), map[string]any{"name": "web", "endpoint": endpoint})
	// newSink's gate closes at the first progress report, or, with hold,
	// only when the test closes it.
	newSink := func(gate string, hold bool) *sink {
		return &sink{gate: g.open(gate), last: func(p *sdk.Progress, _ *sdk.LogMessage) bool { return p != nil && !hold }}
	}
	callWith := func(gate string, c sdk.Caller, sk *sink) {
		req := (&sdk.CallToolRequest{Name: "web__tok", Arguments: json.RawMessage(`{"gate":"` + gate + `"}`), Caller: c}).WithEvents(sk)
		if res, err := p.CallTool(context.Background(), req); err != nil || res.IsError {
			t.Errorf("call %s: %v %+v", gate, err, res)
		}
	}
	call := func(gate string, c sdk.Caller) { callWith(gate, c, newSink(gate, false)) }
	numeric := caller("N", "n")
	numeric.ProgressToken = json.RawMessage(`7`)
	call("numeric", numeric)
	if tok := receive(t, tokens, "the numeric token"); fmt.Sprintf("%T %v", tok, tok) != "float64 7" {
		t.Errorf("numeric token reached the upstream as %T %v, want the number 7", tok, tok)
	}
	// Two calls of one client with the same token at once: the second
	// cannot reuse it on the shared upstream session of that client.
	// The first call is held until the second has its token.
	var wg sync.WaitGroup
	sinks := []*sink{newSink("first", true), newSink("second", false)}
	wg.Go(func() { callWith("first", caller("D", "dup"), sinks[0]) })
	if tok := receive(t, tokens, "the first token"); tok != "dup" {
		t.Errorf("first call's token %v, want dup", tok)
	}
	wg.Go(func() { callWith("second", caller("D", "dup"), sinks[1]) })
	second := receive(t, tokens, "the second token")
	if s, ok := second.(string); !ok || !strings.HasPrefix(s, progressPrefix) {
		t.Errorf("second call's token %v, want %s<n>", second, progressPrefix)
	}
	testwait.Until(t, "the first call's progress", func() bool {
		progress, _ := sinks[0].events()
		return len(progress) > 0
	})
	sinks[0].once.Do(func() { close(sinks[0].gate) })
	wg.Wait()
	for i, sk := range sinks {
		progress, _ := sk.events()
		if len(progress) != 1 || progress[0].Message != []string{"first", "second"}[i] {
			t.Errorf("call %d got progress %+v", i, progress)
		}
	}
	shared := sdk.Caller{SourceType: "cli", ProgressToken: json.RawMessage(`"cli-token"`)}
	call("shared", shared)
	if tok, _ := receive(t, tokens, "the shared session's token").(string); !strings.HasPrefix(tok, progressPrefix) {
		t.Errorf("shared session's token %q, want %s<n>", tok, progressPrefix)
	}
}

// The logging level a client set reaches its upstream session when that
// opens, and again when the client changes it; log messages during a call
// reach the call, and outside calls the client's session through the
// host.
func TestLoggingRelayed(t *testing.T) {
	g := newGates(t)
	sessions := make(chan *mcp.ServerSession, 10)
	endpoint := gatedTool(t, g, "chatty", false, func(ctx context.Context, req *mcp.CallToolRequest, _ string) {
		for _, m := range []struct{ level, data string }{{"debug", "d"}, {"info", "i"}, {"error", "done"}} {
			_ = req.Session.Log(ctx, &mcp.LoggingMessageParams{Level: mcp.LoggingLevel(m.level), Logger: "chat", Data: m.data})
		}
		sessions <- req.Session
	})
	host := newFakeHost()
	p, _ := configure(t, host, map[string]any{"name": "web", "endpoint": endpoint})
	ctx := context.Background()
	a := caller("A", "call-1")

	// Before any session with the server exists: remembered.
	if err := p.SetLoggingLevel(ctx, &sdk.SetLoggingLevelRequest{Level: "info", Caller: a}); err != nil {
		t.Fatal(err)
	}
	call := func(gate string) []sdk.LogMessage {
		t.Helper()
		sk := &sink{gate: g.open(gate), last: func(_ *sdk.Progress, m *sdk.LogMessage) bool { return m != nil && m.Data == "done" }}
		req := (&sdk.CallToolRequest{Name: "web__chatty", Arguments: json.RawMessage(`{"gate":"` + gate + `"}`), Caller: a}).WithEvents(sk)
		if got := resultText(t)(p.CallTool(ctx, req)); got != "done "+gate {
			t.Fatalf("result %q", got)
		}
		_, logs := sk.events()
		return logs
	}
	want := []sdk.LogMessage{{Level: "info", Logger: "chat", Data: "i"}, {Level: "error", Logger: "chat", Data: "done"}}
	if diff := cmp.Diff(want, call("g1")); diff != "" {
		t.Errorf("logs at level info (-want +got):\n%s", diff)
	}
	// On the open session.
	if err := p.SetLoggingLevel(ctx, &sdk.SetLoggingLevelRequest{Level: "debug", Caller: a}); err != nil {
		t.Fatal(err)
	}
	want = append([]sdk.LogMessage{{Level: "debug", Logger: "chat", Data: "d"}}, want...)
	if diff := cmp.Diff(want, call("g2")); diff != "" {
		t.Errorf("logs at level debug (-want +got):\n%s", diff)
	}

	// Outside any call the message goes to the session's client.
	ss := receive(t, sessions, "the upstream session")
	got := until(t, host.logs, "NotifyLog", func() {
		_ = ss.Log(context.Background(), &mcp.LoggingMessageParams{Level: "warning", Logger: "bg", Data: map[string]any{"n": 1}})
	})
	wantCaller := sdk.Caller{SourceType: "mcp:test", SessionHash: "sha256:0000A", ClientName: "test", SessionToken: "A"}
	if diff := cmp.Diff(hostLog{caller: wantCaller, msg: sdk.LogMessage{Level: "warning", Logger: "bg", Data: map[string]any{"n": float64(1)}}}, got,
		cmp.AllowUnexported(hostLog{})); diff != "" {
		t.Errorf("NotifyLog (-want +got):\n%s", diff)
	}
}

type askArgs struct {
	Question string `json:"question"`
}

// samplingUpstream has the tools ask (samples the client's model) and
// confirm (elicits a yes or no), which report the client's answer or its
// JSON-RPC error as text.
func samplingUpstream(t *testing.T) string {
	t.Helper()
	s := mcp.NewServer(&mcp.Implementation{Name: "asker", Version: "1"}, nil)
	mcp.AddTool(s, &mcp.Tool{Name: "ask", Description: "Asks the client's model."},
		func(ctx context.Context, req *mcp.CallToolRequest, in askArgs) (*mcp.CallToolResult, any, error) {
			res, err := req.Session.CreateMessage(ctx, &mcp.CreateMessageParams{MaxTokens: 50,
				Messages: []*mcp.SamplingMessage{{Role: "user", Content: &mcp.TextContent{Text: in.Question}}}})
			return answerText(err, func() string {
				tc, _ := res.Content.(*mcp.TextContent)
				return fmt.Sprintf("%s (%s, %s)", tc.Text, res.Model, res.Role)
			}), nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "confirm", Description: "Asks the user."},
		func(ctx context.Context, req *mcp.CallToolRequest, in askArgs) (*mcp.CallToolResult, any, error) {
			res, err := req.Session.Elicit(ctx, &mcp.ElicitParams{Message: in.Question,
				RequestedSchema: map[string]any{"type": "object", "properties": map[string]any{"ok": map[string]any{"type": "boolean"}}}})
			return answerText(err, func() string { return fmt.Sprintf("%s %v", res.Action, res.Content["ok"]) }), nil, nil
		})
	return serve(t, s, false, nil)
}

func answerText(err error, ok func() string) *mcp.CallToolResult {
	var werr *jsonrpc.Error
	switch {
	case errors.As(err, &werr):
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: fmt.Sprintf("error %d: %s", werr.Code, werr.Message)}}}
	case err != nil:
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "failed: " + err.Error()}}}
	}
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: ok()}}}
}

// An upstream's sampling request reaches the client of the call through
// the host, related to the call by its call token; the client's answer
// reaches the tool unchanged, and so does its JSON-RPC error.
func TestSamplingRelayed(t *testing.T) {
	host := newFakeHost()
	host.answer = func(req *sdk.ClientRequest) ([]byte, error) {
		if req.Caller.CallToken == "call-refused" {
			return nil, &sdk.ClientError{Code: -1, Message: "User rejected sampling"}
		}
		return []byte(`{"role":"assistant","content":{"type":"text","text":"Paris"},"model":"m-1","stopReason":"endTurn"}`), nil
	}
	p, _ := configure(t, host, map[string]any{"name": "web", "endpoint": samplingUpstream(t)})
	ctx := context.Background()
	call := func(callToken string) string {
		t.Helper()
		return resultText(t)(p.CallTool(ctx, &sdk.CallToolRequest{Name: "web__ask", Arguments: json.RawMessage(`{"question":"Capital of France?"}`),
			Caller: caller("A", callToken)}))
	}
	if got := call("call-1"); got != "Paris (m-1, assistant)" {
		t.Errorf("sampled answer %q", got)
	}
	if got := call("call-refused"); got != "error -1: User rejected sampling" {
		t.Errorf("refused sampling reached the tool as %q", got)
	}
	reqs := host.clientRequests()
	if len(reqs) != 2 {
		t.Fatalf("%d client requests, want 2", len(reqs))
	}
	for i, tok := range []string{"call-1", "call-refused"} {
		r := reqs[i]
		if r.Method != sdk.MethodCreateMessage || r.Caller.CallToken != tok || r.Caller.SessionToken != "A" {
			t.Errorf("request %d: method %q, call token %q, session token %q", i, r.Method, r.Caller.CallToken, r.Caller.SessionToken)
		}
		var params mcp.CreateMessageParams
		if err := json.Unmarshal(r.Params, &params); err != nil {
			t.Fatalf("params %s: %v", r.Params, err)
		}
		tc, _ := params.Messages[0].Content.(*mcp.TextContent)
		if params.MaxTokens != 50 || len(params.Messages) != 1 || params.Messages[0].Role != "user" || tc == nil || tc.Text != "Capital of France?" {
			t.Errorf("request %d params %s", i, r.Params)
		}
	}
}

// An upstream's elicitation reaches the client of the call through the
// host; the client's answer, or its JSON-RPC error, reaches the tool.
func TestElicitationRelayed(t *testing.T) {
	host := newFakeHost()
	host.answer = func(req *sdk.ClientRequest) ([]byte, error) {
		if req.Caller.CallToken == "call-refused" {
			return nil, &sdk.ClientError{Code: -32602, Message: "no form support"}
		}
		return []byte(`{"action":"accept","content":{"ok":true}}`), nil
	}
	p, _ := configure(t, host, map[string]any{"name": "web", "endpoint": samplingUpstream(t)})
	ctx := context.Background()
	got := resultText(t)(p.CallTool(ctx, &sdk.CallToolRequest{Name: "web__confirm", Arguments: json.RawMessage(`{"question":"Proceed?"}`), Caller: caller("A", "call-1")}))
	if got != "accept true" {
		t.Errorf("elicited answer %q", got)
	}
	got = resultText(t)(p.CallTool(ctx, &sdk.CallToolRequest{Name: "web__confirm", Arguments: json.RawMessage(`{"question":"Proceed?"}`), Caller: caller("A", "call-refused")}))
	if got != "error -32602: no form support" {
		t.Errorf("refused elicitation reached the tool as %q", got)
	}
	reqs := host.clientRequests()
	if len(reqs) != 2 || reqs[0].Method != sdk.MethodElicit || reqs[0].Caller.CallToken != "call-1" {
		t.Fatalf("client requests %+v", reqs)
	}
	var params struct {
		Message         string         `json:"message"`
		RequestedSchema map[string]any `json:"requestedSchema"`
	}
	if err := json.Unmarshal(reqs[0].Params, &params); err != nil || params.Message != "Proceed?" || params.RequestedSchema["type"] != "object" {
		t.Errorf("params %s (%v)", reqs[0].Params, err)
	}
}

// A session no client owns (the shared one) with no call in flight cannot
// relay a server request: the upstream gets an error saying so.
func TestServerRequestWithoutClient(t *testing.T) {
	p := New(nil)
	p.host = newFakeHost()
	r := newRelay(p, &server{name: "web"}, nil)
	_, err := r.createMessage(context.Background(), &mcp.CreateMessageRequest{Params: &mcp.CreateMessageParams{}})
	want := "sampling/createMessage cannot be relayed: no client is connected to this session (it serves calls from the command line)"
	if err == nil || err.Error() != want {
		t.Errorf("error %v, want %q", err, want)
	}
	owner := caller("A", "")
	r = newRelay(p, &server{name: "web"}, sessionOwner(owner))
	if _, err := r.elicit(context.Background(), &mcp.ElicitRequest{Params: &mcp.ElicitParams{Message: "m"}}); !errors.Is(err, sdk.ErrClientUnavailable) {
		t.Errorf("error %v, want the host's ErrClientUnavailable", err)
	}
	reqs := p.host.(*fakeHost).clientRequests()
	if len(reqs) != 1 || reqs[0].Caller.SessionToken != "A" || reqs[0].Caller.CallToken != "" || reqs[0].Caller.ProgressToken != nil {
		t.Errorf("requests %+v, want one for the owner outside any call", reqs)
	}
}

// A tool list change upstream makes the host describe the provider again,
// and Describe then lists the new tool.
func TestToolListChangeNotified(t *testing.T) {
	s := mcp.NewServer(&mcp.Implementation{Name: "growing", Version: "1"}, nil)
	mcp.AddTool(s, &mcp.Tool{Name: "echo", Description: "Echo."},
		func(_ context.Context, _ *mcp.CallToolRequest, in textArgs) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: in.Text}}}, nil, nil
		})
	host := newFakeHost()
	p, cat := configure(t, host, map[string]any{"name": "web", "endpoint": serve(t, s, false, nil)})
	if got := strings.Join(toolNames(cat), ","); got != "web__echo" {
		t.Fatalf("tools before = %s", got)
	}
	until(t, host.catalog, "NotifyCatalogChanged", func() {
		mcp.AddTool(s, &mcp.Tool{Name: "late", Description: "Added later."},
			func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
				return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "late"}}}, nil, nil
			})
	})
	cat, err := p.Describe(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(toolNames(cat), ","); got != "web__echo,web__late" {
		t.Errorf("tools after = %s", got)
	}
	if got := resultText(t)(p.CallTool(context.Background(), &sdk.CallToolRequest{Name: "web__late", Arguments: json.RawMessage(`{}`)})); got != "late" {
		t.Errorf("web__late: %q", got)
	}
}

// A burst of triggers runs the function once, after the delay. In a synctest
// bubble the burst takes no time, however slow the machine.
func TestDebouncerCoalesces(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var d debouncer
		// The runs are appended from the timers' goroutines.
		var mu sync.Mutex
		var runs []int
		run := func(n int) func() {
			return func() {
				mu.Lock()
				defer mu.Unlock()
				runs = append(runs, n)
			}
		}
		got := func() []int {
			mu.Lock()
			defer mu.Unlock()
			return slices.Clone(runs)
		}
		for range 10 {
			d.trigger("k", 50*time.Millisecond, run(1))
		}
		time.Sleep(49 * time.Millisecond)
		synctest.Wait()
		if r := got(); len(r) != 0 {
			t.Fatalf("runs before the delay passed: %v", r)
		}
		time.Sleep(time.Millisecond)
		synctest.Wait()
		if diff := cmp.Diff([]int{1}, got()); diff != "" {
			t.Fatalf("runs after the burst (-want +got):\n%s", diff)
		}
		d.trigger("k", time.Millisecond, run(2))
		time.Sleep(time.Millisecond)
		synctest.Wait()
		if diff := cmp.Diff([]int{1, 2}, got()); diff != "" {
			t.Errorf("runs after a later trigger (-want +got):\n%s", diff)
		}
	})
}

// Per-client sessions are keyed by the session token before the session
// hash; SessionClosed closes that client's sessions only and forgets its
// state, and its next call opens a new one.
func TestSessionClosed(t *testing.T) {
	p, _ := configure(t, newFakeHost(), map[string]any{"name": "local", "command": stdioServer, "prefix": ""})
	ctx := context.Background()
	a, b := caller("A", "c1"), caller("B", "c2")
	b.SessionHash = a.SessionHash // one hash, two tokens: two sessions
	for _, c := range []sdk.Caller{a, b} {
		if got := resultText(t)(p.CallTool(ctx, &sdk.CallToolRequest{Name: "echo", Arguments: json.RawMessage(`{"text":"x"}`), Caller: c})); got != "stdio:x" {
			t.Fatalf("echo: %q", got)
		}
	}
	if err := p.SetLoggingLevel(ctx, &sdk.SetLoggingLevelRequest{Level: "info", Caller: a}); err != nil {
		t.Fatal(err)
	}
	p.mu.RLock()
	oldA, oldB := p.clients["local\x00A"], p.clients["local\x00B"]
	p.mu.RUnlock()
	if oldA == nil || oldB == nil {
		t.Fatalf("client sessions %v %v, want one per token", oldA, oldB)
	}
	if err := p.SessionClosed(ctx, a); err != nil {
		t.Fatal(err)
	}
	testwait.Recv(t, oldA.conn.done, "the closed client's upstream session to close")
	p.mu.RLock()
	_, kept := p.clients["local\x00B"]
	_, gone := p.clients["local\x00A"]
	_, state := p.states["A"]
	p.mu.RUnlock()
	if !kept || gone || state || !oldB.conn.alive() {
		t.Errorf("after SessionClosed(A): B kept %v, A kept %v, A's state kept %v, B alive %v", kept, gone, state, oldB.conn.alive())
	}
	if got := resultText(t)(p.CallTool(ctx, &sdk.CallToolRequest{Name: "echo", Arguments: json.RawMessage(`{"text":"y"}`), Caller: a})); got != "stdio:y" {
		t.Fatalf("echo after close: %q", got)
	}
	p.mu.RLock()
	fresh := p.clients["local\x00A"]
	p.mu.RUnlock()
	if fresh == nil || fresh.conn == oldA.conn || fresh.conn.cmd.Process.Pid == oldA.conn.cmd.Process.Pid {
		t.Error("no new upstream session for A's next call")
	}
}

// On protocol 2026-07-28, which has no logging/setLevel, the level the
// client set travels in each call's _meta.
func TestLoggingLevelInMeta(t *testing.T) {
	g := newGates(t)
	endpoint := gatedTool(t, g, "chatty", true, func(ctx context.Context, req *mcp.CallToolRequest, _ string) {
		_ = req.Session.Log(ctx, &mcp.LoggingMessageParams{Level: "debug", Data: "d"})
		_ = req.Session.Log(ctx, &mcp.LoggingMessageParams{Level: "warning", Data: "done"})
	})
	p, _ := configure(t, newFakeHost(), map[string]any{"name": "web", "endpoint": endpoint})
	ctx := context.Background()
	a := caller("A", "call-1")
	if err := p.SetLoggingLevel(ctx, &sdk.SetLoggingLevelRequest{Level: "info", Caller: a}); err != nil {
		t.Fatal(err)
	}
	sk := &sink{gate: g.open("g"), last: func(_ *sdk.Progress, m *sdk.LogMessage) bool { return m != nil && m.Data == "done" }}
	req := (&sdk.CallToolRequest{Name: "web__chatty", Arguments: json.RawMessage(`{"gate":"g"}`), Caller: a}).WithEvents(sk)
	if got := resultText(t)(p.CallTool(ctx, req)); got != "done g" {
		t.Fatalf("result %q", got)
	}
	p.mu.RLock()
	c := p.clients["web\x00A"].conn
	p.mu.RUnlock()
	if !newProtocol(c) {
		t.Fatalf("negotiated %s, want %s", c.session.InitializeResult().ProtocolVersion, protocolWithHeaders)
	}
	_, logs := sk.events()
	if diff := cmp.Diff([]sdk.LogMessage{{Level: "warning", Data: "done"}}, logs); diff != "" {
		t.Errorf("logs at level info (-want +got):\n%s", diff)
	}
}

// A client's own upstream session declares what that client declared:
// sampling only if it can sample, elicitation with its modes; the shared
// session, with no client, declares both.
func TestSessionCapabilitiesMirrorTheClient(t *testing.T) {
	s := mcp.NewServer(&mcp.Implementation{Name: "caps", Version: "1"}, nil)
	mcp.AddTool(s, &mcp.Tool{Name: "caps", Description: "Says what the client declared."},
		func(_ context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
			c := req.Session.InitializeParams().Capabilities
			out := fmt.Sprintf("sampling=%v elicitation=%v", c.Sampling != nil, c.Elicitation != nil)
			if c.Elicitation != nil {
				out += fmt.Sprintf(" form=%v url=%v", c.Elicitation.Form != nil, c.Elicitation.URL != nil)
			}
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: out}}}, nil, nil
		})
	p, _ := configure(t, newFakeHost(), map[string]any{"name": "web", "endpoint": serve(t, s, false, nil)})
	call := func(c sdk.Caller) string {
		t.Helper()
		return resultText(t)(p.CallTool(t.Context(), &sdk.CallToolRequest{Name: "web__caps", Arguments: []byte(`{}`), Caller: c}))
	}
	for _, tc := range []struct {
		caps json.RawMessage
		want string
	}{
		{nil, "sampling=true elicitation=true form=true url=false"},
		{json.RawMessage(`{}`), "sampling=false elicitation=false"},
		{json.RawMessage(`{"sampling":{}}`), "sampling=true elicitation=false"},
		{json.RawMessage(`{"elicitation":{"url":{}}}`), "sampling=false elicitation=true form=false url=true"},
	} {
		c := caller(fmt.Sprintf("caps-%s", tc.caps), "")
		c.ClientCapabilities = tc.caps
		if got := call(c); got != tc.want {
			t.Errorf("client declaring %s: upstream saw %q, want %q", tc.caps, got, tc.want)
		}
	}
	if got := call(sdk.Caller{SourceType: "cli"}); got != "sampling=true elicitation=true form=true url=false" {
		t.Errorf("shared session: upstream saw %q", got)
	}
}

// askingUpstream serves over stateless HTTP a server that speaks only
// 2026-07-28 with one tool, "greet", that asks the client's name through
// an InputRequiredResult and greets it on the retry.
func askingUpstream(t *testing.T) string {
	t.Helper()
	s := mcp.NewServer(&mcp.Implementation{Name: "asking", Version: "1"}, &mcp.ServerOptions{SupportedProtocolVersions: []string{"2026-07-28"}})
	mcp.AddTool(s, &mcp.Tool{Name: "greet", Description: "Asks the name, then greets."},
		func(_ context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
			if r, ok := req.Params.InputResponses["who"].(*mcp.ElicitResult); ok && r.Action == "accept" {
				return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: fmt.Sprintf("Hello, %v! (state %s)", r.Content["name"], req.Params.RequestState)}}}, nil, nil
			}
			return &mcp.CallToolResult{
				InputRequests: mcp.InputRequestMap{"who": &mcp.ElicitParams{Message: "Your name?", RequestedSchema: map[string]any{"type": "object"}}},
				RequestState:  "round-1",
			}, nil, nil
		})
	return serve(t, s, true, nil)
}

// A server that speaks only 2026-07-28 behind clients of either era:
// for a 2026-07-28 client its InputRequiredResult is passed on with its
// keys and state, and the retry's answer reaches it; for a 2025-11-25
// client the provider answers it through the host (a request during the
// client's call) and the client sees only the greeting.
func TestNewProtocolUpstreamBehindEitherClient(t *testing.T) {
	host := newFakeHost()
	host.answer = func(req *sdk.ClientRequest) ([]byte, error) {
		return []byte(`{"action":"accept","content":{"name":"Ada"}}`), nil
	}
	p, _ := configure(t, host, map[string]any{"name": "web", "endpoint": askingUpstream(t)})
	ctx := context.Background()

	modern := caller("M", "call-m")
	modern.ProtocolVersion = "2026-07-28"
	modern.ClientCapabilities = json.RawMessage(`{"elicitation":{"form":{}}}`)
	res, err := p.CallTool(ctx, &sdk.CallToolRequest{Name: "web__greet", Arguments: json.RawMessage(`{}`), Caller: modern})
	if err != nil {
		t.Fatal(err)
	}
	if res.RequestState != "round-1" || !strings.Contains(string(res.InputRequests), `"who"`) || len(res.Content) != 0 {
		t.Fatalf("first round for a 2026-07-28 client = %+v, want the server's input request and state", res)
	}
	got := resultText(t)(p.CallTool(ctx, &sdk.CallToolRequest{Name: "web__greet", Arguments: json.RawMessage(`{}`), Caller: modern,
		InputResponses: json.RawMessage(`{"who":{"action":"accept","content":{"name":"Grace"}}}`), RequestState: "round-1"}))
	if got != "Hello, Grace! (state round-1)" {
		t.Errorf("retry = %q", got)
	}
	if reqs := host.clientRequests(); len(reqs) != 0 {
		t.Errorf("the host was asked %d times for a client that answers itself", len(reqs))
	}

	legacy := caller("L", "call-l")
	legacy.ProtocolVersion = "2025-11-25"
	legacy.ClientCapabilities = json.RawMessage(`{"elicitation":{"form":{}}}`)
	got = resultText(t)(p.CallTool(ctx, &sdk.CallToolRequest{Name: "web__greet", Arguments: json.RawMessage(`{}`), Caller: legacy}))
	if got != "Hello, Ada! (state round-1)" {
		t.Errorf("for a 2025-11-25 client = %q", got)
	}
	reqs := host.clientRequests()
	if len(reqs) != 1 || reqs[0].Method != sdk.MethodElicit || reqs[0].Caller.CallToken != "call-l" {
		t.Errorf("client requests %+v, want one elicitation during the legacy client's call", reqs)
	}
}
