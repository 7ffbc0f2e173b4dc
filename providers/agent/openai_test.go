package agent

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/openhuman/openhuman-host/providers/agent/scriptedllm"
	"github.com/openhuman/openhuman-host/sdk"
	"github.com/openhuman/openhuman-host/sdk/testwait"
)

// testAPIKey is a key the tests check never leaks into errors or bodies.
const testAPIKey = "sk-test-0123456789abcdefSECRETKEY"

// newTestModel returns an OpenAIModel for the scripted server s, with a
// request timeout no busy machine reaches.
func newTestModel(t *testing.T, baseURL string, key string) *OpenAIModel {
	t.Helper()
	m, err := NewOpenAIModel(OpenAIConfig{BaseURL: baseURL, Model: "test-model", APIKey: key, Timeout: 2 * time.Minute})
	if err != nil {
		t.Fatalf("NewOpenAIModel: %v", err)
	}
	return m
}

// openAITools are host tools whose names need mapping.
var openAITools = []ToolSpec{
	{
		Name:        "memory.search",
		Description: "Search the memory store.",
		Parameters:  json.RawMessage(`{"type":"object","properties":{"query":{"type":"string"},"limit":{"type":"integer","maximum":50}},"required":["query"]}`),
	},
	{Name: "memory.store", Description: "Store a memory.", Parameters: json.RawMessage(`{"type":"object","properties":{"text":{"type":"string"}}}`)},
	{Name: "core.list_tools"},
}

func TestOpenAIRunThroughScriptedServer(t *testing.T) {
	s := scriptedllm.New(t,
		scriptedllm.CallTools(scriptedllm.Call{Name: "memory_store", Arguments: `{"text":"the sky is blue"}`}),
		scriptedllm.Reply("Filed one memory."),
	)
	m := newTestModel(t, s.URL, testAPIKey)
	temp := 0.2
	req := ModelRequest{
		System:      "You are the archivist.",
		Messages:    []Message{{Role: "user", Content: "File: the sky is blue"}},
		Tools:       openAITools,
		Model:       "archivist-model",
		Temperature: &temp,
	}
	var ran []string
	run := func(_ context.Context, name string, args json.RawMessage) (string, bool, error) {
		ran = append(ran, name+" "+string(args))
		return "stored memory m-1", false, nil
	}
	res, err := Run(context.Background(), m, req, run, RunOptions{MaxIterations: 4})
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	if res.Response != "Filed one memory." || res.Iterations != 2 {
		t.Errorf("result %+v", res)
	}
	if diff := cmp.Diff([]string{`memory.store {"text":"the sky is blue"}`}, ran); diff != "" {
		t.Errorf("tool calls run (-want +got):\n%s", diff)
	}

	got := s.Requests()
	if len(got) != 2 {
		t.Fatalf("server got %d requests, want 2", len(got))
	}
	first := got[0]
	if first.Model != "archivist-model" {
		t.Errorf("model = %q", first.Model)
	}
	if first.Temperature == nil || *first.Temperature != 0.2 {
		t.Errorf("temperature = %v, want 0.2", first.Temperature)
	}
	if first.ToolChoice != "auto" {
		t.Errorf("tool_choice = %q, want auto", first.ToolChoice)
	}
	if diff := cmp.Diff([]string{"memory_search", "memory_store", "core_list_tools"}, first.Tools); diff != "" {
		t.Errorf("tool names (-want +got):\n%s", diff)
	}
	if d := first.ToolDefs[0]; d.Description != "Search the memory store." ||
		string(d.Parameters) != `{"properties":{"query":{"type":"string"},"limit":{"type":"integer","maximum":50}},"required":["query"],"type":"object"}` {
		t.Errorf("memory_search definition: %q, %s", d.Description, d.Parameters)
	}
	if d := first.ToolDefs[2]; string(d.Parameters) != `{"properties":{},"type":"object"}` || d.Description != "" {
		t.Errorf("core_list_tools definition: %q, %s", d.Description, d.Parameters)
	}
	wantFirst := []scriptedllm.Message{
		{Role: "system", Content: "You are the archivist."},
		{Role: "user", Content: "File: the sky is blue"},
	}
	if diff := cmp.Diff(wantFirst, first.Messages); diff != "" {
		t.Errorf("first request's messages (-want +got):\n%s", diff)
	}
	wantSecond := append(wantFirst,
		scriptedllm.Message{Role: "assistant", ToolCalls: []scriptedllm.ToolCall{
			{ID: "call_1_1", Name: "memory_store", Arguments: `{"text":"the sky is blue"}`},
		}},
		scriptedllm.Message{Role: "tool", Content: "stored memory m-1", ToolCallID: "call_1_1"},
	)
	if diff := cmp.Diff(wantSecond, got[1].Messages); diff != "" {
		t.Errorf("second request's messages (-want +got):\n%s", diff)
	}
	if auth := first.Header.Get("Authorization"); auth != "Bearer "+testAPIKey {
		t.Errorf("Authorization header = %q, want the bearer key", auth)
	}
	for i, r := range got {
		if strings.Contains(string(r.Body), testAPIKey) {
			t.Errorf("request %d's body carries the API key", i+1)
		}
	}
}

func TestOpenAIDefaultsAndUnknownNames(t *testing.T) {
	s := scriptedllm.New(t, scriptedllm.CallTools(
		scriptedllm.Call{Name: "memory_delete", Arguments: `{}`},
		scriptedllm.Call{Name: "memory.search", Arguments: `{"query":"q"}`},
		scriptedllm.Call{Name: "memory_search", Arguments: `not json`},
	))
	m := newTestModel(t, s.URL, "")
	resp, err := m.Complete(context.Background(), ModelRequest{
		Messages: []Message{{Role: "user", Content: "hi"}},
		Tools:    openAITools,
	})
	if err != nil {
		t.Fatalf("Complete: %v", err)
	}
	want := []ToolCall{
		{ID: "call_1_1", Name: "memory_delete", Arguments: `{}`},
		{ID: "call_1_2", Name: "memory.search", Arguments: `{"query":"q"}`},
		{ID: "call_1_3", Name: "memory.search", Arguments: `not json`},
	}
	if diff := cmp.Diff(want, resp.ToolCalls); diff != "" {
		t.Errorf("tool calls (-want +got):\n%s", diff)
	}
	r := s.Requests()[0]
	if r.Model != "test-model" {
		t.Errorf("model = %q, want the configured default", r.Model)
	}
	if r.Temperature != nil {
		t.Errorf("temperature = %v, want none", *r.Temperature)
	}
	if len(r.Messages) != 1 || r.Messages[0].Role != "user" {
		t.Errorf("messages %+v, want the user's alone without a system message", r.Messages)
	}
	if auth := r.Header.Get("Authorization"); auth != "" {
		t.Errorf("Authorization header = %q, want none without a key", auth)
	}
}

func TestOpenAINoToolsSendsNoToolChoice(t *testing.T) {
	s := scriptedllm.New(t, scriptedllm.Reply("plain"))
	m := newTestModel(t, s.URL, "")
	resp, err := m.Complete(context.Background(), ModelRequest{Messages: []Message{{Role: "user", Content: "hi"}}})
	if err != nil || resp.Content != "plain" || resp.ToolCalls != nil {
		t.Fatalf("Complete = %+v, %v", resp, err)
	}
	body := string(s.Requests()[0].Body)
	if strings.Contains(body, "tool_choice") || strings.Contains(body, `"tools"`) {
		t.Errorf("request without tools carries tools or tool_choice: %s", body)
	}
}

func TestOpenAIReadsNoEnvironment(t *testing.T) {
	decoy := scriptedllm.New(t) // any request here fails the test
	t.Setenv("OPENAI_BASE_URL", decoy.URL)
	t.Setenv("OPENAI_API_KEY", "sk-from-the-environment-0000000000")
	t.Setenv("OPENAI_ORG_ID", "org-from-env")
	t.Setenv("OPENAI_PROJECT_ID", "proj-from-env")
	t.Setenv("OPENAI_CUSTOM_HEADERS", "X-From-Env: leaked")

	s := scriptedllm.New(t, scriptedllm.Reply("ok"))
	m := newTestModel(t, s.URL, "")
	if _, err := m.Complete(context.Background(), ModelRequest{Messages: []Message{{Role: "user", Content: "hi"}}}); err != nil {
		t.Fatalf("Complete: %v", err)
	}
	h := s.Requests()[0].Header
	for _, name := range []string{"Authorization", "OpenAI-Organization", "OpenAI-Project", "X-From-Env"} {
		if v := h.Get(name); v != "" {
			t.Errorf("header %s = %q, taken from the environment", name, v)
		}
	}
	if n := len(decoy.Requests()); n != 0 {
		t.Errorf("the server named by OPENAI_BASE_URL got %d requests", n)
	}
}

func TestOpenAIHTTPErrors(t *testing.T) {
	tests := []struct {
		name    string
		status  int
		message string
		want    string
	}{
		{
			name:    "401 quoting the key",
			status:  http.StatusUnauthorized,
			message: "Incorrect API key provided: " + testAPIKey + ". You can find your API key at your account page.",
			want: "model endpoint %s answered 401 Unauthorized: Incorrect API key provided: [redacted]. " +
				"You can find your API key at your account page.; the endpoint refused the API key (set [providers.agent.llm] api_key_env)",
		},
		{
			name:    "401 quoting a masked key",
			status:  http.StatusUnauthorized,
			message: "Incorrect API key provided: sk-test-****************ETKEY.",
			want: "model endpoint %s answered 401 Unauthorized: Incorrect API key provided: [redacted].; " +
				"the endpoint refused the API key (set [providers.agent.llm] api_key_env)",
		},
		{
			name:    "404",
			status:  http.StatusNotFound,
			message: "The model `gpt-9` does not exist or you do not have access to it.",
			want: "model endpoint %s answered 404 Not Found: The model `gpt-9` does not exist or you do not have access to it.; " +
				"no such model or endpoint path: check base_url and model",
		},
		{
			name:    "500",
			status:  http.StatusInternalServerError,
			message: "The server had an error\nwhile processing your request.",
			want: "model endpoint %s answered 500 Internal Server Error: The server had an error while processing your request.; " +
				"the endpoint failed: try again later",
		},
		{
			name:    "400 without tool support",
			status:  http.StatusBadRequest,
			message: "registry.ollama.ai/library/gemma:2b does not support tools",
			want: "model endpoint %s answered 400 Bad Request: registry.ollama.ai/library/gemma:2b does not support tools; " +
				"the endpoint rejected the request: check that the model supports tool calling",
		},
		{
			name:    "429 without a message",
			status:  http.StatusTooManyRequests,
			message: "",
			want:    "model endpoint %s answered 429 Too Many Requests; the endpoint is rate limiting or out of quota: try again later",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := scriptedllm.New(t, scriptedllm.Fail(tt.status, tt.message))
			m := newTestModel(t, s.URL, testAPIKey)
			_, err := m.Complete(context.Background(), ModelRequest{Messages: []Message{{Role: "user", Content: "hi"}}, Tools: openAITools})
			if err == nil {
				t.Fatal("Complete succeeded")
			}
			endpoint := strings.TrimSuffix(s.URL, "/v1")
			if want := strings.Replace(tt.want, "%s", endpoint, 1); err.Error() != want {
				t.Errorf("err = %q\nwant  %q", err, want)
			}
			if strings.Contains(err.Error(), testAPIKey) || strings.Contains(err.Error(), "/v1") {
				t.Errorf("err carries the key or the URL path: %q", err)
			}
			if n := len(s.Requests()); n != 1 {
				t.Errorf("server got %d requests, want 1 (no retries)", n)
			}
		})
	}
}

func TestOpenAIWrongBasePath(t *testing.T) {
	s := scriptedllm.New(t)
	m := newTestModel(t, strings.TrimSuffix(s.URL, "/v1"), testAPIKey)
	_, err := m.Complete(context.Background(), ModelRequest{Messages: []Message{{Role: "user", Content: "hi"}}})
	endpoint := strings.TrimSuffix(s.URL, "/v1")
	want := "model endpoint " + endpoint + " answered 404 Not Found: scriptedllm: no route for POST /chat/completions; " +
		"only POST /v1/chat/completions is served; no such model or endpoint path: check base_url and model"
	if err == nil || err.Error() != want {
		t.Errorf("err = %v\nwant  %s", err, want)
	}
}

func TestOpenAIConnectionRefused(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	m := newTestModel(t, "http://"+addr+"/v1", testAPIKey)
	_, err = m.Complete(context.Background(), ModelRequest{Messages: []Message{{Role: "user", Content: "hi"}}})
	want := "cannot reach http://" + addr + ": connection refused; check [providers.agent.llm] base_url and that the server is running"
	if err == nil || err.Error() != want {
		t.Fatalf("err = %v\nwant  %s", err, want)
	}
}

func TestOpenAICancellationReachesServer(t *testing.T) {
	s := scriptedllm.New(t, scriptedllm.Delay(time.Minute, scriptedllm.Reply("too late")))
	m := newTestModel(t, s.URL, testAPIKey)
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() {
		_, err := m.Complete(ctx, ModelRequest{Messages: []Message{{Role: "user", Content: "hi"}}})
		errc <- err
	}()
	testwait.Until(t, "the request to reach the server", func() bool { return len(s.Requests()) > 0 })
	cancel()
	err := testwait.Recv(t, errc, "Complete to return after cancellation")
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
	endpoint := strings.TrimSuffix(s.URL, "/v1")
	if want := "model request to " + endpoint + " cancelled: context canceled"; err.Error() != want {
		t.Errorf("err = %q, want %q", err, want)
	}
	s.Close() // waits for the handler
	if n := s.Cancelled(); n != 1 {
		t.Errorf("server saw %d cancelled requests, want 1", n)
	}
}

func TestOpenAITimeout(t *testing.T) {
	s := scriptedllm.New(t, scriptedllm.Delay(time.Minute, scriptedllm.Reply("too late")))
	m, err := NewOpenAIModel(OpenAIConfig{BaseURL: s.URL, Model: "m", Timeout: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	_, err = m.Complete(context.Background(), ModelRequest{Messages: []Message{{Role: "user", Content: "hi"}}})
	endpoint := strings.TrimSuffix(s.URL, "/v1")
	want := "model endpoint " + endpoint + " did not answer within 200ms; use a faster model or a longer timeout"
	if err == nil || err.Error() != want {
		t.Fatalf("err = %v\nwant  %s", err, want)
	}
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("err does not wrap context.DeadlineExceeded")
	}
	s.Close()
	// On a loaded machine the 200ms may run out before the request
	// arrives; a request that did arrive must have been cancelled, and
	// not retried.
	if n, c := len(s.Requests()), s.Cancelled(); n > 1 || c != n {
		t.Errorf("server saw %d requests, %d of them cancelled; want at most one, cancelled", n, c)
	}
}

func TestNewOpenAIModelConfig(t *testing.T) {
	tests := []struct {
		cfg  OpenAIConfig
		want string
	}{
		{OpenAIConfig{Model: "m"}, `[providers.agent.llm] base_url is required, e.g. base_url = "http://127.0.0.1:11434/v1"`},
		{OpenAIConfig{BaseURL: "ftp://h/v1", Model: "m"}, `[providers.agent.llm] base_url must be an http or https URL, got "ftp://h/v1"`},
		{OpenAIConfig{BaseURL: "http://user:" + testAPIKey + "@h/v1", Model: "m"},
			"[providers.agent.llm] base_url must not contain a user name or password; name the environment variable holding the API key in api_key_env"},
		{OpenAIConfig{BaseURL: "http://h/v1?key=x", Model: "m"}, `[providers.agent.llm] base_url must not have a query or fragment, got "http://h/v1?key=x"`},
		{OpenAIConfig{BaseURL: "http://h/v1/chat/completions", Model: "m"},
			`[providers.agent.llm] base_url is the API root, requests go to <base_url>/chat/completions; drop the trailing /chat/completions from "http://h/v1/chat/completions"`},
		{OpenAIConfig{BaseURL: "http://h/v1", Model: " "}, `[providers.agent.llm] model is required, e.g. model = "gpt-4o-mini" or a model your server serves`},
		{OpenAIConfig{BaseURL: "http://h/v1", Model: "m", Timeout: -time.Second}, "agent model request timeout must be positive, got -1s"},
	}
	for _, tt := range tests {
		_, err := NewOpenAIModel(tt.cfg)
		if err == nil || err.Error() != tt.want {
			t.Errorf("NewOpenAIModel(%+v) = %v\nwant %s", tt.cfg, err, tt.want)
		}
	}
	m, err := NewOpenAIModel(OpenAIConfig{BaseURL: "https://api.example.com:8443/v1/", Model: "m"})
	if err != nil {
		t.Fatal(err)
	}
	if m.endpoint != "https://api.example.com:8443" || m.timeout != DefaultOpenAITimeout {
		t.Errorf("endpoint %q, timeout %s", m.endpoint, m.timeout)
	}
}

func TestToolNameMapping(t *testing.T) {
	long := strings.Repeat("a", 70)
	tools := []ToolSpec{
		{Name: "memory.search"},
		{Name: "memory_search"}, // valid: keeps its name, so memory.search moves
		{Name: "memory/search"},
		{Name: "web-fetch"},
		{Name: "outil.é"},
		{Name: long + ".x"},
		{Name: long + ".y"},
	}
	names, err := newToolNames(tools)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"memory_search_2",
		"memory_search",
		"memory_search_3",
		"web-fetch",
		"outil__",
		sdk.ClientName(long + ".x"),
		sdk.ClientName(long + ".y"),
	}
	if diff := cmp.Diff(want, names.api); diff != "" {
		t.Errorf("API names (-want +got):\n%s", diff)
	}
	for i, api := range names.api {
		if !sdk.IsClientName(api) {
			t.Errorf("%q is not a valid API name", api)
		}
		if got := names.hostName(api); got != tools[i].Name {
			t.Errorf("hostName(%q) = %q, want %q", api, got, tools[i].Name)
		}
		if got := names.apiName(tools[i].Name); got != api {
			t.Errorf("apiName(%q) = %q, want %q", tools[i].Name, got, api)
		}
	}
	if got := names.hostName("nope"); got != "nope" {
		t.Errorf("hostName of an unknown name = %q", got)
	}
	if got := names.apiName("made.up"); got != "made_up" {
		t.Errorf("apiName of an unknown host name = %q", got)
	}
	again, _ := newToolNames(tools)
	if diff := cmp.Diff(names.api, again.api); diff != "" {
		t.Errorf("mapping is not deterministic:\n%s", diff)
	}
	if _, err := newToolNames([]ToolSpec{{Name: "a.b"}, {Name: "a.b"}}); err == nil ||
		err.Error() != "agent model request: tool a.b is offered twice" {
		t.Errorf("duplicate tools: err = %v", err)
	}
}

func TestOpenAIUnusableAnswer(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"id":"x","object":"chat.completion","choices":[]}`))
	}))
	defer srv.Close()
	m := newTestModel(t, srv.URL+"/v1", testAPIKey)
	_, err := m.Complete(context.Background(), ModelRequest{Messages: []Message{{Role: "user", Content: "hi"}}})
	if want := "model endpoint " + srv.URL + " returned no choices"; err == nil || err.Error() != want {
		t.Errorf("err = %v, want %s", err, want)
	}
}

func TestOpenAIRejectsBadRequests(t *testing.T) {
	s := scriptedllm.New(t)
	m := newTestModel(t, s.URL, "")
	tests := []struct {
		req  ModelRequest
		want string
	}{
		{
			ModelRequest{Messages: []Message{{Role: "user", Content: "hi"}}, Tools: []ToolSpec{{Name: "a.b", Parameters: json.RawMessage(`[1]`)}}},
			"agent model request: the parameters of tool a.b are not a JSON Schema object",
		},
		{
			ModelRequest{Messages: []Message{{Role: "system", Content: "hi"}}},
			`agent model request: message 1 has role "system", want user, assistant or tool`,
		},
	}
	for _, tt := range tests {
		_, err := m.Complete(context.Background(), tt.req)
		if err == nil || err.Error() != tt.want {
			t.Errorf("err = %v, want %s", err, tt.want)
		}
	}
	if n := len(s.Requests()); n != 0 {
		t.Errorf("server got %d requests for invalid model requests", n)
	}
}

func TestOpenAIMalformedModelOutputThroughRun(t *testing.T) {
	s := scriptedllm.New(t,
		scriptedllm.CallTools(
			scriptedllm.Call{Name: "memory_store", Arguments: `{"text": "unterminated`},
			scriptedllm.Call{Name: "memory_forget", Arguments: `{}`},
		),
		scriptedllm.Reply("I could not store it."),
	)
	m := newTestModel(t, s.URL, "")
	run := func(context.Context, string, json.RawMessage) (string, bool, error) {
		t.Error("no tool call should run")
		return "", false, nil
	}
	req := ModelRequest{Messages: []Message{{Role: "user", Content: "store"}}, Tools: openAITools}
	res, err := Run(context.Background(), m, req, run, RunOptions{MaxIterations: 3})
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	wantCalls := []ToolCallRecord{{Name: "memory.store", IsError: true}, {Name: "memory_forget", IsError: true}}
	if diff := cmp.Diff(wantCalls, res.ToolCalls); diff != "" {
		t.Errorf("tool calls (-want +got):\n%s", diff)
	}
	second := s.Requests()[1].Messages
	want := []scriptedllm.Message{
		{Role: "user", Content: "store"},
		{Role: "assistant", ToolCalls: []scriptedllm.ToolCall{
			{ID: "call_1_1", Name: "memory_store", Arguments: `{}`},
			{ID: "call_1_2", Name: "memory_forget", Arguments: `{}`},
		}},
		{Role: "tool", ToolCallID: "call_1_1", Content: "arguments for memory.store are not a JSON object: " +
			"unexpected end of JSON input; send a JSON object matching the tool's parameters"},
		{Role: "tool", ToolCallID: "call_1_2", Content: "unknown tool memory_forget; the tools you can call are: " +
			"memory.search, memory.store, core.list_tools"},
	}
	if diff := cmp.Diff(want, second); diff != "" {
		t.Errorf("second request's messages (-want +got):\n%s", diff)
	}
}

// Answers past MaxResponseBytes, and a null body, fail the request with a
// clear error instead of exhausting memory or crashing.
func TestOpenAIOversizedAndNullAnswers(t *testing.T) {
	t.Parallel()
	huge := strings.Repeat("x", MaxResponseBytes+1024)
	for name, tc := range map[string]struct {
		body string
		want string
	}{
		"oversized": {body: `{"id":"c","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"` + huge + `"},"finish_reason":"stop"}]}`,
			want: "the model endpoint's answer is larger than 16 MiB; ask for a shorter answer"},
		"null": {body: "null", want: "returned an answer that is not a chat completion (the body was null)"},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
				w.Header().Set("Content-Type", "application/json")
				_, _ = io.WriteString(w, tc.body)
			}))
			defer srv.Close()
			m, err := NewOpenAIModel(OpenAIConfig{BaseURL: srv.URL + "/v1", Model: "m"})
			if err != nil {
				t.Fatal(err)
			}
			_, err = m.Complete(t.Context(), ModelRequest{Messages: []Message{{Role: "user", Content: "hi"}}})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error = %v, want %q", err, tc.want)
			}
		})
	}
}
