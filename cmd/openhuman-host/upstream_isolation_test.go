package main

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/openhuman/openhuman-host/sdk/testwait"
)

// TestServeUpstreamIsolation serves one dead HTTP upstream server, one that
// answers 401 and a healthy stdio one: the healthy one's tools are listed
// and callable as soon as it is up, a call of a missing tool says which server
// is down and why, and once the dead server starts its tools appear with
// tools/list_changed, without SIGHUP.
func TestServeUpstreamIsolation(t *testing.T) {
	t.Parallel()
	deadAddr := freeAddr(t)
	locked := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		http.Error(w, "sign in first", http.StatusUnauthorized)
	}))
	defer locked.Close()
	cfgPath := serveConfigWith(t, t.TempDir(), noBuiltins+fmt.Sprintf(`
[[upstream.servers]]
name = "dead"
endpoint = "http://%s/mcp"

[[upstream.servers]]
name = "locked"
endpoint = %q

[[upstream.servers]]
name = "local"
command = %q
args = [%q]
`, deadAddr, locked.URL, testExe(t), mcpServerArg))
	changed := make(chan struct{}, 10)
	cmd := exec.Command(testExe(t), "--config", cfgPath, "serve")
	cmd.Env = append(os.Environ(), cliEnv+"=1")
	client := mcp.NewClient(&mcp.Implementation{Name: "isolation-test", Version: "1"}, &mcp.ClientOptions{
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) {
			select {
			case changed <- struct{}{}:
			default:
			}
		},
	})
	cs, err := client.Connect(testwait.Context(t), &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	defer cs.Close()
	names := func() []string {
		res, err := cs.ListTools(testwait.Context(t), nil)
		if err != nil {
			t.Fatalf("tools/list: %v", err)
		}
		var out []string
		for _, tool := range res.Tools {
			out = append(out, tool.Name)
		}
		return out
	}
	// The healthy server is listed once it is up: at once when it starts
	// within the provider's configure wait, else after list_changed (a
	// loaded machine), never with anything of dead or locked.
	var got []string
	testwait.Until(t, "local__echo to be listed", func() bool {
		got = names()
		return slices.Contains(got, "local__echo")
	})
	if slices.ContainsFunc(got, func(n string) bool {
		return strings.HasPrefix(n, "dead__") || strings.HasPrefix(n, "locked__")
	}) {
		t.Fatalf("tools = %v, want local__echo and nothing of dead or locked", got)
	}
	if text, isErr := mcpCallText(t, cs, "local__echo", `{"text":"hi"}`); isErr || text != "echo:hi" {
		t.Fatalf("local__echo = %q (isError %v)", text, isErr)
	}
	res, err := cs.CallTool(testwait.Context(t), &mcp.CallToolParams{Name: "locked__anything", Arguments: map[string]any{}})
	if err == nil || !strings.Contains(err.Error(), `it belongs to upstream server "locked", which is down (`) ||
		!strings.Contains(err.Error(), "it requires authorization") {
		t.Errorf("calling a tool of the 401 server: %v %+v", err, res)
	}

	// config check shows each server's state, and is no error for it. The
	// locked server is tried again a second after it refused, so by the
	// time every server has had its first attempt (local's start may take
	// longer than that on a busy machine) it may be connecting again:
	// either way the reason shows.
	check := exec.Command(testExe(t), "--config", cfgPath, "config", "check")
	check.Env = append(os.Environ(), cliEnv+"=1")
	lockedState := regexp.MustCompile(`# upstream server locked: (failed|connecting) \(.*it requires authorization`)
	if out, err := check.CombinedOutput(); err != nil || !strings.Contains(string(out), "# upstream server local: connected") ||
		!lockedState.Match(out) {
		t.Errorf("config check: %v\n%s", err, out)
	}

	// upstream list shows what the running server reports.
	list := regexp.MustCompile(`(?m)^dead +http +failed .*\n(.*\n)*locked +http +failed .*\n(.*\n)*local +stdio +connected `)
	testwait.Until(t, "upstream list to show each server's state", func() bool {
		cmd := exec.Command(testExe(t), "--config", cfgPath, "upstream", "list")
		cmd.Env = append(os.Environ(), cliEnv+"=1")
		out, err := cmd.CombinedOutput()
		return err == nil && list.Match(out) && strings.Contains(string(out), "locked: upstream server \"locked\"")
	})

	srv := mcp.NewServer(&mcp.Implementation{Name: "late", Version: "1"}, nil)
	mcp.AddTool(srv, &mcp.Tool{Name: "hello"}, func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "late hello"}}}, nil, nil
	})
	for len(changed) > 0 { // only the notification for the late server counts
		<-changed
	}
	late, err := net.Listen("tcp", deadAddr)
	if err != nil {
		t.Skipf("the dead server's port was taken meanwhile: %v", err)
	}
	hs := &http.Server{Handler: mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil)}
	go func() { _ = hs.Serve(late) }()
	defer hs.Close()
	testwait.Recv(t, changed, "notifications/tools/list_changed once the dead server is up")
	testwait.Until(t, "the late server's tools", func() bool { return slices.Contains(names(), "dead__hello") })
	if text, isErr := mcpCallText(t, cs, "dead__hello", `{}`); isErr || text != "late hello" {
		t.Fatalf("dead__hello = %q (isError %v)", text, isErr)
	}
}
