package agent_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/hashicorp/go-hclog"

	"github.com/openhuman/openhuman-host/providers/agent"
	"github.com/openhuman/openhuman-host/providers/agent/definitions"
	"github.com/openhuman/openhuman-host/providers/agent/scriptedllm"
	"github.com/openhuman/openhuman-host/sdk"
	"github.com/openhuman/openhuman-host/sdk/sdktest"
	"github.com/openhuman/openhuman-host/sdk/testwait"
)

// fakeHost is the host service as the agent provider sees it: a small
// catalog, recorded tool calls and a scripted client model.
type fakeHost struct {
	sdktest.StubHost
	mu      sync.Mutex
	calls   []sdk.HostCallToolRequest
	samples []sdk.CreateMessageRequest
	// results answers CallTool by tool name; a tool without an entry
	// answers "<name> done".
	results map[string]*sdk.CallToolResult
	// sample answers the n-th (1-based) CreateMessage; nil means the
	// client cannot sample.
	sample func(n int, req *sdk.CreateMessageRequest) (*sdk.CreateMessageResult, error)
}

// fakeCatalog is what fakeHost.ListTools returns, in catalog order.
var fakeCatalog = []sdk.Tool{
	{Name: "memory_store", Description: "Stores a document in memory.", Class: sdk.ClassAct,
		InputSchema: json.RawMessage(`{"type":"object","properties":{"title":{"type":"string"},"content":{"type":"string"}},"required":["title","content"]}`)},
	{Name: "memory_note", Description: "Notes on a chunk.", Class: sdk.ClassAct,
		InputSchema: json.RawMessage(`{"type":"object","properties":{"chunk_id":{"type":"string"},"note":{"type":"string"}},"required":["chunk_id","note"]}`)},
	{Name: "memory_search", Description: "Searches memory by keywords. Every word must match.", Class: sdk.ClassRead,
		InputSchema: json.RawMessage(`{"type":"object","properties":{"query":{"type":"string"}},"required":["query"]}`)},
	{Name: "memory_recall", Description: "Answers a question from memory.", Class: sdk.ClassRead,
		InputSchema: json.RawMessage(`{"type":"object","properties":{"question":{"type":"string"}},"required":["question"]}`)},
	{Name: "searxng_search", Description: "Searches the web.", Class: sdk.ClassRead,
		InputSchema: json.RawMessage(`{"type":"object","properties":{"query":{"type":"string"}},"required":["query"]}`)},
	{Name: "agent_list_subagents", Description: "Lists sub-agents.", Class: sdk.ClassRead,
		InputSchema: json.RawMessage(`{"type":"object","properties":{}}`)},
	{Name: "agent_run_subagent", Description: "Runs a sub-agent.", Class: sdk.ClassAct,
		InputSchema: json.RawMessage(`{"type":"object","properties":{"agent_id":{"type":"string"},"prompt":{"type":"string"}},"required":["agent_id","prompt"]}`)},
	{Name: "core_list_tools", Description: "Lists the tools sub-agents may call.", Class: sdk.ClassRead,
		InputSchema: json.RawMessage(`{"type":"object","properties":{}}`)},
	{Name: "core_tool_instructions", Description: "Tool-use instructions.", Class: sdk.ClassRead,
		InputSchema: json.RawMessage(`{"type":"object","properties":{}}`)},
}

func (f *fakeHost) CallTool(_ context.Context, req *sdk.HostCallToolRequest) (*sdk.CallToolResult, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, *req)
	if res, ok := f.results[req.Name]; ok {
		return res, nil
	}
	return sdk.TextResult(req.Name + " done"), nil
}

func (f *fakeHost) ListTools(context.Context) ([]sdk.Tool, error) {
	return slices.Clone(fakeCatalog), nil
}

func (f *fakeHost) CreateMessage(_ context.Context, req *sdk.CreateMessageRequest) (*sdk.CreateMessageResult, error) {
	f.mu.Lock()
	f.samples = append(f.samples, *req)
	n, sample := len(f.samples), f.sample
	f.mu.Unlock()
	if sample == nil {
		return nil, fmt.Errorf("%w: the client did not declare sampling", sdk.ErrSamplingUnavailable)
	}
	return sample(n, req)
}

func (f *fakeHost) recordedCalls() []sdk.HostCallToolRequest {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.calls)
}

func (f *fakeHost) recordedSamples() []sdk.CreateMessageRequest {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.samples)
}

// testCaller is the MCP client's caller every harness sends.
var testCaller = sdk.Caller{
	SourceType:    "mcp:claude-desktop",
	SessionHash:   "sha256:0123abcd",
	ClientName:    "claude-desktop",
	ClientVersion: "1.2.3",
	CallToken:     "call-token-1",
}

// wantCaller is testCaller as the provider receives it, with sdktest's
// progress token.
func wantCaller() sdk.Caller {
	c := testCaller
	c.ProgressToken = json.RawMessage(sdktest.ProgressToken)
	return c
}

// startAgent serves a new agent provider with the fake host and config.
func startAgent(t *testing.T, host *fakeHost, config map[string]any, opts *sdktest.Options) *sdktest.Harness {
	t.Helper()
	if opts == nil {
		opts = &sdktest.Options{}
	}
	if host != nil {
		opts.Host = host
	}
	opts.Config = config
	if opts.Caller.SourceType == "" {
		opts.Caller = testCaller
	}
	return sdktest.Start(t, agent.New(nil), opts)
}

// llmConfig is a config pointing at the scripted server, with agents_dir
// (empty: none).
func llmConfig(url, agentsDir string) map[string]any {
	c := map[string]any{"llm": map[string]any{"base_url": url, "model": "m"}}
	if agentsDir != "" {
		c["agents_dir"] = agentsDir
	}
	return c
}

// writeAgents writes definition files into a new directory.
func writeAgents(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, text := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// userAgents are user definitions: reef (runnable), inner (for other
// sub-agents only) and everything (tools = "*").
var userAgents = map[string]string{
	"reef.toml": `display_name = "Reef helper"
when_to_use = "Use for questions about the reef survey."
tools = ["memory_search"]
`,
	"reef.md": "You help with the reef survey.\n",
	"inner.toml": `display_name = "Inner"
when_to_use = "Only for other sub-agents."
mcp_runnable = false
max_iterations = 3
prompt = "You are the inner agent."
`,
	"everything.toml": `display_name = "Everything"
when_to_use = "Use when any tool may help."
tools = "*"
prompt = "You may use every tool."
`,
}

// decodeStructured decodes res's structured content into out, failing t if
// it cannot.
func decodeStructured(t *testing.T, res *sdk.CallToolResult, out any) {
	t.Helper()
	if err := json.Unmarshal(res.StructuredContent, out); err != nil {
		t.Fatalf("structured content %s: %v", res.StructuredContent, err)
	}
}

func builtin(t *testing.T, id string) definitions.Definition {
	t.Helper()
	for _, d := range definitions.Builtins() {
		if d.ID == id {
			return d
		}
	}
	t.Fatalf("no built-in %q", id)
	return definitions.Definition{}
}

func builtinIDs() []string {
	var ids []string
	for _, d := range definitions.Builtins() {
		ids = append(ids, d.ID)
	}
	return ids
}

func TestDescribeTools(t *testing.T) {
	h := startAgent(t, &fakeHost{}, nil, nil)
	type toolView struct {
		Class                                  sdk.PolicyClass
		ReadOnly, Destructive, Idem, OpenWorld string
		HasOutput                              bool
	}
	hint := func(b *bool) string {
		if b == nil {
			return "unset"
		}
		return fmt.Sprint(*b)
	}
	got := map[string]toolView{}
	for _, tool := range h.Catalog.Tools {
		a := tool.Annotations
		got[tool.Name] = toolView{tool.Class, hint(a.ReadOnlyHint), hint(a.DestructiveHint), hint(a.IdempotentHint), hint(a.OpenWorldHint), len(tool.OutputSchema) > 0}
	}
	read := toolView{sdk.ClassRead, "true", "unset", "unset", "false", true}
	want := map[string]toolView{
		"agent_list_subagents":   read,
		"agent_run_subagent":     {sdk.ClassAct, "false", "true", "false", "true", true},
		"core_list_tools":        read,
		"core_tool_instructions": read,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("tools (-want +got):\n%s", diff)
	}
	run, _ := h.Tool("agent_run_subagent")
	if run.Timeout != agent.DefaultRunTimeout || agent.DefaultRunTimeout != 300*time.Second {
		t.Errorf("agent_run_subagent timeout = %s, want 300s", run.Timeout)
	}
	for _, id := range builtinIDs() {
		if !strings.Contains(run.Description, id) {
			t.Errorf("agent_run_subagent's description does not name %s: %q", id, run.Description)
		}
	}
	for _, name := range []string{"agent_list_subagents", "core_list_tools", "core_tool_instructions"} {
		if tool, _ := h.Tool(name); tool.Timeout != 0 {
			t.Errorf("%s has timeout %s, want the host's default", name, tool.Timeout)
		}
	}

	h = startAgent(t, &fakeHost{}, map[string]any{"run_timeout_secs": 42}, nil)
	if run, _ := h.Tool("agent_run_subagent"); run.Timeout != 42*time.Second {
		t.Errorf("with run_timeout_secs = 42: timeout = %s", run.Timeout)
	}
}

func TestDescribeResources(t *testing.T) {
	// A user definition never gets a resource of its own.
	h := startAgent(t, &fakeHost{}, map[string]any{"agents_dir": writeAgents(t, userAgents)}, nil)
	const prefix = "openhuman://prompts/agents/"
	byURI := map[string]sdk.Resource{}
	for _, r := range h.Catalog.Resources {
		byURI[r.URI] = r
		if r.MIMEType != "text/markdown" {
			t.Errorf("%s: MIME type %q", r.URI, r.MIMEType)
		}
		if id, ok := strings.CutPrefix(r.URI, prefix); ok && !slices.Contains(builtinIDs(), id) {
			t.Errorf("resource %s has no built-in sub-agent", r.URI)
		}
	}
	ctx := context.Background()
	for _, d := range definitions.Builtins() {
		uri := prefix + d.ID
		r, ok := byURI[uri]
		if !ok {
			t.Errorf("built-in %s has no resource %s", d.ID, uri)
			continue
		}
		if r.Size != int64(len(d.Prompt)) {
			t.Errorf("%s: size %d, want %d", uri, r.Size, len(d.Prompt))
		}
		res, err := h.Read(ctx, uri)
		if err != nil {
			t.Errorf("read %s: %v", uri, err)
			continue
		}
		if len(res.Contents) != 1 || res.Contents[0].Text != d.Prompt || res.Contents[0].MIMEType != "text/markdown" || res.Contents[0].URI != uri {
			t.Errorf("read %s: %+v", uri, res.Contents)
		}
	}
	for _, name := range []string{"identity", "soul", "user"} {
		uri := "openhuman://prompts/" + name
		if _, ok := byURI[uri]; !ok {
			t.Errorf("no resource %s", uri)
		}
		res, err := h.Read(ctx, uri)
		if err != nil {
			t.Errorf("read %s: %v", uri, err)
			continue
		}
		if len(res.Contents) != 1 || strings.TrimSpace(res.Contents[0].Text) == "" || res.Contents[0].MIMEType != "text/markdown" {
			t.Errorf("read %s: %+v", uri, res.Contents)
		}
	}
	if want := 3 + len(definitions.Builtins()); len(h.Catalog.Resources) != want {
		t.Errorf("%d resources, want %d", len(h.Catalog.Resources), want)
	}
	for _, uri := range []string{"openhuman://prompts/nope", prefix + "reef", prefix, "openhuman://prompts/agents"} {
		if _, err := h.Read(ctx, uri); !errors.Is(err, sdk.ErrResourceNotFound) {
			t.Errorf("read %s: %v, want ErrResourceNotFound", uri, err)
		}
	}
}

func TestConfigureErrors(t *testing.T) {
	badDir := writeAgents(t, map[string]string{
		"fine.toml": "display_name = \"Fine\"\nwhen_to_use = \"Always.\"\nprompt = \"ok\"\n",
		"bad.toml":  "display_name = \"Bad\"\nwhen_to_use = \"Never.\"\ntemperature = 5\nprompt = \"x\"\n",
	})
	tests := []struct {
		name   string
		config string
		want   []string
	}{
		{"unknown key", `{"colour":"blue"}`, []string{`unknown field "colour"`, "llm", "run_timeout_secs", "agents_dir"}},
		{"unknown llm key", `{"llm":{"base_url":"http://127.0.0.1:1/v1","model":"m","api_key":"sk-x"}}`, []string{`unknown field "api_key"`, "api_key_env"}},
		{"run_timeout_secs negative", `{"run_timeout_secs":-1}`, []string{"run_timeout_secs", "86400", "-1"}},
		{"run_timeout_secs too large", `{"run_timeout_secs":86401}`, []string{"run_timeout_secs", "86401"}},
		{"run_timeout_secs not an integer", `{"run_timeout_secs":"300"}`, []string{"[providers.agent] run_timeout_secs must be an integer; got string"}},
		{"max_runs_per_call not an integer", `{"max_runs_per_call":"5"}`, []string{"[providers.agent] max_runs_per_call must be an integer; got string"}},
		{"max_runs_per_call too large", `{"max_runs_per_call":1001}`, []string{"max_runs_per_call must be between 1 and 1000; got 1001"}},
		{"max_model_requests_per_call negative", `{"max_model_requests_per_call":-1}`, []string{"max_model_requests_per_call must be between 1 and 100000; got -1"}},
		{"llm without model", `{"llm":{"base_url":"http://127.0.0.1:11434/v1"}}`, []string{"[providers.agent.llm] model is required"}},
		{"llm without base_url", `{"llm":{"model":"m"}}`, []string{"[providers.agent.llm] base_url is required"}},
		{"llm base_url not http", `{"llm":{"base_url":"ftp://example.com/v1","model":"m"}}`, []string{"[providers.agent.llm] base_url must be an http or https URL"}},
		{"llm base_url with a password", `{"llm":{"base_url":"http://u:hunter2@example.com/v1","model":"m"}}`, []string{"base_url must not contain a user name or password"}},
		{"llm timeout_secs", `{"llm":{"base_url":"http://127.0.0.1:1/v1","model":"m","timeout_secs":3601}}`, []string{"timeout_secs", "3600"}},
		{"relative agents_dir", `{"agents_dir":"agents"}`, []string{"agents_dir must be an absolute path", `"agents"`}},
		{"invalid definition", fmt.Sprintf(`{"agents_dir":%q}`, badDir), []string{filepath.Join(badDir, "bad.toml") + ":3: temperature: "}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := agent.New(nil).Configure(context.Background(), &sdk.ConfigureRequest{
				Config: json.RawMessage(tt.config), DataDir: t.TempDir(), Host: &fakeHost{},
			})
			if err == nil {
				t.Fatal("Configure succeeded")
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
			if strings.Contains(err.Error(), "hunter2") {
				t.Errorf("error repeats the password: %q", err)
			}
		})
	}

	// The error of an invalid definition carries its file, line and field.
	err := agent.New(nil).Configure(context.Background(), &sdk.ConfigureRequest{
		Config: json.RawMessage(fmt.Sprintf(`{"agents_dir":%q}`, badDir)), DataDir: t.TempDir(),
	})
	var de *definitions.Error
	if !errors.As(err, &de) || de.File != filepath.Join(badDir, "bad.toml") || de.Line != 3 || de.Field != "temperature" {
		t.Errorf("definition error = %#v", de)
	}

	// Through the plugin connection, as the host sees it.
	for _, cfg := range []map[string]any{{"run_timeout_secs": 0}, {"agents_dir": filepath.Join(t.TempDir(), "missing")}} {
		if h := startAgent(t, &fakeHost{}, cfg, nil); h.Catalog == nil {
			t.Errorf("config %v: no catalog", cfg)
		}
	}
}

func TestListSubagents(t *testing.T) {
	dir := writeAgents(t, map[string]string{"reef.toml": userAgents["reef.toml"], "reef.md": userAgents["reef.md"]})
	h := startAgent(t, &fakeHost{}, map[string]any{"agents_dir": dir}, nil)
	res, err := h.Call(context.Background(), "agent_list_subagents", nil)
	if err != nil || res.IsError {
		t.Fatalf("list_subagents: %v %+v", err, res)
	}
	var out struct {
		Definitions []struct {
			ID            string   `json:"id"`
			DisplayName   string   `json:"display_name"`
			WhenToUse     string   `json:"when_to_use"`
			Tools         []string `json:"tools"`
			MaxIterations int      `json:"max_iterations"`
			MCPRunnable   bool     `json:"mcp_runnable"`
			Source        string   `json:"source"`
		} `json:"definitions"`
	}
	decodeStructured(t, res, &out)
	var ids []string
	for _, d := range out.Definitions {
		ids = append(ids, d.ID)
		switch d.ID {
		case "reef":
			if d.DisplayName != "Reef helper" || d.Source != filepath.Join(dir, "reef.toml") || !slices.Equal(d.Tools, []string{"memory_search"}) ||
				d.MaxIterations != 8 || !d.MCPRunnable {
				t.Errorf("reef = %+v", d)
			}
		case "summarizer":
			if d.Tools == nil || len(d.Tools) != 0 || d.Source != definitions.BuiltinSource {
				t.Errorf("summarizer = %+v (tools must be [], not null)", d)
			}
		default:
			b := builtin(t, d.ID)
			if d.Source != definitions.BuiltinSource || d.DisplayName != b.DisplayName || d.WhenToUse != b.WhenToUse || d.MaxIterations != b.MaxIterations {
				t.Errorf("%s = %+v", d.ID, d)
			}
		}
	}
	want := append(builtinIDs(), "reef")
	slices.Sort(want)
	if !slices.Equal(ids, want) || len(builtinIDs()) != 7 {
		t.Errorf("ids = %v, want %v", ids, want)
	}
	text := res.Text()
	if !strings.HasPrefix(text, "8 sub-agents:\n") || !strings.Contains(text, "- reef (Reef helper): Use for questions about the reef survey.\n") ||
		!strings.Contains(text, "- archivist (Archivist): ") {
		t.Errorf("text = %q", text)
	}
}

func TestListToolsAndInstructions(t *testing.T) {
	h := startAgent(t, &fakeHost{}, nil, nil)
	ctx := context.Background()
	res, err := h.Call(ctx, "core_list_tools", nil)
	if err != nil || res.IsError {
		t.Fatalf("core_list_tools: %v %+v", err, res)
	}
	var out struct {
		Tools []struct {
			Name       string          `json:"name"`
			Parameters json.RawMessage `json:"parameters"`
		} `json:"tools"`
	}
	decodeStructured(t, res, &out)
	var names []string
	for _, tool := range out.Tools {
		names = append(names, tool.Name)
	}
	want := []string{"memory_store", "memory_note", "memory_search", "memory_recall", "searxng_search", "agent_list_subagents", "agent_run_subagent"}
	if !slices.Equal(names, want) {
		t.Errorf("core_list_tools names = %v, want %v", names, want)
	}
	// Parameters are the host's input schema as it is.
	if got, want := string(out.Tools[2].Parameters), `{"type":"object","properties":{"query":{"type":"string"}},"required":["query"]}`; got != want {
		t.Errorf("memory_search parameters = %s, want %s", got, want)
	}
	if !strings.Contains(res.Text(), "- memory_search: Searches memory by keywords.\n") {
		t.Errorf("core_list_tools text = %q", res.Text())
	}

	res, err = h.Call(ctx, "core_tool_instructions", nil)
	if err != nil || res.IsError {
		t.Fatalf("core_tool_instructions: %v %+v", err, res)
	}
	if text := res.Text(); !strings.Contains(text, "### memory_search") || strings.Contains(text, "### core.") {
		t.Errorf("instructions = %q", text)
	}

	// Without a host service the tools say so.
	h = startAgent(t, nil, nil, nil)
	for _, name := range []string{"core_list_tools", "core_tool_instructions", "agent_run_subagent"} {
		args := any(nil)
		if name == "agent_run_subagent" {
			args = map[string]string{"agent_id": "archivist", "prompt": "p"}
		}
		res, err := h.Call(ctx, name, args)
		if err != nil || !res.IsError || !strings.Contains(res.Text(), "host service") {
			t.Errorf("%s without a host: %v %+v", name, err, res)
		}
	}
}

type runOutput struct {
	AgentID    string `json:"agent_id"`
	Response   string `json:"response"`
	Iterations int    `json:"iterations"`
	ToolCalls  []struct {
		Name    string `json:"name"`
		IsError bool   `json:"is_error"`
	} `json:"tool_calls"`
}

func runArgs(id, prompt string) map[string]string {
	return map[string]string{"agent_id": id, "prompt": prompt}
}

func TestRunArchivistOnEndpoint(t *testing.T) {
	llm := scriptedllm.New(t,
		scriptedllm.CallTools(scriptedllm.Call{Name: "memory_store", Arguments: `{"title":"Reef survey","content":"Bleaching at site four."}`}),
		scriptedllm.Reply("  Filed it as \"Reef survey\".  "),
	)
	host := &fakeHost{results: map[string]*sdk.CallToolResult{"memory_store": sdk.TextResult(`Stored "Reef survey" as doc_1.`)}}
	h := startAgent(t, host, llmConfig(llm.URL, ""), nil)
	res, events, err := h.CallWithEvents(context.Background(), "agent_run_subagent", runArgs("archivist", "File this: bleaching at site four."))
	if err != nil || res.IsError {
		t.Fatalf("run: %v %+v", err, res)
	}
	if got := res.Text(); got != `Filed it as "Reef survey".` {
		t.Errorf("text = %q", got)
	}
	var out runOutput
	decodeStructured(t, res, &out)
	if out.AgentID != "archivist" || out.Response != `Filed it as "Reef survey".` || out.Iterations != 2 ||
		len(out.ToolCalls) != 1 || out.ToolCalls[0].Name != "memory_store" || out.ToolCalls[0].IsError {
		t.Errorf("structured = %+v", out)
	}

	calls := host.recordedCalls()
	if len(calls) != 1 {
		t.Fatalf("host calls = %+v", calls)
	}
	c := calls[0]
	if c.Name != "memory_store" || c.Actor != "agent:archivist" || string(c.Arguments) != `{"title":"Reef survey","content":"Bleaching at site four."}` {
		t.Errorf("host call = %+v", c)
	}
	if diff := cmp.Diff(wantCaller(), c.Caller); diff != "" {
		t.Errorf("host call's caller (-want +got):\n%s", diff)
	}

	reqs := llm.Requests()
	if len(reqs) != 2 {
		t.Fatalf("%d model requests", len(reqs))
	}
	archivist := builtin(t, "archivist")
	// The archivist's scope, as far as the catalog has it, in catalog order.
	if want := []string{"memory_store", "memory_note", "memory_search"}; !slices.Equal(reqs[0].Tools, want) {
		t.Errorf("tools offered = %v, want %v", reqs[0].Tools, want)
	}
	if reqs[0].Model != "m" || reqs[0].ToolChoice != "auto" {
		t.Errorf("model %q, tool_choice %q", reqs[0].Model, reqs[0].ToolChoice)
	}
	if got := reqs[0].Messages; len(got) != 2 || got[0].Role != "system" || got[0].Content != archivist.Prompt ||
		got[1].Role != "user" || got[1].Content != "File this: bleaching at site four." {
		t.Errorf("first request's messages = %+v", got)
	}
	if got := reqs[1].Messages; len(got) != 4 || got[3].Role != "tool" || got[3].ToolCallID != "call_1_1" || got[3].Content != `Stored "Reef survey" as doc_1.` {
		t.Errorf("second request's messages = %+v", got)
	}

	// One progress event per model request, out of max_iterations.
	if len(events.Progress) != 2 {
		t.Fatalf("progress = %+v", events.Progress)
	}
	total := float64(archivist.MaxIterations)
	wantProgress := []sdk.Progress{
		{Progress: 1, Total: total, Message: fmt.Sprintf("archivist: model request 1 of at most %d", archivist.MaxIterations)},
		{Progress: 2, Total: total, Message: fmt.Sprintf("archivist: model request 2 of at most %d after calling memory_store", archivist.MaxIterations)},
	}
	if diff := cmp.Diff(wantProgress, events.Progress); diff != "" {
		t.Errorf("progress (-want +got):\n%s", diff)
	}
}

func TestRunWithoutProgressToken(t *testing.T) {
	llm := scriptedllm.New(t, scriptedllm.Reply("done"))
	h := startAgent(t, &fakeHost{}, llmConfig(llm.URL, ""), &sdktest.Options{NoProgressToken: true})
	res, events, err := h.CallWithEvents(context.Background(), "agent_run_subagent", runArgs("summarizer", "Summarise: x."))
	if err != nil || res.IsError || res.Text() != "done" {
		t.Fatalf("run: %v %+v", err, res)
	}
	if len(events.Progress) != 0 {
		t.Errorf("progress without a token: %+v", events.Progress)
	}
	// The summarizer has no tools: none are offered, and no tool_choice.
	if r := llm.Requests()[0]; len(r.Tools) != 0 || r.ToolChoice != "" {
		t.Errorf("summarizer request: tools %v, tool_choice %q", r.Tools, r.ToolChoice)
	}
}

// The model's mistakes are answered to the model, never sent to the host:
// a tool outside the scope, a tool that does not exist, arguments that are
// not JSON or not an object. A tool's own error reaches the model too.
func TestRunRefusesModelMistakes(t *testing.T) {
	llm := scriptedllm.New(t,
		scriptedllm.CallTools(
			scriptedllm.Call{Name: "searxng_search", Arguments: `{"query":"reef"}`},
			scriptedllm.Call{Name: "made_up_tool", Arguments: `{}`},
			scriptedllm.Call{Name: "memory_store", Arguments: `{"title": "Reef`},
			scriptedllm.Call{Name: "memory_search", Arguments: `["reef"]`},
			scriptedllm.Call{Name: "agent_run_subagent", Arguments: `{"agent_id":"archivist","prompt":"again"}`},
		),
		scriptedllm.CallTools(scriptedllm.Call{Name: "memory_note", Arguments: `{"chunk_id":"chk_1","note":"n"}`}),
		scriptedllm.Reply("I could not file it."),
	)
	host := &fakeHost{results: map[string]*sdk.CallToolResult{
		"memory_note": sdk.ErrorResult(`memory_note is refused: [autonomy] level is "readonly"`),
	}}
	h := startAgent(t, host, llmConfig(llm.URL, ""), nil)
	res, err := h.Call(context.Background(), "agent_run_subagent", runArgs("archivist", "File it."))
	if err != nil || res.IsError {
		t.Fatalf("run: %v %+v", err, res)
	}
	var out runOutput
	decodeStructured(t, res, &out)
	var got []string
	for _, c := range out.ToolCalls {
		got = append(got, fmt.Sprintf("%s:%v", c.Name, c.IsError))
	}
	want := []string{"searxng_search:true", "made_up_tool:true", "memory_store:true", "memory_search:true", "agent_run_subagent:true", "memory_note:true"}
	if !slices.Equal(got, want) || out.Iterations != 3 || out.Response != "I could not file it." {
		t.Errorf("result = %+v; tool calls %v, want %v", out, got, want)
	}
	// Only the call inside the scope with valid arguments reached the host.
	calls := host.recordedCalls()
	if len(calls) != 1 || calls[0].Name != "memory_note" || calls[0].Actor != "agent:archivist" {
		t.Errorf("host calls = %+v", calls)
	}
	reqs := llm.Requests()
	if len(reqs) != 3 {
		t.Fatalf("%d model requests", len(reqs))
	}
	toolMsgs := func(r scriptedllm.Request) []string {
		var out []string
		for _, m := range r.Messages {
			if m.Role == "tool" {
				out = append(out, m.Content)
			}
		}
		return out
	}
	msgs := toolMsgs(reqs[1])
	wantSubstrings := []string{
		"unknown tool searxng_search; the tools you can call are: memory_store, memory_note, memory_search",
		"unknown tool made_up_tool",
		"arguments for memory_store are not a JSON object",
		"arguments for memory_search are not a JSON object: got an array",
		"unknown tool agent_run_subagent",
	}
	if len(msgs) != len(wantSubstrings) {
		t.Fatalf("tool messages = %q", msgs)
	}
	for i, w := range wantSubstrings {
		if !strings.Contains(msgs[i], w) {
			t.Errorf("tool message %d = %q, want it to contain %q", i, msgs[i], w)
		}
	}
	// The bad arguments went back as {} so that the endpoint accepts the
	// conversation.
	for _, m := range reqs[1].Messages {
		for _, c := range m.ToolCalls {
			if !json.Valid([]byte(c.Arguments)) {
				t.Errorf("history carries invalid arguments for %s: %q", c.Name, c.Arguments)
			}
		}
	}
	if msgs := toolMsgs(reqs[2]); msgs[len(msgs)-1] != `Error: memory_note is refused: [autonomy] level is "readonly"` {
		t.Errorf("refusal passed to the model as %q", msgs[len(msgs)-1])
	}
}

func TestRunUnknownAndNonRunnableAgents(t *testing.T) {
	dir := writeAgents(t, userAgents)
	llm := scriptedllm.New(t, scriptedllm.Reply("inner done"))
	h := startAgent(t, &fakeHost{}, llmConfig(llm.URL, dir), nil)
	ctx := context.Background()
	runnable := append(builtinIDs(), "everything", "reef")
	slices.Sort(runnable)

	res, err := h.Call(ctx, "agent_run_subagent", runArgs("nobody", "hi"))
	if err != nil || !res.IsError {
		t.Fatalf("unknown agent: %v %+v", err, res)
	}
	text := res.Text()
	if !strings.Contains(text, `unknown agent_id "nobody"`) || !strings.Contains(text, strings.Join(runnable, ", ")) || strings.Contains(text, "inner") {
		t.Errorf("unknown agent: %q", text)
	}

	res, err = h.Call(ctx, "agent_run_subagent", runArgs("inner", "hi"))
	if err != nil || !res.IsError {
		t.Fatalf("non-runnable agent: %v %+v", err, res)
	}
	text = res.Text()
	if !strings.Contains(text, `"inner" runs only for other sub-agents (mcp_runnable = false)`) || !strings.Contains(text, strings.Join(runnable, ", ")) {
		t.Errorf("non-runnable agent: %q", text)
	}
	if n := len(llm.Requests()); n != 0 {
		t.Errorf("%d model requests for refused runs", n)
	}

	// Another sub-agent (depth 1) may run it, and its ids include it.
	caller := testCaller
	caller.SourceType = "mcp:claude-desktop/agent:orchestrator"
	caller.Depth = 1
	host := &fakeHost{}
	inner := startAgent(t, host, llmConfig(llm.URL, dir), &sdktest.Options{Caller: caller})
	res, err = inner.Call(ctx, "agent_run_subagent", runArgs("inner", "hi"))
	if err != nil || res.IsError || res.Text() != "inner done" {
		t.Fatalf("inner at depth 1: %v %+v", err, res)
	}
	res, err = inner.Call(ctx, "agent_run_subagent", runArgs("nobody", "hi"))
	if err != nil || !res.IsError || !strings.Contains(res.Text(), "inner") {
		t.Errorf("unknown agent at depth 1: %v %+v", err, res)
	}
}

// Tool scopes: "*" offers every tool but agent_run_subagent; naming
// agent_run_subagent exactly offers it, and the nested call carries the
// caller as received. Scopes that name core_list_tools offer it.
func TestRunToolScopes(t *testing.T) {
	dir := writeAgents(t, userAgents)
	llm := scriptedllm.New(t,
		scriptedllm.Reply("everything done"),
		scriptedllm.CallTools(scriptedllm.Call{Name: "agent_run_subagent", Arguments: `{"agent_id":"inner","prompt":"go"}`}),
		scriptedllm.Reply("orchestrated"),
	)
	caller := testCaller
	caller.Depth = 1
	host := &fakeHost{}
	h := startAgent(t, host, llmConfig(llm.URL, dir), &sdktest.Options{Caller: caller})
	ctx := context.Background()
	if res, err := h.Call(ctx, "agent_run_subagent", runArgs("everything", "go")); err != nil || res.IsError {
		t.Fatalf("everything: %v %+v", err, res)
	}
	if res, err := h.Call(ctx, "agent_run_subagent", runArgs("orchestrator", "go")); err != nil || res.IsError || res.Text() != "orchestrated" {
		t.Fatalf("orchestrator: %v %+v", err, res)
	}
	reqs := llm.Requests()
	want := []string{"memory_store", "memory_note", "memory_search", "memory_recall", "searxng_search", "agent_list_subagents", "core_list_tools", "core_tool_instructions"}
	if !slices.Equal(reqs[0].Tools, want) {
		t.Errorf(`tools = "*": offered %v, want %v`, reqs[0].Tools, want)
	}
	want = []string{"memory_search", "memory_recall", "agent_list_subagents", "agent_run_subagent", "core_list_tools"}
	if !slices.Equal(reqs[1].Tools, want) {
		t.Errorf("orchestrator: offered %v, want %v", reqs[1].Tools, want)
	}
	calls := host.recordedCalls()
	if len(calls) != 1 || calls[0].Name != "agent_run_subagent" || calls[0].Actor != "agent:orchestrator" || calls[0].Caller.Depth != 1 ||
		string(calls[0].Arguments) != `{"agent_id":"inner","prompt":"go"}` {
		t.Errorf("nested call = %+v", calls)
	}
}

// The built-in help sub-agent's whole scope is core_list_tools: it must be
// offered to the model and reach the host.
func TestRunHelpCallsCoreListTools(t *testing.T) {
	llm := scriptedllm.New(t,
		scriptedllm.CallTools(scriptedllm.Call{Name: "core_list_tools", Arguments: `{}`}),
		scriptedllm.Reply("There are seven tools."),
	)
	host := &fakeHost{}
	h := startAgent(t, host, llmConfig(llm.URL, ""), nil)
	res, err := h.Call(context.Background(), "agent_run_subagent", runArgs("help", "Which tools are there?"))
	if err != nil || res.IsError {
		t.Fatalf("help: %v %+v", err, res)
	}
	if got := llm.Requests()[0].Tools; !slices.Equal(got, []string{"core_list_tools"}) {
		t.Errorf("help is offered %v, want [core_list_tools]", got)
	}
	if calls := host.recordedCalls(); len(calls) != 1 || calls[0].Name != "core_list_tools" || calls[0].Actor != "agent:help" {
		t.Errorf("host calls = %+v", calls)
	}
}

func TestRunEndpointRefusesKey(t *testing.T) {
	const key = "sk-secret-123"
	llm := scriptedllm.New(t, scriptedllm.Fail(http.StatusUnauthorized, "Incorrect API key provided: "+key+". Find your key at https://example.com."))
	cfg := llmConfig(llm.URL, "")
	cfg["llm"].(map[string]any)["api_key_env"] = "OPENHUMAN_TEST_LLM_KEY"
	h := startAgent(t, &fakeHost{}, cfg, &sdktest.Options{Secrets: map[string]string{"llm.api_key": key}})
	res, err := h.Call(context.Background(), "agent_run_subagent", runArgs("archivist", "File it."))
	if err != nil || !res.IsError {
		t.Fatalf("run: %v %+v", err, res)
	}
	text := res.Text()
	for _, w := range []string{`sub-agent "archivist" stopped`, "401 Unauthorized", "set [providers.agent.llm] api_key_env"} {
		if !strings.Contains(text, w) {
			t.Errorf("error %q does not contain %q", text, w)
		}
	}
	if strings.Contains(text, key) || strings.Contains(text, "secret-123") || strings.Contains(string(res.StructuredContent), key) {
		t.Errorf("error repeats the key: %q", text)
	}
	if got := llm.Requests()[0].Header.Get("Authorization"); got != "Bearer "+key {
		t.Errorf("Authorization = %q: the key from Secrets was not sent", got)
	}
}

// No endpoint: the run goes to the client's model through the host.
func TestRunOnClientModel(t *testing.T) {
	host := &fakeHost{
		results: map[string]*sdk.CallToolResult{"memory_search": sdk.TextResult("chk_1: High tide at 06:12 on Monday.")},
		sample: func(n int, _ *sdk.CreateMessageRequest) (*sdk.CreateMessageResult, error) {
			if n == 1 {
				return &sdk.CreateMessageResult{Model: "client-model", StopReason: "toolUse", Content: []sdk.SamplingContent{
					{Type: "tool_use", ToolUseID: "u1", ToolName: "memory_search", Input: json.RawMessage(`{"query":"tide"}`)},
				}}, nil
			}
			return &sdk.CreateMessageResult{Model: "client-model", StopReason: "endTurn", Content: []sdk.SamplingContent{
				{Type: "text", Text: "High tide is at 06:12 on Monday."},
			}}, nil
		},
	}
	h := startAgent(t, host, nil, nil)
	res, err := h.Call(context.Background(), "agent_run_subagent", runArgs("researcher", "When is high tide?"))
	if err != nil || res.IsError {
		t.Fatalf("run: %v %+v", err, res)
	}
	if got := res.Text(); got != "High tide is at 06:12 on Monday." {
		t.Errorf("answer = %q", got)
	}
	samples := host.recordedSamples()
	if len(samples) != 2 {
		t.Fatalf("%d sampling requests", len(samples))
	}
	researcher := builtin(t, "researcher")
	first := samples[0]
	if first.SystemPrompt != researcher.Prompt || first.ModelHint != "" || first.MaxTokens != 0 {
		t.Errorf("first sampling request: system %.40q, model hint %q, max tokens %d", first.SystemPrompt, first.ModelHint, first.MaxTokens)
	}
	if diff := cmp.Diff(wantCaller(), first.Caller); diff != "" {
		t.Errorf("sampling caller (-want +got):\n%s", diff)
	}
	var names []string
	for _, tool := range first.Tools {
		names = append(names, tool.Name)
		if len(tool.InputSchema) == 0 {
			t.Errorf("tool %s has no input schema", tool.Name)
		}
	}
	if want := []string{"memory_store", "memory_note", "memory_search", "memory_recall", "searxng_search"}; !slices.Equal(names, want) {
		t.Errorf("sampling tools = %v, want %v", names, want)
	}
	wantMessages := []sdk.SamplingMessage{
		{Role: "user", Content: []sdk.SamplingContent{{Type: "text", Text: "When is high tide?"}}},
		{Role: "assistant", Content: []sdk.SamplingContent{{Type: "tool_use", ToolUseID: "u1", ToolName: "memory_search", Input: json.RawMessage(`{"query":"tide"}`)}}},
		{Role: "user", Content: []sdk.SamplingContent{{Type: "tool_result", ToolUseID: "u1", Text: "chk_1: High tide at 06:12 on Monday."}}},
	}
	if diff := cmp.Diff(wantMessages[:1], first.Messages); diff != "" {
		t.Errorf("first sampling messages (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(wantMessages, samples[1].Messages); diff != "" {
		t.Errorf("second sampling messages (-want +got):\n%s", diff)
	}
	calls := host.recordedCalls()
	if len(calls) != 1 || calls[0].Name != "memory_search" || calls[0].Actor != "agent:researcher" || string(calls[0].Arguments) != `{"query":"tide"}` {
		t.Errorf("host calls = %+v", calls)
	}
}

// A sub-agent's own model is passed to the client as a hint.
func TestRunOnClientModelHint(t *testing.T) {
	dir := writeAgents(t, map[string]string{"hinted.toml": "display_name = \"Hinted\"\nwhen_to_use = \"Test.\"\nprompt = \"p\"\nmodel = \"claude-x\"\ntemperature = 0.5\n"})
	host := &fakeHost{sample: func(int, *sdk.CreateMessageRequest) (*sdk.CreateMessageResult, error) {
		return &sdk.CreateMessageResult{Content: []sdk.SamplingContent{{Type: "text", Text: "ok"}}}, nil
	}}
	h := startAgent(t, host, map[string]any{"agents_dir": dir}, nil)
	if res, err := h.Call(context.Background(), "agent_run_subagent", runArgs("hinted", "go")); err != nil || res.IsError {
		t.Fatalf("run: %v %+v", err, res)
	}
	s := host.recordedSamples()[0]
	if s.ModelHint != "claude-x" || s.Temperature == nil || *s.Temperature != 0.5 || len(s.Tools) != 0 {
		t.Errorf("sampling request: hint %q, temperature %v, tools %v", s.ModelHint, s.Temperature, s.Tools)
	}
}

func TestRunWithoutAnyModel(t *testing.T) {
	host := &fakeHost{}
	h := startAgent(t, host, nil, nil)
	res, err := h.Call(context.Background(), "agent_run_subagent", runArgs("archivist", "File it."))
	if err != nil || !res.IsError {
		t.Fatalf("run: %v %+v", err, res)
	}
	text := res.Text()
	if !strings.Contains(text, "[providers.agent.llm]") || !strings.Contains(text, `sub-agent "archivist" has no model to run on`) {
		t.Errorf("error = %q", text)
	}
	if len(host.recordedSamples()) != 1 || len(host.recordedCalls()) != 0 {
		t.Errorf("samples %d, calls %d", len(host.recordedSamples()), len(host.recordedCalls()))
	}
}

// A call the loop refuses (here, out of scope) reaches the client's model
// as a tool_result with isError set.
func TestRunOnClientModelMarksRefusalsAsErrors(t *testing.T) {
	host := &fakeHost{sample: func(n int, _ *sdk.CreateMessageRequest) (*sdk.CreateMessageResult, error) {
		if n == 1 {
			return &sdk.CreateMessageResult{Content: []sdk.SamplingContent{{Type: "tool_use", ToolUseID: "u1", ToolName: "searxng_search", Input: json.RawMessage(`{"query":"x"}`)}}}, nil
		}
		return &sdk.CreateMessageResult{Content: []sdk.SamplingContent{{Type: "text", Text: "ok"}}}, nil
	}}
	h := startAgent(t, host, nil, nil)
	if res, err := h.Call(context.Background(), "agent_run_subagent", runArgs("archivist", "go")); err != nil || res.IsError {
		t.Fatalf("run: %v %+v", err, res)
	}
	msgs := host.recordedSamples()[1].Messages
	if last := msgs[len(msgs)-1].Content[0]; last.Type != "tool_result" || !last.IsError {
		t.Errorf("refusal sent as %+v, want a tool_result with isError", last)
	}
}

// waitForRequests waits until the scripted server has received n requests.
func waitForRequests(t *testing.T, llm *scriptedllm.Server, n int) {
	t.Helper()
	testwait.Until(t, fmt.Sprintf("%d requests to the model endpoint", n), func() bool { return len(llm.Requests()) >= n })
}

func TestRunCancelled(t *testing.T) {
	llm := scriptedllm.New(t, scriptedllm.Delay(30*time.Second, scriptedllm.Reply("too late")))
	host := &fakeHost{}
	h := startAgent(t, host, llmConfig(llm.URL, ""), nil)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	type outcome struct {
		res *sdk.CallToolResult
		err error
	}
	done := make(chan outcome, 1)
	go func() {
		res, err := h.Call(ctx, "agent_run_subagent", runArgs("archivist", "File it."))
		done <- outcome{res, err}
	}()
	waitForRequests(t, llm, 1)
	cancel()
	// The model answers only after 30s: a call that ignored the
	// cancellation would end with its reply, not context.Canceled.
	if o := testwait.Recv(t, done, "the call to return after cancellation"); !errors.Is(o.err, context.Canceled) {
		t.Errorf("cancelled call: %v %+v, want context.Canceled", o.err, o.res)
	}
	llm.Close() // waits for the handler, so Cancelled is final
	if n := llm.Cancelled(); n != 1 {
		t.Errorf("the endpoint saw %d cancelled requests, want 1", n)
	}
	if n := len(host.recordedCalls()); n != 0 {
		t.Errorf("%d host calls", n)
	}
}

func TestRunTimeout(t *testing.T) {
	llm := scriptedllm.New(t, scriptedllm.Delay(5*time.Second, scriptedllm.Reply("too late")))
	cfg := llmConfig(llm.URL, "")
	cfg["run_timeout_secs"] = 1
	h := startAgent(t, &fakeHost{}, cfg, nil)
	if run, _ := h.Tool("agent_run_subagent"); run.Timeout != time.Second {
		t.Fatalf("timeout = %s, want 1s", run.Timeout)
	}
	start := time.Now()
	// sdktest applies the tool's Timeout as the call's deadline, as the host
	// does. The model answers after 5s, so a run without the limit would
	// end with its reply.
	res, err := h.Call(context.Background(), "agent_run_subagent", runArgs("archivist", "File it."))
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("slow run: %v %+v, want context.DeadlineExceeded", err, res)
	}
	// A deadline never fires early, however loaded the machine.
	if elapsed := time.Since(start); elapsed < time.Second {
		t.Errorf("the call ended after %s, want at least the 1s limit", elapsed)
	}
	llm.Close()
	if n := llm.Cancelled(); n != 1 {
		t.Errorf("the endpoint saw %d cancelled requests, want 1", n)
	}
}

// A run that hits max_iterations, or a host connection failure, is an
// error result naming what happened.
func TestRunLimitsAndHostFailure(t *testing.T) {
	dir := writeAgents(t, map[string]string{"loop.toml": "display_name = \"Loop\"\nwhen_to_use = \"Test.\"\nprompt = \"p\"\nmax_iterations = 2\ntools = [\"memory_search\"]\n"})
	call := scriptedllm.Call{Name: "memory_search", Arguments: `{"query":"q"}`}
	llm := scriptedllm.New(t, scriptedllm.CallTools(call), scriptedllm.CallTools(call), scriptedllm.CallTools(call))
	host := &fakeHost{}
	h := startAgent(t, host, llmConfig(llm.URL, dir), nil)
	res, err := h.Call(context.Background(), "agent_run_subagent", runArgs("loop", "go"))
	if err != nil || !res.IsError {
		t.Fatalf("run: %v %+v", err, res)
	}
	if text := res.Text(); !strings.Contains(text, `sub-agent "loop" stopped after 2 model requests and 1 tool call: `) || !strings.Contains(text, "iteration limit") {
		t.Errorf("error = %q", text)
	}

	failing := &failingHost{fakeHost: &fakeHost{}}
	h = startAgent(t, nil, llmConfig(llm.URL, dir), &sdktest.Options{Host: failing})
	res, err = h.Call(context.Background(), "agent_run_subagent", runArgs("loop", "go"))
	if err != nil || !res.IsError || !strings.Contains(res.Text(), "tool call memory_search could not be run through the host") {
		t.Errorf("host failure: %v %+v", err, res)
	}
}

// failingHost fails every CallTool as a broken host connection would.
type failingHost struct{ *fakeHost }

func (f *failingHost) CallTool(context.Context, *sdk.HostCallToolRequest) (*sdk.CallToolResult, error) {
	return nil, errors.New("host connection lost")
}

// A user definition's scope entry that matches no served tool is logged
// once, naming the agent and the entry.
func TestScopeTypoIsLogged(t *testing.T) {
	t.Parallel()
	llm := scriptedllm.New(t, scriptedllm.Reply("one"), scriptedllm.Reply("two"))
	dir := writeAgents(t, map[string]string{
		"typo.toml": "display_name = \"Typo\"\nwhen_to_use = \"Tests.\"\nprompt = \"p\"\ntools = [\"memory_search\", \"memory.serch\", \"tree.*\"]\n",
	})
	var logs strings.Builder
	var mu sync.Mutex
	logger := hclog.New(&hclog.LoggerOptions{Output: writerFunc(func(b []byte) (int, error) {
		mu.Lock()
		defer mu.Unlock()
		return logs.Write(b)
	}), Level: hclog.Warn})
	h := sdktest.Start(t, agent.New(&agent.Options{Logger: logger}), &sdktest.Options{Host: &fakeHost{}, Config: llmConfig(llm.URL, dir), Caller: testCaller})
	for range 2 {
		if res, err := h.Call(context.Background(), "agent_run_subagent", runArgs("typo", "go")); err != nil || res.IsError {
			t.Fatalf("run: %v %+v", err, res)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	out := logs.String()
	if strings.Count(out, "entry=memory.serch") != 1 || strings.Contains(out, "entry=memory_search") || strings.Contains(out, "entry=tree.*") {
		t.Errorf("log:\n%s", out)
	}
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(b []byte) (int, error) { return f(b) }
