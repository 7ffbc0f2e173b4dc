package main

import (
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/openhuman/openhuman-host/host/audit"
	"github.com/openhuman/openhuman-host/providers/agent/agenttool"
	"github.com/openhuman/openhuman-host/providers/memory/memorytool"
	"github.com/openhuman/openhuman-host/sdk/testwait"
)

// actTitles returns the title of every allowed [memorytool.Store] row of
// rows, with how many rows have it.
func actTitles(t *testing.T, rows []audit.Record) map[string]int {
	t.Helper()
	out := map[string]int{}
	for _, r := range rows {
		if r.Tool != memorytool.Store {
			continue
		}
		var args struct{ Title string }
		if err := json.Unmarshal([]byte(r.ArgsSummary), &args); err != nil {
			t.Fatalf("row %d: args_summary %q: %v", r.ID, r.ArgsSummary, err)
		}
		if r.Decision == audit.DecisionAllowed {
			out[args.Title]++
		}
	}
	return out
}

// TestAuditDiskFull runs the server with its data directory on a small
// tmpfs (in a user and mount namespace of its own), fills it, and checks
// the audit rule: reads keep answering, acts are refused naming the audit
// failure, nothing hangs, acts succeed again once space returns, and every
// acknowledged act has its row.
func TestAuditDiskFull(t *testing.T) {
	t.Parallel()
	cs, inside := serveOnTmpfs(t, "16m", "")

	acked := map[string]bool{}
	store := func(title string) (string, bool) {
		text, isErr := mcpCallText(t, cs, memorytool.Store, fmt.Sprintf(`{"title":%q,"content":"disk full test note %s"}`, title, title))
		if !isErr {
			acked[title] = true
		}
		return text, isErr
	}
	for i := range 3 {
		if text, isErr := store(fmt.Sprintf("before-%d", i)); isErr {
			t.Fatalf("store before the disk is full: %s", text)
		}
	}

	filler := filepath.Join(inside, "filler")
	f, err := os.Create(filler)
	if err != nil {
		t.Fatal(err)
	}
	_, err = io.Copy(f, zeros{})
	f.Close()
	if !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("filling the tmpfs: %v, want ENOSPC", err)
	}

	refused := ""
	for i := 0; refused == "" && i < 500; i++ {
		if text, isErr := mcpCallText(t, cs, memorytool.Search, `{"query":"disk full test note"}`); isErr {
			t.Fatalf("read %d while the disk is full failed: %s", i, text)
		}
		if i%10 != 0 {
			continue
		}
		text, isErr := store(fmt.Sprintf("full-%d", i))
		if isErr && strings.Contains(text, "the audit log could not record it first") {
			refused = text
		}
	}
	if refused == "" {
		t.Fatal("no act was refused for its audit row while the disk was full")
	}
	if !strings.Contains(refused, "full") {
		t.Errorf("refusal = %q, want it to say the disk is full", refused)
	}

	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	if text, isErr := store("after"); isErr {
		t.Fatalf("store once space returned: %s", text)
	}
	if text, isErr := mcpCallText(t, cs, memorytool.Search, `{"query":"after"}`); isErr || !strings.Contains(text, "after") {
		t.Errorf("search once space returned = %q (isError %v), want the stored note", text, isErr)
	}

	audited, err := copiedRows(t, inside)
	if err != nil {
		t.Fatal(err)
	}
	rows := actTitles(t, audited)
	for title := range acked {
		if rows[title] != 1 {
			t.Errorf("acknowledged act %q has %d audit rows, want 1", title, rows[title])
		}
	}
}

type zeros struct{}

func (zeros) Read(p []byte) (int, error) {
	clear(p)
	return len(p), nil
}

// TestAuditKillDuringWrites kills the server with SIGKILL while clients
// store notes, several times, and checks that every stored document has
// its audit row and every acknowledged one was stored.
func TestAuditKillDuringWrites(t *testing.T) {
	t.Parallel()
	exe := testExe(t)
	dataDir := t.TempDir()
	cfgPath := serveConfig(t, dataDir)
	const (
		rounds  = 5
		writers = 4
		ackKill = 12 // acknowledged stores per round before the kill
	)
	var (
		mu    sync.Mutex
		acked = map[string]bool{}
	)
	for round := range rounds {
		cmd := exec.Command(exe, "--config", cfgPath, "serve")
		cs := serveStdio(t, cmd)
		enough := make(chan struct{})
		var once sync.Once
		n := 0
		var wg sync.WaitGroup
		for w := range writers {
			wg.Go(func() {
				for i := 0; ; i++ {
					title := fmt.Sprintf("r%d-w%d-%d", round, w, i)
					res, err := cs.CallTool(testwait.Context(t), &mcp.CallToolParams{Name: memorytool.Store,
						Arguments: map[string]any{"title": title, "content": "kill test note " + title}})
					if err != nil {
						return // the server is gone
					}
					if res.IsError {
						t.Errorf("store %s: %v", title, res.Content)
						return
					}
					mu.Lock()
					acked[title] = true
					n++
					if n >= ackKill {
						once.Do(func() { close(enough) })
					}
					mu.Unlock()
				}
			})
		}
		testwait.Recv(t, enough, fmt.Sprintf("round %d: %d acknowledged stores", round, ackKill))
		if err := cmd.Process.Kill(); err != nil {
			t.Fatal(err)
		}
		wg.Wait()
		_ = cs.Close()
	}

	// The providers of the killed servers die with them; wait until no
	// process holds memory.db, so every write they made is in it.
	testwait.Until(t, "the killed servers' providers to exit", func() bool { return !fileInUse(t, filepath.Join(dataDir, "memory", "memory.db")) })

	db, err := sql.Open("sqlite3", "file:"+filepath.Join(dataDir, "memory", "memory.db")+"?mode=ro")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	stored := map[string]bool{}
	rows, err := db.QueryContext(t.Context(), "SELECT title FROM documents")
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var title string
		if err := rows.Scan(&title); err != nil {
			t.Fatal(err)
		}
		stored[title] = true
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	rows.Close()

	audited := actTitles(t, auditRows(t, dataDir))
	for title := range acked {
		if !stored[title] {
			t.Errorf("acknowledged note %q is not stored", title)
		}
	}
	missing := 0
	for title := range stored {
		if audited[title] == 0 {
			missing++
			t.Errorf("stored note %q has no audit row", title)
		}
	}
	t.Logf("%d rounds: %d stored, %d acknowledged, %d audited acts, %d stored without a row", rounds, len(stored), len(acked), len(audited), missing)
}

// fileInUse reports whether a process has path open, from /proc.
func fileInUse(t *testing.T, path string) bool {
	t.Helper()
	fds, _ := filepath.Glob("/proc/[0-9]*/fd/*")
	for _, fd := range fds {
		if target, err := os.Readlink(fd); err == nil && target == path {
			return true
		}
	}
	return false
}

// TestCleanStopLeavesNoWAL: once a command and a server have stopped
// cleanly, memory.db has no -wal file left (the provider closed its
// database, so SQLite checkpointed it).
func TestCleanStopLeavesNoWAL(t *testing.T) {
	t.Parallel()
	exe := testExe(t)
	dataDir := t.TempDir()
	cfgPath := serveConfig(t, dataDir)
	cmd := exec.Command(exe, "--config", cfgPath, "tools", "call", memorytool.Store, `{"title":"cli","content":"from the command line"}`)
	cmd.Env = append(os.Environ(), cliEnv+"=1")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("tools call: %v\n%s", err, out)
	}
	wal := filepath.Join(dataDir, "memory", "memory.db-wal")
	if _, err := os.Stat(wal); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("after a command: %s is still there (%v)", wal, err)
	}

	srv := exec.Command(exe, "--config", cfgPath, "serve")
	cs := serveStdio(t, srv)
	if text, isErr := mcpCallText(t, cs, memorytool.Store, `{"title":"server","content":"from a client"}`); isErr {
		t.Fatal(text)
	}
	if err := cs.Close(); err != nil {
		t.Logf("close: %v", err)
	}
	testwait.Until(t, "the server's providers to exit", func() bool { return !fileInUse(t, filepath.Join(dataDir, "memory", "memory.db")) })
	if _, err := os.Stat(wal); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("after the server stopped: %s is still there (%v)", wal, err)
	}
}

// TestServeStartsOnFullDisk starts a server whose data directory is a full
// tmpfs, after a command has created its databases there: SQLite cannot
// create audit.db's -wal and -shm files, yet the server starts, answers
// reads, refuses acts naming the audit failure, and opens the audit log by
// itself once space returns, writing the rows of the calls it answered
// meanwhile.
func TestServeStartsOnFullDisk(t *testing.T) {
	t.Parallel()
	cs, inside := serveOnTmpfs(t, "8m", `"$1" --config "$2" tools call `+memorytool.Store+` '{"title":"before","content":"stored before the disk filled"}' >/dev/null &&
		{ head -c 16m /dev/zero > "$0/filler" 2>/dev/null; true; } &&`)

	if text, isErr := mcpCallText(t, cs, agenttool.ListTools, `{}`); isErr {
		t.Fatalf("a read on a full disk failed: %s", text)
	}
	const refusal = "the audit log could not record it first"
	if text, isErr := mcpCallText(t, cs, agenttool.RunSubagent, `{"agent_id":"researcher","prompt":"hi"}`); !isErr || !strings.Contains(text, refusal) {
		t.Fatalf("an act on a full disk = %q (isError %v), want it refused for the audit", text, isErr)
	}

	if err := os.Remove(filepath.Join(inside, "filler")); err != nil {
		t.Fatal(err)
	}
	testwait.Until(t, "acts to be allowed once space returned", func() bool {
		text, _ := mcpCallText(t, cs, agenttool.RunSubagent, `{"agent_id":"researcher","prompt":"hi"}`)
		return !strings.Contains(text, refusal)
	})
	if text, isErr := mcpCallText(t, cs, agenttool.ListTools, `{}`); isErr {
		t.Fatalf("a read once space returned failed: %s", text)
	}
	// The rows of the read and the refusal made while the audit log could
	// not be opened were queued, and are written now. The tmpfs lives as
	// long as the server, so copies of its files are read.
	testwait.Until(t, "the rows of the calls answered on the full disk", func() bool {
		rows, err := copiedRows(t, inside)
		if err != nil {
			t.Logf("read the audit log: %v", err)
			return false
		}
		reads, refused := 0, 0
		for _, r := range rows {
			switch {
			case r.Tool == agenttool.ListTools && r.Decision == audit.DecisionAllowed && r.Success:
				reads++
			case r.Tool == agenttool.RunSubagent && r.Decision == "denied:audit":
				refused++
			}
		}
		return reads >= 2 && refused >= 1
	})
}

// serveOnTmpfs starts `serve` on stdio with its data directory on a tmpfs
// of size (mount's size option, such as "16m") in a user and mount
// namespace of its own, after the shell commands before (each ending in
// "&&"; "" for none) have run there with "$0" the data directory, "$1"
// this test binary and "$2" the config. It skips or fails the test as
// requireTmpfsNamespace does. It returns the session, closed when the test
// ends, and the server's view of its data directory: the tmpfs, under
// /proc/<pid>/root.
func serveOnTmpfs(t *testing.T, size, before string) (*mcp.ClientSession, string) {
	t.Helper()
	requireTmpfsNamespace(t)
	dataDir := t.TempDir()
	cmd := exec.Command("unshare", "-rm", "sh", "-c", `mount -t tmpfs -o size=`+size+`,mode=0700 tmpfs "$0" && `+before+` exec "$1" --config "$2" serve`,
		dataDir, testExe(t), serveConfig(t, dataDir))
	cs := serveStdio(t, cmd)
	t.Cleanup(func() { _ = cs.Close() })
	return cs, fmt.Sprintf("/proc/%d/root%s", cmd.Process.Pid, dataDir)
}

// copiedRows reads the audit rows of the data directory dir of a running
// server from a copy of its audit.db and WAL: SQLite resolves the
// /proc/<pid>/root link of serveOnTmpfs to this namespace's root (the
// -shm index is rebuilt from the WAL).
func copiedRows(t *testing.T, dir string) ([]audit.Record, error) {
	copied := t.TempDir()
	for _, name := range []string{"audit.db", "audit.db-wal"} {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			return nil, err
		}
		if err := os.WriteFile(filepath.Join(copied, name), b, 0o600); err != nil {
			return nil, err
		}
	}
	return readAuditLog(filepath.Join(copied, "audit.db"))
}

// requireTmpfsNamespace skips the test where no unprivileged user may
// mount a tmpfs in a namespace of its own (unshare -rm), and fails it
// where root cannot, as in CI.
func requireTmpfsNamespace(t *testing.T) {
	t.Helper()
	if err := exec.Command("unshare", "-rm", "sh", "-c", "mount -t tmpfs -o size=1m tmpfs /mnt").Run(); err != nil {
		if os.Geteuid() == 0 {
			t.Fatalf("cannot mount a tmpfs in a new namespace as root (unshare -rm): %v", err)
		}
		t.Skipf("this machine lets no unprivileged user mount a tmpfs (unshare -rm): %v", err)
	}
}
