package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/openhuman/openhuman-host/host"
	"github.com/openhuman/openhuman-host/host/config"
	"github.com/openhuman/openhuman-host/host/plugins"
	"github.com/openhuman/openhuman-host/host/server"
	"github.com/openhuman/openhuman-host/providers/agent/agenttool"
	"github.com/openhuman/openhuman-host/providers/memory/memorytool"
	"github.com/openhuman/openhuman-host/sdk/testproc"
	"github.com/openhuman/openhuman-host/sdk/testwait"
)

var (
	kitOnce sync.Once
	kitBin  string
	kitSum  string
	kitErr  error
)

// kitProvider builds test/testprovider, or finds it built, and returns its
// path and SHA-256.
func kitProvider(t *testing.T) (string, string) {
	t.Helper()
	kitOnce.Do(func() {
		if kitBin, kitErr = testproc.BuildBinary("github.com/openhuman/openhuman-host/test/testprovider"); kitErr != nil {
			return
		}
		kitSum, kitErr = plugins.FileSHA256(kitBin)
	})
	if kitErr != nil {
		t.Fatal(kitErr)
	}
	return kitBin, kitSum
}

// copyKit writes the test provider's executable to path, followed by tail
// (nil for an exact copy).
func copyKit(t *testing.T, path string, tail []byte) {
	t.Helper()
	bin, _ := kitProvider(t)
	b, err := os.ReadFile(bin)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, append(b, tail...), 0o755); err != nil {
		t.Fatal(err)
	}
}

// kitConfig is a config table loading the test provider as "kit".
func kitConfig(t *testing.T, extra string) string {
	bin, sum := kitProvider(t)
	return fmt.Sprintf("[providers.kit]\ncommand = %q\nsha256 = %q\n%s", bin, sum, extra)
}

func providerByName(t *testing.T, h *host.Host, name string) *plugins.Provider {
	t.Helper()
	for _, p := range h.Providers {
		if p.Name == name {
			return p
		}
	}
	t.Fatalf("provider %s not loaded; failed: %v", name, h.Failed)
	return nil
}

// connect serves h's MCP server to an in-memory go-sdk client.
func connect(t *testing.T, h *host.Host, opts *mcp.ClientOptions) *mcp.ClientSession {
	t.Helper()
	return connectVersion(t, h, "", opts)
}

// connectVersion is connect with the protocol version the client asks for;
// "" asks for the newest.
func connectVersion(t *testing.T, h *host.Host, version string, opts *mcp.ClientOptions) *mcp.ClientSession {
	t.Helper()
	ct, st := mcp.NewInMemoryTransports()
	ss, err := h.Server.MCP().Connect(t.Context(), st, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ss.Close() })
	var sessionOpts *mcp.ClientSessionOptions
	if version != "" {
		sessionOpts = &mcp.ClientSessionOptions{ProtocolVersion: version}
	}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "lifecycle-test", Version: "1"}, opts).Connect(t.Context(), ct, sessionOpts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cs.Close() })
	return cs
}

func toolNames(t *testing.T, cs *mcp.ClientSession) []string {
	t.Helper()
	res, err := cs.ListTools(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tool := range res.Tools {
		names = append(names, tool.Name)
	}
	return names
}

// A provider killed with SIGKILL is back, with its tools answering, without
// anything the client does. How soon is measured by bench/restart (see
// docs/performance.md).
func TestKilledProviderIsBack(t *testing.T) {
	t.Parallel()
	h, _ := newTestHost(t, kitConfig(t, "")+memoryInOwnProcess)
	for _, name := range []string{"memory", "kit"} {
		p := providerByName(t, h, name)
		pid := p.Pid()
		if err := killPID(pid); err != nil {
			t.Fatal(err)
		}
		tool, args := memorytool.Search, `{"query":"anything"}`
		if name == "kit" {
			tool, args = "kit.ping", `{}`
		}
		testwait.Until(t, name+" answering again", func() bool { return !call(t, h, tool, args).IsError })
		if st := p.Status(); st.Restarts != 1 || st.Pid == pid || st.State != plugins.StateRunning {
			t.Errorf("%s status = %+v", name, st)
		}
	}
}

// A provider that panics on every call is marked failed after five
// failures within a minute; its tools leave the list (clients are told),
// and the other providers serve on.
func TestPanickingProviderIsMarkedFailed(t *testing.T) {
	t.Parallel()
	h, _ := newTestHost(t, kitConfig(t, ""))
	changed := make(chan struct{}, 8)
	cs := connect(t, h, &mcp.ClientOptions{ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) { changed <- struct{}{} }})
	if names := toolNames(t, cs); !slices.Contains(names, "kit_panic") {
		t.Fatalf("tools before: %v", names)
	}
	for i := range plugins.DefaultRestartPolicy.MaxFailures {
		res := call(t, h, "kit.panic", `{}`)
		if !res.IsError || !strings.Contains(res.Text(), "kit.panic panicked: testprovider: kit.panic called") || strings.Contains(res.Text(), "goroutine") {
			t.Fatalf("panic %d: %q", i, res.Text())
		}
	}
	kit := providerByName(t, h, "kit")
	testwait.Until(t, "kit marked failed", func() bool { return kit.Status().State == plugins.StateFailed })
	testwait.Recv(t, changed, "notifications/tools/list_changed after kit failed")
	names := toolNames(t, cs)
	if slices.ContainsFunc(names, func(n string) bool { return strings.HasPrefix(n, "kit_") }) || !slices.Contains(names, memorytool.Search) {
		t.Errorf("tools after kit failed: %v", names)
	}
	_, err := h.Server.Call(t.Context(), server.Call{Tool: "kit.ping", Arguments: json.RawMessage(`{}`)})
	if !errors.Is(err, server.ErrUnknownTool) || !strings.Contains(err.Error(), "kit (it crashed or stopped answering too often") {
		t.Errorf("call to a failed provider's tool: %v", err)
	}
	// An MCP client gets the same explanation with its -32602.
	_, err = cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "kit.ping", Arguments: map[string]any{}})
	var rpcErr *jsonrpc.Error
	if !errors.As(err, &rpcErr) || rpcErr.Code != jsonrpc.CodeInvalidParams || !strings.Contains(rpcErr.Message, "kit (it crashed or stopped answering too often") {
		t.Errorf("MCP call to a failed provider's tool: %v", err)
	}
	if res := call(t, h, memorytool.Search, `{"query":"x"}`); res.IsError {
		t.Errorf("memory unusable next to a failed provider: %s", res.Text())
	}
	var failed []string
	for _, st := range h.Status() {
		if st.State == plugins.StateFailed {
			failed = append(failed, st.Name)
		}
	}
	if fmt.Sprint(failed) != "[kit]" {
		t.Errorf("failed providers in status: %v", failed)
	}
}

// A restart whose catalog differs sends list_changed; one whose catalog is
// the same does not.
func TestRestartSendsListChangedOnlyWhenTheCatalogChanged(t *testing.T) {
	t.Parallel()
	h, dataDir := newTestHost(t, kitConfig(t, "")+"[providers.memory]\nenabled = false\n")
	changed := make(chan struct{}, 8)
	cs := connect(t, h, &mcp.ClientOptions{ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) { changed <- struct{}{} }})
	kit := providerByName(t, h, "kit")

	_ = killPID(kit.Pid())
	testwait.Until(t, "first restart", func() bool { return kit.Status().Restarts == 1 && kit.Status().State == plugins.StateRunning })

	if err := os.WriteFile(filepath.Join(dataDir, "kit", "extra"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	_ = killPID(kit.Pid())
	testwait.Recv(t, changed, "list_changed after a restart that added a tool")
	// A list_changed for the first restart would have been sent a whole
	// restart earlier on the same session, so it would be here by now.
	if names := toolNames(t, cs); !slices.Contains(names, "kit_extra") {
		t.Errorf("tools after restart: %v", names)
	}
	if n := len(changed); n != 0 {
		t.Errorf("%d more list_changed after the two restarts, want only the one for the changed catalog", n)
	}
	res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "kit.extra", Arguments: map[string]any{}})
	if err != nil || res.IsError {
		t.Fatalf("kit.extra: %v %v", err, res)
	}
}

// notifications/cancelled from the client cancels the provider's context;
// progress notifications from the provider reach the client.
func TestCancellationAndProgressReachTheProvider(t *testing.T) {
	t.Parallel()
	h, _ := newTestHost(t, kitConfig(t, "")+"[providers.memory]\nenabled = false\n")
	var mu sync.Mutex
	var progress []string
	started := make(chan struct{}, 1)
	cs := connect(t, h, &mcp.ClientOptions{ProgressNotificationHandler: func(_ context.Context, req *mcp.ProgressNotificationClientRequest) {
		mu.Lock()
		defer mu.Unlock()
		p := req.Params
		progress = append(progress, fmt.Sprintf("%v %g/%g %s", p.ProgressToken, p.Progress, p.Total, p.Message))
		if p.Message == "waiting" {
			started <- struct{}{}
		}
	}})

	params := &mcp.CallToolParams{Name: "kit.progress", Arguments: map[string]any{}}
	params.SetProgressToken("p1")
	res, err := cs.CallTool(t.Context(), params)
	if err != nil || res.IsError {
		t.Fatalf("kit.progress: %v %+v", err, res)
	}
	// The host sends each notification before the result, but the client
	// may run its handlers after it has the result.
	want := "[p1 1/3 step 1 p1 2/3 step 2 p1 3/3 step 3]"
	got := func() string {
		mu.Lock()
		defer mu.Unlock()
		return fmt.Sprint(progress)
	}
	testwait.Until(t, "three progress notifications", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(progress) >= 3
	})
	if got() != want {
		t.Errorf("progress = %s, want %s", got(), want)
	}

	ctx, cancel := context.WithCancel(t.Context())
	errc := make(chan error, 1)
	go func() {
		params := &mcp.CallToolParams{Name: "kit.wait", Arguments: map[string]any{}}
		params.SetProgressToken("w")
		_, err := cs.CallTool(ctx, params)
		errc <- err
	}()
	testwait.Recv(t, started, "kit.wait to start")
	cancel()
	if err := <-errc; !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled call returned %v", err)
	}
	testwait.Until(t, "provider saw the cancellation", func() bool {
		return call(t, h, "kit.cancelled", `{}`).Text() == "cancelled 1"
	})
}

// [providers.<name>] tool_timeout_secs bounds every call to the provider's
// tools and the provider's context ends with it; start_timeout_secs bounds
// its start.
func TestPerProviderTimeouts(t *testing.T) {
	t.Parallel()
	h, _ := newTestHost(t, kitConfig(t, "tool_timeout_secs = 1\n")+"[providers.memory]\nenabled = false\n")
	start := time.Now()
	// kit.wait answers only when cancelled, so any answer is the timeout's.
	res := call(t, h, "kit.wait", `{}`)
	if !res.IsError || res.Text() != "kit_wait timed out after 1s (the limit comes from [providers.kit] tool_timeout_secs)" {
		t.Errorf("kit.wait: %q", res.Text())
	}
	// A deadline never fires early, however loaded the machine.
	if d := time.Since(start); d < time.Second {
		t.Errorf("kit.wait ended after %s with a 1s limit", d)
	}
	testwait.Until(t, "provider saw the deadline", func() bool {
		return call(t, h, "kit.cancelled", `{}`).Text() == "cancelled 1"
	})

	// Without the limit, the provider would load after its 5s delay.
	h2, _ := newTestHost(t, kitConfig(t, "args = [\"-slow-start=5s\"]\nstart_timeout_secs = 1\n")+"[providers.memory]\nenabled = false\n")
	if len(h2.Failed) != 1 || !strings.Contains(h2.Failed[0].Err.Error(), "start_timeout_secs") {
		t.Errorf("slow provider: failed = %v", h2.Failed)
	}
}

// Output a provider writes to stdout, before or after its handshake, from
// Go code, raw descriptors or child processes, breaks nothing.
func TestProviderPrintingToStdout(t *testing.T) {
	t.Parallel()
	h, _ := newTestHost(t, kitConfig(t, "")+"[providers.memory]\nenabled = false\n")
	cs := connect(t, h, nil)
	for range 3 {
		res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "kit.print", Arguments: map[string]any{}})
		if err != nil || res.IsError || res.Content[0].(*mcp.TextContent).Text != "printed" {
			t.Fatalf("kit.print: %v %+v", err, res)
		}
	}
	if res := call(t, h, "kit.ping", `{}`); res.IsError {
		t.Errorf("kit.ping after printing: %s", res.Text())
	}
}

// A tampered executable is refused with both checksums in the log, and a
// table without sha256 is refused with the file's actual one.
func TestTamperedProviderIsRefused(t *testing.T) {
	t.Parallel()
	_, good := kitProvider(t)
	tampered := filepath.Join(t.TempDir(), "provider")
	copyKit(t, tampered, []byte("\n"))
	bad, err := plugins.FileSHA256(tampered)
	if err != nil {
		t.Fatal(err)
	}
	cfg, _ := testConfig(t, fmt.Sprintf("[providers.kit]\ncommand = %q\nsha256 = %q\n[providers.nosum]\ncommand = %q\n", tampered, good, tampered))
	var logs testwait.Buffer
	h := startTestHostWithLog(t, cfg, &logs)
	defer h.Close(context.Background())
	if len(h.Failed) != 2 {
		t.Fatalf("failed = %v", h.Failed)
	}
	for _, want := range []string{good, bad, "checksum mismatch", "providers add --force " + tampered, "[providers.nosum] has no sha256"} {
		if !strings.Contains(logs.String(), want) {
			t.Errorf("log lacks %q:\n%s", want, logs.String())
		}
	}
	if res := call(t, h, memorytool.Search, `{"query":"x"}`); res.IsError {
		t.Errorf("memory unusable next to refused providers: %s", res.Text())
	}
}

// A provider cannot serve tools in a built-in's namespace, nor take over
// another provider's tools when that provider fails and it restarts.
func TestToolsAreNotTakenOver(t *testing.T) {
	t.Parallel()
	bin, sum := kitProvider(t)
	cfg, dataDir := testConfig(t, fmt.Sprintf("%s[providers.kit2]\ncommand = %q\nsha256 = %q\n", kitConfig(t, ""), bin, sum))
	for _, dir := range []string{"kit", "kit2"} {
		if err := os.MkdirAll(filepath.Join(dataDir, dir), 0o700); err != nil {
			t.Fatal(err)
		}
	}
	// kit2 declares kit's tools (it is the same program) and the dotted
	// name of the memory provider's search tool, which clients would see as
	// that tool's name.
	claimed := strings.Replace(memorytool.Search, "_", ".", 1)
	if err := os.WriteFile(filepath.Join(dataDir, "kit2", "claim"), []byte(claimed+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	var logs testwait.Buffer
	h := startTestHostWithLog(t, cfg, &logs)
	defer h.Close(context.Background())
	owner := func(tool string) string {
		if tl, ok := h.Server.Catalog().Tool(tool); ok {
			return tl.Provider
		}
		return ""
	}
	if owner(memorytool.Search) != "memory" || owner("kit.ping") != "kit" {
		t.Fatalf("owners at start: "+memorytool.Search+" %q, kit.ping %q", owner(memorytool.Search), owner("kit.ping"))
	}
	if !strings.Contains(logs.String(), `provider=kit2 tool=`+claimed+` error="tool names starting with \"memory_\" are reserved for the built-in provider memory"`) {
		t.Errorf("no reason logged for kit2's "+memorytool.Search+" (failed %v):\n%s", h.Failed, logs.String())
	}
	// kit fails for good; its tools must not pass to kit2.
	kit := providerByName(t, h, "kit")
	for i := range plugins.DefaultRestartPolicy.MaxFailures {
		testwait.Until(t, "kit restarted", func() bool {
			st := kit.Status()
			return st.State == plugins.StateRunning && st.Restarts == i
		})
		call(t, h, "kit.exit", `{}`)
	}
	testwait.Until(t, "kit failed", func() bool { return kit.Status().State == plugins.StateFailed })
	// The catalog changes right after the state.
	testwait.Until(t, "kit's tools gone", func() bool { return owner("kit.exit") == "" })
	if o := owner("kit.ping"); o != "" {
		t.Errorf("kit.ping served by %q after kit failed", o)
	}
	if !strings.Contains(logs.String(), `provider=kit2 tool=kit.ping error="tool \"kit_ping\" belongs to provider kit, which served it first"`) {
		t.Errorf("no reason logged for refusing kit.ping to kit2")
	}
	_, err := h.Server.Call(t.Context(), server.Call{Tool: "kit.ping", Arguments: json.RawMessage(`{}`)})
	if !errors.Is(err, server.ErrUnknownTool) {
		t.Errorf("kit.ping after kit failed: %v", err)
	}
}

// A reload starts a provider that was enabled, stops one that was
// disabled, replaces the policy, and connected clients see list_changed;
// a disabled built-in's tool names the key that enables it.
func TestReload(t *testing.T) {
	t.Parallel()
	dataDir := t.TempDir()
	parse := func(extra string) *config.Config { return parseTestConfig(t, dataDir, extra) }
	off := parse(kitConfig(t, "enabled = false\n") + "[providers.agent]\nenabled = false\n")
	h := startTestHost(t, off)
	defer h.Close(context.Background())
	changed := make(chan struct{}, 8)
	cs := connect(t, h, &mcp.ClientOptions{ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) { changed <- struct{}{} }})
	if names := toolNames(t, cs); slices.Contains(names, "kit_ping") || slices.Contains(names, agenttool.RunSubagent) {
		t.Fatalf("disabled providers' tools listed: %v", names)
	}
	_, err := h.Server.Call(t.Context(), server.Call{Tool: agenttool.ListSubagents, Arguments: json.RawMessage(`{}`)})
	if err == nil || !strings.Contains(err.Error(), "it belongs to the agent provider, which is disabled; set [providers.agent] enabled = true in test.toml") {
		t.Errorf("a disabled built-in's tool: %v", err)
	}
	memPid := providerByName(t, h, "memory").Pid()

	on := parse(kitConfig(t, "") + "[autonomy]\ndenied_tools = [\"kit.spawn\"]\n")
	res, err := h.Reload(t.Context(), on)
	if err != nil || fmt.Sprint(res.Started) != "[agent kit]" || len(res.Stopped) != 0 || len(res.Failed) != 0 {
		t.Fatalf("reload on: %+v, %v", res, err)
	}
	testwait.Recv(t, changed, "list_changed after enabling providers")
	if names := toolNames(t, cs); !slices.Contains(names, "kit_ping") || !slices.Contains(names, agenttool.RunSubagent) {
		t.Fatalf("tools after enabling: %v", names)
	}
	if r, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "kit.ping", Arguments: map[string]any{}}); err != nil || r.IsError {
		t.Errorf("kit.ping after the reload: %v %+v", err, r)
	}
	if r := call(t, h, "kit.spawn", `{}`); !r.IsError || !strings.Contains(r.Text(), "denied_tools") {
		t.Errorf("the reloaded policy does not deny kit.spawn: %q", r.Text())
	}
	if pid := providerByName(t, h, "memory").Pid(); pid != memPid {
		t.Errorf("an unchanged provider was restarted: pid %d → %d", memPid, pid)
	}

	// A call running in kit when it is disabled finishes or fails cleanly.
	errc := make(chan error, 1)
	go func() {
		r, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "kit.progress", Arguments: map[string]any{}})
		if err == nil && r.IsError {
			err = fmt.Errorf("%v", r.Content[0].(*mcp.TextContent).Text)
		}
		errc <- err
	}()
	res, err = h.Reload(t.Context(), off)
	if err != nil || fmt.Sprint(res.Stopped) != "[agent kit]" {
		t.Fatalf("reload off: %+v, %v", res, err)
	}
	if err := <-errc; err != nil && !strings.Contains(err.Error(), "stopped") {
		t.Errorf("call during the reload: %v", err)
	}
	testwait.Until(t, "kit's tools gone", func() bool { return !slices.Contains(toolNames(t, cs), "kit_ping") })
}

// Edited sub-agent definitions are picked up by a reload, though the
// config file itself did not change.
func TestReloadPicksUpAgentDefinitions(t *testing.T) {
	t.Parallel()
	agents := t.TempDir()
	extra := fmt.Sprintf("[providers.agent]\nagents_dir = %q\n", agents)
	cfg, _ := testConfig(t, extra)
	h := startTestHost(t, cfg)
	defer h.Close(context.Background())
	if strings.Contains(call(t, h, agenttool.ListSubagents, `{}`).Text(), "tide") {
		t.Fatal("tide listed before it exists")
	}
	def := "display_name = \"Tide\"\nwhen_to_use = \"Tide questions.\"\nprompt = \"Answer about tides.\"\n"
	if err := os.WriteFile(filepath.Join(agents, "tide.toml"), []byte(def), 0o600); err != nil {
		t.Fatal(err)
	}
	res, err := h.Reload(t.Context(), cfg)
	if err != nil || fmt.Sprint(res.Started) != "[agent]" {
		t.Fatalf("reload: %+v %v", res, err)
	}
	if out := call(t, h, agenttool.ListSubagents, `{}`).Text(); !strings.Contains(out, "- tide (Tide): Tide questions.") {
		t.Errorf("after the reload: %s", out)
	}
	if res, err := h.Reload(t.Context(), cfg); err != nil || len(res.Started) != 0 {
		t.Errorf("a reload with nothing changed restarted %v (%v)", res.Started, err)
	}
}
