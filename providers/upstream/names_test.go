package upstream

import (
	"context"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/openhuman/openhuman-host/sdk"
)

// Upstream tool names that MCP clients would refuse are exposed under
// client-safe names (sdk.ClientName of prefix and name), calls reach the
// upstream tool by its own name, and two names with one client-safe name
// keep the first, never a renamed second.
func TestUpstreamNamesAreClientSafe(t *testing.T) {
	long := "query." + strings.Repeat("x", 70)
	s := mcp.NewServer(&mcp.Implementation{Name: "names", Version: "1"}, nil)
	for _, name := range []string{"repos.list", "repos_list", "get env", long, "plain"} {
		mcp.AddTool(s, &mcp.Tool{Name: name, Description: "Tool " + name + "."},
			func(_ context.Context, req *mcp.CallToolRequest, _ map[string]any) (*mcp.CallToolResult, any, error) {
				return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "ran " + req.Params.Name}}}, nil, nil
			})
	}
	p, cat := configure(t, newFakeHost(), map[string]any{"name": "gh", "endpoint": serve(t, s, false, nil)})

	var got []string
	for _, tool := range cat.Tools {
		if !sdk.IsClientName(tool.Name) {
			t.Errorf("exposed name %q does not match ^[a-zA-Z0-9_-]{1,64}$", tool.Name)
		}
		got = append(got, tool.Name)
	}
	longName := sdk.ClientName("gh__" + long)
	// The go-sdk server lists tools sorted by name.
	want := []string{"gh__get_env", "gh__plain", longName, "gh__repos_list"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("exposed tools (-want +got):\n%s", diff)
	}

	ctx := context.Background()
	for exposed, upstream := range map[string]string{"gh__get_env": "get env", longName: long, "gh__repos_list": "repos.list"} {
		res, err := p.CallTool(ctx, &sdk.CallToolRequest{Name: exposed, Arguments: []byte(`{}`), Caller: caller("A", "c")})
		if err != nil || res.IsError || len(res.Content) != 1 || res.Content[0].Text != "ran "+upstream {
			t.Errorf("CallTool(%q) = %+v, %v; want the upstream tool %q to run", exposed, res, err, upstream)
		}
	}
}
