package server

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/openhuman/openhuman-host/host/policy"
)

// listedTools returns the names in cs's tools/list, sorted.
func listedTools(t *testing.T, cs *mcp.ClientSession) []string {
	t.Helper()
	var names []string
	for tool, err := range cs.Tools(context.Background(), nil) {
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, tool.Name)
	}
	slices.Sort(names)
	return names
}

// TestToolsListHidesRefusedTools: tools the policy refuses whatever the
// call are not listed; calling one still gets the policy's refusal and an
// audit row; a reload that allows them lists them again with
// notifications/tools/list_changed.
func TestToolsListHidesRefusedTools(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	zero := 0
	tests := map[string]struct {
		opts         policy.Options
		want         []string
		hidden       string
		wantDecision string
	}{
		"readonly": {
			opts: policy.Options{Level: policy.ReadOnly}, want: []string{"fake_search", "fake_slow"},
			hidden: "fake_store", wantDecision: "denied:readonly",
		},
		"denied_tools": {
			opts: policy.Options{Level: policy.Supervised, DeniedTools: []string{"fake_se*"}}, want: []string{"fake_slow", "fake_store"},
			hidden: "fake_search", wantDecision: "denied:denied_tool",
		},
		"allowed_tools": {
			opts: policy.Options{Level: policy.Supervised, AllowedTools: []string{"fake_store"}}, want: []string{"fake_store"},
			hidden: "fake_slow", wantDecision: "denied:not_allowed",
		},
		"no acts an hour": {
			opts: policy.Options{Level: policy.Full, MaxActionsPerHour: &zero}, want: []string{"fake_search", "fake_slow"},
			hidden: "fake_store", wantDecision: "denied:budget",
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			pol := testPolicy(t, tc.opts)
			a := &memAudit{}
			s := newFakeServer(t, &Options{Policy: pol, Audit: a, RecordReads: true})
			changed := make(chan struct{}, 8)
			cs := connect(t, s, "Claude Desktop", &mcp.ClientOptions{
				ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) { changed <- struct{}{} },
			})
			if got := listedTools(t, cs); !slices.Equal(got, tc.want) {
				t.Errorf("tools/list = %v, want %v", got, tc.want)
			}
			args := json.RawMessage(`{"query":"x"}`)
			if tc.hidden != "fake_search" {
				args = json.RawMessage(`{}`)
			}
			res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: tc.hidden, Arguments: args})
			if err != nil {
				t.Fatalf("calling hidden %s: %v, want the policy's refusal as a tool result", tc.hidden, err)
			}
			if !res.IsError || !strings.Contains(textOf(res), "[autonomy]") {
				t.Errorf("calling hidden %s = %+v, want an isError result naming the [autonomy] setting", tc.hidden, res)
			}
			if rows := a.all(); len(rows) != 1 || rows[0].Tool != tc.hidden || rows[0].Decision != tc.wantDecision {
				t.Errorf("audit rows = %+v, want one %s row for %s", rows, tc.wantDecision, tc.hidden)
			}

			open := testPolicy(t, policy.Options{Level: policy.Full})
			s.Reconfigure(Options{Policy: open})
			select {
			case <-changed:
			case <-time.After(time.Minute): // a guard against a hang, not a timing
				t.Fatal("no notifications/tools/list_changed after the reload allowed more tools")
			}
			if got := listedTools(t, cs); !slices.Equal(got, []string{"fake_search", "fake_slow", "fake_store"}) {
				t.Errorf("tools/list after the reload = %v, want every tool", got)
			}
		})
	}
}

// textOf joins a result's text blocks.
func textOf(res *mcp.CallToolResult) string {
	var b strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String()
}
