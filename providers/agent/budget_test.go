package agent_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/openhuman/openhuman-host/providers/agent"
	"github.com/openhuman/openhuman-host/sdk"
	"github.com/openhuman/openhuman-host/sdk/sdktest"
)

// fanOutHost runs agent_run_subagent calls on p itself, as the host does
// (same call token, one level deeper), and answers every sampling request
// with two more agent_run_subagent calls: a run that would fan out
// without end.
type fanOutHost struct {
	sdktest.StubHost
	p *agent.Provider

	mu       sync.Mutex
	samples  int
	maxDepth int
	started  int // nested runs the provider started
}

func (f *fanOutHost) ListTools(context.Context) ([]sdk.Tool, error) { return fakeCatalog, nil }

func (f *fanOutHost) CallTool(ctx context.Context, req *sdk.HostCallToolRequest) (*sdk.CallToolResult, error) {
	caller := req.Caller
	caller.Depth++
	f.mu.Lock()
	f.maxDepth = max(f.maxDepth, caller.Depth)
	f.mu.Unlock()
	if caller.Depth > 6 {
		return sdk.ErrorResult("tool calls may nest at most 6 deep"), nil
	}
	res, err := f.p.CallTool(ctx, &sdk.CallToolRequest{Name: req.Name, Arguments: req.Arguments, Caller: caller})
	if err == nil && !strings.Contains(res.Text(), "was not started") {
		f.mu.Lock()
		f.started++
		f.mu.Unlock()
	}
	return res, err
}

func (f *fanOutHost) CreateMessage(_ context.Context, req *sdk.CreateMessageRequest) (*sdk.CreateMessageResult, error) {
	f.mu.Lock()
	f.samples++
	n := f.samples
	f.mu.Unlock()
	return &sdk.CreateMessageResult{Model: "client-model", StopReason: "toolUse", Content: []sdk.SamplingContent{
		{Type: "tool_use", ToolUseID: fmt.Sprintf("a%d", n), ToolName: "agent_run_subagent", Input: json.RawMessage(`{"agent_id":"spawner","prompt":"again"}`)},
		{Type: "tool_use", ToolUseID: fmt.Sprintf("b%d", n), ToolName: "agent_run_subagent", Input: json.RawMessage(`{"agent_id":"spawner","prompt":"again"}`)},
	}}, nil
}

func TestSubagentBudgetPerCall(t *testing.T) {
	t.Parallel()
	dir := writeAgents(t, map[string]string{"spawner.toml": `display_name = "Spawner"
when_to_use = "Never; it only starts more of itself."
tools = ["agent_run_subagent"]
max_iterations = 50
prompt = "Start more agents."
`})
	for name, tc := range map[string]struct {
		config              map[string]any
		maxRuns, maxSamples int
	}{
		"defaults":      {config: map[string]any{"agents_dir": dir}, maxRuns: agent.DefaultMaxRunsPerCall, maxSamples: agent.DefaultMaxModelRequestsPerCall},
		"runs limited":  {config: map[string]any{"agents_dir": dir, "max_runs_per_call": 3}, maxRuns: 3, maxSamples: agent.DefaultMaxModelRequestsPerCall},
		"model limited": {config: map[string]any{"agents_dir": dir, "max_model_requests_per_call": 7}, maxRuns: agent.DefaultMaxRunsPerCall, maxSamples: 7},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			p := agent.New(nil)
			host := &fanOutHost{p: p}
			cfg, err := json.Marshal(tc.config)
			if err != nil {
				t.Fatal(err)
			}
			if err := p.Configure(t.Context(), &sdk.ConfigureRequest{Config: cfg, Host: host}); err != nil {
				t.Fatal(err)
			}
			args := json.RawMessage(`{"agent_id":"spawner","prompt":"go"}`)
			res, err := p.CallTool(t.Context(), &sdk.CallToolRequest{Name: "agent_run_subagent", Arguments: args,
				Caller: sdk.Caller{SourceType: "mcp:test", CallToken: "call-1"}})
			if err != nil {
				t.Fatal(err)
			}
			if !res.IsError {
				t.Fatalf("an endless fan-out ended without an error: %s", res.Text())
			}
			host.mu.Lock()
			samples, runs := host.samples, host.started+1
			host.mu.Unlock()
			if samples > tc.maxSamples {
				t.Errorf("%d model requests for one client call, want at most %d", samples, tc.maxSamples)
			}
			if runs > tc.maxRuns {
				t.Errorf("%d sub-agent runs for one client call, want at most %d", runs, tc.maxRuns)
			}

			// A second client call has its own budget.
			res, err = p.CallTool(t.Context(), &sdk.CallToolRequest{Name: "agent_run_subagent", Arguments: args,
				Caller: sdk.Caller{SourceType: "mcp:test", CallToken: "call-2"}})
			if err != nil {
				t.Fatal(err)
			}
			host.mu.Lock()
			second := host.samples - samples
			host.mu.Unlock()
			if second == 0 || second > tc.maxSamples {
				t.Errorf("second call made %d model requests, want 1 to %d", second, tc.maxSamples)
			}
			if !res.IsError {
				t.Errorf("second call ended without an error: %s", res.Text())
			}
		})
	}
}
