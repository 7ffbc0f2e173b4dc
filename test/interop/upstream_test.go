package interop_test

import (
	"encoding/json"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestUpstreamEverything: the reference "everything" MCP server (npm
// @modelcontextprotocol/server-everything, over stdio) as an upstream of
// the host. The TypeScript SDK client calls its echo tool as
// everything__echo through the host; a disallowed tool is neither listed
// nor callable; the audit log records the upstream call.
func TestUpstreamEverything(t *testing.T) {
	p := requireInterop(t)
	t.Parallel()
	sb := newSandbox(t)
	script := filepath.Join(p.home, "node_modules", "@modelcontextprotocol", "server-everything", "dist", "index.js")
	sb.writeConfig(t, fmt.Sprintf("[[upstream.servers]]\nname = \"everything\"\ncommand = %q\nargs = [%q, \"stdio\"]\ndisallowed_tools = [\"get-env\"]\n",
		p.node(), script))
	extra, err := json.Marshal([]map[string]any{{"name": "everything__echo", "arguments": map[string]any{"message": "hello upstream"}, "text": "Echo: hello upstream"}})
	if err != nil {
		t.Fatal(err)
	}
	tree := runClient(t, p, sb, []string{"EXTRA_CALLS=" + string(extra), `EXPECT_ABSENT=["everything__get-env"]`, `RELAYED_PREFIXES=["everything__"]`}, "stdio", p.bin, "serve")
	tree.requireExited(t)

	cmd := exec.Command(p.bin, "audit", "list", "--tool", "everything__echo", "--json")
	cmd.Env = sb.environ("")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("audit list: %v\n%s", err, out)
	}
	// One JSON object per line. The upstream marks echo read-only, but
	// without trust_annotations or read_only_tools it is an act.
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	var row struct {
		Tool     string `json:"tool"`
		Provider string `json:"provider"`
		Class    string `json:"class"`
		Success  bool   `json:"success"`
	}
	if len(lines) != 1 || json.Unmarshal([]byte(lines[0]), &row) != nil || row.Provider != "upstream" || row.Class != "act" || !row.Success {
		t.Errorf("audit rows of everything__echo: %s", strings.TrimSpace(string(out)))
	}
}
