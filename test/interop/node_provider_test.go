package interop_test

// Tests of examples/provider-node: a provider written in Node.js, which
// speaks the go-plugin handshake and the provider protocol without the Go
// SDK. The built openhuman-host loads it from a config file and calls its
// tools from the command line and over MCP on stdio.

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/openhuman/openhuman-host/sdk/testwait"
)

// nodeProvider is the example provider a test loads.
type nodeProvider struct {
	bin    string // the built openhuman-host
	script string // absolute path of provider.js
	sha256 string // lowercase hex SHA-256 of provider.js
}

var nodeVersion = regexp.MustCompile(`^v(\d+)\.`)

// requireNodeProvider checks the prerequisites: the built server, Node >= 20
// on PATH (provider.js starts with #!/usr/bin/env node) and the provider's
// npm packages in examples/provider-node/node_modules.
func requireNodeProvider(t *testing.T) nodeProvider {
	t.Helper()
	p := requireServer(t)
	dir, err := filepath.Abs(filepath.Join("..", "..", "examples", "provider-node"))
	if err != nil {
		t.Fatal(err)
	}
	script := filepath.Join(dir, "provider.js")
	src, err := os.ReadFile(script)
	if err != nil {
		t.Fatalf("read the example provider: %v", err)
	}
	if fi, err := os.Stat(script); err != nil || fi.Mode()&0o111 == 0 {
		t.Fatalf("%s must be executable (mode 0755): the host runs it as the provider's command", script)
	}
	for _, pkg := range []string{"@grpc/grpc-js", "@grpc/proto-loader", "node-forge"} {
		if _, err := os.Stat(filepath.Join(dir, "node_modules", pkg, "package.json")); err != nil {
			unavailable(t, fmt.Sprintf("the node provider's npm packages are not installed in %s "+
				"(missing %s); run `make interop-deps`", filepath.Join(dir, "node_modules"), pkg))
		}
	}
	out, err := exec.Command("node", "--version").Output()
	if err != nil {
		unavailable(t, fmt.Sprintf("no node on PATH to run %s: %v", script, err))
	}
	m := nodeVersion.FindStringSubmatch(strings.TrimSpace(string(out)))
	if major, _ := strconv.Atoi(submatchAt(m, 1)); major < 20 {
		unavailable(t, fmt.Sprintf("the node on PATH is %s; the example provider needs Node >= 20", strings.TrimSpace(string(out))))
	}
	sum := sha256.Sum256(src)
	return nodeProvider{bin: p.bin, script: script, sha256: hex.EncodeToString(sum[:])}
}

func submatchAt(m []string, i int) string {
	if i < len(m) {
		return m[i]
	}
	return ""
}

// writeNodeConfig writes a config file that disables the built-in memory
// provider and loads the node provider with the given checksum.
func (np nodeProvider) writeNodeConfig(t *testing.T, sb *sandbox, checksum string) string {
	t.Helper()
	// Node and its gRPC packages can take more than the default 10s to
	// start on a machine busy with other tests.
	cfg := fmt.Sprintf("[server]\ndata_dir = %s\nprovider_start_timeout_secs = 120\n\n[providers.memory]\nenabled = false\n\n"+
		"[providers.node]\ncommand = %s\nsha256 = %s\n",
		strconv.Quote(filepath.Join(sb.dir, "data")), strconv.Quote(np.script), strconv.Quote(checksum))
	path := filepath.Join(sb.dir, "config.toml")
	if err := os.WriteFile(path, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

type cliResult struct {
	stdout, stderr string
	code           int
}

// runCLI runs openhuman-host with args in the sandbox, waits for it to exit
// and returns its output. tree records every process it started.
func (np nodeProvider) runCLI(t *testing.T, sb *sandbox, args ...string) (cliResult, *procTree) {
	t.Helper()
	ctx := testwait.Context(t)
	var stdout, stderr testwait.Buffer
	cmd := exec.CommandContext(ctx, np.bin, args...)
	cmd.Dir = sb.dir
	cmd.Env = sb.environ("")
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	cmd.WaitDelay = 5 * time.Second
	if err := cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", np.bin, err)
	}
	tree := watchProcTree(t, cmd.Process.Pid, np.bin)
	t.Cleanup(tree.killRunning)
	err := cmd.Wait()
	tree.halt()
	res := cliResult{stdout: stdout.String(), stderr: stderr.String()}
	var exitErr *exec.ExitError
	switch {
	case errors.Is(ctx.Err(), context.DeadlineExceeded):
		t.Fatalf("openhuman-host %s did not finish by the test's deadline; stderr:\n%s", strings.Join(args, " "), indent(res.stderr))
	case errors.As(err, &exitErr):
		res.code = exitErr.ExitCode()
	case err != nil:
		t.Fatalf("openhuman-host %s: %v", strings.Join(args, " "), err)
	}
	return res, tree
}

// nodeProcs returns the recorded processes that ran provider.js.
func (np nodeProvider) nodeProcs(tree *procTree) []procStat {
	providers, others := tree.split()
	var out []procStat
	for _, p := range append(others, providers...) {
		if slices.Contains(p.argv, np.script) {
			out = append(out, p)
		}
	}
	return out
}

// requireNoProvider checks, once root has exited, that provider.js ran
// under it and that no such process is left: the host stops its providers
// before it exits.
func (np nodeProvider) requireNoProvider(t *testing.T, tree *procTree) {
	t.Helper()
	procs := np.nodeProcs(tree)
	if len(procs) == 0 {
		t.Errorf("no process running %s was seen under pid %d, so the exit check proves nothing", np.script, tree.root.pid)
		return
	}
	if left := waitGone(procs, testwait.Deadline(t)); len(left) > 0 {
		t.Errorf("provider.js outlived the host: %v (killing them)", left)
		tree.killRunning()
	}
}

func (r cliResult) describe() string {
	return fmt.Sprintf("exit status %d; stdout:\n%s\nstderr:\n%s", r.code, indent(r.stdout), indent(r.stderr))
}

// TestNodeProvider: the host loads provider.js by its command and sha256,
// lists its tools and calls both; each command leaves no provider.js
// process behind.
func TestNodeProvider(t *testing.T) {
	np := requireNodeProvider(t)
	t.Parallel()
	sb := newSandbox(t)
	cfg := np.writeNodeConfig(t, sb, np.sha256)

	t.Run("tools list", func(t *testing.T) {
		res, tree := np.runCLI(t, sb, "--config", cfg, "tools", "list")
		if res.code != 0 {
			t.Fatalf("tools list failed: %s", res.describe())
		}
		lines := strings.Split(strings.TrimSpace(res.stdout), "\n")
		for _, want := range [][]string{
			{"node_echo", "read", "node"},
			{"node_add", "read", "node"},
		} {
			found := false
			for _, l := range lines {
				if f := strings.Split(l, "\t"); len(f) == 4 && slices.Equal(f[:3], want) && f[3] != "" {
					found = true
				}
			}
			if !found {
				t.Errorf("no line %q<TAB>description in tools list output:\n%s", strings.Join(want, "\t"), indent(res.stdout))
			}
		}
		np.requireNoProvider(t, tree)
	})

	t.Run("tools call node_echo", func(t *testing.T) {
		res, tree := np.runCLI(t, sb, "--config", cfg, "tools", "call", "node_echo", `{"text":"hi"}`)
		if res.code != 0 {
			t.Fatalf("tools call node_echo failed: %s", res.describe())
		}
		if res.stdout != "hi\n" {
			t.Errorf("stdout %q, want %q", res.stdout, "hi\n")
		}
		np.requireNoProvider(t, tree)
	})

	t.Run("tools call --json node_add", func(t *testing.T) {
		res, tree := np.runCLI(t, sb, "--config", cfg, "tools", "call", "--json", "node_add", `{"a":2,"b":3}`)
		if res.code != 0 {
			t.Fatalf("tools call node_add failed: %s", res.describe())
		}
		var out struct {
			Content []struct {
				Type string `json:"type"`
				Text string `json:"text"`
			} `json:"content"`
			StructuredContent map[string]any `json:"structuredContent"`
			IsError           bool           `json:"isError"`
		}
		if err := json.Unmarshal([]byte(res.stdout), &out); err != nil {
			t.Fatalf("stdout is not a JSON result: %v\n%s", err, indent(res.stdout))
		}
		if out.IsError {
			t.Errorf("isError is set: %s", res.stdout)
		}
		if sum, ok := out.StructuredContent["sum"].(float64); !ok || sum != 5 {
			t.Errorf("structuredContent %v, want {\"sum\": 5}", out.StructuredContent)
		}
		if len(out.Content) != 1 || out.Content[0].Type != "text" || !strings.Contains(out.Content[0].Text, "5") {
			t.Errorf("content %+v, want one text block with the sum", out.Content)
		}
		np.requireNoProvider(t, tree)
	})

	t.Run("tools call node_echo with invalid arguments", func(t *testing.T) {
		res, tree := np.runCLI(t, sb, "--config", cfg, "tools", "call", "node_echo", `{"text":"hi","extra":1}`)
		if res.code == 0 || !strings.Contains(res.stderr, "extra") {
			t.Errorf("want a non-zero exit naming the unknown argument \"extra\"; %s", res.describe())
		}
		np.requireNoProvider(t, tree)
	})
}

// TestNodeProviderWrongChecksum: a sha256 that does not match provider.js
// keeps the provider from starting; calling its tool fails and says why.
func TestNodeProviderWrongChecksum(t *testing.T) {
	np := requireNodeProvider(t)
	t.Parallel()
	sb := newSandbox(t)
	wrong := strings.Repeat("0", 64)
	if wrong == np.sha256 {
		wrong = strings.Repeat("1", 64)
	}
	cfg := np.writeNodeConfig(t, sb, wrong)
	res, tree := np.runCLI(t, sb, "--config", cfg, "tools", "call", "node_echo", `{"text":"hi"}`)
	if res.code == 0 {
		t.Errorf("tools call with a wrong sha256 exited 0; %s", res.describe())
	}
	if !strings.Contains(strings.ToLower(res.stderr), "checksum") {
		t.Errorf("stderr does not mention the checksum; %s", res.describe())
	}
	if procs := np.nodeProcs(tree); len(procs) > 0 {
		t.Errorf("provider.js was started despite the wrong checksum: %v", procs)
	}
}

// TestNodeProviderServe: over MCP on stdio, resources/read returns
// node://about from the provider, an unknown node:// URI is MCP's
// resource-not-found error, and node_add with a progress token sends one
// progress notification before its result. Closing stdin ends the server
// and the provider.
func TestNodeProviderServe(t *testing.T) {
	np := requireNodeProvider(t)
	t.Parallel()
	sb := newSandbox(t)
	cfg := np.writeNodeConfig(t, sb, np.sha256)
	srv := startServer(t, prereqs{bin: np.bin}, sb, "--config", cfg, "serve")

	srv.send(t, initializeRequest)
	expectResult(t, srv.reply(t), "1")
	srv.send(t, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)

	srv.send(t, `{"jsonrpc":"2.0","id":2,"method":"resources/read","params":{"uri":"node://about"}}`)
	m := srv.reply(t)
	expectResult(t, m, "2")
	var read struct {
		Contents []struct {
			URI      string `json:"uri"`
			MIMEType string `json:"mimeType"`
			Text     string `json:"text"`
		} `json:"contents"`
	}
	if err := json.Unmarshal(m.Result, &read); err != nil || len(read.Contents) != 1 {
		t.Fatalf("resources/read result %s (%v)", m.Result, err)
	}
	if c := read.Contents[0]; c.URI != "node://about" || c.MIMEType != "text/markdown" || !strings.Contains(c.Text, "node provider") {
		t.Errorf("node://about contents %+v", c)
	}

	srv.send(t, `{"jsonrpc":"2.0","id":3,"method":"resources/read","params":{"uri":"node://missing"}}`)
	if m := srv.reply(t); m.Error == nil || m.Error.Code != -32602 {
		t.Errorf("resources/read of an unknown URI: want error -32602 (resource not found), got error %+v result %s", m.Error, m.Result)
	}

	srv.send(t, `{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"node_add","arguments":{"a":2,"b":3},"_meta":{"progressToken":"add-1"}}}`)
	var progress []string
	for {
		line, ok := srv.stdout.next(testwait.Deadline(t))
		if !ok {
			t.Fatalf("no reply to tools/call by the test's deadline; stderr:\n%s", indent(srv.stderr.String()))
		}
		var msg rpcMessage
		if err := json.Unmarshal([]byte(line), &msg); err != nil {
			t.Fatalf("stdout carried a line that is not JSON-RPC: %q", line)
		}
		if msg.Method == "notifications/progress" {
			progress = append(progress, line)
			continue
		}
		if msg.Method != "" {
			continue
		}
		expectResult(t, msg, "4")
		if !bytes.Contains(msg.Result, []byte(`"sum":5`)) {
			t.Errorf("tools/call node_add result %s, want structuredContent sum 5", msg.Result)
		}
		break
	}
	if len(progress) != 1 || !strings.Contains(progress[0], `"progressToken":"add-1"`) {
		t.Errorf("want one progress notification for token add-1 before the result, got %q", progress)
	}

	if err := srv.stdin.Close(); err != nil {
		t.Errorf("close stdin: %v", err)
	}
	select {
	case <-srv.done:
		if srv.waitErr != nil {
			t.Errorf("server exit after EOF: %v; stderr:\n%s", srv.waitErr, indent(srv.stderr.String()))
		}
	case <-testwait.After(t):
		t.Fatalf("server did not exit after EOF by the test's deadline; stderr:\n%s", indent(srv.stderr.String()))
	}
	srv.tree.halt()
	np.requireNoProvider(t, srv.tree)
}
