package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestConfigPaths(t *testing.T) {
	if runtime.GOOS == "darwin" || runtime.GOOS == "windows" {
		t.Skip("sets XDG variables, which only Linux and other Unix systems follow; the wine test checks Windows")
	}
	tests := map[string]struct {
		args []string
		env  map[string]string
		// file is written to $DIR/my.toml when set.
		file string
		// want has $DIR for the test's directory.
		want paths
	}{
		"defaults": {
			want: paths{ConfigFile: "$DIR/config/openhuman-host/config.toml", ConfigDir: "$DIR/config/openhuman-host",
				DataDir: "$DIR/data/openhuman-host", DataDirFrom: "default"},
		},
		"environment": {
			env: map[string]string{"OPENHUMAN_DATA_DIR": "$DIR/env-data"},
			want: paths{ConfigFile: "$DIR/config/openhuman-host/config.toml", ConfigDir: "$DIR/config/openhuman-host",
				DataDir: "$DIR/env-data", DataDirFrom: "OPENHUMAN_DATA_DIR"},
		},
		"config file with data_dir": {
			args: []string{"--config", "$DIR/my.toml"},
			file: "[server]\ndata_dir = \"~/from-file\"\n",
			want: paths{ConfigFile: "$DIR/my.toml", ConfigFileExists: true, ConfigDir: "$DIR",
				DataDir: "$DIR/home/from-file", DataDirFrom: "server.data_dir"},
		},
		"--data-dir wins, relative to the working directory": {
			args: []string{"--config", "$DIR/my.toml", "--data-dir", "rel/data"},
			env:  map[string]string{"OPENHUMAN_DATA_DIR": "$DIR/env-data"},
			file: "[server]\ndata_dir = \"~/from-file\"\n",
			want: paths{ConfigFile: "$DIR/my.toml", ConfigFileExists: true, ConfigDir: "$DIR",
				DataDir: "$DIR/rel/data", DataDirFrom: "--data-dir"},
		},
		"--data-dir with ~": {
			args: []string{"--data-dir", "~/tilde"},
			want: paths{ConfigFile: "$DIR/config/openhuman-host/config.toml", ConfigDir: "$DIR/config/openhuman-host",
				DataDir: "$DIR/home/tilde", DataDirFrom: "--data-dir"},
		},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			dir, err := filepath.EvalSymlinks(t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			expand := func(s string) string { return strings.ReplaceAll(s, "$DIR", dir) }
			t.Chdir(dir)
			t.Setenv("HOME", filepath.Join(dir, "home"))
			t.Setenv("XDG_CONFIG_HOME", filepath.Join(dir, "config"))
			t.Setenv("XDG_DATA_HOME", filepath.Join(dir, "data"))
			t.Setenv("OPENHUMAN_DATA_DIR", "")
			for k, v := range tt.env {
				t.Setenv(k, expand(v))
			}
			if tt.file != "" {
				if err := os.WriteFile(filepath.Join(dir, "my.toml"), []byte(tt.file), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			args := []string{"config", "paths", "--json"}
			for _, a := range tt.args {
				args = append(args, expand(a))
			}
			out, err := runCLI(t, args...)
			if err != nil {
				t.Fatalf("config paths: %v\n%s", err, out)
			}
			var got paths
			if err := json.Unmarshal([]byte(out), &got); err != nil {
				t.Fatalf("output is not JSON: %v\n%s", err, out)
			}
			want := tt.want
			for _, s := range []*string{&want.ConfigFile, &want.ConfigDir, &want.DataDir} {
				*s = expand(*s)
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("paths mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

// TestConfigPathsText checks the table a person reads, and that the note
// about XDG variables names the flags that pin the same paths.
func TestConfigPathsText(t *testing.T) {
	if runtime.GOOS == "darwin" || runtime.GOOS == "windows" {
		t.Skip("sets XDG variables, which only Linux and other Unix systems follow")
	}
	dir := t.TempDir()
	t.Setenv("XDG_CONFIG_HOME", filepath.Join(dir, "config"))
	t.Setenv("XDG_DATA_HOME", filepath.Join(dir, "data"))
	t.Setenv("OPENHUMAN_DATA_DIR", "")
	out, errOut, err := runCLIOutputs(t, "config", "paths")
	if err != nil {
		t.Fatalf("config paths: %v", err)
	}
	want := "config file  " + dir + "/config/openhuman-host/config.toml (missing: the embedded defaults apply)\n" +
		"config dir   " + dir + "/config/openhuman-host\n" +
		"data dir     " + dir + "/data/openhuman-host (default)\n"
	if diff := cmp.Diff(want, out); diff != "" {
		t.Errorf("output mismatch (-want +got):\n%s", diff)
	}
	wantNote := "note: these paths follow XDG_CONFIG_HOME and XDG_DATA_HOME, which MCP clients often do not pass to the servers they launch;\n" +
		"to be sure a client's server uses them, give it these arguments: --config " + shellQuote(dir+"/config/openhuman-host/config.toml") +
		" --data-dir " + shellQuote(dir+"/data/openhuman-host") + " serve\n"
	if diff := cmp.Diff(wantNote, errOut); diff != "" {
		t.Errorf("note mismatch (-want +got):\n%s", diff)
	}
}
