package sdktest_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/openhuman/openhuman-host/sdk"
	"github.com/openhuman/openhuman-host/sdk/sdktest"
)

// shout is a provider whose tool misbehaves on request, so the harness's
// checks can be seen to fire.
type shout struct {
	calls atomic.Int32
	tools []sdk.Tool // nil: shoutTools
}

var shoutTools = []sdk.Tool{{
	Name:         "shout_say",
	Description:  "Says text louder.",
	InputSchema:  json.RawMessage(`{"type":"object","properties":{"text":{"type":"string","minLength":1,"maxLength":10},"times":{"type":"integer","minimum":1,"maximum":3}},"required":["text"],"additionalProperties":false}`),
	OutputSchema: json.RawMessage(`{"type":"object","properties":{"text":{"type":"string"}},"required":["text"],"additionalProperties":false}`),
	Class:        sdk.ClassRead,
}, {
	Name:        "shout_wait",
	Description: "Waits for its context.",
	InputSchema: json.RawMessage(`{"type":"object"}`),
	Class:       sdk.ClassRead,
	Timeout:     50 * time.Millisecond,
}}

func (s *shout) Configure(context.Context, *sdk.ConfigureRequest) error { return nil }

func (s *shout) Describe(context.Context) (*sdk.Catalog, error) {
	tools := s.tools
	if tools == nil {
		tools = shoutTools
	}
	return &sdk.Catalog{Name: "shout", Tools: tools}, nil
}

func (s *shout) CallTool(ctx context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
	s.calls.Add(1)
	if req.Name == "shout_wait" {
		<-ctx.Done()
		return nil, ctx.Err()
	}
	if req.Name != "shout_say" {
		return sdk.ErrorResult("unknown tool %q", req.Name), nil
	}
	var args struct {
		Text string `json:"text"`
	}
	if err := json.Unmarshal(req.Arguments, &args); err != nil || args.Text == "" {
		return sdk.ErrorResult("text must be a non-empty string"), nil
	}
	for i := 1; i <= 2; i++ {
		if err := req.Progress(ctx, sdk.Progress{Progress: float64(i), Total: 2, Message: fmt.Sprint("step ", i)}); err != nil {
			return nil, err
		}
	}
	if err := req.Log(ctx, sdk.LogMessage{Level: "info", Logger: "shout", Data: map[string]int{"len": len(args.Text)}}); err != nil {
		return nil, err
	}
	switch args.Text {
	case "bad-type":
		return sdk.StructuredResult("5", map[string]int{"text": 5})
	case "extra":
		return sdk.StructuredResult("extra", map[string]string{"text": "x", "other": "y"})
	case "no-struct":
		return sdk.TextResult("no structured content"), nil
	case "array":
		return &sdk.CallToolResult{Content: []sdk.Content{sdk.TextContent("[]")}, StructuredContent: json.RawMessage(`[1]`)}, nil
	case "fail":
		return sdk.ErrorResult("failed on purpose"), nil
	}
	loud := strings.ToUpper(args.Text)
	return sdk.StructuredResult(loud, map[string]string{"text": loud})
}

func (s *shout) ReadResource(_ context.Context, req *sdk.ReadResourceRequest) (*sdk.ReadResourceResult, error) {
	return nil, fmt.Errorf("%w: %s", sdk.ErrResourceNotFound, req.URI)
}

func TestInvalidArgumentsAreRejectedBeforeDispatch(t *testing.T) {
	t.Parallel()
	p := &shout{}
	h := sdktest.Start(t, p, nil)
	tests := map[string]struct {
		args         any
		wantArgument string
		wantMessage  string
	}{
		"missing required": {map[string]any{}, "text", `missing required argument "text"`},
		"blank":            {map[string]any{"text": "   "}, "text", `argument "text" must not be blank`},
		"too long":         {map[string]any{"text": "eleven chars"}, "text", `argument "text" is 12 characters long; at most 10 allowed`},
		"wrong type":       {map[string]any{"text": 7}, "text", `argument "text" must be of type string; got integer 7`},
		"out of bounds":    {map[string]any{"text": "hi", "times": 4}, "times", `argument "times" must be between 1 and 3; got 4`},
		"unknown argument": {map[string]any{"text": "hi", "volume": 11}, "volume", `unknown argument "volume"; shout_say takes: text, times`},
		"not an object":    {json.RawMessage(`["hi"]`), "", `arguments must be a JSON object; shout_say takes: text, times`},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			res, err := h.Call(context.Background(), "shout_say", tc.args)
			if res != nil {
				t.Errorf("result = %+v, want none", res)
			}
			var argErr *sdktest.ArgumentError
			if !errors.As(err, &argErr) || !errors.Is(err, sdktest.ErrInvalidArguments) {
				t.Fatalf("error = %v, want an *ArgumentError", err)
			}
			want := &sdktest.ArgumentError{Tool: "shout_say", Argument: tc.wantArgument, Message: tc.wantMessage}
			if diff := cmp.Diff(want, argErr); diff != "" {
				t.Errorf("argument error (-want +got):\n%s", diff)
			}
			if !strings.Contains(err.Error(), "shout_say") || !strings.Contains(err.Error(), tc.wantMessage) {
				t.Errorf("error text %q names neither the tool nor the problem", err)
			}
		})
	}
	if n := p.calls.Load(); n != 0 {
		t.Errorf("provider was called %d times with arguments the host rejects", n)
	}
}

func TestValidCallReturnsTheResult(t *testing.T) {
	t.Parallel()
	h := sdktest.Start(t, &shout{}, nil)
	res, err := h.Call(context.Background(), "shout_say", map[string]any{"text": "hi", "times": 2})
	if err != nil {
		t.Fatal(err)
	}
	want := &sdk.CallToolResult{Content: []sdk.Content{sdk.TextContent("HI")}, StructuredContent: json.RawMessage(`{"text":"HI"}`)}
	if diff := cmp.Diff(want, res); diff != "" {
		t.Errorf("result (-want +got):\n%s", diff)
	}
}

func TestUnknownToolAndCallRaw(t *testing.T) {
	t.Parallel()
	p := &shout{}
	h := sdktest.Start(t, p, nil)
	ctx := context.Background()
	_, err := h.Call(ctx, "shout_whisper", nil)
	if !errors.Is(err, sdktest.ErrUnknownTool) || !strings.Contains(err.Error(), `"shout_whisper"`) || !strings.Contains(err.Error(), "shout_say, shout_wait") {
		t.Errorf("unknown tool error = %v", err)
	}
	if n := p.calls.Load(); n != 0 {
		t.Fatalf("provider called %d times for an unknown tool", n)
	}

	// CallRaw reaches the provider, which answers for itself.
	res, err := h.CallRaw(ctx, "shout_whisper", nil)
	if err != nil || !res.IsError || res.Content[0].Text != `unknown tool "shout_whisper"` {
		t.Errorf("raw call to an unknown tool: %v %+v", err, res)
	}
	res, err = h.CallRaw(ctx, "shout_say", map[string]any{"text": ""})
	if err != nil || !res.IsError || res.Content[0].Text != "text must be a non-empty string" {
		t.Errorf("raw call with an empty text: %v %+v", err, res)
	}
	if n := p.calls.Load(); n != 2 {
		t.Errorf("provider called %d times, want 2", n)
	}
}

func TestOutputSchemaIsEnforced(t *testing.T) {
	t.Parallel()
	h := sdktest.Start(t, &shout{}, nil)
	tests := map[string]struct {
		text    string
		wantErr string // "" for no error
	}{
		"wrong property type":           {"bad-type", `call shout_say: result does not match the tool's output schema: validating /properties/text: type: 5 has type "integer", want "string"`},
		"unlisted property":             {"extra", `call shout_say: result does not match the tool's output schema: unexpected additional properties ["other"]`},
		"no structured content":         {"no-struct", "call shout_say: result does not match the tool's output schema: the tool declares an output schema but the result has no structured content"},
		"not an object":                 {"array", "call shout_say: structured content must be a JSON object: [1]"},
		"error results are not checked": {"fail", ""},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			for _, call := range []func(context.Context, string, any) (*sdk.CallToolResult, error){h.Call, h.CallRaw} {
				res, err := call(context.Background(), "shout_say", map[string]any{"text": tc.text})
				if tc.wantErr == "" {
					if err != nil || res == nil || !res.IsError {
						t.Errorf("error result: %v %+v", err, res)
					}
					continue
				}
				if err == nil || !strings.HasPrefix(err.Error(), tc.wantErr) {
					t.Errorf("error = %v, want prefix %q", err, tc.wantErr)
				}
				if res == nil {
					t.Error("the offending result is not returned with the error")
				}
			}
		})
	}
	_, err := h.Call(context.Background(), "shout_say", map[string]any{"text": "bad-type"})
	if !errors.Is(err, sdktest.ErrInvalidOutput) {
		t.Errorf("error %v does not wrap ErrInvalidOutput", err)
	}
}

func TestEventsAreCaptured(t *testing.T) {
	t.Parallel()
	h := sdktest.Start(t, &shout{}, nil)
	res, events, err := h.CallWithEvents(context.Background(), "shout_say", map[string]any{"text": "hey"})
	if err != nil || res.Content[0].Text != "HEY" {
		t.Fatalf("call: %v %+v", err, res)
	}
	want := sdktest.Events{
		Progress: []sdk.Progress{{Progress: 1, Total: 2, Message: "step 1"}, {Progress: 2, Total: 2, Message: "step 2"}},
		Logs:     []sdk.LogMessage{{Level: "info", Logger: "shout", Data: json.RawMessage(`{"len":3}`)}},
	}
	if diff := cmp.Diff(want, events); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
	// Events are per call, and recorded when the result fails its checks too.
	_, events, err = h.CallWithEvents(context.Background(), "shout_say", map[string]any{"text": "no-struct"})
	if !errors.Is(err, sdktest.ErrInvalidOutput) || len(events.Progress) != 2 || len(events.Logs) != 1 {
		t.Errorf("second call: %v, events %+v", err, events)
	}
}

func TestNoProgressToken(t *testing.T) {
	t.Parallel()
	h := sdktest.Start(t, &shout{}, &sdktest.Options{NoProgressToken: true})
	_, events, err := h.CallWithEvents(context.Background(), "shout_say", map[string]any{"text": "hey"})
	if err != nil {
		t.Fatal(err)
	}
	// Progress is a no-op without a token; log messages still flow.
	if len(events.Progress) != 0 || len(events.Logs) != 1 {
		t.Errorf("events = %+v, want no progress and one log message", events)
	}
}

func TestToolTimeoutBoundsTheCall(t *testing.T) {
	t.Parallel()
	h := sdktest.Start(t, &shout{}, nil)
	// shout_wait returns only when its context ends: without the tool's
	// 50ms timeout the call would never return.
	errc := make(chan error, 1)
	go func() {
		_, err := h.Call(context.Background(), "shout_wait", nil)
		errc <- err
	}()
	// Nothing else ends the call: the test's own timeout bounds the wait.
	if err := <-errc; !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("error = %v, want a deadline", err)
	}
}

func TestCheckCatalog(t *testing.T) {
	t.Parallel()
	good := shoutTools[0]
	with := func(f func(*sdk.Tool)) sdk.Tool {
		t := good
		f(&t)
		return t
	}
	tests := map[string]struct {
		cat  *sdk.Catalog
		want []string // substrings of the error; none for a valid catalog
	}{
		"valid": {cat: &sdk.Catalog{Tools: shoutTools, Resources: []sdk.Resource{{URI: "shout://a"}}}},
		"bad name": {
			cat:  &sdk.Catalog{Tools: []sdk.Tool{with(func(t *sdk.Tool) { t.Name = "shout say" })}},
			want: []string{`tool "shout say" would be refused by the host`, "must match [A-Za-z0-9_.-]{1,128}"},
		},
		"no class": {
			cat:  &sdk.Catalog{Tools: []sdk.Tool{with(func(t *sdk.Tool) { t.Class = "" })}},
			want: []string{`tool "shout_say" would be refused by the host`, `policy class "" must be "read" or "act"`},
		},
		"input schema not an object": {
			cat:  &sdk.Catalog{Tools: []sdk.Tool{with(func(t *sdk.Tool) { t.InputSchema = json.RawMessage(`{"type":"string"}`) })}},
			want: []string{`tool "shout_say"`, `input schema must have "type": "object"`},
		},
		"output schema does not resolve": {
			cat:  &sdk.Catalog{Tools: []sdk.Tool{with(func(t *sdk.Tool) { t.OutputSchema = json.RawMessage(`{"type":"object","$ref":"#/$defs/missing"}`) })}},
			want: []string{`tool "shout_say": output schema does not resolve`},
		},
		"duplicate tool": {
			cat:  &sdk.Catalog{Tools: []sdk.Tool{good, good}},
			want: []string{`tool "shout_say" is listed twice`},
		},
		"two names, one client name": {
			cat:  &sdk.Catalog{Tools: []sdk.Tool{good, with(func(t *sdk.Tool) { t.Name = "shout.say" })}},
			want: []string{`tool "shout.say" is advertised to clients as "shout_say", like tool "shout_say" listed before it`},
		},
		"prompts": {
			cat:  &sdk.Catalog{Prompts: []sdk.Prompt{{Name: "shout.intro"}, {Name: "shout_intro"}}},
			want: []string{`prompt "shout_intro" is advertised to clients as "shout_intro", like prompt "shout.intro" listed before it`},
		},
		"resources": {
			cat:  &sdk.Catalog{Resources: []sdk.Resource{{Name: "nameless"}, {URI: "shout://a"}, {URI: "shout://a"}}},
			want: []string{`resource "nameless" has no URI`, `resource "shout://a" is listed twice`},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			err := sdktest.CheckCatalog(tc.cat)
			if len(tc.want) == 0 {
				if err != nil {
					t.Errorf("valid catalog: %v", err)
				}
				return
			}
			if err == nil {
				t.Fatal("invalid catalog accepted")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
		})
	}
}

// fatalRecorder stands in for the test given to Start, to see Start fail.
type fatalRecorder struct {
	testing.TB

	mu     sync.Mutex
	failed []string
}

func (f *fatalRecorder) Helper() {}

func (f *fatalRecorder) Fatalf(format string, args ...any) {
	f.mu.Lock()
	f.failed = append(f.failed, fmt.Sprintf(format, args...))
	f.mu.Unlock()
	runtime.Goexit()
}

func (f *fatalRecorder) Fatal(args ...any) { f.Fatalf("%s", fmt.Sprint(args...)) }

func TestStartFailsForToolsTheHostRefuses(t *testing.T) {
	t.Parallel()
	bad := shoutTools[0]
	bad.Class = "write" // crosses gRPC as an unspecified class, ""
	rec := &fatalRecorder{TB: t}
	done := make(chan *sdktest.Harness)
	go func() {
		var h *sdktest.Harness
		defer func() { done <- h }()
		h = sdktest.Start(rec, &shout{tools: []sdk.Tool{bad}}, nil)
	}()
	if h := <-done; h != nil {
		t.Fatal("Start returned a harness for a catalog the host refuses")
	}
	want := `provider "shout": tool "shout_say" would be refused by the host: invalid tool spec: shout_say: policy class "" must be "read" or "act"`
	if diff := cmp.Diff([]string{want}, rec.failed); diff != "" {
		t.Errorf("Start's failure (-want +got):\n%s", diff)
	}
}

// TestDottedNames checks a provider that declares dotted tool names: the
// harness warns that clients see other names, calls by either name reach
// the provider under the declared one, and results are checked against
// the tool's output schema.
func TestDottedNames(t *testing.T) {
	t.Parallel()
	dotted := slices.Clone(shoutTools)
	dotted[0].Name, dotted[1].Name = "shout.say", "shout.wait"
	cat := &sdk.Catalog{Name: "shout", Tools: dotted}
	want := []string{
		`tool "shout.say" is advertised to MCP clients as "shout_say"; name it "shout_say" to match ^[a-zA-Z0-9_-]{1,64}$`,
		`tool "shout.wait" is advertised to MCP clients as "shout_wait"; name it "shout_wait" to match ^[a-zA-Z0-9_-]{1,64}$`,
	}
	if diff := cmp.Diff(want, sdktest.NameWarnings(cat)); diff != "" {
		t.Errorf("NameWarnings (-want +got):\n%s", diff)
	}
	if got := sdktest.NameWarnings(&sdk.Catalog{Tools: shoutTools}); got != nil {
		t.Errorf("NameWarnings of client-safe names = %q, want none", got)
	}

	p := &dottedShout{}
	p.tools = dotted
	h := sdktest.Start(t, p, nil)
	for _, name := range []string{"shout.say", "shout_say"} {
		res, err := h.Call(context.Background(), name, map[string]any{"text": "hi"})
		if err != nil || res.IsError {
			t.Fatalf("Call(%q) = %+v, %v", name, res, err)
		}
	}
	if got := p.names(); !slices.Equal(got, []string{"shout.say", "shout.say"}) {
		t.Errorf("the provider was called as %q, want its declared name twice", got)
	}
	if _, err := h.Call(context.Background(), "shout_say", map[string]any{"text": "bad-type"}); !errors.Is(err, sdktest.ErrInvalidOutput) {
		t.Errorf("a result breaking the output schema, called by the client name: %v", err)
	}
}

// dottedShout is shout under dotted names; it records the names it is
// called with.
type dottedShout struct {
	shout
	mu     sync.Mutex
	called []string
}

func (d *dottedShout) CallTool(ctx context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
	d.mu.Lock()
	d.called = append(d.called, req.Name)
	d.mu.Unlock()
	r := *req
	r.Name = strings.Replace(req.Name, ".", "_", 1)
	return d.shout.CallTool(ctx, &r)
}

func (d *dottedShout) names() []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return slices.Clone(d.called)
}
