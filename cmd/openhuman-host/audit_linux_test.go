package main

import (
	"context"
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
	"github.com/openhuman/openhuman-host/internal/testwait"
)

// actTitles returns the title of every memory_store row in the audit log
// at path, with how many rows have it.
func actTitles(t *testing.T, path string) map[string]int {
	t.Helper()
	log, err := audit.Open(context.Background(), path, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer log.Close(context.Background())
	rows, err := log.List(context.Background(), audit.Query{Tool: "memory_store", Limit: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]int{}
	for _, r := range rows {
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
	if err := exec.Command("unshare", "-rm", "sh", "-c", "mount -t tmpfs -o size=1m tmpfs /mnt").Run(); err != nil {
		if os.Geteuid() == 0 {
			t.Fatalf("cannot mount a tmpfs in a new namespace as root (unshare -rm): %v", err)
		}
		t.Skipf("this machine lets no unprivileged user mount a tmpfs (unshare -rm): %v", err)
	}
	exe := testExe(t)
	dataDir := t.TempDir()
	cfgPath := serveConfig(t, dataDir)
	cmd := exec.Command("unshare", "-rm", "sh", "-c", `mount -t tmpfs -o size=16m,mode=0700 tmpfs "$0" && exec "$@"`,
		dataDir, exe, "--config", cfgPath, "serve")
	cs := serveStdio(t, cmd)
	defer cs.Close()
	// The server's view of its data directory: the tmpfs.
	inside := fmt.Sprintf("/proc/%d/root%s", cmd.Process.Pid, dataDir)

	acked := map[string]bool{}
	store := func(title string) (string, bool) {
		text, isErr := mcpCallText(t, cs, "memory_store", fmt.Sprintf(`{"title":%q,"content":"disk full test note %s"}`, title, title))
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
		if text, isErr := mcpCallText(t, cs, "memory_search", `{"query":"disk full test note"}`); isErr {
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
	if text, isErr := mcpCallText(t, cs, "memory_search", `{"query":"after"}`); isErr || !strings.Contains(text, "after") {
		t.Errorf("search once space returned = %q (isError %v), want the stored note", text, isErr)
	}

	// SQLite resolves the /proc/<pid>/root link to this namespace's root,
	// so read a copy of the database and its WAL (the -shm index is
	// rebuilt from the WAL).
	copied := t.TempDir()
	for _, name := range []string{"audit.db", "audit.db-wal"} {
		b, err := os.ReadFile(filepath.Join(inside, name))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(copied, name), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	rows := actTitles(t, filepath.Join(copied, "audit.db"))
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
					res, err := cs.CallTool(testwait.Context(t), &mcp.CallToolParams{Name: "memory_store",
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

	audited := actTitles(t, filepath.Join(dataDir, "audit.db"))
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
	cmd := exec.Command(exe, "--config", cfgPath, "tools", "call", "memory_store", `{"title":"cli","content":"from the command line"}`)
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
	if text, isErr := mcpCallText(t, cs, "memory_store", `{"title":"server","content":"from a client"}`); isErr {
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
