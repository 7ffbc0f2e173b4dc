package main

import (
	"bufio"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/openhuman/openhuman-host/sdk/testwait"
)

// serveMCPForTest starts `serve --transport http --port 0` of this test
// binary with the config at cfgPath and the bearer token, stops it with
// an interrupt when the test ends, and returns the MCP endpoint URL it
// prints once it listens.
func serveMCPForTest(t *testing.T, cfgPath, token string) string {
	t.Helper()
	cmd := exec.Command(testExe(t), "--config", cfgPath, "serve", "--transport", "http", "--port", "0")
	cmd.Env = append(os.Environ(), cliEnv+"=1", "OPENHUMAN_MCP_TOKEN="+token)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Signal(os.Interrupt)
		_ = cmd.Wait()
	})
	urls := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			if u, ok := strings.CutPrefix(sc.Text(), "openhuman-host: MCP endpoint "); ok {
				urls <- u
			}
		}
	}()
	return testwait.Recv(t, urls, "the server's endpoint line")
}

// serveUpstreamForTest writes a config with full autonomy, the memory and
// agent providers off and one upstream stdio server "local" (this test
// binary's MCP server) whose entry ends with extra (TOML lines), starts it
// over HTTP with testToken and returns its MCP endpoint URL.
func serveUpstreamForTest(t *testing.T, extra string) string {
	t.Helper()
	cfgPath := serveConfigWith(t, t.TempDir(), fmt.Sprintf(`
[autonomy]
level = "full"
confirm_acts = "off"

%s
[[upstream.servers]]
name = "local"
command = %q
args = [%q]
`, noBuiltins, testExe(t), mcpServerArg)+extra)
	return serveMCPForTest(t, cfgPath, testToken)
}

// testToken is the bearer token of the servers serveUpstreamForTest starts.
var testToken = hex.EncodeToString([]byte("a test token of 32 random bytes!"))
