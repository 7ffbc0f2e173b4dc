package main

import (
	"bufio"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/openhuman/openhuman-host/internal/testwait"
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
