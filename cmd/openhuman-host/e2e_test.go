package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/hashicorp/go-hclog"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/openhuman/openhuman-host/host"
	"github.com/openhuman/openhuman-host/host/audit"
	"github.com/openhuman/openhuman-host/host/config"
	"github.com/openhuman/openhuman-host/host/server"
	"github.com/openhuman/openhuman-host/providers/agent/agenttool"
	"github.com/openhuman/openhuman-host/providers/memory/memorytool"
	"github.com/openhuman/openhuman-host/providers/upstream/oauthtest"
	"github.com/openhuman/openhuman-host/sdk"
	"github.com/openhuman/openhuman-host/sdk/storage/pgtest"
	"github.com/openhuman/openhuman-host/sdk/testproc"
	"github.com/openhuman/openhuman-host/sdk/testwait"
)

// TestMain lets the test binary stand in for the host binary: the host
// launches built-in providers as `<executable> provider <name>`, and under
// go test the executable is this binary.
func TestMain(m *testing.M) {
	// As $BROWSER, the binary approves an OAuth sign-in at once.
	if len(os.Args) == 3 && os.Args[1] == browserArg {
		if err := oauthtest.Follow(context.Background(), os.Args[2]); err != nil {
			fmt.Fprintln(os.Stderr, "browser:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	// As an upstream stdio server, the binary serves one tool, echo; with
	// upstreamStartsEnv set to a folder, it records its start there as an
	// empty file named by its process ID, and serves pid too, which
	// answers that ID.
	if len(os.Args) == 2 && os.Args[1] == mcpServerArg {
		s := mcp.NewServer(&mcp.Implementation{Name: "test-upstream", Version: "1"}, nil)
		mcp.AddTool(s, &mcp.Tool{Name: "echo"}, func(_ context.Context, _ *mcp.CallToolRequest, in struct {
			Text string `json:"text"`
		}) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "echo:" + in.Text}}}, nil, nil
		})
		if dir := os.Getenv(upstreamStartsEnv); dir != "" {
			pid := strconv.Itoa(os.Getpid())
			if err := os.WriteFile(filepath.Join(dir, pid), nil, 0o600); err != nil {
				os.Exit(1)
			}
			mcp.AddTool(s, &mcp.Tool{Name: "pid"}, func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
				return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: pid}}}, nil, nil
			})
		}
		if err := s.Run(context.Background(), &mcp.StdioTransport{}); err != nil {
			os.Exit(1)
		}
		os.Exit(0)
	}
	if len(os.Args) == 3 && os.Args[1] == "provider" {
		if err := runProvider(os.Args[2]); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	// With cliEnv set, the binary runs as the openhuman-host command line.
	if os.Getenv(cliEnv) == "1" {
		os.Args = append([]string{"openhuman-host"}, os.Args[1:]...)
		main()
		os.Exit(0)
	}
	testproc.QuickRaceExit()
	code := m.Run()
	if err := pgtest.Stop(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		code = max(code, 1)
	}
	os.Exit(code)
}

// mcpServerArg makes the test binary act as an upstream MCP server over
// stdio with one tool, echo (see TestMain).
const mcpServerArg = "--test-as-mcp-server"

// upstreamStartsEnv names the folder where the upstream server of
// mcpServerArg records its starts.
const upstreamStartsEnv = "TEST_UPSTREAM_STARTS"

// browserArg makes the test binary act as a browser that approves an OAuth
// sign-in (see TestMain): set BROWSER to the binary and it.
const browserArg = "--test-as-browser"

// cliEnv makes the test binary act as the command line (see TestMain).
const cliEnv = "OPENHUMAN_TEST_AS_CLI"

// slowStart is the [server] line of the tests' configs that gives providers
// 120s to start instead of the default 10s: they are the race-built test
// binary, on a machine that may be busy with other tests.
const slowStart = "provider_start_timeout_secs = 120\n"

// memoryInOwnProcess is a config table running the memory provider as a
// plugin process rather than in the host's, for the tests that kill,
// freeze or count its process.
const memoryInOwnProcess = "[providers.memory]\nprocess = \"plugin\"\n"

// cliHome points XDG_DATA_HOME and XDG_CONFIG_HOME at a new directory for
// the commands a test runs, turns the log off and writes a config.toml
// there: a [server] table with [slowStart], then config. It returns the
// directory.
func cliHome(t *testing.T, config string) string {
	t.Helper()
	home := t.TempDir()
	t.Setenv("XDG_DATA_HOME", filepath.Join(home, "data"))
	t.Setenv("XDG_CONFIG_HOME", filepath.Join(home, "config"))
	t.Setenv("OPENHUMAN_LOG_LEVEL", "off")
	dir := filepath.Join(home, "config", "openhuman-host")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "config.toml"), []byte("[server]\n"+slowStart+config), 0o600); err != nil {
		t.Fatal(err)
	}
	return home
}

func startTestHost(t *testing.T, cfg *config.Config) *host.Host {
	t.Helper()
	return startTestHostWithLog(t, cfg, nil)
}

// startTestHostWithLog starts a host whose log goes to logs (warn and
// above), or nowhere when logs is nil.
func startTestHostWithLog(t *testing.T, cfg *config.Config, logs io.Writer) *host.Host {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	var log hclog.Logger
	if logs != nil {
		log = hclog.New(&hclog.LoggerOptions{Output: logs, Level: hclog.Warn})
	}
	h, err := host.Start(testwait.Context(t), cfg, &host.Options{Executable: exe, Version: "test", Logger: log, ProviderEnv: runtimeEnv()})
	if err != nil {
		t.Fatalf("start host: %v", err)
	}
	return h
}

func call(t *testing.T, h *host.Host, tool string, args string) *sdk.CallToolResult {
	t.Helper()
	res, err := h.Server.Call(context.Background(), server.Call{Tool: tool, Arguments: json.RawMessage(args), Caller: sdk.Caller{SourceType: "cli"}})
	if err != nil {
		t.Fatalf("%s: %v", tool, err)
	}
	return res
}

// auditRows returns every row of the audit log in dataDir, newest first.
func auditRows(t *testing.T, dataDir string) []audit.Record {
	t.Helper()
	rows, err := readAuditLog(filepath.Join(dataDir, "audit.db"))
	if err != nil {
		t.Fatal(err)
	}
	return rows
}

// readAuditLog returns every row of the audit log at path, newest first.
func readAuditLog(path string) ([]audit.Record, error) {
	log, err := audit.Open(context.Background(), path, nil)
	if err != nil {
		return nil, fmt.Errorf("open the audit log %s: %w", path, err)
	}
	defer log.Close(context.Background())
	rows, err := log.List(context.Background(), audit.Query{Limit: 1 << 20})
	if err != nil {
		return nil, fmt.Errorf("list the audit log %s: %w", path, err)
	}
	return rows, nil
}

func processAlive(pid int) bool {
	if pid <= 0 {
		return false
	}
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	// A zombie has exited; only its parent's wait is missing.
	fields := strings.Fields(string(stat[bytes.LastIndexByte(stat, ')')+1:]))
	return len(fields) > 0 && fields[0] != "Z"
}

func TestStoreSearchReadAcrossRestart(t *testing.T) {
	t.Parallel()
	cfg, dataDir := testConfig(t, "")
	h := startTestHost(t, cfg)

	res := call(t, h, memorytool.Store, `{"title":"Reef log","content":"The zebrafish swims near the northern reef."}`)
	if res.IsError {
		t.Fatalf("store: %s", res.Text())
	}
	if !strings.Contains(string(res.StructuredContent), `"document_id"`) {
		t.Errorf("store result has no document_id: %s", res.StructuredContent)
	}
	if err := h.Close(context.Background()); err != nil {
		t.Fatal(err)
	}

	h = startTestHost(t, cfg)
	defer h.Close(context.Background())
	res = call(t, h, memorytool.Search, `{"query":"ZEBRAFISH reef","k":5}`)
	if res.IsError {
		t.Fatalf("search: %s", res.Text())
	}
	var hits struct {
		Chunks []struct {
			ChunkID string `json:"chunk_id"`
		} `json:"chunks"`
	}
	if err := json.Unmarshal(res.StructuredContent, &hits); err != nil || len(hits.Chunks) != 1 {
		t.Fatalf("search after restart: %s (%v)", res.StructuredContent, err)
	}
	res = call(t, h, memorytool.ReadChunk, fmt.Sprintf(`{"chunk_id":%q}`, hits.Chunks[0].ChunkID))
	if res.IsError || !strings.Contains(string(res.StructuredContent), "northern reef") {
		t.Fatalf("read_chunk: %s %s", res.Text(), res.StructuredContent)
	}
	_ = dataDir
}

func TestEveryAttemptHasOneAuditRow(t *testing.T) {
	t.Parallel()
	cfg, dataDir := testConfig(t, "[autonomy]\ndenied_tools = [\"tree.*\"]\n")
	h := startTestHost(t, cfg)
	attempts := []struct {
		tool, args   string
		wantDecision string
		wantSuccess  bool
	}{
		{memorytool.Store, `{"title":"Audit me","content":"secret body text"}`, "allowed", true},
		{memorytool.Search, `{"query":"audit"}`, "allowed", true},
		{memorytool.Search, `{"query":"x","k":51}`, "denied:invalid_arguments", false},
		{memorytool.Search, `{"query":"   "}`, "denied:invalid_arguments", false},
		{memorytool.ReadChunk, `{"chunk_id":"chk_x"}`, "denied:denied_tool", false},
	}
	for _, a := range attempts {
		if res := call(t, h, a.tool, a.args); res.IsError == a.wantSuccess {
			t.Errorf("%s %s: isError=%v: %s", a.tool, a.args, res.IsError, res.Text())
		}
	}
	if err := h.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	rows := auditRows(t, dataDir)
	type row struct {
		Tool, Decision, Source string
		Success                bool
	}
	var got []row
	for i := len(rows) - 1; i >= 0; i-- { // List is newest first
		got = append(got, row{rows[i].Tool, rows[i].Decision, rows[i].SourceType, rows[i].Success})
		if strings.Contains(rows[i].ArgsSummary, "secret body") {
			t.Errorf("audit row holds a raw body: %s", rows[i].ArgsSummary)
		}
	}
	var want []row
	for _, a := range attempts {
		want = append(want, row{a.tool, a.wantDecision, "cli", a.wantSuccess})
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("audit rows (-want +got):\n%s", diff)
	}
}

func TestProvidersAreGoneAfterClose(t *testing.T) {
	t.Parallel()
	cfg, _ := testConfig(t, memoryInOwnProcess)
	h := startTestHost(t, cfg)
	var pids []int
	for _, p := range h.Providers {
		pids = append(pids, p.Pid())
	}
	if len(pids) == 0 {
		t.Fatal("no provider started")
	}
	if err := h.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	for _, pid := range pids {
		if processAlive(pid) {
			t.Errorf("provider pid %d still running after Close", pid)
		}
	}
}

func TestBrokenProviderDoesNotStopTheOthers(t *testing.T) {
	t.Parallel()
	missing := filepath.Join(t.TempDir(), "no-such-provider")
	h, _ := newTestHost(t, fmt.Sprintf("[providers.broken]\ncommand = %q\nsha256 = %q\n", missing, strings.Repeat("ab", 32)))
	var names []string
	for _, p := range h.Providers {
		names = append(names, p.Name)
	}
	if diff := cmp.Diff([]string{"memory", "agent"}, names); diff != "" {
		t.Errorf("loaded providers (-want +got):\n%s", diff)
	}
	if res := call(t, h, memorytool.Search, `{"query":"x"}`); res.IsError {
		t.Errorf("memory unusable next to a broken provider: %s", res.Text())
	}
}

func TestCLIToolsListAndCall(t *testing.T) {
	cliHome(t, "")
	out, err := runCLI(t, "tools", "list")
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		names = append(names, strings.SplitN(line, "\t", 2)[0])
	}
	if diff := cmp.Diff([]string{memorytool.Store, memorytool.Forget, memorytool.Note, memorytool.Tag, memorytool.Search, memorytool.Recall, memorytool.ReadChunk, memorytool.History, memorytool.Browse, memorytool.TopEntities, memorytool.ListSources,
		agenttool.ListSubagents, agenttool.RunSubagent, agenttool.ListTools, agenttool.ToolInstructions}, names); diff != "" {
		t.Errorf("tools list names (-want +got):\n%s", diff)
	}
	out, err = runCLI(t, "tools", "list", "--json")
	if err != nil {
		t.Fatal(err)
	}
	var listed []struct {
		Name        string         `json:"name"`
		InputSchema map[string]any `json:"inputSchema"`
		Annotations map[string]any `json:"annotations"`
		Class       string         `json:"class"`
		Provider    string         `json:"provider"`
	}
	if err := json.Unmarshal([]byte(out), &listed); err != nil || len(listed) != len(names) {
		t.Fatalf("tools list --json: %v, %d tools:\n%s", err, len(listed), out)
	}
	for i, tl := range listed {
		provider := "memory"
		if i >= 11 {
			provider = "agent"
		}
		if tl.Name != names[i] || tl.InputSchema["type"] != "object" || tl.Provider != provider || (tl.Class != "read" && tl.Class != "act") || tl.Annotations["readOnlyHint"] == nil {
			t.Errorf("tools list --json entry %d = %+v", i, tl)
		}
	}
	if _, err := runCLI(t, "tools", "call", memorytool.Store, `{"title":"CLI note","content":"kumquat season"}`); err != nil {
		t.Fatalf("store: %v", err)
	}
	out, err = runCLI(t, "tools", "call", memorytool.Search, `{"query":"kumquat"}`)
	if err != nil || !strings.Contains(out, "kumquat") {
		t.Fatalf("search: %v %q", err, out)
	}
	_, errOut, err := runCLIOutputs(t, "tools", "call", memorytool.Search, `{"query":"kumquat","k":0}`)
	if exitCode(err) != 1 || !strings.Contains(errOut, `argument "k" must be between 1 and 50; got 0`) {
		t.Errorf("rejected call: exit %d, stderr %q", exitCode(err), errOut)
	}
	if _, err := runCLI(t, "tools", "call", "no.such"); err == nil || !strings.Contains(err.Error(), "unknown tool") {
		t.Errorf("unknown tool: %v", err)
	}
}

// TestTwoHostsShareADataDir is a running server and a one-shot CLI call on
// the same data dir: both write, both see each other's writes.
func TestTwoHostsShareADataDir(t *testing.T) {
	t.Parallel()
	cfg, _ := testConfig(t, "")
	serving := startTestHost(t, cfg)
	defer serving.Close(context.Background())
	cli := startTestHost(t, cfg)

	const writers, each = 2, 15
	errs := make(chan string, writers*each)
	done := make(chan struct{})
	for w, h := range []*host.Host{serving, cli} {
		go func() {
			defer func() { done <- struct{}{} }()
			for i := range each {
				res, err := h.Server.Call(context.Background(), storeCall(fmt.Sprintf(`{"title":"shared %d-%d","content":"quince orchard %d %d"}`, w, i, w, i)))
				if err != nil || res.IsError {
					errs <- fmt.Sprintf("writer %d call %d: %v %s", w, i, err, res.Text())
				}
			}
		}()
	}
	for range writers {
		<-done
	}
	close(errs)
	for e := range errs {
		t.Error(e)
	}
	if err := cli.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	res := call(t, serving, memorytool.Search, `{"query":"quince orchard","k":50}`)
	var hits struct {
		Chunks []json.RawMessage `json:"chunks"`
	}
	if err := json.Unmarshal(res.StructuredContent, &hits); err != nil || len(hits.Chunks) != writers*each {
		t.Errorf("search found %d chunks, want %d (%v)", len(hits.Chunks), writers*each, err)
	}
}

func storeCall(args string) server.Call {
	return server.Call{Tool: memorytool.Store, Arguments: json.RawMessage(args), Caller: sdk.Caller{SourceType: "cli"}}
}

// TestHungProviderDoesNotBlockShutdown stops the provider (SIGSTOP), so it
// answers nothing, not even go-plugin's shutdown request: Close must still
// return promptly and leave no process behind.
func TestHungProviderDoesNotBlockShutdown(t *testing.T) {
	t.Parallel()
	cfg, _ := testConfig(t, memoryInOwnProcess)
	h := startTestHost(t, cfg)
	pid := h.Providers[0].Pid()
	testproc.Freeze(t, pid)
	t.Cleanup(func() { _ = killPID(pid) })
	done := make(chan error, 1)
	go func() { done <- h.Close(context.Background()) }()
	if err := testwait.Recv(t, done, "Close with a hung provider"); err != nil {
		t.Fatal(err)
	}
	// Close has killed the provider's group; the kernel reaps it a moment later.
	testwait.Until(t, fmt.Sprintf("hung provider %d gone after Close", pid), func() bool { return !processAlive(pid) })
}

func TestConfigCheckReportsProviderFailures(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("XDG_DATA_HOME", filepath.Join(dir, "data"))
	t.Setenv("OPENHUMAN_LOG_LEVEL", "off")
	path := filepath.Join(dir, "config.toml")
	if err := os.WriteFile(path, []byte("[server]\n"+slowStart+"[providers.memory]\nbogus = 1\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	out, errOut, err := runCLIOutputs(t, "--config", path, "config", "check")
	if exitCode(err) != 1 || !strings.Contains(errOut, `provider memory does not load: configure: memory provider: [providers.memory] has unknown key "bogus"`) {
		t.Errorf("config check: exit %d, stderr %q", exitCode(err), errOut)
	}
	if !strings.Contains(out, "[providers.memory]") {
		t.Errorf("config check printed no effective config: %q", out)
	}
	if want := "\n# data directory in effect: " + filepath.Join(dir, "data", "openhuman-host") + "\n# provider agent loads: 4 tools, 10 resources (version 0.1.0), in a plugin process of its own\n"; !strings.HasSuffix(out, want) {
		t.Errorf("config check does not end with %q: %q", want, out)
	}
}
