package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"strconv"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/openhuman/openhuman-host/host"
	"github.com/openhuman/openhuman-host/host/config"
	"github.com/openhuman/openhuman-host/sdk/mcpwire"
	"github.com/openhuman/openhuman-host/sdk/testproc"
	"github.com/openhuman/openhuman-host/sdk/testwait"
)

// noBuiltins is config tables that turn the built-in memory and agent
// providers off.
const noBuiltins = "[providers.memory]\nenabled = false\n[providers.agent]\nenabled = false\n"

// mcpCallText calls tool with args (a JSON object) and returns its text
// and isError; a protocol error fails the test.
func mcpCallText(t *testing.T, cs *mcp.ClientSession, tool, args string) (string, bool) {
	t.Helper()
	res, err := cs.CallTool(testwait.Context(t), &mcp.CallToolParams{Name: tool, Arguments: json.RawMessage(args)})
	if err != nil {
		t.Fatalf("%s %s: %v", tool, args, err)
	}
	return mcpwire.Text(res), res.IsError
}

// freeAddr returns a loopback address, "127.0.0.1:port", that nothing
// listened on when it returned: for a server a test starts later, or for
// one that is down.
func freeAddr(t *testing.T) string {
	t.Helper()
	port, err := testproc.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	return net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
}

// testConfig parses a config with its data in a new temporary directory
// (see parseTestConfig) and returns it with that directory.
func testConfig(t *testing.T, extra string) (*config.Config, string) {
	t.Helper()
	dataDir := t.TempDir()
	return parseTestConfig(t, dataDir, extra), dataDir
}

// newTestHost starts a host on testConfig(t, extra), closed when the test
// ends, and returns it with its data directory.
func newTestHost(t *testing.T, extra string) (*host.Host, string) {
	t.Helper()
	cfg, dataDir := testConfig(t, extra)
	h := startTestHost(t, cfg)
	t.Cleanup(func() { _ = h.Close(context.Background()) })
	return h, dataDir
}

// parseTestConfig parses a config whose [server] table has dataDir and
// [slowStart], followed by extra (more [server] lines, then any other
// tables).
func parseTestConfig(t *testing.T, dataDir, extra string) *config.Config {
	t.Helper()
	cfg, err := config.Parse(fmt.Appendf(nil, "[server]\ndata_dir = %q\n%s%s", dataDir, slowStart, extra), "test.toml")
	if err != nil {
		t.Fatalf("config: %v", err)
	}
	return cfg
}

// runCLI runs the command line in this process with args and returns what
// it printed on stdout and the error Execute returned.
func runCLI(t *testing.T, args ...string) (string, error) {
	t.Helper()
	out, _, err := runCLIOutputs(t, args...)
	return out, err
}

// runCLIOutputs is runCLI that also returns what the command printed on
// stderr.
func runCLIOutputs(t *testing.T, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	var out, errOut bytes.Buffer
	cmd := newRootCmd()
	cmd.SetArgs(args)
	cmd.SetOut(&out)
	cmd.SetErr(&errOut)
	err = cmd.Execute()
	return out.String(), errOut.String(), err
}
