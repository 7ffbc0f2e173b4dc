package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"testing"

	"github.com/openhuman/openhuman-host/providers/memory/memorytool"
)

// memoryCLI runs the binary with cfgPath and returns its stdout and
// stderr apart.
func memoryCLI(t *testing.T, exe, cfgPath string, stdin []byte, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	cmd := exec.Command(exe, append([]string{"--config", cfgPath}, args...)...)
	cmd.Env = append(os.Environ(), cliEnv+"=1")
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if stdin != nil {
		cmd.Stdin = bytes.NewReader(stdin)
	}
	err = cmd.Run()
	return out.String(), errOut.String(), err
}

// statsWithoutFile is memory stats' output without the lines that name
// the database and its size.
func statsWithoutFile(s string) string {
	return regexp.MustCompile(`(?m)^(database|size)\t.*\n`).ReplaceAllString(s, "")
}

// TestMemoryExportImportBackupCommands exports a memory to JSON Lines,
// stdout and Markdown, backs it up, and restores the export and the
// backup into other data directories, which then hold the same.
func TestMemoryExportImportBackupCommands(t *testing.T) {
	t.Parallel()
	exe := testExe(t)
	dataDir := t.TempDir()
	cfgPath := serveConfig(t, dataDir)
	run := func(stdin []byte, args ...string) (string, string) {
		t.Helper()
		out, errOut, err := memoryCLI(t, exe, cfgPath, stdin, args...)
		if err != nil {
			t.Fatalf("%s: %v\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), err, out, errOut)
		}
		return out, errOut
	}
	notes := t.TempDir()
	for name, body := range map[string]string{"a.md": "# Harbour\n\nMeet ana@example.com at the harbour.\n", "b.txt": "Plain notes about #reef.\n"} {
		if err := os.WriteFile(filepath.Join(notes, name), []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	run(nil, "memory", "import", notes)
	run(nil, "tools", "call", memorytool.Store, `{"title":"Work plan","namespace":"work","content":"Ship it on 2026-11-30.","tags":["plan"]}`)
	stats, _ := run(nil, "memory", "stats")

	out := t.TempDir()
	jsonl := filepath.Join(out, "memory.jsonl")
	stdout, _ := run(nil, "memory", "export", "--embeddings", jsonl)
	if want := "exported 3 documents (3 chunks, 0 chunk tags, 0 embeddings, 3 entity records, 0 previous versions) from 2 sources to " + jsonl; !strings.HasPrefix(stdout, want) {
		t.Errorf("memory export printed %q, want it to start with %q", stdout, want)
	}
	data, err := os.ReadFile(jsonl)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.HasPrefix(data, []byte(`{"type":"header","format":"openhuman-host-memory","version":2,`)) ||
		!bytes.HasSuffix(data, []byte(`{"type":"end","counts":{"source":2,"document":3,"chunk":3,"chunk_tag":0,"embedding":0,"entity":3,"version":0}}`+"\n")) {
		t.Errorf("the export file:\n%s", data)
	}
	if info, _ := os.Stat(jsonl); runtime.GOOS != "windows" && info.Mode().Perm() != 0o600 {
		t.Errorf("the export has mode %v, want 0600", info.Mode().Perm())
	}
	if _, errOut, err := memoryCLI(t, exe, cfgPath, nil, "memory", "export", jsonl); err == nil || !strings.Contains(errOut, "exists; choose another name, or pass --overwrite") {
		t.Errorf("memory export over an existing file: %v\n%s", err, errOut)
	}
	run(nil, "memory", "export", "--overwrite", jsonl)

	// To stdout: the file is stdout, the summary goes to stderr.
	piped, summary := run(nil, "memory", "export", "--namespace", "work", "-")
	if !strings.HasPrefix(piped, `{"type":"header"`) || !strings.Contains(piped, `"namespace":"work"`) || strings.Contains(piped, `"namespace":"file"`) ||
		!strings.HasPrefix(summary, "exported 1 document ") {
		t.Errorf("memory export - printed\n%s\nstderr:\n%s", piped, summary)
	}

	md := filepath.Join(out, "md")
	stdout, _ = run(nil, "memory", "export", "--format", "markdown", md)
	if !strings.HasPrefix(stdout, "exported 3 documents as Markdown to "+md) {
		t.Errorf("memory export --format markdown printed %q", stdout)
	}
	for _, f := range []string{"file/a.md", "file/b.md", "work/mcp-store-work-plan.md"} {
		body, err := os.ReadFile(filepath.Join(md, filepath.FromSlash(f)))
		if err != nil {
			t.Errorf("the Markdown export lacks %s: %v", f, err)
		} else if !strings.HasPrefix(string(body), "---\ntitle: ") {
			t.Errorf("%s has no front matter:\n%s", f, body)
		}
	}

	backup := filepath.Join(out, "backup.db")
	stdout, _ = run(nil, "memory", "backup", backup)
	if !strings.HasPrefix(stdout, "backed up memory to "+backup+" (") {
		t.Errorf("memory backup printed %q", stdout)
	}
	if _, errOut, err := memoryCLI(t, exe, cfgPath, nil, "memory", "backup", backup); err == nil || !strings.Contains(errOut, "backup never overwrites a file") {
		t.Errorf("memory backup over an existing file: %v\n%s", err, errOut)
	}

	// Restore the export into a new data directory, from a file and from
	// stdin: the second replaces what the first wrote.
	cfg2 := serveConfig(t, t.TempDir())
	run2 := func(stdin []byte, args ...string) string {
		t.Helper()
		out, errOut, err := memoryCLI(t, exe, cfg2, stdin, args...)
		if err != nil {
			t.Fatalf("%s: %v\n%s%s", strings.Join(args, " "), err, out, errOut)
		}
		return out
	}
	stdout = run2(nil, "memory", "import", jsonl)
	if !regexp.MustCompile(`^restored .*memory\.jsonl, exported \S+ \(every namespace\): 3 documents \(3 new, 0 replaced\), 3 chunks, 0 chunk tags, 0 embeddings, 3 entity records, 0 previous versions; `).MatchString(stdout) {
		t.Errorf("memory import of an export printed %q", stdout)
	}
	stdout = run2(data, "memory", "import", "-")
	if !strings.Contains(stdout, "restored stdin, exported ") || !strings.Contains(stdout, "3 documents (0 new, 3 replaced)") {
		t.Errorf("memory import - printed %q", stdout)
	}
	if got := run2(nil, "memory", "stats"); statsWithoutFile(got) != statsWithoutFile(stats) {
		t.Errorf("stats after restoring:\n%s\nwant:\n%s", got, stats)
	}
	if got := run2(nil, "tools", "call", memorytool.Search, `{"query":"harbour"}`); !strings.Contains(got, "ana@example.com") {
		t.Errorf(memorytool.Search+" after restoring:\n%s", got)
	}
	// Folders and Markdown files still import as files.
	if stdout := run2(nil, "memory", "import", notes); !strings.HasPrefix(stdout, "2 files found: 0 imported (new or changed), 2 unchanged") {
		t.Errorf("memory import of a folder after restoring printed %q", stdout)
	}
	// A file cut short is refused, and changes nothing.
	cut := filepath.Join(out, "cut.jsonl")
	if err := os.WriteFile(cut, data[:bytes.LastIndexByte(data[:len(data)-1], '\n')+1], 0o600); err != nil {
		t.Fatal(err)
	}
	if _, errOut, err := memoryCLI(t, exe, cfg2, nil, "memory", "import", cut); err == nil || !strings.Contains(errOut, "without its end record: it was cut short; nothing was changed") {
		t.Errorf("memory import of a file cut short: %v\n%s", err, errOut)
	}

	// The backup, put in place of memory.db, holds the same.
	dataDir3 := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dataDir3, "memory"), 0o700); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(backup)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dataDir3, "memory", "memory.db"), b, 0o600); err != nil {
		t.Fatal(err)
	}
	if got, errOut, err := memoryCLI(t, exe, serveConfig(t, dataDir3), nil, "memory", "stats"); err != nil || statsWithoutFile(got) != statsWithoutFile(stats) {
		t.Errorf("stats of the backup: %v\n%s%s\nwant:\n%s", err, got, errOut, stats)
	}
}
