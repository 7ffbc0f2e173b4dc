package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/openhuman/openhuman-host/host"
	"github.com/openhuman/openhuman-host/host/server"
	"github.com/openhuman/openhuman-host/sdk/testwait"
)

// statusToken is the bearer token of the servers the status tests start.
var statusToken = strings.Repeat("0123456789abcdef", 4)

// serveHTTP starts `serve --transport http` of this test binary with the
// config at cfgPath and statusToken, and returns its base URL once
// /healthz answers.
func serveHTTPForTest(t *testing.T, cfgPath string) string {
	t.Helper()
	addr := freeAddr(t)
	_, port, _ := net.SplitHostPort(addr)
	cmd := exec.Command(testExe(t), "--config", cfgPath, "serve", "--transport", "http", "--port", port)
	cmd.Env = append(os.Environ(), cliEnv+"=1", "OPENHUMAN_MCP_TOKEN="+statusToken)
	var stderr testwait.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	base := "http://" + addr + "/"
	testwait.Until(t, "the server's /healthz", func() bool {
		resp, err := http.Get(base + "healthz")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	})
	return base
}

// runStatus runs the status command in this process with args.
func runStatus(t *testing.T, args ...string) (string, int) {
	t.Helper()
	var out bytes.Buffer
	cmd := newRootCmd()
	cmd.SetArgs(append([]string{"status"}, args...))
	cmd.SetOut(&out)
	cmd.SetErr(&out)
	err := cmd.Execute()
	if err != nil {
		if _, ok := err.(*exitError); !ok {
			t.Fatalf("status %v: %v\n%s", args, err, out.String())
		}
		return out.String(), exitCode(err)
	}
	return out.String(), 0
}

// TestStatusHTTP: status reads /healthz and /readyz of running HTTP
// servers: a ready one exits 0; one with a provider that did not load
// answers 503 and status exits 1, naming the failed check, with details
// only with the token.
func TestStatusHTTP(t *testing.T) {
	t.Parallel()
	t.Run("ready", func(t *testing.T) {
		t.Parallel()
		dataDir := t.TempDir()
		base := serveHTTPForTest(t, serveConfig(t, dataDir))
		out, code := runStatus(t, "--url", base, "--auth-token", statusToken)
		if code != 0 || !strings.Contains(out, "ready:") || !strings.Contains(out, "running: memory, agent") ||
			!strings.Contains(out, filepath.Join(dataDir, host.AuditFile)+" takes rows") {
			t.Errorf("status of a ready server: exit %d\n%s", code, out)
		}
		out, code = runStatus(t, "--url", base, "--auth-token", "", "--json")
		var got statusOutput
		if err := json.Unmarshal([]byte(out), &got); err != nil || code != 0 || !got.OK || !got.Live || got.Ready == nil ||
			len(got.Ready.Checks) != 3 {
			t.Fatalf("status --json: exit %d, %v\n%s", code, err, out)
		}
		for _, c := range got.Ready.Checks {
			if !c.OK || c.Detail != "" {
				t.Errorf("without the token: check %+v, want ok without detail", c)
			}
		}
	})
	t.Run("not ready", func(t *testing.T) {
		t.Parallel()
		missing := filepath.Join(t.TempDir(), "no-such-provider")
		cfgPath := serveConfigWith(t, t.TempDir(), fmt.Sprintf("[providers.broken]\ncommand = %q\nsha256 = %q\n", missing, strings.Repeat("ab", 32)))
		base := serveHTTPForTest(t, cfgPath)
		resp, err := http.Get(base + "readyz")
		if err != nil {
			t.Fatal(err)
		}
		var r server.Readiness
		err = json.NewDecoder(resp.Body).Decode(&r)
		resp.Body.Close()
		if err != nil || resp.StatusCode != http.StatusServiceUnavailable || r.Status != server.StatusNotReady {
			t.Errorf("GET /readyz = %d %+v, %v; want 503 not ready", resp.StatusCode, r, err)
		}
		out, code := runStatus(t, "--url", base, "--auth-token", "")
		if code != 1 || !strings.Contains(out, "NOT READY") || !strings.Contains(out, "providers  FAIL  -") ||
			!strings.Contains(out, "--auth-token") || strings.Contains(out, missing) {
			t.Errorf("status without the token: exit %d\n%s", code, out)
		}
		out, code = runStatus(t, "--url", base, "--auth-token", statusToken)
		if code != 1 || !strings.Contains(out, "broken is failed") {
			t.Errorf("status with the token: exit %d\n%s", code, out)
		}
	})
	t.Run("unreachable", func(t *testing.T) {
		t.Parallel()
		base := "http://" + freeAddr(t) + "/"
		out, code := runStatus(t, "--url", base)
		if code != 1 || !strings.Contains(out, "cannot reach the server") {
			t.Errorf("status of nothing: exit %d\n%s", code, out)
		}
	})
}

// TestHostReady: the host's checks pass on a working host and the storage
// check fails once the data directory is gone.
func TestHostReady(t *testing.T) {
	t.Parallel()
	h, dataDir := newTestHost(t, "")
	checks := h.Ready(t.Context())
	var names []string
	for _, c := range checks {
		names = append(names, c.Name)
		if !c.OK {
			t.Errorf("check %+v failed on a working host", c)
		}
	}
	if strings.Join(names, ",") != "providers,audit,storage" {
		t.Errorf("checks %v", names)
	}
	if err := os.RemoveAll(dataDir); err != nil {
		t.Fatal(err)
	}
	if c := h.Ready(t.Context())[2]; c.OK || !strings.Contains(c.Detail, "accepts no new file") {
		t.Errorf("storage check without a data directory: %+v", c)
	}
}

// TestStatusStdio: with [server] transport stdio, status reports the
// local state and says where a stdio server runs; a provider whose
// executable is missing fails it.
func TestStatusStdio(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "no-such-provider")
	cliHome(t, fmt.Sprintf("[providers.broken]\ncommand = %q\nsha256 = %q\n", missing, strings.Repeat("ab", 32)))
	out, code := runStatus(t)
	for _, want := range []string{"runs inside its MCP client", "config", "data directory", "audit", "provider memory", "built in",
		"provider broken", "FAIL", "No server is running on this data directory."} {
		if !strings.Contains(out, want) {
			t.Errorf("status lacks %q:\n%s", want, out)
		}
	}
	if code != 1 {
		t.Errorf("status with a missing provider: exit %d, want 1", code)
	}
	cliHome(t, "")
	out, code = runStatus(t, "--json")
	var got statusOutput
	if err := json.Unmarshal([]byte(out), &got); err != nil || code != 0 || !got.OK || got.Transport != "stdio" {
		t.Errorf("status --json of a clean home: exit %d, %v\n%s", code, err, out)
	}
}

// TestUpstreamDownIsReported: with a server running, providers status and
// upstream list show an upstream HTTP server that never answered, and one
// that went away after connecting, as failed with their errors, and
// providers status exits 1.
func TestUpstreamDownIsReported(t *testing.T) {
	t.Parallel()
	s := mcp.NewServer(&mcp.Implementation{Name: "flaky", Version: "1"}, nil)
	mcp.AddTool(s, &mcp.Tool{Name: "echo", Description: "Echo."}, func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "echo"}}}, nil, nil
	})
	flaky := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, nil))
	defer flaky.Close()
	dead := freeAddr(t)
	// flaky is pinged every 2 s, so that its going away shows within
	// seconds rather than the default 30.
	cfgPath := serveConfigWith(t, t.TempDir(), fmt.Sprintf("[[upstream.servers]]\nname = \"flaky\"\nendpoint = %q\nping_interval_secs = 2\n[[upstream.servers]]\nname = \"dead\"\nendpoint = %q\n",
		flaky.URL+"/mcp", "http://"+dead+"/mcp"))
	serveHTTPForTest(t, cfgPath)

	states := func() (map[string]string, string, error) {
		out, err := runCLI(t, "--config", cfgPath, "providers", "status", "--json")
		var reports []host.StatusReport
		if jerr := json.Unmarshal([]byte(out), &reports); jerr != nil || len(reports) != 1 {
			return nil, out, err
		}
		m := map[string]string{}
		for _, u := range reports[0].Upstream {
			m[u.Name] = u.State + ": " + u.Error
		}
		return m, out, err
	}
	testwait.Until(t, "flaky connected and dead failed", func() bool {
		m, _, _ := states()
		return strings.HasPrefix(m["flaky"], "connected") && strings.HasPrefix(m["dead"], "failed: ") && strings.Contains(m["dead"], dead)
	})
	flaky.CloseClientConnections()
	flaky.Close()
	testwait.Until(t, "flaky reported failed once it went away", func() bool {
		m, _, _ := states()
		return strings.HasPrefix(m["flaky"], "failed: ") && len(m["flaky"]) > len("failed: ")
	})
	if _, out, err := states(); exitCode(err) != 1 {
		t.Errorf("providers status with upstream servers down: %v\n%s", err, out)
	}
	out, err := runCLI(t, "--config", cfgPath, "upstream", "list")
	if err != nil {
		t.Fatal(err)
	}
	for _, re := range []string{`(?m)^flaky\s+http\s+failed\s`, `(?m)^dead\s+http\s+failed\s`, `(?m)^flaky: \S`, `(?m)^dead: \S`} {
		if !regexpMatch(t, re, out) {
			t.Errorf("upstream list lacks %s:\n%s", re, out)
		}
	}
}
