package memory

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/openhuman/openhuman-host/sdk"
	"github.com/openhuman/openhuman-host/sdk/storage/filelock"
	"github.com/openhuman/openhuman-host/sdk/storage/sqliteuri"
)

// dumpMemory returns every row a recovery must keep, as text, table by
// table in a fixed order; chunks are named by id, not by pk, which a
// recovery assigns afresh.
func dumpMemory(t *testing.T, path string) map[string][]string {
	t.Helper()
	db, err := sql.Open("sqlite3", sqliteuri.File(path, "mode=ro"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	queries := map[string]string{
		"sources":    `SELECT id, kind, display_name, created_ms, updated_ms FROM sources ORDER BY id`,
		"documents":  `SELECT id, source_id, namespace, key, title, tags, COALESCE(note_chunk_id, '-'), content_sha256, created_ms, updated_ms FROM documents ORDER BY id`,
		"chunks":     `SELECT id, document_id, seq, content, created_ms, updated_ms FROM chunks ORDER BY id`,
		"chunk_tags": `SELECT chunk_id, tag, position FROM chunk_tags ORDER BY chunk_id, tag`,
		"embeddings": `SELECT c.id, e.model, e.dims, hex(e.vector), e.created_ms FROM chunk_embeddings e JOIN chunks c ON c.pk = e.chunk_pk ORDER BY c.id`,
		"entities":   `SELECT id, kind, surface, mention_count, chunk_count FROM entities ORDER BY id`,
		"search":     `SELECT c.id FROM chunks_fts f JOIN chunks c ON c.pk = f.rowid WHERE chunks_fts MATCH 'harbour' ORDER BY c.id`,
	}
	out := map[string][]string{}
	for table, q := range queries {
		rows, err := db.Query(q)
		if err != nil {
			t.Fatalf("dump %s: %v", table, err)
		}
		cols, _ := rows.Columns()
		for rows.Next() {
			vals := make([]any, len(cols))
			ptrs := make([]any, len(cols))
			for i := range vals {
				ptrs[i] = &vals[i]
			}
			if err := rows.Scan(ptrs...); err != nil {
				t.Fatal(err)
			}
			fields := make([]string, len(vals))
			for i, v := range vals {
				fields[i] = fmt.Sprint(v)
			}
			out[table] = append(out[table], strings.Join(fields, " | "))
		}
		if err := rows.Err(); err != nil {
			t.Fatalf("dump %s: %v", table, err)
		}
		rows.Close()
	}
	return out
}

// fillMemory stores n documents, each with a distinct marker, a tag on
// its first chunk, a note on every fifth and an embedding on every
// third, and closes the provider; it returns the data directory, the
// database's path in it and the clock the provider ran on.
func fillMemory(t *testing.T, n int) (dir, path string, clock *testClock) {
	t.Helper()
	dir = t.TempDir()
	clock = newTestClock()
	p := openProvider(t, dir, clock)
	for i := range n {
		clock.Advance(time.Minute)
		body := fmt.Sprintf("Meeting %d with Ada Lovelace at the harbour office. ZQX-MARK-%04d. ", i, i) + strings.Repeat("Plans and figures. ", 120)
		res := call[storeResult](t, p, ToolStore, map[string]any{
			"title": fmt.Sprintf("Meeting %d", i), "content": body, "tags": []string{"meeting", fmt.Sprintf("n%d", i)},
		})
		call[tagResult](t, p, ToolTag, map[string]any{"chunk_id": res.ChunkIDs[0], "tags": []string{"first"}})
		if i%5 == 0 {
			call[noteResult](t, p, ToolNote, map[string]any{"chunk_id": res.ChunkIDs[0], "note_text": fmt.Sprintf("Note on meeting %d", i)})
		}
		if i%3 == 0 {
			err := p.store.db.Exec(`INSERT INTO chunk_embeddings (chunk_pk, model, dims, vector, created_ms)
				SELECT pk, 'test-model', 2, ?, ? FROM chunks WHERE id = ?`, []byte{byte(i), 1, 2, 3, 4, 5, 6, 7}, startMS+int64(i), res.ChunkIDs[0]).Error
			if err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	return dir, filepath.Join(dir, dbFileName), clock
}

func TestMemoryRecoverRebuildsEverythingReadable(t *testing.T) {
	t.Parallel()
	sqliteOnly(t)
	dir, path, clock := fillMemory(t, 12)
	before := dumpMemory(t, path)
	if len(before["documents"]) != 12+3 || len(before["embeddings"]) != 4 || len(before["search"]) == 0 {
		t.Fatalf("the test data is not what the test needs: %d documents, %d embeddings, %d search hits",
			len(before["documents"]), len(before["embeddings"]), len(before["search"]))
	}
	orig, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}

	clock.Advance(24 * time.Hour)
	p := New(&Options{Now: clock.Now})
	if _, err := p.Recover(context.Background(), dir, nil); !errors.Is(err, ErrNotDamaged) {
		t.Fatalf("Recover of a healthy database = %v, want ErrNotDamaged", err)
	}
	if now, _ := os.ReadFile(path); !bytes.Equal(now, orig) {
		t.Fatal("Recover without Force changed a healthy database")
	}

	sum, err := p.Recover(context.Background(), dir, &RecoverOptions{Force: true})
	if err != nil {
		t.Fatalf("Recover with Force: %v", err)
	}
	want := RecoverSummary{MovedTo: path + ".damaged-20231115T222520Z", Sources: 1, Documents: 15, Chunks: 15 + 12, ChunkTags: 12, Embeddings: 4}
	if before := len(before["chunks"]); before != want.Chunks {
		t.Fatalf("the test data has %d chunks, want %d", before, want.Chunks)
	}
	if d := diff(want, sum); d != "" {
		t.Errorf("summary (-want +got):\n%s", d)
	}
	if moved, _ := os.ReadFile(sum.MovedTo); !bytes.Equal(moved, orig) {
		t.Error("the database moved aside is not the original")
	}
	if d := diff(before, dumpMemory(t, path)); d != "" {
		t.Errorf("rebuilt database (-before +after):\n%s", d)
	}
	// The rebuilt database opens and works.
	q := openProvider(t, dir, clock)
	got := call[searchResult](t, q, ToolSearch, map[string]any{"query": "ZQX-MARK-0007"})
	if len(got.Chunks) == 0 || got.Chunks[0].Title != "Meeting 7" {
		t.Errorf("memory_search after the rebuild = %+v, want Meeting 7 first", got.Chunks)
	}
}

// damagePages overwrites every database page of path holding marker (the
// chunk's page, the full-text index's copy and free pages that held it)
// with bytes SQLite cannot read as a page, and returns the file's new
// content.
func damagePages(t *testing.T, path, marker string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	size := int(binary.BigEndian.Uint16(b[16:18]))
	n := 0
	for at := bytes.Index(b, []byte(marker)); at >= 0; at = bytes.Index(b, []byte(marker)) {
		start := at / size * size
		copy(b[start:start+size], bytes.Repeat([]byte{0x5A}, size))
		n++
	}
	if n == 0 {
		t.Fatalf("%s is not in %s", marker, path)
	}
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return b
}

func TestMemoryRecoverDamagedPages(t *testing.T) {
	t.Parallel()
	sqliteOnly(t)
	dir, path, clock := fillMemory(t, 60)
	before := dumpMemory(t, path)
	chunks := map[string]string{}
	for _, row := range before["chunks"] {
		chunks[strings.SplitN(row, " | ", 2)[0]] = row
	}
	damaged := damagePages(t, path, "ZQX-MARK-0031")
	if err := New(nil).Configure(context.Background(), &sdk.ConfigureRequest{Config: json.RawMessage(`{}`), DataDir: dir}); !errors.Is(err, ErrDamaged) {
		t.Fatalf("Configure on the damaged database = %v, want ErrDamaged", err)
	}

	sum, err := New(&Options{Now: clock.Now}).Recover(context.Background(), dir, nil)
	if err != nil {
		t.Fatalf("Recover: %v", err)
	}
	t.Logf("summary: %+v", sum)
	if moved, _ := os.ReadFile(sum.MovedTo); !bytes.Equal(moved, damaged) {
		t.Error("the database moved aside is not the damaged original")
	}
	if sum.Unreadable["chunks"] == 0 {
		t.Errorf("Unreadable = %v, want the damaged chunks region counted", sum.Unreadable)
	}
	after := dumpMemory(t, path)
	// Every chunk of the rebuilt database was in the original, content,
	// position and times alike; the damaged page took only a few.
	for _, row := range after["chunks"] {
		if id := strings.SplitN(row, " | ", 2)[0]; chunks[id] != row {
			t.Errorf("rebuilt chunk %q was not in the original (%q)", row, chunks[id])
		}
	}
	if lost := len(before["chunks"]) - len(after["chunks"]); lost < 1 || lost > 8 {
		t.Errorf("%d of %d chunks lost, want the few on one page", lost, len(before["chunks"]))
	}
	if sum.Documents+len(sum.Lost) != len(before["documents"]) {
		t.Errorf("%d documents rebuilt and %d lost, want %d in all", sum.Documents, len(sum.Lost), len(before["documents"]))
	}
	hit := false
	for _, name := range append(sum.Incomplete, sum.Lost...) {
		hit = hit || strings.HasSuffix(name, ": Meeting 31")
	}
	if !hit {
		t.Errorf("Meeting 31, whose chunk was damaged, is neither incomplete nor lost: %v, %v", sum.Incomplete, sum.Lost)
	}
	q := openProvider(t, dir, clock)
	got := call[searchResult](t, q, ToolSearch, map[string]any{"query": "ZQX-MARK-0030"})
	if len(got.Chunks) == 0 || got.Chunks[0].Title != "Meeting 30" {
		t.Errorf("memory_search after the rebuild = %+v, want Meeting 30 first", got.Chunks)
	}
}

func TestMemoryRecoverNotADatabase(t *testing.T) {
	t.Parallel()
	requireFTS5(t)
	dir := t.TempDir()
	path := filepath.Join(dir, dbFileName)
	if err := os.WriteFile(path, bytes.Repeat([]byte("not a database "), 1000), 0o600); err != nil {
		t.Fatal(err)
	}
	sum, err := New(nil).Recover(context.Background(), dir, nil)
	if err != nil {
		t.Fatalf("Recover: %v", err)
	}
	if sum.Documents != 0 || !sum.SchemaUnreadable || !strings.HasPrefix(sum.MovedTo, path+".damaged-") {
		t.Errorf("summary = %+v, want nothing rebuilt and the file moved aside", sum)
	}
	p := openProvider(t, dir, nil)
	call[storeResult](t, p, ToolStore, map[string]any{"title": "fresh", "content": "a fresh start"})
}

func TestMemoryRecoverInterruptedLeavesDatabase(t *testing.T) {
	t.Parallel()
	sqliteOnly(t)
	dir, path, clock := fillMemory(t, 5)
	orig := damagePages(t, path, "ZQX-MARK-0002")
	// The context ends while the first documents are being written.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	stop := extractorFunc(func(string) []Mention { cancel(); return nil })
	if _, err := New(&Options{Now: clock.Now, Extractors: []Extractor{stop}}).Recover(ctx, dir, nil); !errors.Is(err, context.Canceled) {
		t.Fatalf("Recover with a cancelled context = %v, want context.Canceled", err)
	}
	if now, _ := os.ReadFile(path); !bytes.Equal(now, orig) {
		t.Error("an interrupted recovery changed memory.db")
	}
	if left, _ := filepath.Glob(filepath.Join(dir, "*.recovering*")); len(left) != 0 {
		t.Errorf("an interrupted recovery left %v", left)
	}
	if _, err := New(nil).Recover(context.Background(), t.TempDir(), nil); err == nil || !strings.Contains(err.Error(), "there is no") {
		t.Errorf("Recover where there is no database = %v, want an error saying so", err)
	}
}

// extractorFunc is an Extractor made of a function.
type extractorFunc func(string) []Mention

func (f extractorFunc) Extract(text string) []Mention { return f(text) }

// TestMemoryRecoverIsAlone: recover refuses while another process (here a
// configured provider) has the database open, nothing opens it while a
// recovery runs, and a file that cannot be read is an error even with
// Force, changing nothing.
func TestMemoryRecoverIsAlone(t *testing.T) {
	t.Parallel()
	sqliteOnly(t)
	dir, path, clock := fillMemory(t, 3)
	orig := damagePages(t, path, "ZQX-MARK-0001")

	p := New(&Options{Now: clock.Now})
	if err := p.Configure(context.Background(), &sdk.ConfigureRequest{Config: json.RawMessage(`{}`), DataDir: dir}); !errors.Is(err, ErrDamaged) {
		t.Fatalf("Configure: %v", err)
	}
	unlock, err := filelock.Shared(lockPath(path)) // another process using it
	if err != nil {
		t.Fatal(err)
	}
	if _, err := New(nil).Recover(context.Background(), dir, nil); err == nil || !strings.Contains(err.Error(), "is in use by another openhuman-host process") {
		t.Fatalf("Recover while the database is in use: %v", err)
	}
	unlock()
	unlock, err = filelock.Exclusive(lockPath(path)) // a recovery running
	if err != nil {
		t.Fatal(err)
	}
	if err := New(nil).Configure(context.Background(), &sdk.ConfigureRequest{Config: json.RawMessage(`{}`), DataDir: dir}); err == nil ||
		!strings.Contains(err.Error(), "memory recover` is rebuilding it") {
		t.Fatalf("Configure during a recovery: %v", err)
	}
	unlock()
	if now, _ := os.ReadFile(path); !bytes.Equal(now, orig) {
		t.Fatal("the refused recoveries changed memory.db")
	}

	unreadable := t.TempDir()
	if err := os.Mkdir(filepath.Join(unreadable, dbFileName), 0o700); err != nil {
		t.Fatal(err)
	}
	if _, err := New(nil).Recover(context.Background(), unreadable, &RecoverOptions{Force: true}); err == nil ||
		!strings.Contains(err.Error(), "cannot read") || !strings.Contains(err.Error(), "nothing was changed") {
		t.Fatalf("Recover of a file that cannot be read: %v", err)
	}
	if info, err := os.Stat(filepath.Join(unreadable, dbFileName)); err != nil || !info.IsDir() {
		t.Fatalf("the unreadable database was moved: %v", err)
	}
}
