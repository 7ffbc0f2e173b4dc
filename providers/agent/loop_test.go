package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/openhuman/openhuman-host/sdk/testwait"
)

// scriptModel answers Complete with planned responses and records the
// requests it got, copying their messages.
type scriptModel struct {
	mu        sync.Mutex
	responses []scriptResponse
	requests  []ModelRequest
}

// scriptResponse is one planned answer of a scriptModel.
type scriptResponse struct {
	resp ModelResponse
	err  error
}

func (f *scriptModel) Complete(ctx context.Context, req ModelRequest) (ModelResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	req.Messages = append([]Message(nil), req.Messages...)
	f.requests = append(f.requests, req)
	n := len(f.requests)
	if n > len(f.responses) {
		return ModelResponse{}, fmt.Errorf("fake model: request %d beyond the %d planned", n, len(f.responses))
	}
	return f.responses[n-1].resp, f.responses[n-1].err
}

// planAnswer is a planned final answer.
func planAnswer(text string) scriptResponse {
	return scriptResponse{resp: ModelResponse{Content: text}}
}

// planCalls is a planned response calling tools; each call is name and
// arguments.
func planCalls(pairs ...string) scriptResponse {
	var r ModelResponse
	for i := 0; i+1 < len(pairs); i += 2 {
		r.ToolCalls = append(r.ToolCalls, ToolCall{ID: fmt.Sprintf("c%d", i/2+1), Name: pairs[i], Arguments: pairs[i+1]})
	}
	return scriptResponse{resp: r}
}

// ranCall is one call a recording runner received.
type ranCall struct {
	Name string
	Args string
}

// recordingRunner returns a ToolRunner answering every call with result
// (or isError for names in failing), and the calls it received.
func recordingRunner(failing ...string) (ToolRunner, *[]ranCall) {
	var mu sync.Mutex
	var got []ranCall
	run := func(_ context.Context, name string, args json.RawMessage) (string, bool, error) {
		mu.Lock()
		defer mu.Unlock()
		got = append(got, ranCall{Name: name, Args: string(args)})
		for _, f := range failing {
			if f == name {
				return "tool " + name + " failed: disk full", true, nil
			}
		}
		return "result of " + name + " " + string(args), false, nil
	}
	return run, &got
}

var loopTools = []ToolSpec{
	{Name: "memory_search", Description: "Search memory", Parameters: json.RawMessage(`{"type":"object"}`)},
	{Name: "memory_store", Description: "Store a memory", Parameters: json.RawMessage(`{"type":"object"}`)},
	{Name: "web.fetch", Description: "Fetch a page", Parameters: json.RawMessage(`{"type":"object"}`)},
}

func loopRequest(text string) ModelRequest {
	return ModelRequest{
		System:   "You are the archivist.",
		Messages: []Message{{Role: "user", Content: text}},
		Tools:    loopTools,
		Model:    "m1",
	}
}

func TestRunConversations(t *testing.T) {
	noWeb := func(tool string) bool { return !strings.HasPrefix(tool, "web.") }
	tests := []struct {
		name      string
		responses []scriptResponse
		allowed   func(string) bool
		failing   []string
		wantRes   Result
		wantRan   []ranCall
		// wantTool are the contents of the tool messages the second model
		// request carried, in order.
		wantTool []string
	}{
		{
			name:      "answer at once",
			responses: []scriptResponse{planAnswer("  Nothing to do.\n")},
			wantRes:   Result{Response: "Nothing to do.", Iterations: 1},
		},
		{
			name:      "one tool call then answer",
			responses: []scriptResponse{planCalls("memory_store", `{"text":"sky is blue"}`), planAnswer("Stored.")},
			wantRes:   Result{Response: "Stored.", Iterations: 2, ToolCalls: []ToolCallRecord{{Name: "memory_store"}}},
			wantRan:   []ranCall{{Name: "memory_store", Args: `{"text":"sky is blue"}`}},
			wantTool:  []string{`result of memory_store {"text":"sky is blue"}`},
		},
		{
			name:      "unknown tool",
			responses: []scriptResponse{planCalls("memory.delete", `{}`), planAnswer("Could not delete.")},
			wantRes: Result{Response: "Could not delete.", Iterations: 2,
				ToolCalls: []ToolCallRecord{{Name: "memory.delete", IsError: true}}},
			wantTool: []string{"unknown tool memory.delete; the tools you can call are: memory_search, memory_store, web.fetch"},
		},
		{
			name:      "unknown tool lists only tools in scope",
			responses: []scriptResponse{planCalls("shell.exec", `{}`), planAnswer("ok")},
			allowed:   noWeb,
			wantRes:   Result{Response: "ok", Iterations: 2, ToolCalls: []ToolCallRecord{{Name: "shell.exec", IsError: true}}},
			wantTool:  []string{"unknown tool shell.exec; the tools you can call are: memory_search, memory_store"},
		},
		{
			name:      "outside scope",
			responses: []scriptResponse{planCalls("web.fetch", `{"url":"https://example.org"}`, "memory_search", `{"query":"x"}`), planAnswer("Done.")},
			allowed:   noWeb,
			wantRes: Result{Response: "Done.", Iterations: 2,
				ToolCalls: []ToolCallRecord{{Name: "web.fetch", IsError: true}, {Name: "memory_search"}}},
			wantRan: []ranCall{{Name: "memory_search", Args: `{"query":"x"}`}},
			wantTool: []string{
				"tool web.fetch is outside this agent's scope",
				`result of memory_search {"query":"x"}`,
			},
		},
		{
			name: "malformed arguments",
			responses: []scriptResponse{
				planCalls("memory_store", `{"text":`, "memory_store", `["a"]`, "memory_search", `"x"`),
				planAnswer("Gave up."),
			},
			wantRes: Result{Response: "Gave up.", Iterations: 2, ToolCalls: []ToolCallRecord{
				{Name: "memory_store", IsError: true}, {Name: "memory_store", IsError: true}, {Name: "memory_search", IsError: true},
			}},
			wantTool: []string{
				"arguments for memory_store are not a JSON object: unexpected end of JSON input; send a JSON object matching the tool's parameters",
				"arguments for memory_store are not a JSON object: got an array; send a JSON object matching the tool's parameters",
				"arguments for memory_search are not a JSON object: got a string; send a JSON object matching the tool's parameters",
			},
		},
		{
			name:      "empty arguments are the empty object",
			responses: []scriptResponse{planCalls("memory_search", "  "), planAnswer("Searched.")},
			wantRes:   Result{Response: "Searched.", Iterations: 2, ToolCalls: []ToolCallRecord{{Name: "memory_search"}}},
			wantRan:   []ranCall{{Name: "memory_search", Args: `{}`}},
			wantTool:  []string{`result of memory_search {}`},
		},
		{
			name:      "tool error passed back",
			responses: []scriptResponse{planCalls("memory_store", `{"text":"a"}`, "memory_search", `{"query":"a"}`), planAnswer("Partly done.")},
			failing:   []string{"memory_store"},
			wantRes: Result{Response: "Partly done.", Iterations: 2,
				ToolCalls: []ToolCallRecord{{Name: "memory_store", IsError: true}, {Name: "memory_search"}}},
			wantRan: []ranCall{{Name: "memory_store", Args: `{"text":"a"}`}, {Name: "memory_search", Args: `{"query":"a"}`}},
			wantTool: []string{
				"Error: tool memory_store failed: disk full",
				`result of memory_search {"query":"a"}`,
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := &scriptModel{responses: tt.responses}
			run, ran := recordingRunner(tt.failing...)
			req := loopRequest("file this")
			res, err := Run(context.Background(), m, req, run, RunOptions{MaxIterations: 5, Allowed: tt.allowed})
			if err != nil {
				t.Fatalf("Run: %v", err)
			}
			if diff := cmp.Diff(tt.wantRes, res); diff != "" {
				t.Errorf("result (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.wantRan, *ran); diff != "" {
				t.Errorf("tool calls run (-want +got):\n%s", diff)
			}
			if len(m.requests) != len(tt.responses) {
				t.Fatalf("model got %d requests, want %d", len(m.requests), len(tt.responses))
			}
			for i, r := range m.requests {
				if r.System != req.System || r.Model != "m1" || len(r.Tools) != len(loopTools) {
					t.Errorf("request %d: system %q, model %q, %d tools; want the caller's", i+1, r.System, r.Model, len(r.Tools))
				}
			}
			if len(req.Messages) != 1 {
				t.Errorf("Run changed the caller's messages: %d now", len(req.Messages))
			}
			if len(tt.responses) < 2 {
				return
			}
			// The second request is the prompt, the assistant's calls and
			// one tool message per call, paired by id.
			second := m.requests[1].Messages
			first := tt.responses[0].resp.ToolCalls
			want := []Message{{Role: "user", Content: "file this"}, {Role: "assistant", ToolCalls: first}}
			for i, text := range tt.wantTool {
				// Refusals and error results are marked as errors, in the
				// order the calls were made.
				want = append(want, Message{Role: "tool", Content: text, ToolCallID: first[i].ID, IsError: tt.wantRes.ToolCalls[i].IsError})
			}
			if diff := cmp.Diff(want, second); diff != "" {
				t.Errorf("second request's messages (-want +got):\n%s", diff)
			}
		})
	}
}

func TestRunMaxIterations(t *testing.T) {
	m := &scriptModel{responses: []scriptResponse{
		planCalls("memory_search", `{"query":"a"}`),
		planCalls("memory_search", `{"query":"b"}`, "memory_search", `{"query":"c"}`),
		planCalls("memory_store", `{"text":"never run"}`),
	}}
	run, ran := recordingRunner()
	res, err := Run(context.Background(), m, loopRequest("loop"), run, RunOptions{MaxIterations: 3})
	if !errors.Is(err, ErrMaxIterations) {
		t.Fatalf("err = %v, want ErrMaxIterations", err)
	}
	want := "the agent reached its iteration limit: the model still called tools after 3 model requests " +
		"(max iterations 3, 3 tool calls made); raise the agent's max_iterations or give it a narrower task"
	if err.Error() != want {
		t.Errorf("err = %q\nwant %q", err, want)
	}
	if res.Iterations != 3 || len(res.ToolCalls) != 3 {
		t.Errorf("result: %d iterations, %d tool calls; want 3 and 3", res.Iterations, len(res.ToolCalls))
	}
	if len(*ran) != 3 || (*ran)[2].Args != `{"query":"c"}` {
		t.Errorf("ran %v; the calls of the last response must not run", *ran)
	}
}

func TestRunEmptyAnswer(t *testing.T) {
	m := &scriptModel{responses: []scriptResponse{planCalls("memory_search", `{}`), planAnswer(" \n\t")}}
	run, _ := recordingRunner()
	_, err := Run(context.Background(), m, loopRequest("x"), run, RunOptions{MaxIterations: 4})
	if !errors.Is(err, ErrEmptyAnswer) {
		t.Fatalf("err = %v, want ErrEmptyAnswer", err)
	}
	if want := "the model returned an empty answer after 2 model requests and 1 tool call"; err.Error() != want {
		t.Errorf("err = %q, want %q", err, want)
	}
}

func TestRunOnIteration(t *testing.T) {
	m := &scriptModel{responses: []scriptResponse{
		planCalls("memory_search", `{}`, "memory_store", `{}`),
		planAnswer("done"),
	}}
	run, _ := recordingRunner()
	var got []string
	_, err := Run(context.Background(), m, loopRequest("x"), run, RunOptions{
		MaxIterations: 4,
		OnIteration:   func(i int, s string) { got = append(got, fmt.Sprintf("%d|%s", i, s)) },
	})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"1|model request 1 of at most 4",
		"2|model request 2 of at most 4 after calling memory_search, memory_store",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("OnIteration calls (-want +got):\n%s", diff)
	}
}

func TestRunModelError(t *testing.T) {
	boom := errors.New("model endpoint http://h:1 answered 500 Internal Server Error")
	m := &scriptModel{responses: []scriptResponse{planCalls("memory_search", `{}`), {err: boom}}}
	run, _ := recordingRunner()
	res, err := Run(context.Background(), m, loopRequest("x"), run, RunOptions{MaxIterations: 4})
	if !errors.Is(err, boom) {
		t.Fatalf("err = %v, want it to wrap the model's error", err)
	}
	if want := "model request 2 of at most 4 failed: " + boom.Error(); err.Error() != want {
		t.Errorf("err = %q, want %q", err, want)
	}
	if res.Iterations != 2 || len(res.ToolCalls) != 1 {
		t.Errorf("partial result %+v, want 2 iterations and 1 tool call", res)
	}
}

func TestRunHostFailure(t *testing.T) {
	broken := errors.New("broker connection closed")
	m := &scriptModel{responses: []scriptResponse{planCalls("memory_search", `{}`), planAnswer("unreachable")}}
	run := func(context.Context, string, json.RawMessage) (string, bool, error) { return "", false, broken }
	_, err := Run(context.Background(), m, loopRequest("x"), run, RunOptions{MaxIterations: 4})
	if !errors.Is(err, broken) {
		t.Fatalf("err = %v, want it to wrap the runner's error", err)
	}
	if want := "tool call memory_search could not be run through the host: broker connection closed"; err.Error() != want {
		t.Errorf("err = %q, want %q", err, want)
	}
	if len(m.requests) != 1 {
		t.Errorf("model got %d requests after the host failed, want 1", len(m.requests))
	}
}

func TestRunCancelledDuringToolCall(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	m := &scriptModel{responses: []scriptResponse{planCalls("memory_search", `{}`, "memory_store", `{}`), planAnswer("never")}}
	started := make(chan struct{})
	var ranNames []string
	run := func(ctx context.Context, name string, _ json.RawMessage) (string, bool, error) {
		ranNames = append(ranNames, name)
		close(started)
		<-ctx.Done()
		return "", false, ctx.Err()
	}
	go func() {
		<-started
		cancel()
	}()
	done := make(chan struct{})
	var res Result
	var err error
	go func() {
		defer close(done)
		res, err = Run(ctx, m, loopRequest("x"), run, RunOptions{MaxIterations: 4})
	}()
	testwait.Recv(t, done, "Run to stop after cancellation")
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
	if want := "agent run stopped after 1 model request and 0 tool calls: context canceled"; err.Error() != want {
		t.Errorf("err = %q, want %q", err, want)
	}
	if len(m.requests) != 1 || res.Iterations != 1 {
		t.Errorf("%d model requests, %d iterations; want 1 and 1", len(m.requests), res.Iterations)
	}
	if diff := cmp.Diff([]string{"memory_search"}, ranNames); diff != "" {
		t.Errorf("tools run (-want +got):\n%s", diff)
	}
}

// blockingLoopModel blocks in Complete until ctx ends.
type blockingLoopModel struct{ entered chan struct{} }

func (b blockingLoopModel) Complete(ctx context.Context, _ ModelRequest) (ModelResponse, error) {
	close(b.entered)
	<-ctx.Done()
	return ModelResponse{}, fmt.Errorf("request aborted: %w", ctx.Err())
}

// The deadline passes while the model request runs: in a synctest bubble
// its 50ms pass only once Run is blocked in the request, however slow the
// machine is to get there.
func TestRunCancelledDuringModelRequest(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithTimeout(t.Context(), 50*time.Millisecond)
		defer cancel()
		m := blockingLoopModel{entered: make(chan struct{})}
		run, ran := recordingRunner()
		_, err := Run(ctx, m, loopRequest("x"), run, RunOptions{MaxIterations: 4})
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("err = %v, want context.DeadlineExceeded", err)
		}
		if want := "agent run stopped after 1 model request and 0 tool calls: context deadline exceeded"; err.Error() != want {
			t.Errorf("err = %q, want %q", err, want)
		}
		if len(*ran) != 0 {
			t.Errorf("tools ran after cancellation: %v", *ran)
		}
	})
}

func TestRunAlreadyCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	m := &scriptModel{responses: []scriptResponse{planAnswer("x")}}
	run, _ := recordingRunner()
	_, err := Run(ctx, m, loopRequest("x"), run, RunOptions{MaxIterations: 1})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
	if len(m.requests) != 0 {
		t.Errorf("model got %d requests on a cancelled context", len(m.requests))
	}
}

func TestRunMissingIDsAreFilled(t *testing.T) {
	m := &scriptModel{responses: []scriptResponse{
		{resp: ModelResponse{ToolCalls: []ToolCall{{Name: "memory_search", Arguments: `{}`}, {Name: "memory_store", Arguments: `{}`}}}},
		planAnswer("ok"),
	}}
	run, _ := recordingRunner()
	if _, err := Run(context.Background(), m, loopRequest("x"), run, RunOptions{MaxIterations: 2}); err != nil {
		t.Fatal(err)
	}
	msgs := m.requests[1].Messages
	got := []string{msgs[1].ToolCalls[0].ID, msgs[1].ToolCalls[1].ID, msgs[2].ToolCallID, msgs[3].ToolCallID}
	if diff := cmp.Diff([]string{"call_1_1", "call_1_2", "call_1_1", "call_1_2"}, got); diff != "" {
		t.Errorf("ids (-want +got):\n%s", diff)
	}
}

func TestRunInvalidOptions(t *testing.T) {
	m := &scriptModel{}
	run, _ := recordingRunner()
	_, err := Run(context.Background(), m, loopRequest("x"), run, RunOptions{})
	if err == nil || err.Error() != "agent run: max iterations must be at least 1, got 0" {
		t.Errorf("err = %v", err)
	}
	if _, err := Run(context.Background(), nil, loopRequest("x"), run, RunOptions{MaxIterations: 1}); err == nil {
		t.Error("Run accepted a nil model")
	}
	if _, err := Run(context.Background(), m, loopRequest("x"), nil, RunOptions{MaxIterations: 1}); err == nil {
		t.Error("Run accepted a nil runner")
	}
	if len(m.requests) != 0 {
		t.Errorf("model got %d requests", len(m.requests))
	}
}
