package server

//lint:file-ignore SA1019 sampling, roots and logging, deprecated from protocol 2026-07-28 (SEP-2577), are what these tests exercise.

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/openhuman/openhuman-host/host/catalog"
	"github.com/openhuman/openhuman-host/sdk"
	"github.com/openhuman/openhuman-host/sdk/testwait"
)

// legacyVersion is the protocol version the relay tests speak unless they
// say otherwise: the newest one that allows requests to the client during
// a call and uses resources/subscribe and logging/setLevel.
const legacyVersion = "2025-11-25"

// subEvent is one Subscribe or Unsubscribe a relayFake received.
type subEvent struct {
	On  bool
	URI string
	sdk.Caller
}

// relayFake is a dispatcher with every provider protocol 2 interface; it
// records what it receives and answers from overridable hooks.
type relayFake struct {
	name string

	mu        sync.Mutex
	callers   []sdk.Caller // tools/call and resources/read, in order
	prompts   []sdk.GetPromptRequest
	completes []sdk.CompleteRequest
	subs      []subEvent
	levels    []sdk.SetLoggingLevelRequest
	closed    []sdk.Caller
	call      func(ctx context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error)
	levelErr  error
	// levelGate, when set, makes SetLoggingLevel signal levelEntered and
	// wait until levelGate is closed.
	levelGate    chan struct{}
	levelEntered chan struct{}

	closedCh chan sdk.Caller
	subCh    chan subEvent
}

var (
	_ Dispatcher          = (*relayFake)(nil)
	_ sdk.PromptProvider  = (*relayFake)(nil)
	_ sdk.Completer       = (*relayFake)(nil)
	_ sdk.Subscriber      = (*relayFake)(nil)
	_ sdk.SessionObserver = (*relayFake)(nil)
)

func newRelayFake(name string) *relayFake {
	return &relayFake{name: name, closedCh: make(chan sdk.Caller, 16), subCh: make(chan subEvent, 16)}
}

func (f *relayFake) setCall(fn func(ctx context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error)) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.call = fn
}

func (f *relayFake) CallTool(ctx context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
	f.mu.Lock()
	f.callers = append(f.callers, req.Caller)
	call := f.call
	f.mu.Unlock()
	if call != nil {
		return call(ctx, req)
	}
	return sdk.TextResult("ok"), nil
}

func (f *relayFake) ReadResource(_ context.Context, req *sdk.ReadResourceRequest) (*sdk.ReadResourceResult, error) {
	record(f, &f.callers, req.Caller)
	return &sdk.ReadResourceResult{Contents: []sdk.ResourceContents{{URI: req.URI, MIMEType: "text/markdown", Text: "# " + req.URI}}}, nil
}

// pngHeader and blobBytes are the binary content of relay.greet.
var (
	pngHeader = []byte{0x89, 'P', 'N', 'G'}
	blobBytes = []byte{1, 2, 3}
)

func (f *relayFake) GetPrompt(_ context.Context, req *sdk.GetPromptRequest) (*sdk.GetPromptResult, error) {
	record(f, &f.prompts, *req)
	switch req.Name {
	case "relay.greet":
		name := req.Arguments["name"]
		if name == "" {
			return nil, fmt.Errorf("%w: argument \"name\" is required", sdk.ErrInvalidParams)
		}
		return &sdk.GetPromptResult{
			Description: "Greets " + name,
			Messages: []sdk.PromptMessage{
				{Role: "user", Content: sdk.TextContent("Hello, " + name + "! (" + req.Arguments["style"] + ")")},
				{Role: "assistant", Content: sdk.Content{Type: "image", Data: pngHeader, MIMEType: "image/png"}},
				{Role: "user", Content: sdk.Content{Type: "resource", URI: "relay://doc", MIMEType: "text/markdown", Text: "# doc"}},
				{Role: "user", Content: sdk.Content{Type: "resource", URI: "relay://bin", MIMEType: "application/octet-stream", Data: blobBytes}},
			},
		}, nil
	case "relay.gone":
		return nil, fmt.Errorf("relay.gone: %w", sdk.ErrPromptNotFound)
	}
	return nil, errors.New("backend down")
}

func (f *relayFake) Complete(_ context.Context, req *sdk.CompleteRequest) (*sdk.CompleteResult, error) {
	record(f, &f.completes, *req)
	switch req.ArgumentName {
	case "many":
		vals := make([]string, 150)
		for i := range vals {
			vals[i] = fmt.Sprintf("v%03d", i)
		}
		return &sdk.CompleteResult{Values: vals, Total: 150}, nil
	case "unsupported":
		return nil, fmt.Errorf("complete %s: %w", req.ArgumentName, sdk.ErrNotImplemented)
	case "bad":
		return nil, fmt.Errorf("%w: argument \"bad\" takes no completion", sdk.ErrInvalidParams)
	case "boom":
		return nil, errors.New("index offline")
	case "nothing":
		return &sdk.CompleteResult{}, nil
	}
	var vals []string
	for _, v := range []string{"42", "43", "alex", "alice", "bob"} {
		if strings.HasPrefix(v, req.ArgumentValue) {
			vals = append(vals, v)
		}
	}
	return &sdk.CompleteResult{Values: vals, Total: len(vals)}, nil
}

func (f *relayFake) subscribe(req *sdk.SubscribeRequest, on bool) error {
	ev := subEvent{On: on, URI: req.URI, Caller: req.Caller}
	record(f, &f.subs, ev)
	offer(f.subCh, ev)
	switch req.URI {
	case "relay://notes/missing":
		return fmt.Errorf("%s: %w", req.URI, sdk.ErrResourceNotFound)
	case "relay://notes/bad":
		return fmt.Errorf("%w: notes/bad cannot be watched", sdk.ErrInvalidParams)
	case "relay://notes/boom":
		return errors.New("watcher crashed")
	case "relay://notes/ni":
		return sdk.ErrNotImplemented
	}
	return nil
}

func (f *relayFake) Subscribe(_ context.Context, req *sdk.SubscribeRequest) error {
	return f.subscribe(req, true)
}

func (f *relayFake) Unsubscribe(_ context.Context, req *sdk.SubscribeRequest) error {
	return f.subscribe(req, false)
}

func (f *relayFake) SetLoggingLevel(_ context.Context, req *sdk.SetLoggingLevelRequest) error {
	f.mu.Lock()
	gate, entered, err := f.levelGate, f.levelEntered, f.levelErr
	f.mu.Unlock()
	if gate != nil {
		entered <- struct{}{}
		<-gate
	}
	record(f, &f.levels, *req)
	return err
}

func (f *relayFake) SessionClosed(_ context.Context, caller sdk.Caller) error {
	record(f, &f.closed, caller)
	offer(f.closedCh, caller)
	return nil
}

func (f *relayFake) lastCaller(t *testing.T) sdk.Caller {
	t.Helper()
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.callers) == 0 {
		t.Fatalf("%s: no call or read recorded", f.name)
	}
	return f.callers[len(f.callers)-1]
}

// record appends v to the record *s of f, under f.mu.
func record[T any](f *relayFake, s *[]T, v T) {
	f.mu.Lock()
	defer f.mu.Unlock()
	*s = append(*s, v)
}

// offer sends v on ch unless ch is full.
func offer[T any](ch chan<- T, v T) {
	select {
	case ch <- v:
	default:
	}
}

// snapshot returns a copy of the record *s of f, taken under f.mu.
func snapshot[T any](f *relayFake, s *[]T) []T {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(*s)
}

func (f *relayFake) allCallers() []sdk.Caller                { return snapshot(f, &f.callers) }
func (f *relayFake) allPrompts() []sdk.GetPromptRequest      { return snapshot(f, &f.prompts) }
func (f *relayFake) allCompletes() []sdk.CompleteRequest     { return snapshot(f, &f.completes) }
func (f *relayFake) allSubs() []subEvent                     { return snapshot(f, &f.subs) }
func (f *relayFake) allLevels() []sdk.SetLoggingLevelRequest { return snapshot(f, &f.levels) }

// plainFake implements only Dispatcher: no prompts, completion,
// subscriptions or session events.
type plainFake struct{}

func (plainFake) CallTool(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
	return sdk.TextResult("plain"), nil
}

func (plainFake) ReadResource(_ context.Context, req *sdk.ReadResourceRequest) (*sdk.ReadResourceResult, error) {
	return &sdk.ReadResourceResult{Contents: []sdk.ResourceContents{{URI: req.URI, Text: "plain"}}}, nil
}

// relayCatalog: provider relay (every interface) serves a tool, a
// resource, a template and prompts; plain (Dispatcher only) the same
// kinds; watch (an observer) serves nothing.
func relayCatalog() *catalog.Catalog {
	obj := json.RawMessage(`{"type":"object"}`)
	return catalog.Build(nil, []catalog.Source{
		{Provider: "relay", Catalog: &sdk.Catalog{
			Name:              "relay",
			Tools:             []sdk.Tool{{Name: "relay.ask", Description: "ask", InputSchema: obj, Class: sdk.ClassRead}},
			Resources:         []sdk.Resource{{URI: "relay://doc", Name: "doc", MIMEType: "text/markdown"}},
			ResourceTemplates: []sdk.ResourceTemplate{{URITemplate: "relay://notes/{id}", Name: "note"}},
			Prompts: []sdk.Prompt{
				{Name: "relay.greet", Title: "Greet", Description: "Greets someone", Arguments: []sdk.PromptArgument{
					{Name: "name", Description: "who", Required: true},
					{Name: "style", Description: "how"},
				}},
				{Name: "relay.gone", Description: "listed, then lost"},
				{Name: "relay.broken", Description: "always fails"},
			},
		}},
		{Provider: "plain", Catalog: &sdk.Catalog{
			Name:              "plain",
			Tools:             []sdk.Tool{{Name: "plain.echo", Description: "echo", InputSchema: obj, Class: sdk.ClassRead}},
			Resources:         []sdk.Resource{{URI: "plain://doc", Name: "doc"}},
			ResourceTemplates: []sdk.ResourceTemplate{{URITemplate: "plain://items/{id}", Name: "item"}},
			Prompts:           []sdk.Prompt{{Name: "plain.hello", Description: "hello"}},
		}},
		{Provider: "watch", Catalog: &sdk.Catalog{Name: "watch"}},
	})
}

// newRelayServer builds a server over relayCatalog with fakes for relay
// and watch.
func newRelayServer(t *testing.T) (*Server, *relayFake, *relayFake) {
	t.Helper()
	relay, watch := newRelayFake("relay"), newRelayFake("watch")
	s, err := New(relayCatalog(), map[string]Dispatcher{"relay": relay, "watch": watch, "plain": plainFake{}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	return s, relay, watch
}

// connectRelay builds a server with newRelayServer and connects a
// "Claude Desktop" client with opts, on protocol version, to it.
func connectRelay(t *testing.T, opts *mcp.ClientOptions, version string) (*Server, *relayFake, *relayFake, *mcp.ClientSession) {
	t.Helper()
	s, relay, watch := newRelayServer(t)
	return s, relay, watch, connectVersion(t, s, "Claude Desktop", opts, version)
}

// sessionToken reads relay://doc in cs's session and returns the
// SessionToken the provider saw.
func sessionToken(t *testing.T, cs *mcp.ClientSession, relay *relayFake) string {
	t.Helper()
	if _, err := cs.ReadResource(context.Background(), &mcp.ReadResourceParams{URI: "relay://doc"}); err != nil {
		t.Fatalf("read relay://doc: %v", err)
	}
	tok := relay.lastCaller(t).SessionToken
	if tok == "" {
		t.Fatal("resources/read caller has no SessionToken")
	}
	return tok
}

// rpcError returns err's JSON-RPC error, failing the test when it has none.
func rpcError(t *testing.T, err error) *jsonrpc.Error {
	t.Helper()
	var werr *jsonrpc.Error
	if !errors.As(err, &werr) {
		t.Fatalf("error = %v (%T), want a JSON-RPC error", err, err)
	}
	return werr
}

// wantRPCError checks err is JSON-RPC code with exactly message.
func wantRPCError(t *testing.T, err error, code int64, message string) {
	t.Helper()
	werr := rpcError(t, err)
	if werr.Code != code || werr.Message != message {
		t.Errorf("error = %d %q, want %d %q", werr.Code, werr.Message, code, message)
	}
}

// jsonDiff compares got, marshalled to JSON, with the JSON text want.
func jsonDiff(t *testing.T, want string, got any) string {
	t.Helper()
	raw, ok := got.([]byte)
	if !ok {
		var err error
		if raw, err = json.Marshal(got); err != nil {
			t.Fatalf("marshal %T: %v", got, err)
		}
	}
	var w, g any
	if err := json.Unmarshal([]byte(want), &w); err != nil {
		t.Fatalf("bad want JSON %s: %v", want, err)
	}
	if err := json.Unmarshal(raw, &g); err != nil {
		t.Fatalf("got is not JSON %s: %v", raw, err)
	}
	return cmp.Diff(w, g)
}

// recv waits for a value on ch until the test's deadline.
func recv[T any](t *testing.T, ch <-chan T, what string) T {
	t.Helper()
	return testwait.Recv(t, ch, what)
}

// outcome is what RequestClient returned inside a call.
type outcome struct {
	out    []byte
	err    error
	caller sdk.Caller
}

// duringCall makes relay.ask run fn with its Caller while the client's
// tools/call is in flight, calls relay.ask from cs, and returns what fn
// returned.
func duringCall(t *testing.T, relay *relayFake, cs *mcp.ClientSession, fn func(ctx context.Context, caller sdk.Caller) ([]byte, error)) outcome {
	t.Helper()
	done := make(chan outcome, 1)
	relay.setCall(func(ctx context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
		out, err := fn(ctx, req.Caller)
		done <- outcome{out: out, err: err, caller: req.Caller}
		return sdk.TextResult("asked"), nil
	})
	defer relay.setCall(nil)
	res, err := cs.CallTool(testwait.Context(t), &mcp.CallToolParams{Name: "relay.ask", Arguments: map[string]any{}})
	if err != nil {
		t.Fatalf("tools/call relay.ask: %v", err)
	}
	if res.IsError {
		t.Fatalf("tools/call relay.ask failed: %+v", res.Content)
	}
	o := recv(t, done, "relay.ask to run")
	if o.caller.CallToken == "" || o.caller.SessionToken == "" {
		t.Fatalf("tools/call caller = %+v, want CallToken and SessionToken", o.caller)
	}
	return o
}

const samplingParams = `{"messages":[{"role":"user","content":{"type":"text","text":"Summarise the reef notes"}}],"maxTokens":50,"systemPrompt":"Be brief"}`

// samplingClient answers sampling/createMessage with "Corals are fine."
// and sends the params it got on asked.
func samplingClient(asked chan<- *mcp.CreateMessageParams) *mcp.ClientOptions {
	return &mcp.ClientOptions{CreateMessageHandler: func(_ context.Context, req *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
		asked <- req.Params
		return &mcp.CreateMessageResult{Model: "client-model-1", Role: "assistant", Content: &mcp.TextContent{Text: "Corals are fine."}, StopReason: "endTurn"}, nil
	}}
}

const samplingAnswer = `{"content":{"type":"text","text":"Corals are fine."},"model":"client-model-1","role":"assistant","stopReason":"endTurn"}`

// --- prompts ---

func TestPromptsListServesCatalogPrompts(t *testing.T) {
	t.Parallel()
	_, _, _, cs := connectRelay(t, nil, legacyVersion)
	if cs.InitializeResult().Capabilities.Prompts == nil {
		t.Fatal("server does not declare the prompts capability")
	}
	res, err := cs.ListPrompts(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	slices.SortFunc(res.Prompts, func(a, b *mcp.Prompt) int { return strings.Compare(a.Name, b.Name) })
	want := `[
		{"name":"plain_hello","description":"hello"},
		{"name":"relay_broken","description":"always fails"},
		{"name":"relay_gone","description":"listed, then lost"},
		{"name":"relay_greet","title":"Greet","description":"Greets someone","arguments":[
			{"name":"name","description":"who","required":true},
			{"name":"style","description":"how"}]}
	]`
	if diff := jsonDiff(t, want, res.Prompts); diff != "" {
		t.Errorf("prompts/list (-want +got):\n%s", diff)
	}
}

func TestGetPromptPassesArgumentsAndConvertsContent(t *testing.T) {
	t.Parallel()
	_, relay, _, cs := connectRelay(t, nil, legacyVersion)
	tok := sessionToken(t, cs, relay)
	res, err := cs.GetPrompt(context.Background(), &mcp.GetPromptParams{Name: "relay_greet", Arguments: map[string]string{"name": "Ada", "style": "formal"}})
	if err != nil {
		t.Fatal(err)
	}
	b64 := base64.StdEncoding.EncodeToString
	want := `{"description":"Greets Ada","messages":[
		{"role":"user","content":{"type":"text","text":"Hello, Ada! (formal)"}},
		{"role":"assistant","content":{"type":"image","data":"` + b64(pngHeader) + `","mimeType":"image/png"}},
		{"role":"user","content":{"type":"resource","resource":{"uri":"relay://doc","mimeType":"text/markdown","text":"# doc"}}},
		{"role":"user","content":{"type":"resource","resource":{"uri":"relay://bin","mimeType":"application/octet-stream","blob":"` + b64(blobBytes) + `"}}}
	]}`
	if diff := jsonDiff(t, want, res); diff != "" {
		t.Errorf("prompts/get result (-want +got):\n%s", diff)
	}
	if img, ok := res.Messages[1].Content.(*mcp.ImageContent); !ok || !slices.Equal(img.Data, pngHeader) {
		t.Errorf("image content = %#v, want the PNG header bytes", res.Messages[1].Content)
	}
	got := relay.allPrompts()
	if len(got) != 1 {
		t.Fatalf("provider got %d prompts/get, want 1", len(got))
	}
	want1 := sdk.GetPromptRequest{Name: "relay.greet", Arguments: map[string]string{"name": "Ada", "style": "formal"}, Caller: sdk.Caller{
		SourceType: "mcp:claude-desktop", SessionHash: got[0].Caller.SessionHash, ClientName: "Claude Desktop", ClientVersion: "9.9", SessionToken: tok, ProtocolVersion: "2025-11-25", ClientCapabilities: json.RawMessage(`{"roots":{"listChanged":true}}`),
	}}
	if diff := cmp.Diff(want1, got[0]); diff != "" {
		t.Errorf("GetPrompt request (-want +got):\n%s", diff)
	}
	if !strings.HasPrefix(got[0].Caller.SessionHash, "sha256:") {
		t.Errorf("SessionHash = %q", got[0].Caller.SessionHash)
	}
}

func TestGetPromptErrors(t *testing.T) {
	t.Parallel()
	_, relay, _, cs := connectRelay(t, nil, legacyVersion)
	tests := map[string]struct {
		name    string
		args    map[string]string
		code    int64
		message string
	}{
		"not in the catalog":       {name: "no.such", code: jsonrpc.CodeInvalidParams, message: `unknown prompt "no.such"`},
		"invalid arguments":        {name: "relay.greet", args: map[string]string{"style": "x"}, code: jsonrpc.CodeInvalidParams, message: `invalid params: argument "name" is required`},
		"provider lost it":         {name: "relay.gone", code: jsonrpc.CodeInvalidParams, message: `unknown prompt "relay_gone": relay.gone: prompt not found`},
		"provider failure":         {name: "relay.broken", code: jsonrpc.CodeInternalError, message: "prompt relay_broken: provider relay: backend down"},
		"provider without prompts": {name: "plain.hello", code: jsonrpc.CodeInvalidParams, message: `prompt "plain_hello": provider plain serves no prompts`},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			_, err := cs.GetPrompt(context.Background(), &mcp.GetPromptParams{Name: tc.name, Arguments: tc.args})
			wantRPCError(t, err, tc.code, tc.message)
		})
	}
	var names []string
	for _, p := range relay.allPrompts() {
		names = append(names, p.Name)
	}
	slices.Sort(names)
	if diff := cmp.Diff([]string{"relay.broken", "relay.gone", "relay.greet"}, names); diff != "" {
		t.Errorf("prompts the provider was asked for (-want +got):\n%s", diff)
	}
}

func TestPromptsFollowUpdate(t *testing.T) {
	t.Parallel()
	changed := make(chan struct{}, 4)
	s, relay, watch, cs := connectRelay(t, &mcp.ClientOptions{
		PromptListChangedHandler: func(context.Context, *mcp.PromptListChangedRequest) { changed <- struct{}{} },
	}, legacyVersion)
	ctx := context.Background()
	next := catalog.Build(nil, []catalog.Source{{Provider: "relay", Catalog: &sdk.Catalog{
		Name:    "relay",
		Prompts: []sdk.Prompt{{Name: "relay.greet", Description: "Greets someone, v2"}, {Name: "relay.new", Description: "new"}},
	}}})
	s.Update(next, map[string]Dispatcher{"relay": relay, "watch": watch}, nil)
	recv(t, changed, "notifications/prompts/list_changed")
	res, err := cs.ListPrompts(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	slices.SortFunc(res.Prompts, func(a, b *mcp.Prompt) int { return strings.Compare(a.Name, b.Name) })
	if diff := jsonDiff(t, `[{"name":"relay_greet","description":"Greets someone, v2"},{"name":"relay_new","description":"new"}]`, res.Prompts); diff != "" {
		t.Errorf("prompts/list after Update (-want +got):\n%s", diff)
	}
	_, err = cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: "plain.hello"})
	wantRPCError(t, err, jsonrpc.CodeInvalidParams, `unknown prompt "plain.hello"`)
	_, err = cs.Complete(ctx, &mcp.CompleteParams{Ref: &mcp.CompleteReference{Type: "ref/prompt", Name: "relay.broken"}, Argument: mcp.CompleteParamsArgument{Name: "x"}})
	wantRPCError(t, err, jsonrpc.CodeInvalidParams, `unknown prompt "relay.broken"`)
}

// --- completion ---

func TestCompletionRoutesToProvider(t *testing.T) {
	t.Parallel()
	_, relay, _, cs := connectRelay(t, nil, legacyVersion)
	tok := sessionToken(t, cs, relay)
	ctx := context.Background()
	if cs.InitializeResult().Capabilities.Completions == nil {
		t.Fatal("server does not declare the completions capability")
	}

	res, err := cs.Complete(ctx, &mcp.CompleteParams{
		Ref:      &mcp.CompleteReference{Type: "ref/prompt", Name: "relay_greet"},
		Argument: mcp.CompleteParamsArgument{Name: "name", Value: "al"},
		Context:  &mcp.CompleteContext{Arguments: map[string]string{"style": "formal"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(mcp.CompletionResultDetails{Values: []string{"alex", "alice"}, Total: 2}, res.Completion); diff != "" {
		t.Errorf("prompt completion (-want +got):\n%s", diff)
	}

	res, err = cs.Complete(ctx, &mcp.CompleteParams{
		Ref:      &mcp.CompleteReference{Type: "ref/resource", URI: "relay://notes/{id}"},
		Argument: mcp.CompleteParamsArgument{Name: "id", Value: "4"},
	})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(mcp.CompletionResultDetails{Values: []string{"42", "43"}, Total: 2}, res.Completion); diff != "" {
		t.Errorf("resource template completion (-want +got):\n%s", diff)
	}

	got := relay.allCompletes()
	for i := range got {
		got[i].Caller = sdk.Caller{SessionToken: got[i].Caller.SessionToken, ClientName: got[i].Caller.ClientName}
	}
	caller := sdk.Caller{SessionToken: tok, ClientName: "Claude Desktop"}
	want := []sdk.CompleteRequest{
		{RefType: sdk.RefPrompt, RefName: "relay.greet", ArgumentName: "name", ArgumentValue: "al", Context: map[string]string{"style": "formal"}, Caller: caller},
		{RefType: sdk.RefResource, RefURI: "relay://notes/{id}", ArgumentName: "id", ArgumentValue: "4", Caller: caller},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Complete requests (-want +got):\n%s", diff)
	}
}

func TestCompletionCutsAtMaxValues(t *testing.T) {
	t.Parallel()
	_, _, _, cs := connectRelay(t, nil, legacyVersion)
	res, err := cs.Complete(context.Background(), &mcp.CompleteParams{
		Ref:      &mcp.CompleteReference{Type: "ref/prompt", Name: "relay.greet"},
		Argument: mcp.CompleteParamsArgument{Name: "many"},
	})
	if err != nil {
		t.Fatal(err)
	}
	want := make([]string, sdk.MaxCompletionValues)
	for i := range want {
		want[i] = fmt.Sprintf("v%03d", i)
	}
	if diff := cmp.Diff(mcp.CompletionResultDetails{Values: want, Total: 150, HasMore: true}, res.Completion); diff != "" {
		t.Errorf("completion of 150 values (-want +got):\n%s", diff)
	}
}

func TestCompletionWithoutAnswerIsEmptyList(t *testing.T) {
	t.Parallel()
	_, _, _, cs := connectRelay(t, nil, legacyVersion)
	tests := map[string]*mcp.CompleteParams{
		"prompt of a provider without Completer": {
			Ref: &mcp.CompleteReference{Type: "ref/prompt", Name: "plain.hello"}, Argument: mcp.CompleteParamsArgument{Name: "x", Value: "a"}},
		"template of a provider without Completer": {
			Ref: &mcp.CompleteReference{Type: "ref/resource", URI: "plain://items/{id}"}, Argument: mcp.CompleteParamsArgument{Name: "id"}},
		"static resource of a provider without Completer": {
			Ref: &mcp.CompleteReference{Type: "ref/resource", URI: "plain://doc"}, Argument: mcp.CompleteParamsArgument{Name: "id"}},
		"Completer says not implemented": {
			Ref: &mcp.CompleteReference{Type: "ref/prompt", Name: "relay.greet"}, Argument: mcp.CompleteParamsArgument{Name: "unsupported"}},
		"Completer returns no values": {
			Ref: &mcp.CompleteReference{Type: "ref/prompt", Name: "relay.greet"}, Argument: mcp.CompleteParamsArgument{Name: "nothing"}},
	}
	for name, params := range tests {
		t.Run(name, func(t *testing.T) {
			res, err := cs.Complete(context.Background(), params)
			if err != nil {
				t.Fatal(err)
			}
			// A nil slice on the client means the server sent null, not [].
			if res.Completion.Values == nil || len(res.Completion.Values) != 0 || res.Completion.HasMore || res.Completion.Total != 0 {
				t.Errorf("completion = %#v, want values: [] and nothing else", res.Completion)
			}
		})
	}
}

func TestCompletionErrors(t *testing.T) {
	t.Parallel()
	_, _, _, cs := connectRelay(t, nil, legacyVersion)
	tests := map[string]struct {
		params  *mcp.CompleteParams
		code    int64
		message string
	}{
		"unknown prompt": {
			params: &mcp.CompleteParams{Ref: &mcp.CompleteReference{Type: "ref/prompt", Name: "no.such"}, Argument: mcp.CompleteParamsArgument{Name: "x"}},
			code:   jsonrpc.CodeInvalidParams, message: `unknown prompt "no.such"`},
		"unknown resource template": {
			params: &mcp.CompleteParams{Ref: &mcp.CompleteReference{Type: "ref/resource", URI: "nope://{x}"}, Argument: mcp.CompleteParamsArgument{Name: "x"}},
			code:   jsonrpc.CodeInvalidParams, message: `unknown resource template "nope://{x}"`},
		"provider refuses the params": {
			params: &mcp.CompleteParams{Ref: &mcp.CompleteReference{Type: "ref/prompt", Name: "relay.greet"}, Argument: mcp.CompleteParamsArgument{Name: "bad"}},
			code:   jsonrpc.CodeInvalidParams, message: `invalid params: argument "bad" takes no completion`},
		"provider fails": {
			params: &mcp.CompleteParams{Ref: &mcp.CompleteReference{Type: "ref/prompt", Name: "relay.greet"}, Argument: mcp.CompleteParamsArgument{Name: "boom"}},
			code:   jsonrpc.CodeInternalError, message: "completion by provider relay failed: index offline"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			_, err := cs.Complete(context.Background(), tc.params)
			wantRPCError(t, err, tc.code, tc.message)
		})
	}
}

// --- subscriptions ---

func TestSubscribeRoutesByURIAndTemplate(t *testing.T) {
	t.Parallel()
	_, relay, _, cs := connectRelay(t, nil, legacyVersion)
	tok := sessionToken(t, cs, relay)
	ctx := context.Background()
	if caps := cs.InitializeResult().Capabilities.Resources; caps == nil || !caps.Subscribe {
		t.Fatalf("resources capability = %+v, want subscribe", caps)
	}
	for _, uri := range []string{"relay://doc", "relay://notes/42", "plain://doc", "plain://items/7", "relay://notes/ni"} {
		if err := cs.Subscribe(ctx, &mcp.SubscribeParams{URI: uri}); err != nil {
			t.Errorf("subscribe %s: %v", uri, err)
		}
	}
	if err := cs.Unsubscribe(ctx, &mcp.UnsubscribeParams{URI: "relay://notes/42"}); err != nil {
		t.Errorf("unsubscribe: %v", err)
	}
	got := relay.allSubs()
	for i := range got {
		got[i].Caller = sdk.Caller{SessionToken: got[i].SessionToken, SourceType: got[i].SourceType}
	}
	caller := sdk.Caller{SessionToken: tok, SourceType: "mcp:claude-desktop"}
	want := []subEvent{
		{On: true, URI: "relay://doc", Caller: caller},
		{On: true, URI: "relay://notes/42", Caller: caller},
		{On: true, URI: "relay://notes/ni", Caller: caller},
		{On: false, URI: "relay://notes/42", Caller: caller},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("subscription events (-want +got):\n%s", diff)
	}
}

func TestSubscribeErrors(t *testing.T) {
	t.Parallel()
	_, relay, _, cs := connectRelay(t, nil, legacyVersion)
	notFound := func(uri string) (int64, string, string) {
		return mcp.CodeResourceNotFound, "Resource not found", fmt.Sprintf(`{"uri":%q}`, uri)
	}
	tests := map[string]struct {
		uri           string
		code          int64
		message, data string
		asked         bool
	}{
		"unknown uri":              {uri: "nope://x"},
		"template does not match":  {uri: "relay://notes/42/extra"},
		"prefix of a template":     {uri: "xrelay://notes/42"},
		"provider does not know":   {uri: "relay://notes/missing", asked: true},
		"provider refuses":         {uri: "relay://notes/bad", asked: true, code: jsonrpc.CodeInvalidParams, message: "invalid params: notes/bad cannot be watched"},
		"provider fails":           {uri: "relay://notes/boom", asked: true, code: jsonrpc.CodeInternalError, message: "provider relay: watcher crashed"},
		"unsubscribe unknown uri":  {uri: "nope://y"},
		"unsubscribe of a failure": {uri: "relay://notes/boom", asked: true, code: jsonrpc.CodeInternalError, message: "provider relay: watcher crashed"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			if tc.code == 0 {
				tc.code, tc.message, tc.data = notFound(tc.uri)
			}
			before := len(relay.allSubs())
			var err error
			if strings.HasPrefix(name, "unsubscribe") {
				err = cs.Unsubscribe(context.Background(), &mcp.UnsubscribeParams{URI: tc.uri})
			} else {
				err = cs.Subscribe(context.Background(), &mcp.SubscribeParams{URI: tc.uri})
			}
			werr := rpcError(t, err)
			if werr.Code != tc.code || werr.Message != tc.message {
				t.Errorf("error = %d %q, want %d %q", werr.Code, werr.Message, tc.code, tc.message)
			}
			if tc.data != "" && string(werr.Data) != tc.data {
				t.Errorf("error data = %s, want %s", werr.Data, tc.data)
			}
			if asked := len(relay.allSubs()) > before; asked != tc.asked {
				t.Errorf("provider asked = %v, want %v", asked, tc.asked)
			}
		})
	}
}

func TestNotifyResourceUpdatedReachesSubscribersOnly(t *testing.T) {
	t.Parallel()
	s, _, _ := newRelayServer(t)
	type client struct {
		cs      *mcp.ClientSession
		updates chan string
	}
	newClient := func(name string) client {
		c := client{updates: make(chan string, 16)}
		c.cs = connectVersion(t, s, name, &mcp.ClientOptions{
			ResourceUpdatedHandler: func(_ context.Context, req *mcp.ResourceUpdatedNotificationRequest) { c.updates <- req.Params.URI },
		}, legacyVersion)
		return c
	}
	a, b := newClient("A"), newClient("B")
	ctx := context.Background()
	mustSub := func(c client, uri string, on bool) {
		t.Helper()
		var err error
		if on {
			err = c.cs.Subscribe(ctx, &mcp.SubscribeParams{URI: uri})
		} else {
			err = c.cs.Unsubscribe(ctx, &mcp.UnsubscribeParams{URI: uri})
		}
		if err != nil {
			t.Fatalf("(un)subscribe %s: %v", uri, err)
		}
	}
	mustSub(a, "relay://notes/42", true)
	mustSub(b, "relay://notes/42", true)
	mustSub(b, "relay://notes/42", false)
	mustSub(b, "relay://doc", true)
	// A subscription the provider refused must not be kept.
	if err := a.cs.Subscribe(ctx, &mcp.SubscribeParams{URI: "relay://notes/boom"}); err == nil {
		t.Fatal("subscribe relay://notes/boom succeeded")
	}

	for _, uri := range []string{"relay://notes/boom", "relay://notes/42", "relay://doc"} {
		if err := s.NotifyResourceUpdated(ctx, uri); err != nil {
			t.Fatalf("NotifyResourceUpdated %s: %v", uri, err)
		}
	}
	// Each connection delivers notifications in order, so once a client
	// has the sentinel, whatever else was meant for it came before.
	mustSub(a, "relay://notes/sentinel", true)
	mustSub(b, "relay://notes/sentinel", true)
	if err := s.NotifyResourceUpdated(ctx, "relay://notes/sentinel"); err != nil {
		t.Fatal(err)
	}
	for name, c := range map[string]struct {
		client
		want []string
	}{
		"A": {a, []string{"relay://notes/42", "relay://notes/sentinel"}},
		"B": {b, []string{"relay://doc", "relay://notes/sentinel"}},
	} {
		var got []string
		for len(got) == 0 || got[len(got)-1] != "relay://notes/sentinel" {
			got = append(got, recv(t, c.updates, name+"'s updates"))
		}
		if diff := cmp.Diff(c.want, got); diff != "" {
			t.Errorf("client %s updates (-want +got):\n%s", name, diff)
		}
	}
}

// --- logging level and session end ---

func TestSetLoggingLevelReachesObserversBeforeAnswer(t *testing.T) {
	t.Parallel()
	_, relay, watch, cs := connectRelay(t, nil, legacyVersion)
	tok := sessionToken(t, cs, relay)
	gate, entered := make(chan struct{}), make(chan struct{}, 1)
	relay.mu.Lock()
	relay.levelGate, relay.levelEntered = gate, entered
	relay.mu.Unlock()
	// An observer that fails does not fail the client's request.
	watch.mu.Lock()
	watch.levelErr = errors.New("upstream gone")
	watch.mu.Unlock()

	done := make(chan error, 1)
	go func() { done <- cs.SetLoggingLevel(context.Background(), &mcp.SetLoggingLevelParams{Level: "warning"}) }()
	recv(t, entered, "relay's SetLoggingLevel")
	// relay holds the level until the gate opens, so a server that
	// answered first would answer within this window; a correct one
	// cannot answer before close(gate).
	select {
	case err := <-done:
		t.Fatalf("logging/setLevel answered (%v) while a provider was still taking the level", err)
	case <-time.After(300 * time.Millisecond):
	}
	close(gate)
	if err := recv(t, done, "logging/setLevel answer"); err != nil {
		t.Fatalf("logging/setLevel: %v", err)
	}
	for _, f := range []*relayFake{relay, watch} {
		got := f.allLevels()
		if len(got) != 1 || got[0].Level != "warning" || got[0].Caller.SessionToken != tok || got[0].Caller.ClientName != "Claude Desktop" {
			t.Errorf("%s got %+v, want one SetLoggingLevel warning with session token %q", f.name, got, tok)
		}
	}
}

func TestSessionClosedTellsObservers(t *testing.T) {
	t.Parallel()
	s, relay, watch, cs := connectRelay(t, nil, legacyVersion)
	tok := sessionToken(t, cs, relay)
	hash := relay.lastCaller(t).SessionHash
	if err := cs.Close(); err != nil {
		t.Fatal(err)
	}
	want := sdk.Caller{SourceType: "mcp:claude-desktop", SessionHash: hash, ClientName: "Claude Desktop", ClientVersion: "9.9", SessionToken: tok, ProtocolVersion: "2025-11-25", ClientCapabilities: json.RawMessage(`{"roots":{"listChanged":true}}`)}
	for _, f := range []*relayFake{relay, watch} {
		got := recv(t, f.closedCh, f.name+"'s SessionClosed")
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("%s SessionClosed caller (-want +got):\n%s", f.name, diff)
		}
	}
	// The token is dead once the providers heard of the end.
	_, err := s.RequestClient(context.Background(), &sdk.ClientRequest{Caller: sdk.Caller{SessionToken: tok}, Method: sdk.MethodListRoots})
	if !errors.Is(err, sdk.ErrClientUnavailable) {
		t.Errorf("RequestClient on a closed session: %v, want ErrClientUnavailable", err)
	}
	if err := s.NotifyLog(context.Background(), sdk.Caller{SessionToken: tok}, sdk.LogMessage{Level: "error", Data: "late"}); err != nil {
		t.Errorf("NotifyLog on a closed session = %v, want it dropped", err)
	}
}

// --- requests to the client ---

func TestRequestClientSamplingDuringCall(t *testing.T) {
	t.Parallel()
	asked := make(chan *mcp.CreateMessageParams, 1)
	s, relay, _, cs := connectRelay(t, samplingClient(asked), legacyVersion)
	o := duringCall(t, relay, cs, func(ctx context.Context, caller sdk.Caller) ([]byte, error) {
		return s.RequestClient(ctx, &sdk.ClientRequest{Caller: caller, Method: sdk.MethodCreateMessage, Params: []byte(samplingParams)})
	})
	if o.err != nil {
		t.Fatalf("RequestClient: %v", o.err)
	}
	if diff := jsonDiff(t, samplingAnswer, o.out); diff != "" {
		t.Errorf("client result (-want +got):\n%s", diff)
	}
	p := recv(t, asked, "the client's sampling handler")
	if diff := jsonDiff(t, samplingParams, p); diff != "" {
		t.Errorf("params the client got (-want +got):\n%s", diff)
	}
}

func TestRequestClientSamplingWithTools(t *testing.T) {
	t.Parallel()
	asked := make(chan *mcp.CreateMessageWithToolsParams, 1)
	s, relay, _, cs := connectRelay(t, &mcp.ClientOptions{
		CreateMessageWithToolsHandler: func(_ context.Context, req *mcp.CreateMessageWithToolsRequest) (*mcp.CreateMessageWithToolsResult, error) {
			asked <- req.Params
			return &mcp.CreateMessageWithToolsResult{Model: "m2", Role: "assistant", StopReason: "toolUse",
				Content: []mcp.Content{&mcp.ToolUseContent{ID: "u1", Name: "lookup", Input: map[string]any{"q": "reef"}}}}, nil
		},
	}, legacyVersion)
	params := `{"messages":[{"role":"user","content":[{"type":"text","text":"look it up"}]}],"maxTokens":20,` +
		`"tools":[{"name":"lookup","inputSchema":{"type":"object","properties":{"q":{"type":"string"}}}}]}`
	o := duringCall(t, relay, cs, func(ctx context.Context, caller sdk.Caller) ([]byte, error) {
		return s.RequestClient(ctx, &sdk.ClientRequest{Caller: caller, Method: sdk.MethodCreateMessage, Params: []byte(params)})
	})
	if o.err != nil {
		t.Fatalf("RequestClient: %v", o.err)
	}
	var res struct {
		Model      string `json:"model"`
		StopReason string `json:"stopReason"`
		Content    any    `json:"content"`
	}
	if err := json.Unmarshal(o.out, &res); err != nil {
		t.Fatalf("result %s: %v", o.out, err)
	}
	// One block may be sent as an object or a one-element array.
	if arr, ok := res.Content.([]any); ok && len(arr) == 1 {
		res.Content = arr[0]
	}
	want := map[string]any{"type": "tool_use", "id": "u1", "name": "lookup", "input": map[string]any{"q": "reef"}}
	if res.Model != "m2" || res.StopReason != "toolUse" || !cmp.Equal(want, res.Content) {
		t.Errorf("client result = %s", o.out)
	}
	p := recv(t, asked, "the client's sampling handler")
	if len(p.Tools) != 1 || p.Tools[0].Name != "lookup" || p.MaxTokens != 20 {
		t.Errorf("params the client got = %+v", p)
	}
}

func TestRequestClientElicitationDuringCall(t *testing.T) {
	t.Parallel()
	asked := make(chan string, 1)
	s, relay, _, cs := connectRelay(t, &mcp.ClientOptions{
		ElicitationHandler: func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			asked <- req.Params.Message
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"colour": "teal"}}, nil
		},
	}, legacyVersion)
	params := `{"message":"Which colour?","requestedSchema":{"type":"object","properties":{"colour":{"type":"string"}},"required":["colour"]}}`
	o := duringCall(t, relay, cs, func(ctx context.Context, caller sdk.Caller) ([]byte, error) {
		return s.RequestClient(ctx, &sdk.ClientRequest{Caller: caller, Method: sdk.MethodElicit, Params: []byte(params)})
	})
	if o.err != nil {
		t.Fatalf("RequestClient: %v", o.err)
	}
	if diff := jsonDiff(t, `{"action":"accept","content":{"colour":"teal"}}`, o.out); diff != "" {
		t.Errorf("client result (-want +got):\n%s", diff)
	}
	if got := recv(t, asked, "the client's elicitation handler"); got != "Which colour?" {
		t.Errorf("client was asked %q", got)
	}
}

func TestRequestClientErrorsDuringCall(t *testing.T) {
	t.Parallel()
	toolsParams := `{"messages":[{"role":"user","content":[{"type":"text","text":"x"}]}],"maxTokens":5,"tools":[{"name":"t","inputSchema":{"type":"object"}}]}`
	tests := map[string]struct {
		client    *mcp.ClientOptions
		method    string
		params    string
		is        error // the error wraps it
		clientErr *sdk.ClientError
		message   string // the whole error text
	}{
		"sampling not declared": {
			client: &mcp.ClientOptions{}, method: sdk.MethodCreateMessage, params: samplingParams, is: sdk.ErrClientUnavailable,
			message: "the client cannot take this request: Claude Desktop did not declare the sampling capability"},
		"sampling without tools": {
			client: samplingClient(make(chan *mcp.CreateMessageParams, 1)), method: sdk.MethodCreateMessage, params: toolsParams, is: sdk.ErrClientUnavailable,
			message: "the client cannot take this request: Claude Desktop can sample, but not with tools (it did not declare sampling.tools)"},
		"elicitation not declared": {
			client: &mcp.ClientOptions{}, method: sdk.MethodElicit, params: `{"message":"?","requestedSchema":{"type":"object"}}`, is: sdk.ErrClientUnavailable,
			message: "the client cannot take this request: Claude Desktop did not declare the elicitation capability"},
		"client answers with a JSON-RPC error": {
			client: &mcp.ClientOptions{CreateMessageHandler: func(context.Context, *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
				return nil, &jsonrpc.Error{Code: -1, Message: "User rejected sampling request"}
			}},
			method: sdk.MethodCreateMessage, params: samplingParams,
			clientErr: &sdk.ClientError{Code: -1, Message: "User rejected sampling request"},
			message:   "the client answered with error -1: User rejected sampling request"},
		"elicitation refused with a JSON-RPC error": {
			client: &mcp.ClientOptions{ElicitationHandler: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
				return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "no forms today"}
			}},
			method: sdk.MethodElicit, params: `{"message":"?","requestedSchema":{"type":"object"}}`,
			clientErr: &sdk.ClientError{Code: jsonrpc.CodeInvalidParams, Message: "no forms today"},
			message:   "the client answered with error -32602: no forms today"},
		"method not relayed": {
			client: &mcp.ClientOptions{}, method: "tools/call", is: sdk.ErrInvalidParams,
			message: `invalid params: method "tools/call": the host relays only sampling/createMessage, elicitation/create and roots/list`},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			s, relay, _, cs := connectRelay(t, tc.client, legacyVersion)
			o := duringCall(t, relay, cs, func(ctx context.Context, caller sdk.Caller) ([]byte, error) {
				return s.RequestClient(ctx, &sdk.ClientRequest{Caller: caller, Method: tc.method, Params: []byte(tc.params)})
			})
			if o.err == nil {
				t.Fatalf("RequestClient = %s, want an error", o.out)
			}
			if o.out != nil {
				t.Errorf("output %s with error", o.out)
			}
			if tc.is != nil && !errors.Is(o.err, tc.is) {
				t.Errorf("error %v does not wrap %v", o.err, tc.is)
			}
			if tc.clientErr != nil {
				var ce *sdk.ClientError
				if !errors.As(o.err, &ce) {
					t.Fatalf("error %v (%T) is not a *sdk.ClientError", o.err, o.err)
				}
				if *ce != *tc.clientErr {
					t.Errorf("ClientError = %+v, want %+v", *ce, *tc.clientErr)
				}
			}
			if o.err.Error() != tc.message {
				t.Errorf("error text = %q, want %q", o.err.Error(), tc.message)
			}
		})
	}
}

func TestRequestClientOutsideCall(t *testing.T) {
	t.Parallel()
	s, relay, _ := newRelayServer(t)
	asked := make(chan *mcp.CreateMessageParams, 4)
	opts := samplingClient(asked)
	client := mcp.NewClient(&mcp.Implementation{Name: "Claude Desktop", Version: "9.9"}, opts)
	client.AddRoots(&mcp.Root{URI: "file:///home/ada/reef", Name: "reef"})
	cs := connectClient(t, s, client, legacyVersion)
	tok := sessionToken(t, cs, relay)
	ctx := context.Background()

	out, err := s.RequestClient(ctx, &sdk.ClientRequest{Caller: sdk.Caller{SessionToken: tok}, Method: sdk.MethodListRoots})
	if err != nil {
		t.Fatalf("roots/list: %v", err)
	}
	if diff := jsonDiff(t, `{"roots":[{"uri":"file:///home/ada/reef","name":"reef"}]}`, out); diff != "" {
		t.Errorf("roots/list result (-want +got):\n%s", diff)
	}

	out, err = s.RequestClient(ctx, &sdk.ClientRequest{Caller: sdk.Caller{SessionToken: tok}, Method: sdk.MethodCreateMessage, Params: []byte(samplingParams)})
	if err != nil {
		t.Fatalf("sampling outside a call: %v", err)
	}
	if diff := jsonDiff(t, samplingAnswer, out); diff != "" {
		t.Errorf("sampling result (-want +got):\n%s", diff)
	}
	recv(t, asked, "the client's sampling handler")

	// A call token outlives its call only as a string: afterwards the
	// session token alone decides.
	o := duringCall(t, relay, cs, func(context.Context, sdk.Caller) ([]byte, error) { return nil, nil })
	stale := sdk.Caller{CallToken: o.caller.CallToken}
	if _, err := s.RequestClient(ctx, &sdk.ClientRequest{Caller: stale, Method: sdk.MethodListRoots}); !errors.Is(err, sdk.ErrClientUnavailable) {
		t.Errorf("stale call token alone: %v, want ErrClientUnavailable", err)
	}
	stale.SessionToken = tok
	if out, err := s.RequestClient(ctx, &sdk.ClientRequest{Caller: stale, Method: sdk.MethodListRoots}); err != nil || !strings.Contains(string(out), "file:///home/ada/reef") {
		t.Errorf("stale call token with a live session token: %s, %v", out, err)
	}

	for name, caller := range map[string]sdk.Caller{
		"unknown session token": {SessionToken: "no-such-token", SourceType: "mcp:ghost"},
		"unknown call token":    {CallToken: "no-such-call"},
		"no tokens (cli)":       {SourceType: "cli"},
	} {
		_, err := s.RequestClient(ctx, &sdk.ClientRequest{Caller: caller, Method: sdk.MethodCreateMessage, Params: []byte(samplingParams)})
		if !errors.Is(err, sdk.ErrClientUnavailable) {
			t.Errorf("%s: %v, want ErrClientUnavailable", name, err)
		}
	}
	_, err = s.RequestClient(ctx, &sdk.ClientRequest{Caller: sdk.Caller{SessionToken: "no-such-token", SourceType: "cli"}, Method: sdk.MethodElicit})
	want := `the client cannot take this request: elicitation/create needs a connected MCP client session, and the caller ("cli") has none or it ended; call the tool from an MCP client that supports it, not the command line`
	if err == nil || err.Error() != want {
		t.Errorf("error = %v, want %q", err, want)
	}
}

// TestRequestClientRootsUndeclaredIsUnavailable: a client that turned the
// roots capability off (ClientOptions.Capabilities without RootsV2) must
// get no roots/list; RequestClient says ErrClientUnavailable.
func TestRequestClientRootsUndeclaredIsUnavailable(t *testing.T) {
	t.Parallel()
	s, relay, _, cs := connectRelay(t, &mcp.ClientOptions{Capabilities: &mcp.ClientCapabilities{}}, legacyVersion)
	tok := sessionToken(t, cs, relay)
	out, err := s.RequestClient(context.Background(), &sdk.ClientRequest{Caller: sdk.Caller{SessionToken: tok}, Method: sdk.MethodListRoots})
	if !errors.Is(err, sdk.ErrClientUnavailable) {
		t.Fatalf("roots/list to a client without roots = %s, %v; want ErrClientUnavailable", out, err)
	}
	if want := "the client cannot take this request: the client did not declare the roots capability"; err.Error() != want {
		t.Errorf("error = %q, want %q", err, want)
	}
}

// TestRequestClientNewerProtocolAsksThroughResults: a client on
// 2026-07-28, where a server may not send requests during a call, is
// asked through the call's multi-round-trip result instead (SEP-2322):
// the go-sdk client answers it and retries, and the provider gets the
// answer.
func TestRequestClientNewerProtocolAsksThroughResults(t *testing.T) {
	t.Parallel()
	asked := make(chan *mcp.CreateMessageParams, 1)
	s, relay, _, cs := connectRelay(t, samplingClient(asked), "2026-07-28")
	o := duringCall(t, relay, cs, func(ctx context.Context, caller sdk.Caller) ([]byte, error) {
		return s.RequestClient(ctx, &sdk.ClientRequest{Caller: caller, Method: sdk.MethodCreateMessage, Params: []byte(samplingParams)})
	})
	if o.err != nil || !strings.Contains(string(o.out), "Corals are fine.") {
		t.Errorf("sampling on 2026-07-28 = %s, %v; want the client's answer", o.out, o.err)
	}
	select {
	case <-asked:
	default:
		t.Error("the client was not asked to sample")
	}
}

// TestRequestClientRootsNewerProtocol: roots/list reaches a 2026-07-28
// client during a call through the call's result; outside a call there
// is no way to ask it, and the error wraps ErrClientUnavailable like
// every other "cannot be sent" case.
func TestRequestClientRootsNewerProtocol(t *testing.T) {
	t.Parallel()
	s, relay, _, cs := connectRelay(t, nil, "2026-07-28")
	o := duringCall(t, relay, cs, func(ctx context.Context, caller sdk.Caller) ([]byte, error) {
		return s.RequestClient(ctx, &sdk.ClientRequest{Caller: caller, Method: sdk.MethodListRoots})
	})
	if o.err != nil || string(o.out) != `{"roots":[]}` {
		t.Errorf("roots/list during a call on 2026-07-28 = %s, %v; want the client's (empty) roots", o.out, o.err)
	}
	out, err := s.RequestClient(context.Background(), &sdk.ClientRequest{Caller: sdk.Caller{SessionToken: o.caller.SessionToken}, Method: sdk.MethodListRoots})
	if !errors.Is(err, sdk.ErrClientUnavailable) {
		t.Errorf("roots/list outside a call on 2026-07-28 = %s, %v; want ErrClientUnavailable", out, err)
	}
}

// TestSubscribeOnNewerProtocol: a 2026-07-28 client subscribes through
// subscriptions/listen; the provider still hears of it with the session's
// token, updates reach the client, and ending the listen unsubscribes.
func TestSubscribeOnNewerProtocol(t *testing.T) {
	t.Parallel()
	updates := make(chan string, 64)
	s, relay, _, cs := connectRelay(t, &mcp.ClientOptions{
		ResourceUpdatedHandler: func(_ context.Context, req *mcp.ResourceUpdatedNotificationRequest) { updates <- req.Params.URI },
	}, "2026-07-28")
	tok := sessionToken(t, cs, relay)
	ctx := context.Background()
	if err := cs.Subscribe(ctx, &mcp.SubscribeParams{URI: "relay://notes/7"}); err != nil {
		t.Fatal(err)
	}
	ev := recv(t, relay.subCh, "the provider's Subscribe")
	if !ev.On || ev.URI != "relay://notes/7" || ev.SessionToken != tok {
		t.Errorf("Subscribe = %+v, want relay://notes/7 with token %q", ev, tok)
	}
	// On 2026-07-28 the go-sdk acknowledges the listen before it files
	// the subscription, so the update is sent until one arrives.
	var got string
	testwait.Until(t, "the update", func() bool {
		if err := s.NotifyResourceUpdated(ctx, "relay://notes/7"); err != nil {
			t.Fatal(err)
		}
		select {
		case got = <-updates:
			return true
		case <-time.After(50 * time.Millisecond):
			return false
		}
	})
	if got != "relay://notes/7" {
		t.Errorf("update for %q", got)
	}
	if err := cs.Unsubscribe(ctx, &mcp.UnsubscribeParams{URI: "relay://notes/7"}); err != nil {
		t.Fatal(err)
	}
	ev = recv(t, relay.subCh, "the provider's Unsubscribe")
	if ev.On || ev.URI != "relay://notes/7" || ev.SessionToken != tok {
		t.Errorf("Unsubscribe = %+v, want relay://notes/7 with token %q", ev, tok)
	}
}

// --- log messages ---

func TestNotifyLogFilteredByLevel(t *testing.T) {
	t.Parallel()
	msgs := make(chan *mcp.LoggingMessageParams, 16)
	s, relay, _, cs := connectRelay(t, &mcp.ClientOptions{
		LoggingMessageHandler: func(_ context.Context, req *mcp.LoggingMessageRequest) { msgs <- req.Params },
	}, legacyVersion)
	tok := sessionToken(t, cs, relay)
	ctx := context.Background()
	caller := sdk.Caller{SessionToken: tok}
	notify := func(level, data string) {
		t.Helper()
		if err := s.NotifyLog(ctx, caller, sdk.LogMessage{Level: level, Logger: "relay", Data: data}); err != nil {
			t.Fatalf("NotifyLog %s: %v", level, err)
		}
	}
	notify("error", "before any level") // dropped: no level set yet
	if err := cs.SetLoggingLevel(ctx, &mcp.SetLoggingLevelParams{Level: "warning"}); err != nil {
		t.Fatal(err)
	}
	notify("debug", "quiet")
	notify("info", "still quiet")
	notify("warning", "heads up")
	notify("error", "loud")
	if err := s.NotifyLog(ctx, sdk.Caller{SessionToken: "no-such-token"}, sdk.LogMessage{Level: "error", Data: "lost"}); err != nil {
		t.Errorf("NotifyLog to an unknown session = %v, want it dropped", err)
	}
	var got []string
	for range 2 {
		m := recv(t, msgs, "a log message")
		got = append(got, fmt.Sprintf("%s/%s/%v", m.Level, m.Logger, m.Data))
	}
	if diff := cmp.Diff([]string{"warning/relay/heads up", "error/relay/loud"}, got); diff != "" {
		t.Errorf("log messages (-want +got):\n%s", diff)
	}

	// Inside a call, the call token reaches the same session.
	o := duringCall(t, relay, cs, func(ctx context.Context, caller sdk.Caller) ([]byte, error) {
		return nil, s.NotifyLog(ctx, sdk.Caller{CallToken: caller.CallToken}, sdk.LogMessage{Level: "critical", Logger: "relay", Data: map[string]any{"n": 1}})
	})
	if o.err != nil {
		t.Fatal(o.err)
	}
	m := recv(t, msgs, "the log message sent during the call")
	if diff := jsonDiff(t, `{"level":"critical","logger":"relay","data":{"n":1}}`, m); diff != "" {
		t.Errorf("log message during the call (-want +got):\n%s", diff)
	}
	select {
	case m := <-msgs:
		t.Errorf("extra log message %+v", m)
	default:
	}
}

// --- session tokens ---

func TestSessionTokenPerSession(t *testing.T) {
	t.Parallel()
	s, relay, _ := newRelayServer(t)
	ctx := context.Background()
	use := func(cs *mcp.ClientSession) []string {
		t.Helper()
		var toks []string
		if _, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "relay.ask", Arguments: map[string]any{}}); err != nil {
			t.Fatal(err)
		}
		c1 := relay.lastCaller(t)
		if _, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "relay.ask", Arguments: map[string]any{}}); err != nil {
			t.Fatal(err)
		}
		c2 := relay.lastCaller(t)
		if c1.CallToken == "" || c2.CallToken == "" || c1.CallToken == c2.CallToken {
			t.Errorf("call tokens of two calls: %q %q, want two different ones", c1.CallToken, c2.CallToken)
		}
		toks = append(toks, c1.SessionToken, c2.SessionToken)
		for _, uri := range []string{"relay://doc", "relay://notes/9"} {
			if _, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: uri}); err != nil {
				t.Fatalf("read %s: %v", uri, err)
			}
			c := relay.lastCaller(t)
			if c.CallToken != "" {
				t.Errorf("resources/read caller has call token %q", c.CallToken)
			}
			toks = append(toks, c.SessionToken)
		}
		n := len(relay.allPrompts())
		if _, err := cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: "relay.greet", Arguments: map[string]string{"name": "x"}}); err != nil {
			t.Fatal(err)
		}
		toks = append(toks, relay.allPrompts()[n].Caller.SessionToken)
		n = len(relay.allCompletes())
		if _, err := cs.Complete(ctx, &mcp.CompleteParams{Ref: &mcp.CompleteReference{Type: "ref/prompt", Name: "relay.greet"}, Argument: mcp.CompleteParamsArgument{Name: "name"}}); err != nil {
			t.Fatal(err)
		}
		toks = append(toks, relay.allCompletes()[n].Caller.SessionToken)
		n = len(relay.allSubs())
		if err := cs.Subscribe(ctx, &mcp.SubscribeParams{URI: "relay://doc"}); err != nil {
			t.Fatal(err)
		}
		toks = append(toks, relay.allSubs()[n].SessionToken)
		n = len(relay.allLevels())
		if err := cs.SetLoggingLevel(ctx, &mcp.SetLoggingLevelParams{Level: "info"}); err != nil {
			t.Fatal(err)
		}
		toks = append(toks, relay.allLevels()[n].Caller.SessionToken)
		return toks
	}
	a := use(connectVersion(t, s, "A", nil, legacyVersion))
	b := use(connectVersion(t, s, "B", nil, legacyVersion))
	for name, toks := range map[string][]string{"A": a, "B": b} {
		if toks[0] == "" {
			t.Errorf("session %s: empty session token", name)
		}
		for i, tok := range toks {
			if tok != toks[0] {
				t.Errorf("session %s: request %d saw token %q, the first saw %q", name, i, tok, toks[0])
			}
		}
	}
	if a[0] == b[0] {
		t.Errorf("two sessions share the token %q", a[0])
	}
	if n := len(relay.allCallers()); n != 8 {
		t.Errorf("%d calls and reads recorded, want 8", n)
	}
}

// Replay tells a provider (after its restart) each session's logging
// level and the subscriptions it still holds on that provider's resources.
func TestReplayTellsARestartedProviderWhatSessionsAsked(t *testing.T) {
	t.Parallel()
	s, relay, watch, cs := connectRelay(t, nil, legacyVersion)
	tok := sessionToken(t, cs, relay)
	ctx := context.Background()
	if err := cs.SetLoggingLevel(ctx, &mcp.SetLoggingLevelParams{Level: "warning"}); err != nil {
		t.Fatal(err)
	}
	for _, uri := range []string{"relay://doc", "relay://notes/7", "relay://notes/8"} {
		if err := cs.Subscribe(ctx, &mcp.SubscribeParams{URI: uri}); err != nil {
			t.Fatalf("subscribe %s: %v", uri, err)
		}
	}
	if err := cs.Unsubscribe(ctx, &mcp.UnsubscribeParams{URI: "relay://notes/8"}); err != nil {
		t.Fatal(err)
	}
	// A subscription the plain provider accepted is not relay's to hear.
	if err := cs.Subscribe(ctx, &mcp.SubscribeParams{URI: "plain://doc"}); err != nil {
		t.Fatal(err)
	}
	relayLevels, watchLevels, subs := len(relay.allLevels()), len(watch.allLevels()), len(relay.allSubs())

	s.Replay(ctx, "relay")

	levels := relay.allLevels()[relayLevels:]
	if len(levels) != 1 || levels[0].Level != "warning" || levels[0].Caller.SessionToken != tok {
		t.Errorf("levels replayed to relay: %+v", levels)
	}
	var replayed []string
	for _, e := range relay.allSubs()[subs:] {
		if !e.On || e.SessionToken != tok {
			t.Errorf("replayed subscription event %+v", e)
		}
		replayed = append(replayed, e.URI)
	}
	slices.Sort(replayed)
	if want := []string{"relay://doc", "relay://notes/7"}; !slices.Equal(replayed, want) {
		t.Errorf("subscriptions replayed to relay: %v, want %v", replayed, want)
	}
	if n := len(watch.allLevels()); n != watchLevels {
		t.Errorf("watch heard %d more levels from a replay meant for relay", n-watchLevels)
	}
}
