package interop_test

import (
	"encoding/json"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/openhuman/openhuman-host/providers/memory/memorytool"
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

// TestDiscoveryEverything: the TypeScript SDK client, on a profile in
// discovery mode, finds the everything server's echo tool with
// tool_search, reads it with tool_describe and calls it with tool_call;
// the call is audited under the upstream tool's own name and the
// profile's, and a tool the profile excludes is refused.
func TestDiscoveryEverything(t *testing.T) {
	p := requireInterop(t)
	t.Parallel()
	sb := newSandbox(t)
	script := filepath.Join(p.home, "node_modules", "@modelcontextprotocol", "server-everything", "dist", "index.js")
	sb.writeConfig(t, fmt.Sprintf("[[upstream.servers]]\nname = \"everything\"\ncommand = %q\nargs = [%q, \"stdio\"]\n\n"+
		"[profiles.lean]\ndiscovery = true\npinned_tools = [%q]\nexclude_tools = [\"everything__get-sum\"]\n",
		p.node(), script, memorytool.Search))
	env := []string{
		`EXPECT_TOOLS=["` + memorytool.Search + `","tool_call","tool_describe","tool_search"]`,
		`FIND={"query":"echo back a message","tool":"everything__echo"}`,
		`CALL={"arguments":{"message":"found through discovery"},"text":"Echo: found through discovery"}`,
		`REFUSED={"name":"everything__get-sum","arguments":{"a":1,"b":2},"text":"[profiles.lean] exclude_tools"}`,
	}
	tree := runScript(t, p, sb, "client-discovery.mjs", true, env, "stdio", p.bin, "serve", "--profile", "lean")
	tree.requireExited(t)

	cmd := exec.Command(p.bin, "audit", "list", "--json")
	cmd.Env = sb.environ("")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("audit list: %v\n%s", err, out)
	}
	got := map[string]int{}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		var row struct {
			Tool, Decision, Profile string
		}
		if err := json.Unmarshal([]byte(line), &row); err != nil {
			t.Fatalf("audit row %q: %v", line, err)
		}
		got[row.Profile+" "+row.Tool+" "+row.Decision]++
	}
	for _, want := range []string{"lean everything__echo allowed", "lean everything__get-sum denied:profile"} {
		if got[want] != 1 {
			t.Errorf("audit rows %q: %d, want 1 (all: %v)", want, got[want], got)
		}
	}
	if n := got["lean tool_call allowed"]; n != 0 {
		t.Errorf("%d audit rows of tool_call itself; calls through it are recorded under the tool's own name", n)
	}
}
