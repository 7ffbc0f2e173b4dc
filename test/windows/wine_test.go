// Package windows_test runs the Windows build of openhuman-host, cross-built
// with cgo by MinGW-w64, under Wine in a throwaway prefix, and drives it
// over stdio with the go-sdk client: the handshake, the tool list, a
// memory stored and found again, a provider killed and restarted, and no
// provider left once the server exits.
//
// It needs OPENHUMAN_WINDOWS_BIN (the cross-built .exe), wine and
// x86_64-w64-mingw32-gcc. `make test` provides all three (make
// windows-deps installs the Debian packages) and sets OPENHUMAN_REQUIRE_INTEROP=1, which
// turns a missing prerequisite from a skip into a failure.
package windows_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/openhuman/openhuman-host/internal/wineprefix"
	"github.com/openhuman/openhuman-host/providers/agent/agenttool"
	"github.com/openhuman/openhuman-host/providers/memory/memorytool"
	"github.com/openhuman/openhuman-host/sdk/mcpwire"
	"github.com/openhuman/openhuman-host/sdk/testwait"
	"github.com/openhuman/openhuman-host/test/internal/prereq"
)

// testTimeout bounds the whole test when go test sets no deadline. Wine
// starts slowly, more so on a loaded machine: every wait below ends on an
// event, this only stops a run that hangs.
const testTimeout = 15 * time.Minute

const howToRun = "run `make test` from the repository root; by hand: " +
	"make windows-exe && OPENHUMAN_WINDOWS_BIN=$PWD/.cache/windows/openhuman-host.exe go test ./test/windows/"

// unavailable skips the test, or fails it when OPENHUMAN_REQUIRE_INTEROP is
// set: CI must never pass by skipping.
func unavailable(t *testing.T, why string) {
	t.Helper()
	prereq.Missing(t, "windows: "+why+"; "+howToRun, "OPENHUMAN_REQUIRE_INTEROP")
}

// wine runs Windows programs in one prefix.
type wine struct {
	*wineprefix.Prefix
	prefix string // WINEPREFIX
}

// newWine makes a fresh prefix in dir and initialises it, with the
// ProcessPrng shim that Go needs on Wine 8 in its system32.
func newWine(ctx context.Context, t *testing.T, launcher, cc, dir string) *wine {
	t.Helper()
	start := time.Now()
	p, err := wineprefix.New(ctx, launcher, cc, dir)
	// Whatever a failed run left in the prefix ends with its server.
	t.Cleanup(func() { _ = p.Close() })
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("wine prefix made in %s", time.Since(start).Round(time.Millisecond))
	return &wine{Prefix: p, prefix: p.Dir}
}

// run runs args in the prefix and returns their standard output.
//
// Wine's launcher now and then fails to start a program at all on a busy
// machine ("Application could not be started ... ShellExecuteEx failed:
// Internal error"); nothing of the program ran then, so run tries again,
// up to three launches in all.
func (w *wine) run(ctx context.Context, t *testing.T, args ...string) []byte {
	t.Helper()
	for attempt := 1; ; attempt++ {
		var stdout, stderr bytes.Buffer
		cmd := w.Command(ctx, args...)
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		err := cmd.Run()
		if err == nil {
			return stdout.Bytes()
		}
		notStarted := bytes.Contains(stdout.Bytes(), []byte("Application could not be started")) ||
			bytes.Contains(stderr.Bytes(), []byte("Application could not be started"))
		if !notStarted || attempt == 3 {
			t.Fatalf("wine %s: %v\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), err, stdout.Bytes(), stderr.Bytes())
		}
		t.Logf("wine %s: the program did not start (%v); launching it again", strings.Join(args, " "), err)
	}
}

// linuxProcs returns the processes (by Linux pid) whose command line names
// exe, by its Linux path or as Wine's Z: drive has it. Wine runs every
// Windows process as a Linux process whose command line is the Windows one,
// so this finds the server and its providers.
func linuxProcs(exe string) map[int]string {
	winExe := winPath(exe)
	return procsMatching(func(line string) bool { return strings.Contains(line, exe) || strings.Contains(line, winExe) })
}

// procsMatching returns the processes (by Linux pid) whose command line
// match accepts.
func procsMatching(match func(line string) bool) map[int]string {
	out := map[int]string{}
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		var pid int
		if _, err := fmt.Sscan(e.Name(), &pid); err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil {
			continue
		}
		line := strings.TrimSpace(strings.ReplaceAll(string(b), "\x00", " "))
		if match(line) {
			out[pid] = line
		}
	}
	return out
}

// providersOf keeps the processes that are providers ("... provider NAME").
func providersOf(procs map[int]string) map[int]string {
	out := map[int]string{}
	for pid, line := range procs {
		if f := strings.Fields(line); len(f) >= 3 && f[len(f)-2] == "provider" {
			out[pid] = line
		}
	}
	return out
}

// await polls cond every 200ms until it holds or ctx ends.
func await(ctx context.Context, t *testing.T, what string, cond func() bool) {
	t.Helper()
	for !cond() {
		select {
		case <-ctx.Done():
			t.Fatalf("%s: not before the test's deadline", what)
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// statusReport is what providers status --json says of one server.
type statusReport struct {
	Pid       int `json:"pid"`
	Providers []struct {
		Name     string `json:"name"`
		State    string `json:"state"`
		Pid      int    `json:"pid"`
		Restarts int    `json:"restarts"`
	} `json:"providers"`
}

// providerPid returns the Windows pid and restart count of provider name
// of the one running server, as providers status reports them.
func providerPid(ctx context.Context, t *testing.T, w *wine, exe, name string) (pid, restarts int) {
	t.Helper()
	var reports []statusReport
	out := w.run(ctx, t, exe, "providers", "status", "--json")
	if err := json.Unmarshal(out, &reports); err != nil || len(reports) != 1 {
		t.Fatalf("providers status --json: want one server's report, got %v:\n%s", err, out)
	}
	for _, p := range reports[0].Providers {
		if p.Name == name && p.State == "running" {
			return p.Pid, p.Restarts
		}
	}
	t.Fatalf("providers status: no running %s provider:\n%s", name, out)
	return 0, 0
}

func TestWindowsUnderWine(t *testing.T) {
	if runtime.GOOS != "linux" || runtime.GOARCH != "amd64" {
		unavailable(t, "Wine runs the x86-64 Windows build on Linux x86-64 only")
	}
	exe, err := prereq.Executable("OPENHUMAN_WINDOWS_BIN", "path of the cross-built openhuman-host.exe")
	if err != nil {
		unavailable(t, err.Error())
	}
	launcher, err := exec.LookPath("wine")
	if err != nil {
		unavailable(t, "wine is not installed (run: make windows-deps)")
	}
	cc, err := exec.LookPath("x86_64-w64-mingw32-gcc")
	if err != nil {
		unavailable(t, "x86_64-w64-mingw32-gcc is not installed (run: make windows-deps)")
	}
	goTool, err := exec.LookPath("go")
	if err != nil {
		unavailable(t, "go is not on PATH, so the test provider cannot be cross-built")
	}
	me, err := user.Current()
	if err != nil {
		t.Fatal(err)
	}
	deadline, ok := t.Deadline()
	if !ok {
		deadline = time.Now().Add(testTimeout)
	}
	// Leave time for the cleanup to report what is left.
	ctx, cancel := context.WithDeadline(context.Background(), deadline.Add(-30*time.Second))
	defer cancel()

	dir := t.TempDir()
	// A copy in the test's own directory: its path names only this run's
	// processes.
	own := filepath.Join(dir, "openhuman-host.exe")
	if err := copyFile(exe, own); err != nil {
		t.Fatal(err)
	}
	// The test provider, whose kit.spawn starts a child that watches no
	// parent: only the provider's job object can end it.
	kit := filepath.Join(dir, "kit.exe")
	build := exec.CommandContext(ctx, goTool, "build", "-o", kit, "github.com/openhuman/openhuman-host/test/testprovider")
	build.Env = append(os.Environ(), "GOOS=windows", "GOARCH=amd64", "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("cross-build the test provider: %v\n%s", err, out)
	}
	w := newWine(ctx, t, launcher, cc, dir)

	t.Run("directories follow Windows conventions", func(t *testing.T) {
		var got map[string]any
		out := w.run(ctx, t, own, "config", "paths", "--json")
		if err := json.Unmarshal(out, &got); err != nil {
			t.Fatalf("config paths --json: %v\n%s", err, out)
		}
		profile := `C:\users\` + me.Username
		want := map[string]any{
			"config_file":        profile + `\AppData\Roaming\openhuman-host\config.toml`,
			"config_file_exists": false,
			"config_dir":         profile + `\AppData\Roaming\openhuman-host`,
			"data_dir":           profile + `\AppData\Local\openhuman-host`,
			"data_dir_from":      "default",
		}
		if !equalFold(got, want) {
			t.Errorf("config paths --json = %v, want %v (drive and user names in any case)", got, want)
		}
	})

	// providers add: a .exe passes as runnable, the config is locked with
	// LockFileEx and written to %APPDATA%, keeping what is there (providers
	// get 120s to start, as Wine on a busy machine may need).
	config := filepath.Join(w.prefix, "drive_c", "users", me.Username, "AppData", "Roaming", "openhuman-host", "config.toml")
	if err := os.MkdirAll(filepath.Dir(config), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(config, []byte("[server]\nprovider_start_timeout_secs = 120\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	w.run(ctx, t, own, "providers", "add", "--name", "kit", winPath(kit))
	if b, err := os.ReadFile(config); err != nil || !strings.Contains(string(b), "[providers.kit]") || !strings.HasPrefix(string(b), "[server]\nprovider_start_timeout_secs = 120\n") {
		t.Fatalf("providers add wrote no [providers.kit] to %s: %v\n%s", config, err, b)
	}
	// The kit runs from the verified copy the server makes of it, and
	// starts its child from there: match the file name, not the folder.
	sleepers := func() map[int]string {
		return procsMatching(func(line string) bool { return strings.Contains(line, filepath.Base(kit)+" -sleep=") })
	}

	t.Run("serve, restart a killed provider, exit on stdin EOF", func(t *testing.T) {
		start := time.Now()
		session, stderr := serve(ctx, t, w, own)
		t.Logf("server initialized %s after start", time.Since(start).Round(time.Millisecond))
		if got := session.InitializeResult().ServerInfo.Name; got != "openhuman-host" {
			t.Errorf("server name = %q, want openhuman-host", got)
		}
		tools, err := session.ListTools(ctx, nil)
		if err != nil {
			t.Fatalf("tools/list: %v", err)
		}
		var names []string
		for _, tool := range tools.Tools {
			names = append(names, tool.Name)
		}
		for _, want := range []string{memorytool.Store, memorytool.Search, agenttool.RunSubagent, agenttool.ListTools, "kit_spawn"} {
			if !slices.Contains(names, want) {
				t.Errorf("tools/list lacks %s: %v", want, names)
			}
		}

		stored := call(ctx, t, session, memorytool.Store, map[string]any{
			"title": "Reef trip", "content": "The zebrafish swims near the northern reef.",
		})
		var store struct {
			ChunkIDs []string `json:"chunk_ids"`
		}
		decode(t, stored, &store)
		if len(store.ChunkIDs) != 1 {
			t.Fatalf(memorytool.Store+": chunk_ids = %v, want one", store.ChunkIDs)
		}
		search := func() ([]string, error) {
			res, err := session.CallTool(ctx, &mcp.CallToolParams{Name: memorytool.Search, Arguments: map[string]any{"query": "zebrafish"}})
			if err != nil {
				return nil, err
			}
			if res.IsError {
				return nil, fmt.Errorf(memorytool.Search+": %s", mcpwire.Text(res))
			}
			var hits struct {
				Chunks []struct {
					ChunkID string `json:"chunk_id"`
					Title   string `json:"title"`
				} `json:"chunks"`
			}
			decode(t, res, &hits)
			var got []string
			for _, c := range hits.Chunks {
				got = append(got, c.ChunkID+" "+c.Title)
			}
			return got, nil
		}
		wantHits := []string{store.ChunkIDs[0] + " Reef trip"}
		if got, err := search(); err != nil || !slices.Equal(got, wantHits) {
			t.Fatalf(memorytool.Search+" = %v, %v; want %v", got, err, wantHits)
		}

		// Kill the agent provider, a plugin process (memory runs in the
		// server's), as Windows would (TerminateProcess): the server starts
		// it again and its tools answer again, and memory's data is there.
		oldPid, _ := providerPid(ctx, t, w, own, "agent")
		w.run(ctx, t, "taskkill", "/F", "/PID", fmt.Sprint(oldPid))
		await(ctx, t, "agent provider answering again after it was killed", func() bool {
			res, err := session.CallTool(ctx, &mcp.CallToolParams{Name: agenttool.ListSubagents, Arguments: map[string]any{}})
			return err == nil && !res.IsError
		})
		newPid, restarts := providerPid(ctx, t, w, own, "agent")
		if newPid == oldPid || restarts != 1 {
			t.Errorf("agent provider after the kill: pid %d (was %d), restarts %d; want a new pid and 1 restart", newPid, oldPid, restarts)
		}
		if got, err := search(); err != nil || !slices.Equal(got, wantHits) {
			t.Errorf(memorytool.Search+" after the agent provider was killed = %v, %v; want %v", got, err, wantHits)
		}

		// The data lives where config paths said, inside the prefix.
		data := filepath.Join(w.prefix, "drive_c", "users", me.Username, "AppData", "Local", "openhuman-host")
		for _, f := range []string{"audit.db", filepath.Join("memory", "memory.db")} {
			if _, err := os.Stat(filepath.Join(data, f)); err != nil {
				t.Errorf("data file: %v", err)
			}
		}

		// A provider's child dies with the provider: the server closes
		// the provider's job object when the provider exits.
		call(ctx, t, session, "kit_spawn", nil)
		await(ctx, t, "the kit's child running", func() bool { return len(sleepers()) == 1 })
		kitPid, _ := providerPid(ctx, t, w, own, "kit")
		w.run(ctx, t, "taskkill", "/F", "/PID", fmt.Sprint(kitPid))
		await(ctx, t, "the killed kit's child gone", func() bool { return len(sleepers()) == 0 })
		await(ctx, t, "the kit answering again after it was killed", func() bool {
			res, err := session.CallTool(ctx, &mcp.CallToolParams{Name: "kit_ping"})
			return err == nil && !res.IsError
		})

		if len(providersOf(linuxProcs(own))) == 0 {
			t.Fatalf("no provider process found by command line under Wine; the exit check would prove nothing")
		}
		// Closing stdin ends the server, which must exit with status 0.
		if err := session.Close(); err != nil {
			t.Errorf("server exit after stdin closed: %v\nserver log:\n%s", err, stderr.String())
		}
		await(ctx, t, "no provider process left after the server exited", func() bool {
			return len(providersOf(linuxProcs(own))) == 0
		})
	})

	t.Run("a server killed outright leaves no process", func(t *testing.T) {
		session, _ := serve(ctx, t, w, own)
		call(ctx, t, session, "kit_spawn", nil)
		await(ctx, t, "the kit's child running", func() bool { return len(sleepers()) == 1 })
		var reports []statusReport
		out := w.run(ctx, t, own, "providers", "status", "--json")
		if err := json.Unmarshal(out, &reports); err != nil || len(reports) != 1 {
			t.Fatalf("providers status --json: want one server's report, got %v:\n%s", err, out)
		}
		w.run(ctx, t, "taskkill", "/F", "/PID", fmt.Sprint(reports[0].Pid))
		await(ctx, t, "every provider and the kit's child gone after the server was killed", func() bool {
			return len(providersOf(linuxProcs(own))) == 0 && len(sleepers()) == 0
		})
		_ = session.Close() // the server is gone; its exit status is TerminateProcess's
	})
}

// serve starts own serve in the prefix and connects the go-sdk client to
// it over stdio; the session is closed at the end of the test.
func serve(ctx context.Context, t *testing.T, w *wine, own string) (*mcp.ClientSession, *testwait.Buffer) {
	t.Helper()
	srv := w.Command(ctx, own, "serve")
	stderr := &testwait.Buffer{}
	srv.Stderr = stderr
	client := mcp.NewClient(&mcp.Implementation{Name: "wine-smoke", Version: "1"}, nil)
	session, err := client.Connect(ctx, &mcp.CommandTransport{Command: srv, TerminateDuration: 2 * time.Minute}, nil)
	if err != nil {
		t.Fatalf("initialize: %v\nserver log:\n%s", err, stderr.String())
	}
	t.Cleanup(func() { _ = session.Close() })
	return session, stderr
}

// winPath is the Windows path of Linux path p on Wine's Z: drive.
func winPath(p string) string { return `Z:` + strings.ReplaceAll(p, "/", `\`) }

// call calls a tool and fails the test on any error.
func call(ctx context.Context, t *testing.T, s *mcp.ClientSession, name string, args map[string]any) *mcp.CallToolResult {
	t.Helper()
	res, err := s.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	if res.IsError {
		t.Fatalf("%s: %s", name, mcpwire.Text(res))
	}
	return res
}

// decode decodes a result's structured content into v.
func decode(t *testing.T, res *mcp.CallToolResult, v any) {
	t.Helper()
	b, err := json.Marshal(res.StructuredContent)
	if err == nil {
		err = json.Unmarshal(b, v)
	}
	if err != nil {
		t.Fatalf("structured content %s: %v", b, err)
	}
}

// equalFold compares two flat JSON objects, strings without regard to
// case: Wine spells the drive and the user's folder as it likes.
func equalFold(got, want map[string]any) bool {
	if len(got) != len(want) {
		return false
	}
	for k, w := range want {
		g, ok := got[k]
		if !ok {
			return false
		}
		gs, gok := g.(string)
		ws, wok := w.(string)
		if gok && wok {
			if !strings.EqualFold(gs, ws) {
				return false
			}
		} else if g != w {
			return false
		}
	}
	return true
}

func copyFile(from, to string) error {
	b, err := os.ReadFile(from)
	if err != nil {
		return err
	}
	return os.WriteFile(to, b, 0o755)
}
