// Package scriptedllm is an OpenAI-compatible chat-completions server for
// tests. It answers POST <URL>/chat/completions with a planned sequence of
// steps (text replies, tool calls, HTTP errors, delays) and records every
// request it receives, so that a test can drive a tool-calling agent through
// a fixed conversation and then check what the agent sent.
//
// It serves only POST /v1/chat/completions, non-streaming; every other
// method or path gets a 404 with an OpenAI-style error body.
package scriptedllm

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

// chatPath is the one path the server answers.
const chatPath = "/v1/chat/completions"

// stepKind tells what a Step does.
type stepKind int

const (
	kindReply stepKind = iota + 1
	kindCallTools
	kindFail
	kindDelay
)

// Step is one planned answer: build it with [Reply], [CallTools], [Fail]
// or [Delay]. The n-th chat-completions request gets the n-th step.
type Step struct {
	kind    stepKind
	text    string
	calls   []Call
	status  int
	message string
	delay   time.Duration
	then    *Step
}

// Call is a tool call the scripted model makes.
type Call struct {
	// Name is the function name as the model sends it, i.e. the API-side
	// name, e.g. "notes_store" for the host tool notes_store.
	Name string
	// Arguments is sent verbatim as the call's arguments string; it need
	// not be valid JSON.
	Arguments string
}

// Reply plans an answer with text and no tool calls (finish_reason "stop").
func Reply(text string) Step { return Step{kind: kindReply, text: text} }

// CallTools plans an answer that calls the given tools, in order, with null
// content (finish_reason "tool_calls"). Call ids are "call_<request>_<n>",
// both 1-based.
func CallTools(calls ...Call) Step {
	return Step{kind: kindCallTools, calls: append([]Call(nil), calls...)}
}

// Fail plans an HTTP error: status with the OpenAI error body
// {"error":{"message":message,"type":...,"param":null,"code":...}}.
func Fail(status int, message string) Step {
	return Step{kind: kindFail, status: status, message: message}
}

// Delay plans a wait of d before answering with step. If the client
// cancels the request during the wait, the server stops waiting, writes
// nothing and counts the request in [Server.Cancelled].
func Delay(d time.Duration, step Step) Step {
	return Step{kind: kindDelay, delay: d, then: &step}
}

// Request is one chat-completions request the server received, decoded.
type Request struct {
	// Model is the request's model.
	Model string
	// Messages are the request's messages in order.
	Messages []Message
	// Tools are the names of the function tools offered, in order.
	Tools []string
	// ToolDefs are the function tools offered, in order.
	ToolDefs []Tool
	// ToolChoice is the tool_choice value when it is a string ("auto",
	// "none", "required"), "" when absent.
	ToolChoice string
	// Temperature is the request's temperature, nil when absent.
	Temperature *float64
	// Header is the request's HTTP header.
	Header http.Header
	// Body is the raw request body.
	Body json.RawMessage
}

// Message is one message of a recorded request.
type Message struct {
	// Role is "system", "developer", "user", "assistant" or "tool".
	Role string
	// Content is the message text; content given as an array of parts is
	// joined from its text parts. Null or absent content is "".
	Content string
	// ToolCalls are an assistant message's tool calls.
	ToolCalls []ToolCall
	// ToolCallID is a tool message's tool_call_id.
	ToolCallID string
}

// ToolCall is a tool call inside a recorded assistant message.
type ToolCall struct {
	// ID is the call's id.
	ID string
	// Name is the function name.
	Name string
	// Arguments is the function's arguments string.
	Arguments string
}

// Tool is a function tool offered in a recorded request.
type Tool struct {
	// Name is the function name.
	Name string
	// Description is the function description.
	Description string
	// Parameters is the function's JSON Schema, nil when absent.
	Parameters json.RawMessage
}

// Server is a running scripted server. It is closed when the test ends.
type Server struct {
	// URL is the API root, "http://127.0.0.1:<port>/v1"; clients send
	// requests to URL + "/chat/completions".
	URL string

	t   testing.TB
	srv *httptest.Server

	mu        sync.Mutex
	steps     []Step
	next      int
	requests  []Request
	cancelled int
	closeOnce sync.Once
}

// New starts a server that answers the n-th chat-completions request with
// steps[n-1]. A request beyond the plan gets a 500 whose message says so and
// fails the test with t.Errorf, as does a malformed or streaming request.
// The server is closed by t.Cleanup.
func New(t testing.TB, steps ...Step) *Server {
	t.Helper()
	s := &Server{t: t, steps: append([]Step(nil), steps...)}
	s.srv = httptest.NewServer(http.HandlerFunc(s.serve))
	s.URL = s.srv.URL + "/v1"
	t.Cleanup(s.Close)
	return s
}

// Close shuts the server down and waits for requests in progress to end,
// so that [Server.Requests] and [Server.Cancelled] are final afterwards.
// It is safe to call more than once.
func (s *Server) Close() { s.closeOnce.Do(s.srv.Close) }

// Requests returns the chat-completions requests received so far, in
// arrival order, including those that got an error or were cancelled.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.requests...)
}

// Cancelled returns how many requests the client cancelled while a
// [Delay] step was waiting.
func (s *Server) Cancelled() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.cancelled
}

// serve handles one HTTP request.
func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost || r.URL.Path != chatPath {
		writeError(w, http.StatusNotFound, fmt.Sprintf("scriptedllm: no route for %s %s; only POST %s is served",
			r.Method, r.URL.Path, chatPath), "unknown_url")
		return
	}
	body, err := io.ReadAll(r.Body)
	if err != nil {
		writeError(w, http.StatusBadRequest, "scriptedllm: cannot read the request body: "+err.Error(), nil)
		return
	}
	req, err := decodeRequest(body)
	if err != nil {
		s.t.Errorf("scriptedllm: malformed chat-completions request: %v\nbody: %s", err, body)
		writeError(w, http.StatusBadRequest, "scriptedllm: "+err.Error(), nil)
		return
	}
	req.Header = r.Header.Clone()

	s.mu.Lock()
	s.requests = append(s.requests, req)
	n := len(s.requests)
	var step Step
	planned := s.next < len(s.steps)
	if planned {
		step = s.steps[s.next]
		s.next++
	}
	total := len(s.steps)
	s.mu.Unlock()

	if !planned {
		msg := fmt.Sprintf("scriptedllm: request %d is beyond the %d planned steps", n, total)
		s.t.Errorf("%s", msg)
		writeError(w, http.StatusInternalServerError, msg, nil)
		return
	}
	s.answer(w, r, n, req.Model, step)
}

// answer writes the response for step to the n-th request.
func (s *Server) answer(w http.ResponseWriter, r *http.Request, n int, model string, step Step) {
	switch step.kind {
	case kindDelay:
		timer := time.NewTimer(step.delay)
		defer timer.Stop()
		select {
		case <-r.Context().Done():
			s.mu.Lock()
			s.cancelled++
			s.mu.Unlock()
			return
		case <-timer.C:
		}
		s.answer(w, r, n, model, *step.then)
	case kindFail:
		writeError(w, step.status, step.message, failCode(step.status))
	case kindReply:
		writeCompletion(w, n, model, completionMessage{Role: "assistant", Content: &step.text}, "stop")
	case kindCallTools:
		msg := completionMessage{Role: "assistant", ToolCalls: make([]wireToolCall, len(step.calls))}
		for i, c := range step.calls {
			msg.ToolCalls[i] = wireToolCall{
				ID:       fmt.Sprintf("call_%d_%d", n, i+1),
				Type:     "function",
				Function: wireFunction(c),
			}
		}
		writeCompletion(w, n, model, msg, "tool_calls")
	default:
		writeError(w, http.StatusInternalServerError, "scriptedllm: zero Step in the plan; build steps with Reply, CallTools, Fail or Delay", nil)
		s.t.Errorf("scriptedllm: request %d met a zero Step", n)
	}
}

// The wire shapes of the chat-completions API, as far as the server uses
// them.
type (
	wireRequest struct {
		Model       string          `json:"model"`
		Messages    []wireMessage   `json:"messages"`
		Tools       []wireTool      `json:"tools"`
		ToolChoice  json.RawMessage `json:"tool_choice"`
		Temperature *float64        `json:"temperature"`
		Stream      bool            `json:"stream"`
	}
	wireMessage struct {
		Role       string          `json:"role"`
		Content    json.RawMessage `json:"content"`
		ToolCalls  []wireToolCall  `json:"tool_calls"`
		ToolCallID string          `json:"tool_call_id"`
	}
	wireToolCall struct {
		ID       string       `json:"id"`
		Type     string       `json:"type"`
		Function wireFunction `json:"function"`
	}
	wireFunction struct {
		Name      string `json:"name"`
		Arguments string `json:"arguments"`
	}
	wireTool struct {
		Type     string `json:"type"`
		Function struct {
			Name        string          `json:"name"`
			Description string          `json:"description"`
			Parameters  json.RawMessage `json:"parameters"`
		} `json:"function"`
	}
	completionMessage struct {
		Role      string         `json:"role"`
		Content   *string        `json:"content"`
		ToolCalls []wireToolCall `json:"tool_calls,omitempty"`
		Refusal   *string        `json:"refusal"`
	}
	completion struct {
		ID                string   `json:"id"`
		Object            string   `json:"object"`
		Created           int64    `json:"created"`
		Model             string   `json:"model"`
		Choices           []choice `json:"choices"`
		Usage             usage    `json:"usage"`
		SystemFingerprint *string  `json:"system_fingerprint"`
	}
	choice struct {
		Index        int               `json:"index"`
		Message      completionMessage `json:"message"`
		Logprobs     *struct{}         `json:"logprobs"`
		FinishReason string            `json:"finish_reason"`
	}
	usage struct {
		PromptTokens     int `json:"prompt_tokens"`
		CompletionTokens int `json:"completion_tokens"`
		TotalTokens      int `json:"total_tokens"`
	}
)

// decodeRequest decodes and checks a chat-completions request body.
func decodeRequest(body []byte) (Request, error) {
	var wr wireRequest
	if err := json.Unmarshal(body, &wr); err != nil {
		return Request{}, fmt.Errorf("the body is not a chat-completions request: %v", err)
	}
	if wr.Model == "" {
		return Request{}, fmt.Errorf("the request has no model")
	}
	if len(wr.Messages) == 0 {
		return Request{}, fmt.Errorf("the request has no messages")
	}
	if wr.Stream {
		return Request{}, fmt.Errorf("the request asks for streaming, which this server does not speak")
	}
	req := Request{Model: wr.Model, Temperature: wr.Temperature, Body: json.RawMessage(body)}
	for i, m := range wr.Messages {
		content, err := decodeContent(m.Content)
		if err != nil {
			return Request{}, fmt.Errorf("message %d: %v", i+1, err)
		}
		msg := Message{Role: m.Role, Content: content, ToolCallID: m.ToolCallID}
		for _, c := range m.ToolCalls {
			msg.ToolCalls = append(msg.ToolCalls, ToolCall{ID: c.ID, Name: c.Function.Name, Arguments: c.Function.Arguments})
		}
		req.Messages = append(req.Messages, msg)
	}
	for i, t := range wr.Tools {
		if t.Type != "function" {
			return Request{}, fmt.Errorf("tool %d has type %q, want \"function\"", i+1, t.Type)
		}
		req.Tools = append(req.Tools, t.Function.Name)
		req.ToolDefs = append(req.ToolDefs, Tool{
			Name:        t.Function.Name,
			Description: t.Function.Description,
			Parameters:  t.Function.Parameters,
		})
	}
	if len(wr.ToolChoice) > 0 {
		var choice string
		if json.Unmarshal(wr.ToolChoice, &choice) == nil {
			req.ToolChoice = choice
		}
	}
	return req, nil
}

// decodeContent turns a message's content (string, array of parts, null or
// absent) into text.
func decodeContent(raw json.RawMessage) (string, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return "", nil
	}
	var s string
	if err := json.Unmarshal(raw, &s); err == nil {
		return s, nil
	}
	var parts []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	if err := json.Unmarshal(raw, &parts); err != nil {
		return "", fmt.Errorf("content is neither a string nor an array of parts")
	}
	var b strings.Builder
	for _, p := range parts {
		if p.Type == "text" {
			b.WriteString(p.Text)
		}
	}
	return b.String(), nil
}

// writeCompletion writes a chat.completion object for the n-th request.
func writeCompletion(w http.ResponseWriter, n int, model string, msg completionMessage, finish string) {
	promptTokens, completionTokens := 10*n, 5
	writeJSON(w, http.StatusOK, completion{
		ID:      fmt.Sprintf("chatcmpl-scripted-%d", n),
		Object:  "chat.completion",
		Created: time.Now().Unix(),
		Model:   model,
		Choices: []choice{{Index: 0, Message: msg, FinishReason: finish}},
		Usage: usage{
			PromptTokens:     promptTokens,
			CompletionTokens: completionTokens,
			TotalTokens:      promptTokens + completionTokens,
		},
	})
}

// failCode is the error code a [Fail] step sends for status, as the
// OpenAI API would; nil for statuses without one.
func failCode(status int) any {
	switch status {
	case http.StatusUnauthorized:
		return "invalid_api_key"
	case http.StatusNotFound:
		return "model_not_found"
	case http.StatusTooManyRequests:
		return "rate_limit_exceeded"
	}
	return nil
}

// writeError writes an OpenAI-style error body with status and code (a
// string or nil).
func writeError(w http.ResponseWriter, status int, message string, code any) {
	errType := "invalid_request_error"
	switch {
	case status == http.StatusTooManyRequests:
		errType = "requests"
	case status >= 500:
		errType = "server_error"
	}
	writeJSON(w, status, map[string]any{
		"error": map[string]any{"message": message, "type": errType, "param": nil, "code": code},
	})
}

// writeJSON writes v as a JSON response with status.
func writeJSON(w http.ResponseWriter, status int, v any) {
	body, err := json.Marshal(v)
	if err != nil {
		http.Error(w, "scriptedllm: "+err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(body)
}
