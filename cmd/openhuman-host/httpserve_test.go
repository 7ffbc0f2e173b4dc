package main

import (
	"bufio"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
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

// serveUpstreamForTest writes into dir a config with full autonomy, the
// memory and agent providers off, server (TOML lines for [server], may be
// empty) and one upstream stdio server "local" (this test binary's MCP
// server) whose entry ends with extra (TOML lines), starts it over HTTP
// with testToken and returns its MCP endpoint URL.
func serveUpstreamForTest(t *testing.T, dir, server, extra string) string {
	t.Helper()
	cfgPath := filepath.Join(dir, "config.toml")
	cfg := fmt.Sprintf(`[server]
data_dir = %q
log_level = "off"
%s
[autonomy]
level = "full"
confirm_acts = "off"

[providers.memory]
enabled = false

[providers.agent]
enabled = false

[[upstream.servers]]
name = "local"
command = %q
args = [%q]
`, filepath.Join(dir, "data"), server, testExe(t), mcpServerArg) + extra
	if err := os.WriteFile(cfgPath, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	return serveMCPForTest(t, cfgPath, testToken)
}

// testToken is the bearer token of the servers serveUpstreamForTest starts.
var testToken = hex.EncodeToString([]byte("a test token of 32 random bytes!"))
