package main

//lint:file-ignore SA1019 sampling, deprecated from protocol 2026-07-28 (SEP-2577), stays supported for clients on earlier versions: sub-agents run on the client's model through it.

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/openhuman/openhuman-host/host/audit"
	"github.com/openhuman/openhuman-host/providers/agent/agenttool"
	"github.com/openhuman/openhuman-host/providers/agent/scriptedllm"
	"github.com/openhuman/openhuman-host/providers/memory/memorytool"
)

// llmConfig points the agent provider at a scripted endpoint.
func llmConfig(url string) string {
	return fmt.Sprintf("[providers.agent.llm]\nbase_url = %q\nmodel = \"scripted\"\n", url)
}

// The acceptance path: the CLI runs the archivist on a scripted model; the
// archivist stores a memory through the host; [memorytool.Search] finds it;
// the audit log attributes the inner call to the agent.
func TestSubagentStoresMemoryThroughTheHost(t *testing.T) {
	llm := scriptedllm.New(t,
		scriptedllm.CallTools(scriptedllm.Call{Name: memorytool.Store, Arguments: `{"title":"Reef survey","content":"Coral bleaching seen at site four."}`}),
		scriptedllm.Reply("Filed it as \"Reef survey\"."),
	)
	home := cliHome(t, llmConfig(llm.URL))
	out, err := runCLI(t, "tools", "call", "--json", agenttool.RunSubagent, `{"agent_id":"archivist","prompt":"File this: coral bleaching at site four."}`)
	if err != nil {
		t.Fatalf("run_subagent: %v\n%s", err, out)
	}
	var res struct {
		StructuredContent struct {
			AgentID   string `json:"agent_id"`
			Response  string `json:"response"`
			ToolCalls []struct {
				Name    string `json:"name"`
				IsError bool   `json:"is_error"`
			} `json:"tool_calls"`
		} `json:"structuredContent"`
	}
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	sc := res.StructuredContent
	if sc.AgentID != "archivist" || sc.Response != `Filed it as "Reef survey".` || len(sc.ToolCalls) != 1 || sc.ToolCalls[0].Name != memorytool.Store || sc.ToolCalls[0].IsError {
		t.Errorf("result = %+v", sc)
	}
	reqs := llm.Requests()
	if len(reqs) != 2 {
		t.Fatalf("%d model requests, want 2", len(reqs))
	}
	if got := strings.Join(reqs[0].Tools, ","); got != memorytool.Store+","+memorytool.Note+","+memorytool.Tag+","+memorytool.Search+","+memorytool.ReadChunk {
		t.Errorf("tools offered to the archivist: %s", got)
	}
	if reqs[0].Messages[0].Role != "system" || !strings.HasPrefix(reqs[0].Messages[0].Content, "# Archivist") {
		t.Errorf("first message: %+v", reqs[0].Messages[0])
	}
	if last := reqs[1].Messages[len(reqs[1].Messages)-1]; last.Role != "tool" || !strings.Contains(last.Content, "Reef survey") {
		t.Errorf("the tool result sent back: %+v", last)
	}

	out, err = runCLI(t, "tools", "call", memorytool.Search, `{"query":"coral bleaching"}`)
	if err != nil || !strings.Contains(out, "Reef survey") {
		t.Fatalf(memorytool.Search+" after the run: %v\n%s", err, out)
	}
	rows := auditRows(t, filepath.Join(home, "data", "openhuman-host"))
	var inner, outer *audit.Record
	for i := range rows {
		switch rows[i].Tool {
		case memorytool.Store:
			inner = &rows[i]
		case agenttool.RunSubagent:
			outer = &rows[i]
		}
	}
	if inner == nil || inner.SourceType != "cli/agent:archivist" || inner.Decision != "allowed" || !inner.Success {
		t.Errorf("inner audit row = %+v", inner)
	}
	if outer == nil || outer.SourceType != "cli" || !outer.Success {
		t.Errorf("outer audit row = %+v", outer)
	}
}

// The security policy applies inside a run: a denied act tool is refused
// to the sub-agent, the model is told, and the refusal is audited as the
// agent's. Under readonly the run itself, an act, is refused.
func TestSubagentUnderPolicy(t *testing.T) {
	t.Parallel()
	llm := scriptedllm.New(t,
		scriptedllm.CallTools(scriptedllm.Call{Name: memorytool.Store, Arguments: `{"title":"T","content":"C"}`}),
		scriptedllm.Reply("I could not store it: the policy denies "+memorytool.Store+"."),
	)
	h, dataDir := newTestHost(t, "[autonomy]\ndenied_tools = [\""+memorytool.Store+"\"]\n"+llmConfig(llm.URL))
	res := call(t, h, agenttool.RunSubagent, `{"agent_id":"archivist","prompt":"store T"}`)
	if res.IsError || res.Text() != "I could not store it: the policy denies "+memorytool.Store+"." {
		t.Fatalf("run: %q", res.Text())
	}
	reqs := llm.Requests()
	if last := reqs[1].Messages[len(reqs[1].Messages)-1]; last.Role != "tool" || !strings.Contains(last.Content, "denied_tools") {
		t.Errorf("the refusal the model saw: %+v", last)
	}
	// Closing the host flushes its audit log.
	if err := h.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	var denied []audit.Record
	for _, r := range auditRows(t, dataDir) {
		if r.Tool == memorytool.Store {
			denied = append(denied, r)
		}
	}
	if len(denied) != 1 || denied[0].SourceType != "cli/agent:archivist" || !strings.HasPrefix(denied[0].Decision, "denied:") {
		t.Errorf("audit rows of the inner call: %+v", denied)
	}

	h2, _ := newTestHost(t, "[autonomy]\nlevel = \"readonly\"\n"+llmConfig(llm.URL))
	res = call(t, h2, agenttool.RunSubagent, `{"agent_id":"archivist","prompt":"store T"}`)
	if !res.IsError || !strings.Contains(res.Text(), `[autonomy] level is "readonly"`) {
		t.Fatalf("run_subagent under readonly: %q", res.Text())
	}
	if n := len(llm.Requests()); n != 2 {
		t.Errorf("%d model requests in all, want the first run's 2", n)
	}
}

// The depth limit stops an orchestrator that keeps delegating to itself:
// the seventh nested run's call is refused, and every run still answers.
func TestSubagentDepthLimit(t *testing.T) {
	t.Parallel()
	var steps []scriptedllm.Step
	for range 7 {
		steps = append(steps, scriptedllm.CallTools(scriptedllm.Call{Name: agenttool.RunSubagent, Arguments: `{"agent_id":"orchestrator","prompt":"go deeper"}`}))
	}
	for i := range 7 {
		steps = append(steps, scriptedllm.Reply(fmt.Sprintf("level %d done", 6-i)))
	}
	llm := scriptedllm.New(t, steps...)
	h, dataDir := newTestHost(t, llmConfig(llm.URL))
	res := call(t, h, agenttool.RunSubagent, `{"agent_id":"orchestrator","prompt":"go deeper"}`)
	if res.IsError || res.Text() != "level 0 done" {
		t.Fatalf("outer run: %q", res.Text())
	}
	reqs := llm.Requests()
	if len(reqs) != 14 {
		t.Fatalf("%d model requests, want 14", len(reqs))
	}
	// The deepest run was told its call was refused for depth.
	if last := reqs[7].Messages[len(reqs[7].Messages)-1]; last.Role != "tool" || !strings.Contains(last.Content, "tool calls may nest at most 6 deep") {
		t.Errorf("deepest run's tool result: %+v", last)
	}
	if err := h.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	var depthDenied int
	for _, r := range auditRows(t, dataDir) {
		if r.Decision == "denied:depth" {
			depthDenied++
			if !strings.HasPrefix(r.SourceType, "cli/agent:orchestrator") {
				t.Errorf("denied row source = %q", r.SourceType)
			}
		}
	}
	if depthDenied != 1 {
		t.Errorf("%d denied:depth audit rows, want 1", depthDenied)
	}
}

// With no endpoint configured the run uses the MCP client's own model
// through sampling, tools included; a client that cannot sample gets an
// error naming the config key.
func TestSubagentOnTheClientsModel(t *testing.T) {
	t.Parallel()
	h, _ := newTestHost(t, "")
	if res := call(t, h, memorytool.Store, `{"title":"Tide tables","content":"High tide at 06:12 on Monday."}`); res.IsError {
		t.Fatal(res.Text())
	}
	var mu sync.Mutex
	var seen []*mcp.CreateMessageWithToolsParams
	cs := connectVersion(t, h, "2025-11-25", &mcp.ClientOptions{CreateMessageWithToolsHandler: func(_ context.Context, req *mcp.CreateMessageWithToolsRequest) (*mcp.CreateMessageWithToolsResult, error) {
		mu.Lock()
		seen = append(seen, req.Params)
		n := len(seen)
		mu.Unlock()
		if n == 1 {
			return &mcp.CreateMessageWithToolsResult{Model: "client-model", Role: "assistant", StopReason: "toolUse",
				Content: []mcp.Content{&mcp.ToolUseContent{ID: "u1", Name: memorytool.Search, Input: map[string]any{"query": "tide"}}}}, nil
		}
		return &mcp.CreateMessageWithToolsResult{Model: "client-model", Role: "assistant", StopReason: "endTurn",
			Content: []mcp.Content{&mcp.TextContent{Text: "High tide is at 06:12 on Monday."}}}, nil
	}})
	res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: agenttool.RunSubagent, Arguments: map[string]any{"agent_id": "researcher", "prompt": "When is high tide?"}})
	if err != nil || res.IsError {
		t.Fatalf("run on the client's model: %v %+v %q", err, res, res.Content[0].(*mcp.TextContent).Text)
	}
	if got := res.Content[0].(*mcp.TextContent).Text; got != "High tide is at 06:12 on Monday." {
		t.Errorf("answer = %q", got)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(seen) != 2 {
		t.Fatalf("%d sampling requests, want 2", len(seen))
	}
	var toolNames []string
	for _, tl := range seen[0].Tools {
		toolNames = append(toolNames, tl.Name)
	}
	if !strings.Contains(strings.Join(toolNames, ","), memorytool.Search) || strings.Contains(strings.Join(toolNames, ","), agenttool.RunSubagent) {
		t.Errorf("tools offered through sampling: %v", toolNames)
	}
	if !strings.Contains(seen[0].SystemPrompt, "researcher") && !strings.Contains(strings.ToLower(seen[0].SystemPrompt), "research") {
		t.Errorf("system prompt: %q", seen[0].SystemPrompt)
	}
	second := seen[1].Messages
	last := second[len(second)-1]
	tr, ok := last.Content[0].(*mcp.ToolResultContent)
	if last.Role != "user" || !ok || tr.ToolUseID != "u1" || !strings.Contains(tr.Content[0].(*mcp.TextContent).Text, "Tide tables") {
		t.Errorf("tool result sent to the client's model: %+v", last)
	}

	// A client without sampling is told which key to set; a client on
	// 2026-07-28, which cannot be sent requests during a call, is asked
	// through the call's multi-round-trip result and answers the same.
	plain := connect(t, h, nil)
	res, err = plain.CallTool(t.Context(), &mcp.CallToolParams{Name: agenttool.RunSubagent, Arguments: map[string]any{"agent_id": "researcher", "prompt": "x"}})
	if err != nil || !res.IsError || !strings.Contains(res.Content[0].(*mcp.TextContent).Text, "[providers.agent.llm]") {
		t.Errorf("run for a client that cannot sample: %v %+v", err, res)
	}
	newer := connect(t, h, &mcp.ClientOptions{CreateMessageWithToolsHandler: func(context.Context, *mcp.CreateMessageWithToolsRequest) (*mcp.CreateMessageWithToolsResult, error) {
		return &mcp.CreateMessageWithToolsResult{Model: "client-model", Role: "assistant", StopReason: "endTurn",
			Content: []mcp.Content{&mcp.TextContent{Text: "Asked through the result."}}}, nil
	}})
	if v := newer.InitializeResult().ProtocolVersion; v != "2026-07-28" {
		t.Fatalf("the newer client negotiated %s", v)
	}
	res, err = newer.CallTool(t.Context(), &mcp.CallToolParams{Name: agenttool.RunSubagent, Arguments: map[string]any{"agent_id": "researcher", "prompt": "x"}})
	if err != nil || res.IsError || res.Content[0].(*mcp.TextContent).Text != "Asked through the result." {
		t.Errorf("run for a client on 2026-07-28: %v %+v", err, res)
	}
}
