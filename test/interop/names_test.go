package interop_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os/exec"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/openhuman/openhuman-host/providers/agent/agenttool"
	"github.com/openhuman/openhuman-host/providers/memory/memorytool"
	"github.com/openhuman/openhuman-host/providers/searxng/searxngtool"
	"github.com/openhuman/openhuman-host/sdk/testproc"
)

// clientSafe is the only tool name pattern Claude Desktop and
// OpenAI-style clients accept; Claude Desktop hides the whole list when
// one name fails it.
var clientSafe = regexp.MustCompile(`^[a-zA-Z0-9_-]{1,64}$`)

// wholeCatalogConfig enables every built-in provider (searxng against an
// address nothing answers on: listing needs no instance), the test
// provider, whose tools have dotted names (kit.ping), and an upstream
// server with dotted tool and prompt names (notes.find).
func wholeCatalogConfig(t *testing.T, sb *sandbox, extra string) string {
	t.Helper()
	_, kit := buildTestProvider(t)
	server := testproc.Build(t, "./testdata/dottedserver")
	return kit + "[providers.searxng]\nenabled = true\nbase_url = \"http://127.0.0.1:9\"\n\n" +
		fmt.Sprintf("[[upstream.servers]]\nname = \"notes\"\ncommand = %q\nread_only_tools = [\"notes.find\"]\n\n", server) + extra
}

// TestClientSafeNames walks the whole catalog (built-in providers, a
// third-party provider and an upstream server whose tools have dotted
// names) with the TypeScript SDK client over stdio and Streamable HTTP:
// every tool and prompt name matches ^[a-zA-Z0-9_-]{1,64}$, and tools
// called by their dotted names answer.
func TestClientSafeNames(t *testing.T) {
	p := requireInterop(t)
	t.Parallel()
	sb := newSandbox(t)
	sb.writeConfig(t, wholeCatalogConfig(t, sb, ""))
	extra, err := json.Marshal([]map[string]any{
		{"name": "kit.ping", "text": "pong "},
		{"name": "kit_ping", "text": "pong "},
		{"name": "notes__notes.find", "arguments": map[string]any{"query": "reef"}, "text": "found notes about reef"},
		{"name": "notes__notes_find", "arguments": map[string]any{"query": "gate"}, "text": "found notes about gate"},
	})
	if err != nil {
		t.Fatal(err)
	}
	env := []string{"EXTRA_CALLS=" + string(extra), `RELAYED_PREFIXES=["notes__"]`}
	t.Run("stdio", func(t *testing.T) {
		tree := runClient(t, p, sb, env, "stdio", p.bin, "serve")
		tree.requireExited(t)
	})
	t.Run("http", func(t *testing.T) {
		token := randomToken(t)
		srv := startHTTPServer(t, p, sb, "--auth-token", token)
		runClient(t, p, sb, env, "http", srv.url, "--token", token)
		srv.stop(t, "sigterm")
	})
}

// TestDottedNamesKeepWorking: with a config written for the old dotted
// names (denied_tools = ["memory.*"]), the go-sdk client over stdio sees
// only client-safe names, memory tools are still denied (and so not
// listed), a call by a dotted name runs, and the audit log records the
// advertised names, also when filtered by the old ones.
func TestDottedNamesKeepWorking(t *testing.T) {
	p := requireServer(t)
	t.Parallel()
	sb := newSandbox(t)
	sb.writeConfig(t, wholeCatalogConfig(t, sb, "[autonomy]\ndenied_tools = [\"memory.*\"]\n"))
	ctx := context.Background()

	cmd := exec.Command(p.bin, "serve")
	cmd.Env = sb.environ("")
	client := mcp.NewClient(&mcp.Implementation{Name: "names-check", Version: "1.0.0"}, nil)
	cs, err := client.Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatalf("connect over stdio: %v", err)
	}
	// serverInfo carries the version stamped into the binary, the one
	// openhuman-host version prints.
	out, err := exec.Command(p.bin, "version").Output()
	if err != nil {
		t.Fatalf("%s version: %v", p.bin, err)
	}
	stamped, _, _ := strings.Cut(strings.TrimPrefix(string(out), "openhuman-host "), " ")
	if got := cs.InitializeResult().ServerInfo.Version; stamped == "" || got != stamped {
		t.Errorf("serverInfo.version = %q, openhuman-host version prints %q", got, out)
	}
	var names []string
	for tool, err := range cs.Tools(ctx, nil) {
		if err != nil {
			t.Fatalf("tools/list: %v", err)
		}
		names = append(names, tool.Name)
		if !clientSafe.MatchString(tool.Name) {
			t.Errorf("tools/list has %q, which does not match %s", tool.Name, clientSafe)
		}
	}
	for _, want := range []string{memorytool.ReadChunk, agenttool.RunSubagent, agenttool.ListTools, searxngtool.Search,
		"kit_ping", "notes__notes_find", "notes__notes_archive_all"} {
		if !slices.Contains(names, want) {
			t.Errorf("tools/list lacks %s: %v", want, names)
		}
	}
	// The old dotted pattern still denies the memory tools, which are
	// therefore not listed; a call by name is refused below.
	for _, denied := range []string{memorytool.Store, memorytool.Search} {
		if slices.Contains(names, denied) {
			t.Errorf("tools/list shows %s, which denied_tools = [\"memory.*\"] refuses: %v", denied, names)
		}
	}
	for prompt, err := range cs.Prompts(ctx, nil) {
		if err != nil {
			t.Fatalf("prompts/list: %v", err)
		}
		if !clientSafe.MatchString(prompt.Name) {
			t.Errorf("prompts/list has %q, which does not match %s", prompt.Name, clientSafe)
		}
	}
	if _, err := cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: "notes__notes.brief"}); err != nil {
		t.Errorf("prompts/get by the dotted name: %v", err)
	}

	text := func(res *mcp.CallToolResult) string {
		var parts []string
		for _, c := range res.Content {
			if tc, ok := c.(*mcp.TextContent); ok {
				parts = append(parts, tc.Text)
			}
		}
		return strings.Join(parts, "\n")
	}
	storeDotted := strings.Replace(memorytool.Store, "_", ".", 1)
	calls := []struct {
		name     string
		args     map[string]any
		denied   bool
		wantText string
	}{
		{storeDotted, map[string]any{"title": "t", "content": "c"}, true, memorytool.Store + ` matches "memory.*" in [autonomy] denied_tools`},
		{memorytool.Search, map[string]any{"query": "reef"}, true, memorytool.Search + ` matches "memory.*" in [autonomy] denied_tools`},
		{"kit.ping", map[string]any{}, false, "pong "},
	}
	for _, c := range calls {
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: c.name, Arguments: c.args})
		if err != nil {
			t.Fatalf("tools/call %s: %v", c.name, err)
		}
		if res.IsError != c.denied || !strings.Contains(text(res), c.wantText) {
			t.Errorf("tools/call %s: isError %v, %q; want isError %v and %q", c.name, res.IsError, text(res), c.denied, c.wantText)
		}
	}
	if err := cs.Close(); err != nil {
		t.Logf("close: %v", err)
	}

	for filter, want := range map[string]string{"kit.ping": "kit_ping", memorytool.Store: memorytool.Store, storeDotted: memorytool.Store} {
		cmd := exec.Command(p.bin, "audit", "list", "--tool", filter, "--json")
		cmd.Env = sb.environ("")
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("audit list --tool %s: %v\n%s", filter, err, out)
		}
		var row struct {
			Tool     string `json:"tool"`
			Decision string `json:"decision"`
		}
		lines := strings.Split(strings.TrimSpace(string(out)), "\n")
		if len(lines) != 1 || json.Unmarshal([]byte(lines[0]), &row) != nil || row.Tool != want {
			t.Errorf("audit list --tool %s: %s; want one row of %s", filter, out, want)
		}
		if want == memorytool.Store && row.Decision != "denied:denied_tool" {
			t.Errorf("audit row of "+memorytool.Store+" has decision %q, want denied:denied_tool", row.Decision)
		}
	}
}
