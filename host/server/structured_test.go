package server

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/openhuman/openhuman-host/host/catalog"
	"github.com/openhuman/openhuman-host/host/policy"
	"github.com/openhuman/openhuman-host/sdk"
)

func TestWithoutRepeatedText(t *testing.T) {
	t.Parallel()
	structured := json.RawMessage(`{"chunks":[{"id":"chk_1","score":1.5}],"total":12,"truncated":false,"note":null}`)
	text := func(s string) sdk.Content { return sdk.TextContent(s) }
	tests := map[string]struct {
		in   *sdk.CallToolResult
		want []sdk.Content // nil: the result comes back unchanged
	}{
		"the same JSON is replaced": {
			in:   &sdk.CallToolResult{Content: []sdk.Content{text(string(structured))}, StructuredContent: structured},
			want: []sdk.Content{text(StructuredContentNote)},
		},
		"indented, reordered and numbers written otherwise is still the same JSON": {
			in: &sdk.CallToolResult{Content: []sdk.Content{text(
				"\n  {\"note\": null, \"truncated\": false,\n   \"total\": 1.2e1,\n   \"chunks\": [{\"score\": 1.50, \"id\": \"chk_1\"}]}\n")},
				StructuredContent: structured},
			want: []sdk.Content{text(StructuredContentNote)},
		},
		"only the repeating block of several is replaced": {
			in: &sdk.CallToolResult{Content: []sdk.Content{
				text("12 chunks match."), text(string(structured)), {Type: "image", Data: []byte{1, 2}, MIMEType: "image/png"},
			}, StructuredContent: structured},
			want: []sdk.Content{
				text("12 chunks match."), text(StructuredContentNote), {Type: "image", Data: []byte{1, 2}, MIMEType: "image/png"},
			},
		},
		"a summary is not a repetition": {
			in: &sdk.CallToolResult{Content: []sdk.Content{text("1. chk_1 score=1.5")}, StructuredContent: structured},
		},
		"JSON of something else is not a repetition": {
			in: &sdk.CallToolResult{Content: []sdk.Content{text(`{"chunks":[{"id":"chk_1","score":1.5}],"total":13,"truncated":false,"note":null}`)},
				StructuredContent: structured},
		},
		"a member more is not a repetition": {
			in: &sdk.CallToolResult{Content: []sdk.Content{text(`{"chunks":[{"id":"chk_1","score":1.5}],"total":12,"truncated":false,"note":null,"x":1}`)},
				StructuredContent: structured},
		},
		"two JSON values are not a repetition": {
			in:   &sdk.CallToolResult{Content: []sdk.Content{text(string(structured) + " {}")}, StructuredContent: structured},
			want: nil,
		},
		"integers a float64 cannot tell apart differ": {
			in:   &sdk.CallToolResult{Content: []sdk.Content{text(`{"n":9007199254740993}`)}, StructuredContent: json.RawMessage(`{"n":9007199254740992}`)},
			want: nil,
		},
		"an exponent too large to compute is equal only as written": {
			in:   &sdk.CallToolResult{Content: []sdk.Content{text(`{"n":1e999999999}`)}, StructuredContent: json.RawMessage(`{"n":10e999999998}`)},
			want: nil,
		},
		"an exponent too large to compute, written the same, is equal": {
			in:   &sdk.CallToolResult{Content: []sdk.Content{text(`{"n":1e999999999}`)}, StructuredContent: json.RawMessage(`{"n":1e999999999}`)},
			want: []sdk.Content{text(StructuredContentNote)},
		},
		"an error keeps its text": {
			in: &sdk.CallToolResult{Content: []sdk.Content{text(string(structured))}, StructuredContent: structured, IsError: true},
		},
		"no structured content, nothing to repeat": {
			in: &sdk.CallToolResult{Content: []sdk.Content{text(`{"a":1}`)}},
		},
		"structured content that is not JSON is left alone": {
			in: &sdk.CallToolResult{Content: []sdk.Content{text(`{"a":1}`)}, StructuredContent: json.RawMessage(`{"a":`)},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			before := cloneResult(tc.in)
			got := withoutRepeatedText(tc.in)
			if diff := cmp.Diff(before, tc.in); diff != "" {
				t.Errorf("the input changed (-before +after):\n%s", diff)
			}
			want := tc.in
			if tc.want != nil {
				w := cloneResult(tc.in)
				w.Content = tc.want
				want = w
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("result (-want +got):\n%s", diff)
			}
		})
	}
}

func cloneResult(r *sdk.CallToolResult) *sdk.CallToolResult {
	c := *r
	c.Content = append([]sdk.Content(nil), r.Content...)
	return &c
}

func TestReadsStructured(t *testing.T) {
	t.Parallel()
	tests := map[string]struct {
		clients       []string
		name, version string
		want          bool
	}{
		"nobody listed":                      {name: "claude-code", version: "2025-11-25"},
		"listed":                             {clients: []string{"cursor", "claude-code"}, name: "claude-code", version: "2025-11-25", want: true},
		"matched exactly":                    {clients: []string{"claude-code"}, name: "Claude-Code", version: "2025-11-25"},
		"not listed":                         {clients: []string{"claude-code"}, name: "cursor", version: "2025-11-25"},
		"every client":                       {clients: []string{"*"}, name: "cursor", version: "2025-06-18", want: true},
		"every client, even without a name":  {clients: []string{"*"}, version: "2026-07-28", want: true},
		"protocol without structuredContent": {clients: []string{"*"}, name: "cursor", version: "2025-03-26"},
		"protocol unknown":                   {clients: []string{"claude-code"}, name: "claude-code", want: true},
	}
	for name, tc := range tests {
		set := &Options{StructuredContentClients: tc.clients}
		if got := set.readsStructured(tc.name, tc.version); got != tc.want {
			t.Errorf("%s: readsStructured(%q, %q) with %q = %v, want %v", name, tc.name, tc.version, tc.clients, got, tc.want)
		}
	}
}

// structuredCatalog has tools whose results carry structured content:
// echo.json repeats it as JSON text, echo.summary says something else,
// echo.fail is an error whose text is the same JSON.
func structuredCatalog() *catalog.Catalog {
	schema := json.RawMessage(`{"type":"object","additionalProperties":false}`)
	out := json.RawMessage(`{"type":"object"}`)
	tool := func(name string) sdk.Tool {
		return sdk.Tool{Name: name, Description: name, InputSchema: schema, OutputSchema: out, Class: sdk.ClassRead}
	}
	return catalog.Build(nil, []catalog.Source{{Provider: "echo", Catalog: &sdk.Catalog{
		Name: "echo", Tools: []sdk.Tool{tool("echo.json"), tool("echo.summary"), tool("echo.fail")},
	}}})
}

// callerLog is a provider that records the callers it sees.
type callerLog struct {
	mu      sync.Mutex
	callers []sdk.Caller
}

func (l *callerLog) CallTool(_ context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
	l.mu.Lock()
	l.callers = append(l.callers, req.Caller)
	l.mu.Unlock()
	structured := json.RawMessage(`{"hits":[{"id":"chk_1"},{"id":"chk_2"}],"next_offset":2}`)
	switch req.Name {
	case "echo.summary":
		return &sdk.CallToolResult{Content: []sdk.Content{sdk.TextContent("2 hits: chk_1, chk_2")}, StructuredContent: structured}, nil
	case "echo.fail":
		return &sdk.CallToolResult{Content: []sdk.Content{sdk.TextContent(string(structured))}, StructuredContent: structured, IsError: true}, nil
	}
	return &sdk.CallToolResult{Content: []sdk.Content{sdk.TextContent(string(structured))}, StructuredContent: structured}, nil
}

func (l *callerLog) ReadResource(context.Context, *sdk.ReadResourceRequest) (*sdk.ReadResourceResult, error) {
	return nil, sdk.ErrResourceNotFound
}

func (l *callerLog) last() sdk.Caller {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.callers[len(l.callers)-1]
}

// A client named in StructuredContentClients gets the note in place of
// text that repeats structuredContent, and its provider is told; other
// clients, errors, summaries and clients of a protocol without
// structuredContent get the text as it was.
func TestStructuredContentClients(t *testing.T) {
	t.Parallel()
	const full = `{"hits":[{"id":"chk_1"},{"id":"chk_2"}],"next_offset":2}`
	tests := map[string]struct {
		clients    []string
		clientName string
		version    string
		tool       string
		wantText   string
		wantTold   bool
	}{
		"listed client, repeated JSON":          {clients: []string{"claude-code"}, clientName: "claude-code", tool: "echo.json", wantText: StructuredContentNote, wantTold: true},
		"listed client over 2025-06-18":         {clients: []string{"claude-code"}, clientName: "claude-code", version: "2025-06-18", tool: "echo.json", wantText: StructuredContentNote, wantTold: true},
		"listed client, summary untouched":      {clients: []string{"claude-code"}, clientName: "claude-code", tool: "echo.summary", wantText: "2 hits: chk_1, chk_2", wantTold: true},
		"listed client, error untouched":        {clients: []string{"claude-code"}, clientName: "claude-code", tool: "echo.fail", wantText: full, wantTold: true},
		"client not listed":                     {clients: []string{"claude-code"}, clientName: "cursor", tool: "echo.json", wantText: full},
		"nobody listed":                         {clientName: "claude-code", tool: "echo.json", wantText: full},
		"every client":                          {clients: []string{"*"}, clientName: "cursor", tool: "echo.json", wantText: StructuredContentNote, wantTold: true},
		"every client, protocol without it":     {clients: []string{"*"}, clientName: "cursor", version: "2025-03-26", tool: "echo.json", wantText: full},
		"listed client, protocol without it":    {clients: []string{"claude-code"}, clientName: "claude-code", version: "2025-03-26", tool: "echo.json", wantText: full},
		"listed client, multi-round-trip era":   {clients: []string{"claude-code"}, clientName: "claude-code", version: "2026-07-28", tool: "echo.json", wantText: StructuredContentNote, wantTold: true},
		"unlisted client, multi-round-trip era": {clients: []string{"claude-code"}, clientName: "cursor", version: "2026-07-28", tool: "echo.json", wantText: full},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			log := &callerLog{}
			s, err := New(structuredCatalog(), map[string]Dispatcher{"echo": log}, &Options{StructuredContentClients: tc.clients})
			if err != nil {
				t.Fatal(err)
			}
			cs := connectVersion(t, s, tc.clientName, nil, tc.version)
			res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: tc.tool, Arguments: map[string]any{}})
			if err != nil {
				t.Fatal(err)
			}
			if len(res.Content) != 1 {
				t.Fatalf("content = %+v, want one block", res.Content)
			}
			if got := res.Content[0].(*mcp.TextContent).Text; got != tc.wantText {
				t.Errorf("text = %q, want %q", got, tc.wantText)
			}
			if tc.version != "2025-03-26" {
				got, _ := json.Marshal(res.StructuredContent)
				if string(got) != full {
					t.Errorf("structuredContent = %s, want %s", got, full)
				}
			}
			if told := log.last().ReadsStructuredContent; told != tc.wantTold {
				t.Errorf("provider told ReadsStructuredContent = %v, want %v", told, tc.wantTold)
			}
		})
	}
}

// A reload that changes the list reaches sessions already connected;
// command-line calls (no MCP session) are never told, "*" or not.
func TestStructuredContentClientsReload(t *testing.T) {
	t.Parallel()
	log := &callerLog{}
	s, err := New(structuredCatalog(), map[string]Dispatcher{"echo": log}, nil)
	if err != nil {
		t.Fatal(err)
	}
	cs := connect(t, s, "claude-code", nil)
	call := func() string {
		t.Helper()
		res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "echo.json", Arguments: map[string]any{}})
		if err != nil {
			t.Fatal(err)
		}
		return res.Content[0].(*mcp.TextContent).Text
	}
	if got := call(); strings.Contains(got, "structuredContent") {
		t.Errorf("before the reload: %q", got)
	}
	pol := testPolicy(t, policy.Options{Level: policy.Supervised})
	s.Reconfigure(Options{Policy: pol, StructuredContentClients: []string{"*"}})
	if got := call(); got != StructuredContentNote {
		t.Errorf("after the reload: %q, want the note", got)
	}
	res, err := s.Call(t.Context(), Call{Tool: "echo.json", Arguments: json.RawMessage(`{}`), Caller: sdk.Caller{SourceType: "cli"}})
	if err != nil || res.Text() == StructuredContentNote {
		t.Errorf("command-line call: %v %+v", err, res)
	}
	if log.last().ReadsStructuredContent {
		t.Error("a command-line call was told the client reads structuredContent")
	}
}
