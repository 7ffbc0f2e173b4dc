package plugins

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/hashicorp/go-hclog"

	"github.com/openhuman/openhuman-host/sdk"
	"github.com/openhuman/openhuman-host/sdk/plugin"
	"github.com/openhuman/openhuman-host/sdk/sdktest"
	"github.com/openhuman/openhuman-host/sdk/testproc"
	"github.com/openhuman/openhuman-host/sdk/testwait"
)

var kitPath string

// TestMain builds test/testprovider, or finds it built, for the package's
// tests.
func TestMain(m *testing.M) {
	var err error
	kitPath, err = testproc.BuildBinary("github.com/openhuman/openhuman-host/test/testprovider")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	os.Exit(m.Run())
}

func kitSpec(t *testing.T) Spec {
	t.Helper()
	sum, err := FileSHA256(kitPath)
	if err != nil {
		t.Fatal(err)
	}
	return Spec{Name: "kit", Path: kitPath, SHA256: sum, Verify: true, DataDir: t.TempDir()}
}

// startKit starts spec under a manager with opts. Starts and restarts get
// a minute, not the default 10s: a loaded machine may take several seconds
// for a handshake, and no test here is about a start that is slow.
func startKit(t *testing.T, opts Options, spec Spec) (*Manager, *Provider) {
	t.Helper()
	if opts.StartTimeout == 0 {
		opts.StartTimeout = time.Minute
	}
	m := NewManager(&opts)
	t.Cleanup(m.Close)
	loaded, failed, err := m.Start(t.Context(), []Spec{spec})
	if err != nil || len(failed) > 0 || len(loaded) != 1 {
		t.Fatalf("Start: loaded %d, failed %v, err %v", len(loaded), failed, err)
	}
	return m, loaded[0]
}

func ping(ctx context.Context, p *Provider) (string, error) {
	res, err := p.CallTool(ctx, &sdk.CallToolRequest{Name: "kit.ping", Arguments: []byte("{}")})
	if err != nil {
		return "", err
	}
	return res.Content[0].Text, nil
}

func alive(pid int) bool {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return exists(pid)
	}
	fields := strings.Fields(string(stat[bytes.LastIndexByte(stat, ')')+1:]))
	return len(fields) > 0 && fields[0] != "Z"
}

// A provider killed with SIGKILL is restarted without anything the caller
// does. How long that takes is measured by bench/restart.
func TestKilledProviderIsRestarted(t *testing.T) {
	t.Parallel()
	var changes []State
	var mu sync.Mutex
	_, p := startKit(t, Options{OnChange: func(p *Provider, changed bool) {
		mu.Lock()
		defer mu.Unlock()
		changes = append(changes, p.Status().State)
		if changed {
			t.Errorf("catalog reported changed after a plain restart")
		}
	}}, kitSpec(t))
	first := p.Pid()
	if err := killPID(first); err != nil {
		t.Fatal(err)
	}
	testwait.Until(t, "kit answering again after kill -9", func() bool {
		out, err := ping(t.Context(), p)
		return err == nil && strings.HasPrefix(out, "pong ")
	})
	st := p.Status()
	if st.State != StateRunning || st.Restarts != 1 || st.Pid == first || st.Pid == 0 || st.LastError != "its process exited" {
		t.Errorf("status after restart = %+v", st)
	}
	mu.Lock()
	defer mu.Unlock()
	if fmt.Sprint(changes) != "[restarting running]" {
		t.Errorf("state changes = %v, want [restarting running]", changes)
	}
}

// A call while the provider is down fails at once instead of waiting for
// the restart, which an hour's backoff keeps from coming.
func TestCallDuringOutageFailsFast(t *testing.T) {
	t.Parallel()
	states := make(chan Status, 8)
	// A long backoff (MaxBackoff caps it) keeps the provider down after its
	// second failure.
	_, p := startKit(t, Options{
		Restart:  RestartPolicy{FirstBackoff: time.Hour, MaxBackoff: time.Hour},
		OnChange: func(p *Provider, _ bool) { states <- p.Status() },
	}, kitSpec(t))
	var got []string
	for range 2 {
		_ = killPID(p.Pid())
		for st := State(""); st != StateRunning && len(got) < 3; {
			st = testwait.Recv(t, states, "the provider's next state").State
			got = append(got, string(st))
		}
	}
	// The first restart is immediate; the second waits out the backoff.
	if diff := cmp.Diff([]string{"restarting", "running", "restarting"}, got); diff != "" {
		t.Fatalf("states after two kills (-want +got):\n%s", diff)
	}
	// A call that waited for the restart would end only with its context.
	_, err := ping(testwait.Context(t), p)
	if !errors.Is(err, ErrUnavailable) || !strings.Contains(err.Error(), "provider kit") || !strings.Contains(err.Error(), "restarting after its process exited") {
		t.Fatalf("call during outage: %v", err)
	}
}

func TestCrashingProviderIsMarkedFailed(t *testing.T) {
	t.Parallel()
	_, p := startKit(t, Options{Restart: RestartPolicy{MaxFailures: 3, FirstBackoff: 10 * time.Millisecond}}, kitSpec(t))
	for i := range 3 {
		testwait.Until(t, fmt.Sprintf("restart %d", i), func() bool {
			st := p.Status()
			return st.State == StateRunning && st.Restarts == i
		})
		_, err := p.CallTool(t.Context(), &sdk.CallToolRequest{Name: "kit.exit", Arguments: []byte("{}")})
		if !errors.Is(err, ErrUnavailable) || !strings.Contains(err.Error(), "ended during the call") {
			t.Fatalf("call %d to a tool that exits: %v", i, err)
		}
	}
	testwait.Until(t, "marked failed", func() bool { return p.Status().State == StateFailed })
	_, err := ping(t.Context(), p)
	if !errors.Is(err, ErrUnavailable) || !strings.Contains(err.Error(), "failed 3 times within 1m0s") {
		t.Errorf("call to a failed provider: %v", err)
	}
	if st := p.Status(); st.Pid != 0 || st.Restarts != 2 {
		t.Errorf("failed status = %+v", st)
	}
}

func TestPanickingProviderIsMarkedFailed(t *testing.T) {
	t.Parallel()
	_, p := startKit(t, Options{Restart: RestartPolicy{MaxFailures: 3}}, kitSpec(t))
	pid := p.Pid()
	for i := range 3 {
		_, err := p.CallTool(t.Context(), &sdk.CallToolRequest{Name: "kit.panic", Arguments: []byte("{}")})
		if !errors.Is(err, plugin.ErrPanicked) || !strings.HasSuffix(err.Error(), "CallTool kit.panic panicked: testprovider: kit.panic called") {
			t.Fatalf("call %d to a panicking tool: %v", i, err)
		}
		if i < 2 {
			// The panic was recovered: the same process serves on.
			if out, err := ping(t.Context(), p); err != nil || out != fmt.Sprintf("pong %d", pid) {
				t.Fatalf("ping after panic %d = %q, %v", i, out, err)
			}
		}
	}
	testwait.Until(t, "marked failed", func() bool { return p.Status().State == StateFailed })
	if st := p.Status(); !strings.Contains(st.LastError, "a tool panicked") || st.Restarts != 0 {
		t.Errorf("status = %+v", st)
	}
	testwait.Until(t, "process stopped", func() bool { return !alive(pid) })
}

func TestHungProviderIsRestarted(t *testing.T) {
	t.Parallel()
	// A stopped process never answers, so the health timeout only sets how
	// soon it is noticed; it is long enough that a provider on a loaded
	// machine is not taken for a hung one.
	_, p := startKit(t, Options{HealthInterval: 100 * time.Millisecond, HealthTimeout: 3 * time.Second}, kitSpec(t))
	first := p.Pid()
	testproc.Freeze(t, first)
	t.Cleanup(func() { _ = killPID(first) })
	testwait.Until(t, "hung provider replaced", func() bool {
		st := p.Status()
		return st.State == StateRunning && st.Restarts == 1
	})
	if st := p.Status(); !strings.Contains(st.LastError, "failed two health checks") {
		t.Errorf("last error = %q", st.LastError)
	}
	testwait.Until(t, "hung process killed", func() bool { return !alive(first) })
	if _, err := ping(t.Context(), p); err != nil {
		t.Errorf("ping after restart: %v", err)
	}
}

func TestChildrenDieWithTheProvider(t *testing.T) {
	t.Parallel()
	m, p := startKit(t, Options{}, kitSpec(t))
	res, err := p.CallTool(t.Context(), &sdk.CallToolRequest{Name: "kit.spawn", Arguments: []byte("{}")})
	if err != nil {
		t.Fatal(err)
	}
	var child int
	if _, err := fmt.Sscan(res.Content[0].Text, &child); err != nil || !alive(child) {
		t.Fatalf("kit.spawn = %q, %v", res.Content[0].Text, err)
	}
	pid := p.Pid()
	m.Close()
	if alive(pid) {
		t.Errorf("provider %d alive after Close", pid)
	}
	// The group's SIGKILL is asynchronous for the child.
	testwait.Until(t, "provider's child gone", func() bool { return !alive(child) })
	if st := p.Status(); st.State != StateStopped {
		t.Errorf("state after Close = %s", st.State)
	}
}

func TestCatalogChangeIsReported(t *testing.T) {
	t.Parallel()
	changed := make(chan bool, 4)
	spec := kitSpec(t)
	_, p := startKit(t, Options{OnChange: func(p *Provider, c bool) {
		if p.Status().State == StateRunning {
			changed <- c
		}
	}}, spec)
	if n := len(p.Catalog().Tools); n != 12 {
		t.Fatalf("%d tools before, want 12", n)
	}
	if err := os.WriteFile(filepath.Join(spec.DataDir, "extra"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	_ = killPID(p.Pid())
	if c := testwait.Recv(t, changed, "the restart"); !c {
		t.Error("restart with a new tool reported catalogChanged = false")
	}
	if n := len(p.Catalog().Tools); n != 13 {
		t.Errorf("%d tools after, want 13", n)
	}
}

func TestChecksumRefusals(t *testing.T) {
	t.Parallel()
	good, err := FileSHA256(kitPath)
	if err != nil {
		t.Fatal(err)
	}
	// A copy with one byte appended stands for a tampered binary.
	tampered := filepath.Join(t.TempDir(), "provider")
	b, err := os.ReadFile(kitPath)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(tampered, append(b, 0), 0o755); err != nil {
		t.Fatal(err)
	}
	bad, err := FileSHA256(tampered)
	if err != nil {
		t.Fatal(err)
	}
	for name, tc := range map[string]struct {
		spec Spec
		want []string
	}{
		"tampered": {
			spec: Spec{Name: "kit", Path: tampered, SHA256: good, Verify: true},
			want: []string{"checksum mismatch", "expects sha256 " + good, "file's sha256 is " + bad, "providers add --force " + tampered},
		},
		"no sha256": {
			spec: Spec{Name: "kit", Path: tampered, Verify: true},
			want: []string{"[providers.kit] has no sha256", "the file's sha256 is " + bad},
		},
		"missing": {
			spec: Spec{Name: "kit", Path: filepath.Join(t.TempDir(), "missing"), SHA256: good, Verify: true},
			want: []string{"provider executable", "no such file"},
		},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			var logs testwait.Buffer
			m := NewManager(&Options{Logger: hclog.New(&hclog.LoggerOptions{Output: &logs, Level: hclog.Warn})})
			defer m.Close()
			loaded, failed, err := m.Start(t.Context(), []Spec{tc.spec})
			if err != nil || len(loaded) != 0 || len(failed) != 1 {
				t.Fatalf("Start: loaded %d, failed %v, err %v", len(loaded), failed, err)
			}
			if !errors.Is(failed[0].Err, ErrChecksum) && name != "missing" {
				t.Errorf("error does not wrap ErrChecksum: %v", failed[0].Err)
			}
			for _, w := range tc.want {
				if !strings.Contains(failed[0].Err.Error(), w) {
					t.Errorf("error %q lacks %q", failed[0].Err, w)
				}
				if !strings.Contains(logs.String(), w) {
					t.Errorf("log lacks %q:\n%s", w, logs.String())
				}
			}
		})
	}
}

// TestChecksumCannotBeRaced swaps the executable for another program right
// after it was verified, the window a file swapped every few milliseconds
// hits now and then: the verified bytes must run all the same, at the
// first start and at a restart.
func TestChecksumCannotBeRaced(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := filepath.Join(dir, "provider")
	good, err := os.ReadFile(kitPath)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, good, 0o755); err != nil {
		t.Fatal(err)
	}
	marker := filepath.Join(dir, "tampered-ran")
	tampered := []byte("#!/bin/sh\necho ran > '" + marker + "'\nexit 3\n")
	if runtime.GOOS == "windows" {
		t.Skip("the tampered program is a shell script")
	}
	swap := func(p string) {
		if p != path {
			return
		}
		// Replace the file under its name, as an attacker would.
		tmp := path + ".new"
		if err := os.WriteFile(tmp, tampered, 0o755); err != nil {
			t.Error(err)
			return
		}
		if err := os.Rename(tmp, path); err != nil {
			t.Error(err)
		}
	}
	testHookVerified.Store(&swap)
	t.Cleanup(func() { testHookVerified.CompareAndSwap(&swap, nil) })

	spec := kitSpec(t)
	spec.Path = path
	m, p := startKit(t, Options{}, spec)
	defer m.Close()
	if st := p.Status(); st.State != StateRunning {
		t.Fatalf("state after start = %s (%s), want running", st.State, st.LastError)
	}
	if _, err := os.Stat(marker); err == nil {
		t.Fatal("the program swapped in after verification ran")
	}
	if entries, _ := os.ReadDir(filepath.Join(spec.DataDir, ".exec")); len(entries) != 1 {
		t.Errorf("verified copies while the provider runs = %d, want 1", len(entries))
	}

	// A restart verifies the file as it is now, the swapped one, and
	// refuses it.
	proc, err := os.FindProcess(p.Pid())
	if err != nil {
		t.Fatal(err)
	}
	if err := proc.Kill(); err != nil {
		t.Fatal(err)
	}
	testwait.Until(t, "the restart to be refused", func() bool { return strings.Contains(p.Status().LastError, "checksum mismatch") })
	if _, err := os.Stat(marker); err == nil {
		t.Fatal("the swapped program ran at a restart")
	}
}

// A provider slower to start than its start timeout fails to load; one that
// loaded after its handshake came 5s late would mean no timeout applied.
func TestStartTimeout(t *testing.T) {
	t.Parallel()
	spec := kitSpec(t)
	spec.Args = []string{"-slow-start=5s"}
	spec.StartTimeout = 300 * time.Millisecond
	m := NewManager(nil)
	defer m.Close()
	_, failed, err := m.Start(t.Context(), []Spec{spec})
	if err != nil || len(failed) != 1 || !strings.Contains(failed[0].Err.Error(), "start_timeout_secs") {
		t.Fatalf("Start of a slow provider: failed %v, err %v", failed, err)
	}
}

func TestBackoff(t *testing.T) {
	t.Parallel()
	r := RestartPolicy{}.withDefaults()
	var got []time.Duration
	for n := 1; n <= 10; n++ {
		got = append(got, r.backoff(n))
	}
	want := "[0s 250ms 500ms 1s 2s 4s 8s 16s 30s 30s]"
	if fmt.Sprint(got) != want {
		t.Errorf("backoff = %v, want %s", got, want)
	}
}

// Log lines go-plugin's own parser would panic on reach the log as text.
func TestMalformedLogLinesDoNotCrashTheHost(t *testing.T) {
	t.Parallel()
	var logs testwait.Buffer
	_, p := startKit(t, Options{Logger: hclog.New(&hclog.LoggerOptions{Output: &logs, Level: hclog.Debug})}, kitSpec(t))
	res, err := p.CallTool(t.Context(), &sdk.CallToolRequest{Name: "kit.badlog", Arguments: []byte("{}")})
	if err != nil || res.Content[0].Text != "logged" {
		t.Fatalf("kit.badlog: %v %v", res, err)
	}
	testwait.Until(t, "lines logged", func() bool { return strings.Count(logs.String(), "[DEBUG] kit: t\n") == 2 })
	for _, want := range []string{`[DEBUG] kit: {"@message":42}`, "[DEBUG] kit: x\n"} {
		if !strings.Contains(logs.String(), want) {
			t.Errorf("log lacks %q", want)
		}
	}
	if _, err := ping(t.Context(), p); err != nil {
		t.Errorf("ping after bad log lines: %v", err)
	}
}

// A provider that never completes its handshake is killed with everything
// it started, and a cancelled start does not wait out the start timeout.
func TestFailedHandshakeLeavesNothing(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	script := filepath.Join(dir, "provider.sh")
	if err := os.WriteFile(script, []byte("#!/bin/sh\nsleep 300 &\necho $! > \"$1\"\nexec sleep 301\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	childFile := filepath.Join(dir, "child")
	// A start that waited out this timeout would outlast the test.
	spec := Spec{Name: "never", Path: script, Args: []string{childFile}, StartTimeout: time.Hour}
	m := NewManager(nil)
	defer m.Close()
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	failures := make(chan []Failure, 1)
	go func() {
		_, failed, _ := m.Start(ctx, []Spec{spec})
		failures <- failed
	}()
	// Cancel once the provider is up and has started its child.
	var child int
	testwait.Until(t, "the provider's child pid in "+childFile, func() bool {
		b, err := os.ReadFile(childFile)
		_, serr := fmt.Sscan(string(b), &child)
		return err == nil && serr == nil && bytes.HasSuffix(b, []byte("\n"))
	})
	cancel()
	failed := testwait.Recv(t, failures, "Start to return after its context was cancelled")
	if len(failed) != 1 || !strings.Contains(failed[0].Err.Error(), "stopped before its handshake: context canceled") {
		t.Fatalf("failed = %v", failed)
	}
	testwait.Until(t, "the provider's child gone", func() bool { return !alive(child) })
}

// A provider that exits before its handshake is reported with its exit
// status.
func TestProviderExitingAtStart(t *testing.T) {
	t.Parallel()
	script := filepath.Join(t.TempDir(), "provider.sh")
	if err := os.WriteFile(script, []byte("#!/bin/sh\nexit 7\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	m := NewManager(nil)
	defer m.Close()
	_, failed, err := m.Start(t.Context(), []Spec{{Name: "quits", Path: script}})
	if err != nil || len(failed) != 1 || !strings.Contains(failed[0].Err.Error(), "the provider exited before its handshake (exit status 7)") {
		t.Fatalf("failed = %v, err %v", failed, err)
	}
}

// A provider's standard input is /dev/null, never the host's.
func TestProviderStdinIsDevNull(t *testing.T) {
	t.Parallel()
	_, p := startKit(t, Options{}, kitSpec(t))
	res, err := p.CallTool(t.Context(), &sdk.CallToolRequest{Name: "kit.stdin", Arguments: []byte("{}")})
	if err != nil || res.Content[0].Text != "/dev/null" {
		t.Fatalf("kit.stdin: %v %v", res, err)
	}
}

// Caller.ReadsStructuredContent reaches the provider's process through
// go-plugin's gRPC connection, and is false when the host does not set it.
func TestCallerReadsStructuredContentReachesTheProvider(t *testing.T) {
	t.Parallel()
	_, p := startKit(t, Options{}, kitSpec(t))
	for _, told := range []bool{true, false} {
		res, err := p.CallTool(t.Context(), &sdk.CallToolRequest{Name: "kit.caller", Arguments: []byte("{}"),
			Caller: sdk.Caller{SourceType: "mcp:claude-code", ClientName: "claude-code", ReadsStructuredContent: told}})
		if err != nil || res.IsError {
			t.Fatalf("kit.caller: %v %+v", err, res)
		}
		want := fmt.Sprintf(`{"client_name":"claude-code","reads_structured_content":%v}`, told)
		if got := string(res.StructuredContent); got != want {
			t.Errorf("told %v: the provider saw %s, want %s", told, got, want)
		}
	}
}

// An SDK provider negotiates protocol 2; its NotifyCatalogChanged makes
// the manager call Describe again and report the change once.
func TestCatalogChangeAnnounced(t *testing.T) {
	t.Parallel()
	changed := make(chan bool, 4)
	_, p := startKit(t, Options{
		Host:     sdktest.StubHost{},
		OnChange: func(_ *Provider, c bool) { changed <- c },
	}, kitSpec(t))
	if v := p.Protocol(); v != 2 {
		t.Errorf("negotiated protocol %d, want 2", v)
	}
	if slices.ContainsFunc(p.Catalog().Tools, func(t sdk.Tool) bool { return t.Name == "kit.extra" }) {
		t.Fatal("kit.extra listed before kit.grow")
	}
	res, err := p.CallTool(t.Context(), &sdk.CallToolRequest{Name: "kit.grow", Arguments: []byte("{}")})
	if err != nil || res.IsError {
		t.Fatalf("kit.grow: %v %+v", err, res)
	}
	if c := testwait.Recv(t, changed, "OnChange after the announcement"); !c {
		t.Errorf("OnChange called with catalogChanged false")
	}
	if !slices.ContainsFunc(p.Catalog().Tools, func(t sdk.Tool) bool { return t.Name == "kit.extra" }) {
		t.Error("kit.extra not in the catalog after the announcement")
	}
	if st := p.Status(); st.Restarts != 0 || st.State != StateRunning {
		t.Errorf("status after a catalog change = %+v (no restart expected)", st)
	}
}

// TestBusyProviderIsNotRestarted: a provider whose health checks time
// out (here always: a 1 ns timeout) while it answers calls is busy, not
// hung, and keeps running; once it answers nothing between two failed
// checks it is restarted.
func TestBusyProviderIsNotRestarted(t *testing.T) {
	t.Parallel()
	var logs testwait.Buffer
	log := hclog.New(&hclog.LoggerOptions{Output: &logs, Level: hclog.Debug})
	_, p := startKit(t, Options{HealthInterval: 20 * time.Millisecond, HealthTimeout: time.Nanosecond, Logger: log}, kitSpec(t))
	first := p.Pid()
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			select {
			case <-stop:
				return
			default:
			}
			if _, err := ping(t.Context(), p); err != nil {
				t.Errorf("ping while busy: %v", err)
				return
			}
		}
	}()
	testwait.Until(t, "three failed health checks while answering calls", func() bool {
		return strings.Count(logs.String(), "health check failed while the provider answers calls") >= 3
	})
	close(stop)
	<-done
	if st := p.Status(); st.Restarts != 0 || p.Pid() != first {
		t.Fatalf("a provider answering calls was restarted: %+v", st)
	}
	testwait.Until(t, "an idle provider failing its checks replaced", func() bool { return p.Status().Restarts == 1 })
	if st := p.Status(); !strings.Contains(st.LastError, "answered nothing in between") {
		t.Errorf("last error = %q", st.LastError)
	}
}
