package sdk_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/openhuman/openhuman-host/sdk"
	"github.com/openhuman/openhuman-host/sdk/plugin"
	"github.com/openhuman/openhuman-host/sdk/sdktest"
)

// echo is a provider used to exercise the gRPC adapter in both directions.
type echo struct {
	mu     sync.Mutex
	config sdk.ConfigureRequest
}

func (e *echo) Configure(_ context.Context, req *sdk.ConfigureRequest) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.config = *req
	if string(req.Config) == `{"fail":true}` {
		return errors.New("fail is set: remove it")
	}
	return nil
}

func (e *echo) Describe(context.Context) (*sdk.Catalog, error) {
	return &sdk.Catalog{
		Name: "echo", Version: "1.2.3",
		Tools: []sdk.Tool{{
			Name: "echo.say", Title: "Say", Description: "Echoes.",
			InputSchema:  json.RawMessage(`{"type":"object","additionalProperties":false}`),
			OutputSchema: json.RawMessage(`{"type":"object"}`),
			Annotations:  sdk.Annotations{ReadOnlyHint: sdk.Bool(true), OpenWorldHint: sdk.Bool(false)},
			Class:        sdk.ClassRead,
			Timeout:      1500 * time.Millisecond,
		}},
		Resources:         []sdk.Resource{{URI: "echo://a", Name: "a", MIMEType: "text/plain", Size: 3}},
		ResourceTemplates: []sdk.ResourceTemplate{{URITemplate: "echo://{x}", Name: "x"}},
		Prompts:           []sdk.Prompt{{Name: "p", Arguments: []sdk.PromptArgument{{Name: "q", Required: true}}}},
	}, nil
}

func (e *echo) CallTool(ctx context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
	switch req.Name {
	case "echo.panic":
		panic("boom")
	case "echo.fail":
		return nil, errors.New("disk on fire")
	case "echo.wait":
		<-ctx.Done()
		return nil, ctx.Err()
	case "echo.progress":
		for i := 1; i <= 3; i++ {
			if err := req.Progress(ctx, sdk.Progress{Progress: float64(i), Total: 3, Message: fmt.Sprint("step ", i)}); err != nil {
				return nil, err
			}
		}
		_ = req.Log(ctx, sdk.LogMessage{Level: "info", Logger: "echo", Data: map[string]int{"n": 1}})
	case "echo.host":
		e.mu.Lock()
		host := e.config.Host
		e.mu.Unlock()
		if host == nil {
			return sdk.ErrorResult("no host service"), nil
		}
		return host.CallTool(ctx, &sdk.HostCallToolRequest{Name: "other.tool", Arguments: req.Arguments, Caller: req.Caller, Actor: "agent:test"})
	case "echo.caller":
		return sdk.StructuredResult("caller", req.Caller)
	case "echo.list", "echo.sample", "echo.nosample":
		e.mu.Lock()
		host := e.config.Host
		e.mu.Unlock()
		if req.Name == "echo.list" {
			tools, err := host.ListTools(ctx)
			if err != nil {
				return nil, err
			}
			return sdk.TextResult(fmt.Sprintf("%s %s %s", tools[0].Name, tools[0].Class, tools[0].InputSchema)), nil
		}
		caller := req.Caller
		if req.Name == "echo.nosample" {
			caller.CallToken = ""
		}
		res, err := host.CreateMessage(ctx, &sdk.CreateMessageRequest{
			Caller:       caller,
			SystemPrompt: "be brief",
			Messages: []sdk.SamplingMessage{
				{Role: "user", Content: []sdk.SamplingContent{{Type: "text", Text: "hi"}}},
				{Role: "assistant", Content: []sdk.SamplingContent{{Type: "tool_use", ToolUseID: "u1", ToolName: "notes_search", Input: json.RawMessage(`{"query":"x"}`)}}},
				{Role: "user", Content: []sdk.SamplingContent{{Type: "tool_result", ToolUseID: "u1", Text: "none", IsError: true}}},
			},
			Tools:       []sdk.SamplingTool{{Name: "notes_search", Description: "d", InputSchema: json.RawMessage(`{"type":"object"}`)}},
			Temperature: &temperature,
			ModelHint:   "small",
		})
		if err != nil {
			return nil, err
		}
		return sdk.TextResult(fmt.Sprintf("%s %s %s %s %s", res.Model, res.StopReason, res.Content[0].Type, res.Content[0].ToolName, res.Content[0].Input)), nil
	}
	out, err := sdk.StructuredResult("echo "+string(req.Arguments), map[string]any{"args": req.Arguments, "source": req.Caller.SourceType})
	return out, err
}

func (e *echo) ReadResource(_ context.Context, req *sdk.ReadResourceRequest) (*sdk.ReadResourceResult, error) {
	if req.URI != "echo://a" {
		return nil, fmt.Errorf("%w: %s", sdk.ErrResourceNotFound, req.URI)
	}
	return &sdk.ReadResourceResult{Contents: []sdk.ResourceContents{{URI: req.URI, MIMEType: "text/plain", Text: "abc"}}}, nil
}

type recordingSink struct {
	mu       sync.Mutex
	progress []sdk.Progress
	logs     []string
}

func (s *recordingSink) Progress(_ context.Context, p sdk.Progress) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.progress = append(s.progress, p)
	return nil
}

func (s *recordingSink) Log(_ context.Context, m sdk.LogMessage) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	raw, _ := json.Marshal(m.Data)
	s.logs = append(s.logs, m.Level+" "+m.Logger+" "+string(raw))
	return nil
}

var temperature = 0.5

type fakeHost struct {
	sdktest.StubHost
	got *sdk.HostCallToolRequest
}

func (h *fakeHost) ListTools(context.Context) ([]sdk.Tool, error) {
	return []sdk.Tool{{Name: "notes_search", Class: sdk.ClassRead, InputSchema: json.RawMessage(`{"type":"object"}`)}}, nil
}

// CreateMessage answers with what it was asked, so the test sees every
// field cross the broker both ways.
func (h *fakeHost) CreateMessage(_ context.Context, req *sdk.CreateMessageRequest) (*sdk.CreateMessageResult, error) {
	if req.Caller.CallToken != "tok" {
		return nil, fmt.Errorf("%w: no session for this call", sdk.ErrSamplingUnavailable)
	}
	m := req.Messages
	desc := fmt.Sprintf("%s|%g|%s|%d|%s:%s|%s:%s:%s|%s:%s:%s:%v|%s", req.SystemPrompt, *req.Temperature, req.ModelHint, len(m),
		m[0].Role, m[0].Content[0].Text, m[1].Content[0].Type, m[1].Content[0].ToolName, m[1].Content[0].Input,
		m[2].Content[0].Type, m[2].Content[0].ToolUseID, m[2].Content[0].Text, m[2].Content[0].IsError, req.Tools[0].InputSchema)
	return &sdk.CreateMessageResult{Model: desc, StopReason: "toolUse", Content: []sdk.SamplingContent{
		{Type: "tool_use", ToolUseID: "u2", ToolName: "notes_search", Input: json.RawMessage(`{"query":"y"}`)},
	}}, nil
}

func (h *fakeHost) CallTool(_ context.Context, req *sdk.HostCallToolRequest) (*sdk.CallToolResult, error) {
	h.got = req
	return sdk.TextResult("host says hi to " + req.Actor), nil
}

func TestCatalogRoundTrip(t *testing.T) {
	t.Parallel()
	h := sdktest.Start(t, &echo{}, nil)
	want, _ := (&echo{}).Describe(context.Background())
	if diff := cmp.Diff(want, h.Catalog); diff != "" {
		t.Errorf("catalog changed crossing gRPC (-want +got):\n%s", diff)
	}
}

func TestCallTool(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	host := &fakeHost{}
	h := sdktest.Start(t, &echo{}, &sdktest.Options{Host: host, Caller: sdk.Caller{SourceType: "mcp:probe", Depth: 2, CallToken: "tok"}})

	tests := map[string]struct {
		tool    string
		want    *sdk.CallToolResult
		wantErr string
	}{
		"structured result": {
			tool: "echo.say",
			want: &sdk.CallToolResult{
				Content:           []sdk.Content{sdk.TextContent(`echo {"x":1}`)},
				StructuredContent: json.RawMessage(`{"args":{"x":1},"source":"mcp:probe"}`),
			},
		},
		"provider error names the tool":   {tool: "echo.fail", wantErr: "call echo.fail: disk on fire"},
		"panic is a failed call":          {tool: "echo.panic", wantErr: "call echo.panic: CallTool echo.panic panicked: boom"},
		"host service through the broker": {tool: "echo.host", want: sdk.TextResult("host says hi to agent:test")},
		"host tool list":                  {tool: "echo.list", want: sdk.TextResult(`notes_search read {"type":"object"}`)},
		"sampling through the broker": {tool: "echo.sample", want: sdk.TextResult(
			`be brief|0.5|small|3|user:hi|tool_use:notes_search:{"query":"x"}|tool_result:u1:none:true|{"type":"object"} toolUse tool_use notes_search {"query":"y"}`)},
		"sampling unavailable": {tool: "echo.nosample", wantErr: "call echo.nosample: host create message: sampling is not available for this call: no session for this call"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got, err := h.CallRaw(ctx, tc.tool, map[string]int{"x": 1})
			if tc.wantErr != "" {
				if err == nil || err.Error() != tc.wantErr {
					t.Fatalf("error = %v, want %q", err, tc.wantErr)
				}
				if panicked := errors.Is(err, plugin.ErrPanicked); panicked != (tc.tool == "echo.panic") {
					t.Errorf("errors.Is(err, ErrPanicked) = %v", panicked)
				}
				if unavailable := errors.Is(err, sdk.ErrSamplingUnavailable); unavailable != (tc.tool == "echo.nosample") {
					t.Errorf("errors.Is(err, ErrSamplingUnavailable) = %v", unavailable)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("result (-want +got):\n%s", diff)
			}
		})
	}
	if host.got == nil || host.got.Caller.SourceType != "mcp:probe" || host.got.Caller.Depth != 2 || host.got.Name != "other.tool" {
		t.Errorf("host service got %+v", host.got)
	}
}

// Every Caller field crosses the gRPC adapter, ReadsStructuredContent
// included, and a Caller that does not set it arrives with false, as
// from a host that predates the field.
func TestCallerCrossesGRPC(t *testing.T) {
	t.Parallel()
	full := sdk.Caller{
		SourceType: "mcp:claude-code", SessionHash: "sha256:0123abcd", ClientName: "claude-code", ClientVersion: "2.1",
		Depth: 1, ProgressToken: json.RawMessage(`"p-7"`), CallToken: "call-1", SessionToken: "sess-1",
		ProtocolVersion: "2025-11-25", ClientCapabilities: json.RawMessage(`{"sampling":{}}`), ReadsStructuredContent: true,
	}
	for name, caller := range map[string]sdk.Caller{
		"every field": full,
		// The JSON the tool answers with turns nil into null, so every
		// case sets the raw fields.
		"reads structured unset":    {SourceType: "mcp:other", ClientName: "other", ProgressToken: json.RawMessage(`1`), ClientCapabilities: json.RawMessage(`{}`)},
		"only reads structured set": {SourceType: "mcp", ReadsStructuredContent: true, ProgressToken: json.RawMessage(`1`), ClientCapabilities: json.RawMessage(`{}`)},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			h := sdktest.Start(t, &echo{}, &sdktest.Options{Caller: caller})
			res, err := h.CallRaw(t.Context(), "echo.caller", map[string]any{})
			if err != nil {
				t.Fatal(err)
			}
			var got sdk.Caller
			if err := json.Unmarshal(res.StructuredContent, &got); err != nil {
				t.Fatalf("structured content %s: %v", res.StructuredContent, err)
			}
			if diff := cmp.Diff(caller, got); diff != "" {
				t.Errorf("caller changed crossing gRPC (-sent +received):\n%s", diff)
			}
		})
	}
}

func TestProgressAndLogEvents(t *testing.T) {
	t.Parallel()
	h := sdktest.Start(t, &echo{}, nil)
	sink := &recordingSink{}
	req := (&sdk.CallToolRequest{Name: "echo.progress", Arguments: json.RawMessage(`{}`), Caller: sdk.Caller{ProgressToken: json.RawMessage(`"tok"`)}}).WithEvents(sink)
	if _, err := h.Provider.CallTool(context.Background(), req); err != nil {
		t.Fatal(err)
	}
	want := []sdk.Progress{{1, 3, "step 1"}, {2, 3, "step 2"}, {3, 3, "step 3"}}
	if diff := cmp.Diff(want, sink.progress); diff != "" {
		t.Errorf("progress (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{`info echo {"n":1}`}, sink.logs); diff != "" {
		t.Errorf("logs (-want +got):\n%s", diff)
	}
}

func TestCancellationReachesProvider(t *testing.T) {
	t.Parallel()
	h := sdktest.Start(t, &echo{}, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	_, err := h.CallRaw(ctx, "echo.wait", nil)
	if !errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, context.Canceled) {
		t.Fatalf("error = %v, want a cancellation", err)
	}
}

func TestReadResource(t *testing.T) {
	t.Parallel()
	h := sdktest.Start(t, &echo{}, nil)
	got, err := h.Read(context.Background(), "echo://a")
	if err != nil {
		t.Fatal(err)
	}
	want := &sdk.ReadResourceResult{Contents: []sdk.ResourceContents{{URI: "echo://a", MIMEType: "text/plain", Text: "abc"}}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	if _, err := h.Read(context.Background(), "echo://missing"); !errors.Is(err, sdk.ErrResourceNotFound) {
		t.Errorf("unknown resource error = %v, want ErrResourceNotFound", err)
	}
}

func TestStructuredResultRejectsNonObjects(t *testing.T) {
	t.Parallel()
	if _, err := sdk.StructuredResult("x", []int{1}); err == nil {
		t.Fatal("an array was accepted as structured content")
	}
}

// A Configure request's environment is Env when the host set it (a
// provider in the host's process), else the process's own.
func TestConfigureRequestEnviron(t *testing.T) {
	in := &sdk.ConfigureRequest{Env: []string{"PATH=/bin", "LANG=C", "LANG=C.UTF-8", "EMPTY="}}
	if got := in.Environ(); len(got) != 4 || got[0] != "PATH=/bin" {
		t.Errorf("Environ() = %v, want Env", got)
	}
	for key, want := range map[string]string{"LANG": "C.UTF-8", "PATH": "/bin", "EMPTY": "", "HOME": ""} {
		if got := in.Getenv(key); got != want {
			t.Errorf("Getenv(%q) = %q, want %q", key, got, want)
		}
	}
	own := &sdk.ConfigureRequest{}
	if got, want := len(own.Environ()), len(os.Environ()); got != want {
		t.Errorf("Environ() without Env has %d entries, want the process's %d", got, want)
	}
	if got, want := own.Getenv("PATH"), os.Getenv("PATH"); got != want {
		t.Errorf("Getenv(PATH) without Env = %q, want the process's %q", got, want)
	}
}
