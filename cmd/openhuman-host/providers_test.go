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
)

func TestProviderNameFor(t *testing.T) {
	t.Parallel()
	for path, want := range map[string]string{
		"/opt/bin/provider-hello":             "hello",
		"./openhuman-provider-Weather.sh":     "weather",
		"/x/My Tool v2":                       "my-tool-v2",
		"/x/notes_sync":                       "notes_sync",
		"/x/openhuman-host-extra.provider.js": "host-extra-provider",
	} {
		if got := providerNameFor(path); got != want {
			t.Errorf("providerNameFor(%q) = %q, want %q", path, got, want)
		}
	}
}

func TestSetProviderEntry(t *testing.T) {
	t.Parallel()
	const sum = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
	existing := "# my config\n[server]\nlog_level = \"info\"\n\n[providers.hello]\n# keep me\ncommand = \"/old/path\"\nargs = [\n  \"--a\",\n  \"--b\", # two\n]\nsha256 = \"" + strings.Repeat("f", 64) + "\"\ngreeting_suffix = \"!\"\n\n[autonomy]\nlevel = \"full\"\n"
	tests := map[string]struct {
		doc     string
		args    []string
		force   bool
		want    string
		wantErr string
	}{
		"new file": {
			doc:  "",
			args: []string{"-v", `quote"d`},
			want: "[providers.hello]\ncommand = \"/new/hello\"\nsha256 = \"" + sum + "\"\nargs = [\"-v\", \"quote\\\"d\"]\n",
		},
		"appended to a file without a final newline": {
			doc:  "[server]\nlog_level = \"info\"",
			want: "[server]\nlog_level = \"info\"\n\n[providers.hello]\ncommand = \"/new/hello\"\nsha256 = \"" + sum + "\"\n",
		},
		"existing table refused without force": {
			doc:     existing,
			wantErr: "[providers.hello] already exists; pass --force",
		},
		"force keeps other keys, comments and args": {
			doc:   existing,
			force: true,
			want:  "# my config\n[server]\nlog_level = \"info\"\n\n[providers.hello]\ncommand = \"/new/hello\"\nsha256 = \"" + sum + "\"\n# keep me\nargs = [\n  \"--a\",\n  \"--b\", # two\n]\ngreeting_suffix = \"!\"\n\n[autonomy]\nlevel = \"full\"\n",
		},
		"force with args replaces a multi-line array": {
			doc:   existing,
			args:  []string{"--c"},
			force: true,
			want:  "# my config\n[server]\nlog_level = \"info\"\n\n[providers.hello]\ncommand = \"/new/hello\"\nsha256 = \"" + sum + "\"\nargs = [\"--c\"]\n# keep me\ngreeting_suffix = \"!\"\n\n[autonomy]\nlevel = \"full\"\n",
		},
		"invalid TOML is left alone": {
			doc:     "[server\n",
			wantErr: "not valid TOML, fix it first",
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			got, err := setProviderEntry([]byte(tc.doc), "hello", "/new/hello", sum, tc.args, tc.force)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error = %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, string(got)); diff != "" {
				t.Errorf("document (-want +got):\n%s", diff)
			}
			if _, err := config.Parse(got, "test.toml"); err != nil {
				t.Errorf("result does not load: %v", err)
			}
		})
	}
}

// runCLI runs the command line in this process with XDG paths under home.
func runCLI(t *testing.T, args ...string) (string, error) {
	t.Helper()
	var out, errOut bytes.Buffer
	cmd := newRootCmd()
	cmd.SetArgs(args)
	cmd.SetOut(&out)
	cmd.SetErr(&errOut)
	err := cmd.Execute()
	return out.String(), err
}

func TestProvidersAddAndStatus(t *testing.T) {
	home := t.TempDir()
	t.Setenv("XDG_DATA_HOME", filepath.Join(home, "data"))
	t.Setenv("XDG_CONFIG_HOME", filepath.Join(home, "config"))
	t.Setenv("OPENHUMAN_LOG_LEVEL", "off")
	bin, sum := kitProvider(t)
	// A copy named like a provider, to check the derived name.
	exe := filepath.Join(home, "openhuman-provider-kit")
	b, err := os.ReadFile(bin)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(exe, b, 0o755); err != nil {
		t.Fatal(err)
	}
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
	if !strings.Contains(out, "No openhuman-host server is running") || !regexpMatch(t, `(?m)^kit\s+running\s+\d+\s+0\s+9\s`, out) || !regexpMatch(t, `(?m)^memory\s+running\s`, out) {
		t.Errorf("status without a server:\n%s", out)
	}

	// Rebuilt (changed) binary: refused until add --force.
	if err := os.WriteFile(exe, append(b, 0), 0o755); err != nil {
		t.Fatal(err)
	}
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
	if out, err := runCLI(t, "config", "check"); err != nil || !strings.Contains(out, "\n# provider kit loads: 9 tools, 0 resources (version 1)\n") {
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
	home := t.TempDir()
	bin, _ := kitProvider(t)
	env := append(os.Environ(), cliEnv+"=1", "XDG_DATA_HOME="+filepath.Join(home, "data"), "XDG_CONFIG_HOME="+filepath.Join(home, "config"), "OPENHUMAN_LOG_LEVEL=off")
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
	serve.Env = env
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
	waitUntil(t, 20*time.Second, "status file", func() bool { _, err := os.Stat(statusPath); return err == nil })
	status := exec.Command(exe, "providers", "status")
	status.Env = env
	out, err := status.Output()
	if err != nil {
		t.Fatalf("providers status: %v\n%s", err, out)
	}
	if !regexpMatch(t, `^server pid `+itoa(serve.Process.Pid)+`, up `, string(out)) || !regexpMatch(t, `(?m)^kit\s+running\s+\d+\s+0\s+9\s`, string(out)) {
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
