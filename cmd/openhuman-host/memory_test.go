package main

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/openhuman/openhuman-host/providers/memory/memorytool"
	"github.com/openhuman/openhuman-host/sdk/testwait"
)

// TestMemoryRecoverCommand damages memory.db the way a failing disk does
// and takes the way out the refusal names: memory recover waits for the
// server to stop, keeps the damaged file and rebuilds the rest.
func TestMemoryRecoverCommand(t *testing.T) {
	t.Parallel()
	exe := testExe(t)
	dataDir := t.TempDir()
	cfgPath := serveConfig(t, dataDir)
	cli := func(args ...string) (string, error) {
		cmd := exec.Command(exe, append([]string{"--config", cfgPath}, args...)...)
		cmd.Env = append(os.Environ(), cliEnv+"=1")
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	// Enough files between the two that they do not share a page.
	notes := t.TempDir()
	files := map[string]string{"a.md": "# kept\n\nRECOVER-KEPT harbour notes\n", "z.md": "# damaged\n\nRECOVER-DAMAGED notes\n"}
	for i := range 30 {
		files[fmt.Sprintf("m%02d.md", i)] = fmt.Sprintf("# filler %d\n\n%s\n", i, strings.Repeat("Filler sentence for size. ", 60))
	}
	for name, body := range files {
		if err := os.WriteFile(filepath.Join(notes, name), []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if out, err := cli("memory", "import", notes); err != nil {
		t.Fatalf("memory import: %v\n%s", err, out)
	}
	path := filepath.Join(dataDir, "memory", "memory.db")
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	size := int(binary.BigEndian.Uint16(b[16:18]))
	for at := bytes.Index(b, []byte("RECOVER-DAMAGED")); at >= 0; at = bytes.Index(b, []byte("RECOVER-DAMAGED")) {
		copy(b[at/size*size:], bytes.Repeat([]byte{0x5A}, size))
	}
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	if out, err := cli("memory", "stats"); err == nil || !strings.Contains(out, "run `openhuman-host memory recover`") {
		t.Fatalf("memory stats on a damaged database: %v\n%s", err, out)
	}

	// Not while a server runs on the data directory.
	cs := serveStdio(t, exec.Command(exe, "--config", cfgPath, "serve"))
	running := func() bool { m, _ := filepath.Glob(filepath.Join(dataDir, "run", "serve-*.json")); return len(m) > 0 }
	testwait.Until(t, "the server's status file", running)
	if out, err := cli("memory", "recover"); err == nil || !strings.Contains(out, "1 server running on "+dataDir) {
		t.Fatalf("memory recover while a server runs: %v\n%s", err, out)
	}
	if err := cs.Close(); err != nil {
		t.Logf("close: %v", err)
	}
	testwait.Until(t, "the server to remove its status file", func() bool { return !running() })

	out, err := cli("memory", "recover")
	if err != nil {
		t.Fatalf("memory recover: %v\n%s", err, out)
	}
	// The damaged page held z.md's chunk and the few stored next to it.
	lost := strings.Count(out, "\nlost: ")
	if lost < 1 || lost > 4 {
		t.Errorf("memory recover lost %d documents, want the 1 to 4 on the damaged page:\n%s", lost, out)
	}
	for _, want := range []string{
		"the old database is kept as " + path + ".damaged-",
		fmt.Sprintf("rebuilt memory.db: 1 source, %d documents, %d chunks,", 32-lost, 32-lost),
		"could not be read: chunks (1 region)",
		"/z.md: damaged\n",
		"run `openhuman-host memory import` again",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("memory recover printed\n%s\nwant a line with %q", out, want)
		}
	}
	if out, err := cli("memory", "recover"); err != nil || !strings.Contains(out, "passed SQLite's integrity check; nothing to do (--force rebuilds it anyway)") {
		t.Errorf("memory recover on the rebuilt database: %v\n%s", err, out)
	}
	if out, err := cli("tools", "call", memorytool.Search, `{"query":"RECOVER-KEPT"}`); err != nil || !strings.Contains(out, "harbour notes") {
		t.Errorf(memorytool.Search+" after recover: %v\n%s", err, out)
	}
}
