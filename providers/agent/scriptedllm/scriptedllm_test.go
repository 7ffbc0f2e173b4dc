package scriptedllm

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// errorRecorder is a testing.TB that records Errorf instead of failing.
type errorRecorder struct {
	testing.TB
	mu     sync.Mutex
	errors []string
}

func (r *errorRecorder) Errorf(format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.errors = append(r.errors, fmt.Sprintf(format, args...))
}

func (r *errorRecorder) recorded() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.errors...)
}

// post sends body to the server's chat-completions path and returns the
// status and the decoded JSON answer.
func post(t *testing.T, ctx context.Context, url, body string) (int, map[string]any) {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	raw, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	var out map[string]any
	if err := json.Unmarshal(raw, &out); err != nil {
		t.Fatalf("answer is not JSON: %s", raw)
	}
	return res.StatusCode, out
}

const chatBody = `{"model":"m","temperature":0.5,"tool_choice":"auto",
"messages":[{"role":"system","content":"sys"},{"role":"user","content":[{"type":"text","text":"he"},{"type":"text","text":"llo"}]},
{"role":"assistant","content":null,"tool_calls":[{"id":"c1","type":"function","function":{"name":"notes_store","arguments":"{}"}}]},
{"role":"tool","content":"ok","tool_call_id":"c1"}],
"tools":[{"type":"function","function":{"name":"notes_store","description":"Store.","parameters":{"type":"object"}}}]}`

func TestServerScript(t *testing.T) {
	s := New(t,
		CallTools(Call{Name: "notes_store", Arguments: `{"text":"x"}`}, Call{Name: "notes_search", Arguments: `bad`}),
		Reply("done"),
		Fail(http.StatusUnauthorized, "bad key"),
	)
	if !strings.HasSuffix(s.URL, "/v1") {
		t.Errorf("URL %q is not an API root ending in /v1", s.URL)
	}
	url := s.URL + "/chat/completions"

	status, got := post(t, context.Background(), url, chatBody)
	want := map[string]any{
		"id": "chatcmpl-scripted-1", "object": "chat.completion", "model": "m", "created": got["created"],
		"system_fingerprint": nil,
		"choices": []any{map[string]any{
			"index": 0.0, "logprobs": nil, "finish_reason": "tool_calls",
			"message": map[string]any{"role": "assistant", "content": nil, "refusal": nil, "tool_calls": []any{
				map[string]any{"id": "call_1_1", "type": "function", "function": map[string]any{"name": "notes_store", "arguments": `{"text":"x"}`}},
				map[string]any{"id": "call_1_2", "type": "function", "function": map[string]any{"name": "notes_search", "arguments": `bad`}},
			}},
		}},
		"usage": map[string]any{"prompt_tokens": 10.0, "completion_tokens": 5.0, "total_tokens": 15.0},
	}
	if status != http.StatusOK {
		t.Errorf("status %d", status)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("tool-call answer (-want +got):\n%s", diff)
	}

	status, got = post(t, context.Background(), url, `{"model":"m","messages":[{"role":"user","content":"again"}]}`)
	msg := got["choices"].([]any)[0].(map[string]any)
	if status != http.StatusOK || msg["finish_reason"] != "stop" || msg["message"].(map[string]any)["content"] != "done" {
		t.Errorf("reply answer %d %v", status, got)
	}

	status, got = post(t, context.Background(), url, `{"model":"m","messages":[{"role":"user","content":"x"}]}`)
	wantErr := map[string]any{"error": map[string]any{"message": "bad key", "type": "invalid_request_error", "param": nil, "code": "invalid_api_key"}}
	if status != http.StatusUnauthorized {
		t.Errorf("status %d, want 401", status)
	}
	if diff := cmp.Diff(wantErr, got); diff != "" {
		t.Errorf("error answer (-want +got):\n%s", diff)
	}

	reqs := s.Requests()
	if len(reqs) != 3 {
		t.Fatalf("%d requests recorded, want 3", len(reqs))
	}
	first := reqs[0]
	if first.Model != "m" || first.Temperature == nil || *first.Temperature != 0.5 || first.ToolChoice != "auto" {
		t.Errorf("first request: model %q, temperature %v, tool_choice %q", first.Model, first.Temperature, first.ToolChoice)
	}
	wantMsgs := []Message{
		{Role: "system", Content: "sys"},
		{Role: "user", Content: "hello"},
		{Role: "assistant", ToolCalls: []ToolCall{{ID: "c1", Name: "notes_store", Arguments: "{}"}}},
		{Role: "tool", Content: "ok", ToolCallID: "c1"},
	}
	if diff := cmp.Diff(wantMsgs, first.Messages); diff != "" {
		t.Errorf("messages (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"notes_store"}, first.Tools); diff != "" {
		t.Errorf("tools (-want +got):\n%s", diff)
	}
	if d := first.ToolDefs[0]; d.Description != "Store." || string(d.Parameters) != `{"type":"object"}` {
		t.Errorf("tool def %+v", d)
	}
	if reqs[1].Temperature != nil || reqs[1].Tools != nil {
		t.Errorf("second request: temperature %v, tools %v; want none", reqs[1].Temperature, reqs[1].Tools)
	}
}

func TestServerBeyondPlanAndRoutes(t *testing.T) {
	rec := &errorRecorder{TB: t}
	s := New(rec, Reply("only"))
	url := s.URL + "/chat/completions"
	body := `{"model":"m","messages":[{"role":"user","content":"x"}]}`
	post(t, context.Background(), url, body)

	status, got := post(t, context.Background(), url, body)
	wantMsg := "scriptedllm: request 2 is beyond the 1 planned steps"
	if status != http.StatusInternalServerError || got["error"].(map[string]any)["message"] != wantMsg {
		t.Errorf("beyond the plan: %d %v", status, got)
	}
	if diff := cmp.Diff([]string{wantMsg}, rec.recorded()); diff != "" {
		t.Errorf("test failures (-want +got):\n%s", diff)
	}

	status, got = post(t, context.Background(), strings.TrimSuffix(s.URL, "/v1")+"/chat/completions", body)
	if status != http.StatusNotFound || got["error"].(map[string]any)["code"] != "unknown_url" {
		t.Errorf("other path: %d %v", status, got)
	}
	res, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusNotFound {
		t.Errorf("GET: status %d, want 404", res.StatusCode)
	}
	if n := len(s.Requests()); n != 2 {
		t.Errorf("%d requests recorded, want 2 (404s are not chat requests)", n)
	}
	if n := len(rec.recorded()); n != 1 {
		t.Errorf("404s failed the test: %v", rec.recorded())
	}
}

func TestServerDelayCancelled(t *testing.T) {
	s := New(t, Delay(time.Minute, Reply("late")), Delay(10*time.Millisecond, Reply("soon")))
	url := s.URL + "/chat/completions"
	body := `{"model":"m","messages":[{"role":"user","content":"x"}]}`

	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		for len(s.Requests()) == 0 {
			time.Sleep(5 * time.Millisecond)
		}
		cancel()
	}()
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(body))
	if _, err := http.DefaultClient.Do(req); !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}

	status, got := post(t, context.Background(), url, body)
	content := got["choices"].([]any)[0].(map[string]any)["message"].(map[string]any)["content"]
	if status != http.StatusOK || content != "soon" {
		t.Errorf("delayed reply: %d %v", status, got)
	}
	s.Close()
	if n := s.Cancelled(); n != 1 {
		t.Errorf("Cancelled() = %d, want 1", n)
	}
}
