package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/openhuman/openhuman-host/host"
	"github.com/openhuman/openhuman-host/host/config"
	"github.com/openhuman/openhuman-host/host/plugins"
	"github.com/openhuman/openhuman-host/sdk/testwait"
)

func TestProviderNameFor(t *testing.T) {
	t.Parallel()
	for path, want := range map[string]string{
		"/opt/bin/provider-hello":             "hello",
		"./openhuman-provider-Weather.sh":     "weather",
		"/x/My Tool v2":                       "my-tool-v2",
		"/x/notes_sync":                       "notes_sync",
		"/x/openhuman-host-extra.provider.js": "host-extra-provider",
		"/x/a -- b":                           "a-b",
		"/x/_tool-":                           "tool",
	} {
		if got, err := providerNameFor(path); got != want || err != nil {
			t.Errorf("providerNameFor(%q) = %q, %v, want %q", path, got, err, want)
		}
	}
	for _, path := range []string{"/x/文字", "/x/.hidden", "/x/ünï-çødé", "/x/café", "/x/\u212aelvin", "/x/2fa", "/x/---", "/x/" + strings.Repeat("a", 33)} {
		if got, err := providerNameFor(path); err == nil || !strings.Contains(err.Error(), "cannot derive a provider name from "+strconv.Quote(filepath.Base(path))+"; pass --name NAME") {
			t.Errorf("providerNameFor(%q) = %q, %v, want an error", path, got, err)
		}
	}
}

func TestProvidersAddAndStatus(t *testing.T) {
	home := cliHome(t, "")
	bin, sum := kitProvider(t)
	// A copy named like a provider, to check the derived name.
	exe := filepath.Join(home, "openhuman-provider-kit")
	copyKit(t, exe, nil)
	out, err := runCLI(t, "providers", "add", exe)
	if err != nil {
		t.Fatalf("providers add: %v\n%s", err, out)
	}
	cfgPath := filepath.Join(home, "config", "openhuman-host", "config.toml")
	cfg, err := config.Load(cfgPath)
	if err != nil {
		t.Fatal(err)
	}
	if p := cfg.Providers["kit"]; p.Command != exe || p.SHA256 != sum || !p.Enabled {
		t.Fatalf("config entry = %+v", p)
	}
	if fi, err := os.Stat(cfgPath); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("config file mode: %v %v", fi.Mode(), err)
	}

	// No server runs: status starts the providers once.
	out, err = runCLI(t, "providers", "status")
	if err != nil {
		t.Fatalf("providers status: %v\n%s", err, out)
	}
	if !strings.Contains(out, "No openhuman-host server is running") || !regexpMatch(t, `(?m)^kit\s+running\s+-\s+0\s+12\s`, out) || !regexpMatch(t, `(?m)^memory\s+running\s+host\s`, out) {
		t.Errorf("status without a server (a stopped provider's pid is -):\n%s", out)
	}

	// Rebuilt (changed) binary: refused until add --force.
	copyKit(t, exe, []byte{0})
	out, err = runCLI(t, "providers", "status", "--json")
	var ee *exitError
	if !errors.As(err, &ee) || ee.code != 1 {
		t.Fatalf("status with a tampered provider: err %v", err)
	}
	var reports []host.StatusReport
	if err := json.Unmarshal([]byte(out), &reports); err != nil || len(reports) != 1 {
		t.Fatalf("status --json: %v\n%s", err, out)
	}
	var kit plugins.Status
	for _, p := range reports[0].Providers {
		if p.Name == "kit" {
			kit = p
		}
	}
	if kit.State != plugins.StateFailed || !strings.Contains(kit.LastError, "checksum mismatch") {
		t.Errorf("kit status = %+v", kit)
	}
	if _, err := runCLI(t, "providers", "add", exe); err == nil || !strings.Contains(err.Error(), "already exists") {
		t.Errorf("second add without --force: %v", err)
	}
	if out, err := runCLI(t, "providers", "add", "--force", exe); err != nil {
		t.Fatalf("add --force: %v\n%s", err, out)
	}
	// Each provider's line says where it runs.
	if out, err := runCLI(t, "config", "check"); err != nil || !strings.Contains(out, "\n# provider kit loads: 12 tools, 0 resources (version 1), in a plugin process of its own\n") ||
		!regexpMatch(t, `(?m)^# provider memory loads: \d+ tools, \d+ resources \(version [^)]+\), in the host's process$`, out) {
		t.Errorf("config check after add --force: %v\n%s", err, out)
	}
	if out, err := runCLI(t, "tools", "call", "kit.ping", "{}"); err != nil || !strings.HasPrefix(out, "pong ") {
		t.Errorf("kit.ping after add --force: %v %q", err, out)
	}

	// Not executable, and built-in names.
	if err := os.Chmod(exe, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := runCLI(t, "providers", "add", "--name", "other", exe); err == nil || !strings.Contains(err.Error(), "chmod +x") {
		t.Errorf("add of a non-executable file: %v", err)
	}
	if _, err := runCLI(t, "providers", "add", "--name", "memory", bin); err == nil || !strings.Contains(err.Error(), "built-in provider") {
		t.Errorf("add under a built-in name: %v", err)
	}
}

// A running server's status is read from its status file; the file goes
// when the server stops.
func TestProvidersStatusOfARunningServer(t *testing.T) {
	home := cliHome(t, "")
	bin, _ := kitProvider(t)
	env := append(os.Environ(), cliEnv+"=1")
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	add := exec.Command(exe, "providers", "add", "--name", "kit", bin)
	add.Env = env
	if out, err := add.CombinedOutput(); err != nil {
		t.Fatalf("providers add: %v\n%s", err, out)
	}
	serve := exec.Command(exe, "serve")
	serve.Env = append(env, "OPENHUMAN_REPLICA=web-7")
	stdin, err := serve.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := serve.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = serve.Process.Kill(); _ = serve.Wait() }()
	runDir := filepath.Join(home, "data", "openhuman-host", "run")
	statusPath := filepath.Join(runDir, "serve-"+itoa(serve.Process.Pid)+".json")
	testwait.Until(t, "status file", func() bool { _, err := os.Stat(statusPath); return err == nil })
	status := exec.Command(exe, "providers", "status")
	status.Env = env
	out, err := status.Output()
	if err != nil {
		t.Fatalf("providers status: %v\n%s", err, out)
	}
	if !regexpMatch(t, `^server replica web-7, pid `+itoa(serve.Process.Pid)+`, up `, string(out)) || !regexpMatch(t, `(?m)^kit\s+running\s+\d+\s+0\s+12\s`, string(out)) {
		t.Errorf("status of a running server:\n%s", out)
	}
	_ = stdin.Close()
	if err := serve.Wait(); err != nil {
		t.Fatalf("serve: %v", err)
	}
	if _, err := os.Stat(statusPath); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("status file left after the server stopped: %v", err)
	}
}

func itoa(n int) string { return strconv.Itoa(n) }

func regexpMatch(t *testing.T, pattern, s string) bool {
	t.Helper()
	return regexp.MustCompile(pattern).MatchString(s)
}

// writeExecutable writes a small executable file and returns its path.
func writeExecutable(t *testing.T, dir, name string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte("#!/bin/sh\nexit 0\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestProvidersAddConcurrently(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	exe := writeExecutable(t, dir, "tool")
	for round := range 3 {
		cfgPath := filepath.Join(dir, "config-"+itoa(round)+".toml")
		errs := make(chan error, 10)
		for i := range 10 {
			go func() {
				out, err := runCLI(t, "--config", cfgPath, "providers", "add", "--name", "p"+itoa(i), exe)
				if err != nil {
					err = errors.New(err.Error() + "\n" + out)
				}
				errs <- err
			}()
		}
		for range 10 {
			if err := <-errs; err != nil {
				t.Error(err)
			}
		}
		cfg, err := config.Load(cfgPath)
		if err != nil {
			t.Fatal(err)
		}
		for i := range 10 {
			if p, ok := cfg.Providers["p"+itoa(i)]; !ok || p.Command != exe {
				t.Errorf("%s: providers.p%d = %+v, %v", cfgPath, i, p, ok)
			}
		}
	}
}

func TestProvidersAddFiles(t *testing.T) {
	t.Parallel()
	t.Run("symlinked config", func(t *testing.T) {
		t.Parallel()
		dir := t.TempDir()
		exe := writeExecutable(t, dir, "tool")
		real := filepath.Join(dir, "dotfiles", "config.toml")
		if err := os.MkdirAll(filepath.Dir(real), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(real, []byte("[server]\nlog_level = \"info\"\n"), 0o640); err != nil {
			t.Fatal(err)
		}
		link := filepath.Join(dir, "config.toml")
		if err := os.Symlink(filepath.Join("dotfiles", "config.toml"), link); err != nil {
			t.Fatal(err)
		}
		if out, err := runCLI(t, "--config", link, "providers", "add", exe); err != nil {
			t.Fatalf("add: %v\n%s", err, out)
		}
		if fi, err := os.Lstat(link); err != nil || fi.Mode()&os.ModeSymlink == 0 {
			t.Fatalf("the config is no longer a symlink: %v %v", fi.Mode(), err)
		}
		fi, err := os.Stat(real)
		if err != nil || fi.Mode().Perm() != 0o640 {
			t.Errorf("target mode: %v %v", fi.Mode(), err)
		}
		if b, _ := os.ReadFile(real); !strings.Contains(string(b), "[providers.tool]") || !strings.HasPrefix(string(b), "[server]\n") {
			t.Errorf("target:\n%s", b)
		}
	})
	t.Run("dangling symlink", func(t *testing.T) {
		t.Parallel()
		dir := t.TempDir()
		exe := writeExecutable(t, dir, "tool")
		real := filepath.Join(dir, "elsewhere", "config.toml")
		link := filepath.Join(dir, "config.toml")
		if err := os.Symlink(real, link); err != nil {
			t.Fatal(err)
		}
		if out, err := runCLI(t, "--config", link, "providers", "add", exe); err != nil {
			t.Fatalf("add: %v\n%s", err, out)
		}
		if fi, err := os.Lstat(link); err != nil || fi.Mode()&os.ModeSymlink == 0 {
			t.Fatalf("the config is no longer a symlink: %v %v", fi.Mode(), err)
		}
		if b, err := os.ReadFile(real); err != nil || !strings.Contains(string(b), "[providers.tool]") {
			t.Errorf("target: %v\n%s", err, b)
		}
	})
	t.Run("byte order mark", func(t *testing.T) {
		t.Parallel()
		dir := t.TempDir()
		exe := writeExecutable(t, dir, "tool")
		cfgPath := filepath.Join(dir, "config.toml")
		if err := os.WriteFile(cfgPath, []byte("\ufeff[server]\nlog_level = \"info\"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		if out, err := runCLI(t, "--config", cfgPath, "config", "check"); err != nil {
			t.Fatalf("config check: %v\n%s", err, out)
		}
		if out, err := runCLI(t, "--config", cfgPath, "providers", "add", exe); err != nil {
			t.Fatalf("add: %v\n%s", err, out)
		}
		b, _ := os.ReadFile(cfgPath)
		if !strings.HasPrefix(string(b), "\ufeff[server]\n") || !strings.Contains(string(b), "\n[providers.tool]\n") {
			t.Errorf("config:\n%q", b)
		}
	})
	t.Run("names", func(t *testing.T) {
		t.Parallel()
		dir := t.TempDir()
		cfgPath := filepath.Join(dir, "config.toml")
		for _, tc := range []struct {
			file, name, wantErr string
		}{
			{file: "tool", name: "Bad Name", wantErr: `invalid provider name "Bad Name"`},
			{file: "tool", name: "-x", wantErr: `invalid provider name "-x"`},
			{file: "tool", name: strings.Repeat("a", 33), wantErr: "invalid provider name"},
			{file: "文字", wantErr: `cannot derive a provider name from "文字"; pass --name NAME`},
			{file: ".hidden", wantErr: `cannot derive a provider name from ".hidden"; pass --name NAME`},
			{file: "ünï-çødé", wantErr: "cannot derive a provider name from"},
			{file: "2fa", wantErr: "cannot derive a provider name from"},
			{file: "tool\xff", wantErr: "is not valid UTF-8; TOML cannot hold it: move the file"},
		} {
			exe := writeExecutable(t, dir, tc.file)
			args := []string{"--config", cfgPath, "providers", "add", exe}
			if tc.name != "" {
				args = append(args, "--name", tc.name)
			}
			if _, err := runCLI(t, args...); err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("add %q --name %q: %v, want %q", tc.file, tc.name, err, tc.wantErr)
			}
		}
		if _, err := os.Stat(cfgPath); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("config written after failed adds: %v", err)
		}
		exe := writeExecutable(t, dir, "My--Tool__")
		if out, err := runCLI(t, "--config", cfgPath, "providers", "add", exe); err != nil || !strings.Contains(out, "[providers.my-tool]") {
			t.Errorf("add: %v\n%s", err, out)
		}
	})
}

// startServeLike starts a process whose command line holds "serve", as a
// server's does, and returns its pid.
func startServeLike(t *testing.T) int {
	t.Helper()
	cmd := exec.Command("sh", "-c", "sleep 60; exit 0", "serve")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	return cmd.Process.Pid
}

func TestProvidersStatusFiles(t *testing.T) {
	t.Parallel()
	if _, err := os.Stat("/proc/self/stat"); err != nil {
		t.Skip("needs /proc")
	}
	dataDir := t.TempDir()
	runDir := statusDir(dataDir)
	if err := os.MkdirAll(runDir, 0o700); err != nil {
		t.Fatal(err)
	}
	write := func(name string, v any) {
		t.Helper()
		var b []byte
		switch v := v.(type) {
		case string:
			b = []byte(v)
		default:
			b, _ = json.Marshal(v)
		}
		if err := os.WriteFile(filepath.Join(runDir, name), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	live := startServeLike(t)
	reused := startServeLike(t)
	other := startServeLike(t)
	now := time.Now()
	write("serve-"+itoa(live)+".json", host.StatusReport{Pid: live, Started: now})
	// A server that started an hour ago and was killed; its pid now belongs
	// to a younger process.
	write("serve-"+itoa(reused)+".json", host.StatusReport{Pid: reused, Started: now.Add(-time.Hour)})
	// The pid inside does not match the name.
	write("serve-"+itoa(other)+".json", host.StatusReport{Pid: live, Started: now})
	// This test process is running, but it is no server.
	write("serve-"+itoa(os.Getpid())+".json", host.StatusReport{Pid: os.Getpid(), Started: now})
	write("serve-1.json", "{")
	write("serve-2.json", "")
	write("serve-x.json", `{"pid": 1}`)
	write("notes.txt", "keep")
	write(".status-123", "keep")

	reports, err := readStatusReports(dataDir)
	if err != nil {
		t.Fatal(err)
	}
	if len(reports) != 1 || reports[0].Pid != live {
		t.Errorf("reports = %+v, want only pid %d", reports, live)
	}
	entries, err := os.ReadDir(runDir)
	if err != nil {
		t.Fatal(err)
	}
	var left []string
	for _, e := range entries {
		left = append(left, e.Name())
	}
	want := []string{".status-123", "notes.txt", "serve-" + itoa(live) + ".json"}
	if diff := cmp.Diff(want, left); diff != "" {
		t.Errorf("files left (-want +got):\n%s", diff)
	}
}

func TestProvidersStatusTable(t *testing.T) {
	t.Parallel()
	reports := []host.StatusReport{{Pid: 42, Started: time.Now(), Providers: []plugins.Status{
		{Name: "kit", State: plugins.StateFailed, Tools: 9, LastError: "boom \x1b[2J\x1b]0;pwned\x07 \x1b[31mred\x1b[0m\x9b1m\u009b2J\x00\x7f end"},
		{Name: "memory", State: plugins.StateRunning, Pid: 7, Tools: 12},
		{Name: "upstream", State: plugins.StateRunning, Pid: 42, InHost: true, Tools: 3},
	}}}
	var b bytes.Buffer
	printStatus(&b, reports, true)
	out := b.String()
	if strings.ContainsAny(out, "\x1b\x07\x00\x7f\u009b") {
		t.Errorf("control characters printed: %q", out)
	}
	if !regexpMatch(t, `(?m)^kit\s+failed\s+-\s+0\s+-\s+\S.*\sboom red\x{FFFD}1m end$`, out) {
		t.Errorf("failed provider line:\n%s", out)
	}
	if !regexpMatch(t, `(?m)^memory\s+running\s+7\s+0\s+12\s`, out) {
		t.Errorf("running provider line:\n%s", out)
	}
	if !regexpMatch(t, `(?m)^upstream\s+running\s+host\s+0\s+3\s`, out) {
		t.Errorf("line of a provider in the host's process:\n%s", out)
	}
}

func TestProvidersStatusProcCheck(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	const btime = 1_700_000_000
	write := func(name, content string) {
		t.Helper()
		p := filepath.Join(root, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("stat", "cpu  1 2 3\nbtime "+itoa(btime)+"\nprocesses 9\n")
	// A process started 1000 s after boot (100000 ticks), its name holding
	// a space and a parenthesis.
	stat := func(pid int) string {
		return itoa(pid) + " (open) human) S 1 1 1 0 -1 4194560 0 0 0 0 0 0 0 0 20 0 1 0 100000 0 0\n"
	}
	write("10/stat", stat(10))
	write("10/cmdline", "/usr/bin/openhuman-host\x00--config\x00/x.toml\x00serve\x00")
	write("11/stat", stat(11))
	write("11/cmdline", "/usr/bin/openhuman-host\x00tools\x00list\x00")
	write("12/stat", "12 (kworker) S\n")
	write("12/cmdline", "openhuman-host\x00serve\x00")
	write("13/stat", stat(13))
	write("13/cmdline", "")
	start := time.Unix(btime+1000, 0)
	for _, tc := range []struct {
		pid     int
		started time.Time
		want    bool
	}{
		{10, start.Add(300 * time.Millisecond), true},
		{10, start.Add(-time.Second), true}, // within the slack
		{10, start.Add(-time.Minute), false},
		{11, start, false},
		{12, start, false},
		{13, start, false},
		{14, start, false},
	} {
		if got := procServerRunning(root, tc.pid, tc.started); got != tc.want {
			t.Errorf("procServerRunning(pid %d, started %s) = %v, want %v", tc.pid, tc.started.Sub(start), got, tc.want)
		}
	}
}

func TestProvidersAddFollowSymlinks(t *testing.T) {
	t.Parallel()
	root, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	mkdir := func(p string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Join(root, p), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	link := func(target, p string) {
		t.Helper()
		if err := os.Symlink(target, filepath.Join(root, p)); err != nil {
			t.Fatal(err)
		}
	}
	mkdir("a/b/real")
	mkdir("a/b/other")
	link("a/b/real", "d")
	// Relative to where d really is: a/b/other/config.toml, not other/...
	link("../other/config.toml", "a/b/real/config.toml")
	link("config.toml", "a/b/other/again.toml")
	link("loop", "loop")
	for p, want := range map[string]string{
		"d/config.toml":           "a/b/other/config.toml",
		"a/b/other/again.toml":    "a/b/other/config.toml",
		"d/plain.toml":            "a/b/real/plain.toml",
		"missing/dir/config.toml": "missing/dir/config.toml",
	} {
		got, err := followSymlinks(filepath.Join(root, p))
		if err != nil || got != filepath.Join(root, want) {
			t.Errorf("followSymlinks(%s) = %s, %v, want %s", p, got, err, want)
		}
	}
	if got, err := followSymlinks(filepath.Join(root, "loop")); err == nil {
		t.Errorf("followSymlinks(loop) = %s, want an error", got)
	}
}
