package memory

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/openhuman/openhuman-host/sdk"
	"github.com/openhuman/openhuman-host/sdk/storage"
	"github.com/openhuman/openhuman-host/sdk/storage/pgtest"
)

// openOnPostgres configures a provider on the PostgreSQL database of dsn,
// as a replica of the host would, and closes it when the test ends.
func openOnPostgres(t *testing.T, dsn string) *Provider {
	t.Helper()
	p := New(&Options{Now: newTestClock().Now})
	req := &sdk.ConfigureRequest{Config: json.RawMessage(`{}`), DataDir: t.TempDir(),
		Secrets: map[string]string{SecretStorageDriver: "postgres", SecretStorageDSN: dsn}}
	if err := p.Configure(t.Context(), req); err != nil {
		t.Fatalf("Configure on PostgreSQL: %v", err)
	}
	t.Cleanup(func() {
		if err := p.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return p
}

// TestPostgresReplicasShareMemory: two providers on one database, as two
// replicas of the host, see each other's writes at once, and write at the
// same time without losing any.
func TestPostgresReplicasShareMemory(t *testing.T) {
	t.Parallel()
	dsn := pgtest.NewDatabase(t)
	a, b := openOnPostgres(t, dsn), openOnPostgres(t, dsn)

	stored := put(t, a, map[string]any{"title": "Lighthouse", "content": "Ingrid keeps the light on the north cape.", "tags": []string{"coast"}})
	hits := search(t, b, "ingrid light", 0)
	if len(hits) != 1 || hits[0].DocumentID != stored.DocumentID {
		t.Fatalf("replica b's search after a's write = %v", hitDocs(hits))
	}
	// The word counts b keeps must follow a's next write.
	put(t, a, map[string]any{"title": "Second light", "content": "Another light, on the south cape."})
	if hits := search(t, b, "light cape", 0); len(hits) != 2 {
		t.Fatalf("replica b's search after a's second write = %v", hitDocs(hits))
	}
	call[tagResult](t, b, ToolTag, map[string]any{"chunk_id": stored.ChunkIDs[0], "tags": []string{"keeper"}})
	got := call[readChunkResult](t, a, ToolReadChunk, map[string]any{"chunk_id": stored.ChunkIDs[0]})
	if got.Chunk == nil || strings.Join(got.Chunk.Tags, ",") != "keeper" {
		t.Fatalf("replica a reads the chunk b tagged as %+v", got.Chunk)
	}
	if hits := search(t, a, "keeper", 0); len(hits) != 1 {
		t.Fatalf("replica a's search for b's tag = %v", hitDocs(hits))
	}
	recall := call[recallResult](t, b, ToolRecall, map[string]any{"query": "who keeps the light?"})
	if len(recall.Chunks) == 0 || recall.Chunks[0].DocumentID != stored.DocumentID {
		t.Fatalf("replica b's recall = %+v", recall.Chunks)
	}

	// Both write at once: every document lands, each chunk numbered once.
	var wg sync.WaitGroup
	for i, p := range []*Provider{a, b, a, b} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range 10 {
				args := map[string]any{"title": fmt.Sprintf("Concurrent %d-%d", i, j), "content": fmt.Sprintf("parallel write number %d of writer %d", j, i)}
				raw, _ := json.Marshal(args)
				res, err := p.CallTool(context.Background(), &sdk.CallToolRequest{Name: ToolStore, Arguments: raw})
				if err != nil || res.IsError {
					t.Errorf("concurrent store %d-%d: %v %+v", i, j, err, res)
					return
				}
			}
		}()
	}
	wg.Wait()
	browse := call[browseResult](t, a, ToolBrowse, map[string]any{"query": "parallel", "k": 5})
	if browse.Total != 40 {
		t.Errorf("after concurrent writes, %d chunks hold parallel, want 40", browse.Total)
	}

	out := forget(t, a, map[string]any{"document_ids": []string{stored.DocumentID}})
	if out.Documents != 1 {
		t.Fatalf("forget = %+v", out)
	}
	if hits := search(t, b, "ingrid", 0); len(hits) != 0 {
		t.Errorf("replica b still finds what a forgot: %v", hitDocs(hits))
	}
	checkIndexOf(t, a.store.db)
}

// TestPostgresConcurrentFirstStart: replicas starting at once on an empty
// database migrate it once, one after the other.
func TestPostgresConcurrentFirstStart(t *testing.T) {
	t.Parallel()
	dsn := pgtest.NewDatabase(t)
	const replicas = 4
	var wg sync.WaitGroup
	ps := make([]*Provider, replicas)
	errs := make([]error, replicas)
	for i := range ps {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ps[i] = New(nil)
			errs[i] = ps[i].Configure(context.Background(), &sdk.ConfigureRequest{Config: json.RawMessage(`{}`), DataDir: t.TempDir(),
				Secrets: map[string]string{SecretStorageDriver: "postgres", SecretStorageDSN: dsn}})
		}()
	}
	wg.Wait()
	for i, p := range ps {
		t.Cleanup(func() { _ = p.Close() })
		if errs[i] != nil {
			t.Fatalf("replica %d: %v", i, errs[i])
		}
	}
	var applied []int64
	if err := ps[0].store.db.Raw(`SELECT version_id FROM memory_migrations WHERE version_id > 0 ORDER BY id`).Scan(&applied).Error; err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(applied, []int64{1, 2, 3}) {
		t.Errorf("migrations recorded = %v, want [1 2 3] once", applied)
	}
	for i, p := range ps {
		put(t, p, map[string]any{"title": fmt.Sprintf("From %d", i), "content": fmt.Sprintf("replica %d started together", i)})
	}
	if hits := search(t, ps[0], "started together", 10); len(hits) != replicas {
		t.Errorf("search = %v, want one document from each replica", hitDocs(hits))
	}
}

// TestPostgresQuerySyntaxIsInert: characters that mean something in a
// tsquery are separators in a query, never syntax.
func TestPostgresQuerySyntaxIsInert(t *testing.T) {
	t.Parallel()
	p := openOnPostgres(t, pgtest.NewDatabase(t))
	put(t, p, map[string]any{"title": "Quotes", "content": "O'Brien wrote about café prices & running costs."})
	for _, q := range []string{`O'Brien`, `'`, `''`, `a & b`, `a | b`, `!costs`, `costs:*`, `costs <-> running`, `\`, `run*`, `(costs`, `"running costs"`, `caf*`, `CAFE`} {
		for _, tool := range []string{ToolSearch, ToolRecall, ToolBrowse} {
			res := callRaw(t, p, tool, map[string]any{"query": q})
			if res.IsError {
				t.Errorf("%s(%q): %s", tool, q, res.Content[0].Text)
			}
		}
	}
	// Stemming, prefixes, phrases and accents as on SQLite.
	for q, want := range map[string]int{"run": 1, "brien": 1, "cafe": 1, `"running costs"`: 1, `"costs running"`: 0, "pri*": 1, "price": 1} {
		if hits := search(t, p, q, 0); len(hits) != want {
			t.Errorf("search %q found %d chunks, want %d", q, len(hits), want)
		}
	}
}

// TestPostgresExportMatchesSQLite: memory exported from SQLite and
// imported into PostgreSQL exports again as the same records, and
// searches find the same chunks.
func TestPostgresExportMatchesSQLite(t *testing.T) {
	t.Parallel()
	if onPostgresDriver() {
		t.Skip("compares with SQLite; runs with the SQLite driver")
	}
	src := openProvider(t, t.TempDir(), newTestClock())
	doc := put(t, src, map[string]any{"title": "Harbour plan", "content": longText(8), "tags": []string{"plan", "naïve"}})
	call[tagResult](t, src, ToolTag, map[string]any{"chunk_id": doc.ChunkIDs[0], "tags": []string{"urgent"}})
	call[noteResult](t, src, ToolNote, map[string]any{"chunk_id": doc.ChunkIDs[1], "note_text": "Mail ana@example.com about the cranes."})
	put(t, src, map[string]any{"title": "Harbour plan", "content": longText(9), "namespace": "work"})
	var exported bytes.Buffer
	if _, err := src.Export(t.Context(), &exported, &ExportOptions{Embeddings: true}); err != nil {
		t.Fatal(err)
	}
	dst := openOnPostgres(t, pgtest.NewDatabase(t))
	if _, err := dst.ImportJSONL(t.Context(), bytes.NewReader(exported.Bytes()), nil); err != nil {
		t.Fatalf("import into PostgreSQL: %v", err)
	}
	var again bytes.Buffer
	if _, err := dst.Export(t.Context(), &again, &ExportOptions{Embeddings: true}); err != nil {
		t.Fatalf("export from PostgreSQL: %v", err)
	}
	if d := diff(jsonlRecords(t, exported.Bytes()), jsonlRecords(t, again.Bytes())); d != "" {
		t.Errorf("export from PostgreSQL (-SQLite +PostgreSQL):\n%s", d)
	}
	checkIndexOf(t, dst.store.db)
	for _, q := range []string{"harbour", "cranes", "urgent", "plan naive"} {
		if w, g := hitDocs(search(t, src, q, 10)), hitDocs(search(t, dst, q, 10)); len(w) != len(g) {
			t.Errorf("search %q: SQLite finds %v, PostgreSQL %v", q, w, g)
		}
	}
}

// jsonlRecords are the records of a JSONL export but its header's time.
func jsonlRecords(t *testing.T, data []byte) []map[string]any {
	t.Helper()
	var out []map[string]any
	for line := range strings.SplitSeq(strings.TrimSpace(string(data)), "\n") {
		var rec map[string]any
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Fatal(err)
		}
		delete(rec, "exported_ms")
		out = append(out, rec)
	}
	return out
}

// TestPostgresBackupRefused: memory backup is memory.db's; on PostgreSQL
// it points to pg_dump.
func TestPostgresBackupRefused(t *testing.T) {
	t.Parallel()
	p := openOnPostgres(t, pgtest.NewDatabase(t))
	err := p.Backup(t.Context(), t.TempDir()+"/backup.db")
	if err == nil || !strings.Contains(err.Error(), "pg_dump") {
		t.Fatalf("Backup on PostgreSQL = %v, want a refusal pointing to pg_dump", err)
	}
}

// TestPostgresErrorsHideThePassword: a database that refuses the
// connection is named without the password.
func TestPostgresErrorsHideThePassword(t *testing.T) {
	t.Parallel()
	dsn := pgtest.NewDatabase(t)
	bad := strings.Replace(dsn, "://", "://nobody-here:s3cret-password@", 1)
	if i := strings.Index(dsn, "@"); i >= 0 {
		bad = "postgres://nobody-here:s3cret-password@" + dsn[i+1:]
	}
	err := New(nil).Configure(t.Context(), &sdk.ConfigureRequest{Config: json.RawMessage(`{}`), DataDir: t.TempDir(),
		Secrets: map[string]string{SecretStorageDriver: "postgres", SecretStorageDSN: bad}})
	if err == nil {
		t.Fatal("Configure with a wrong password succeeded")
	}
	if strings.Contains(err.Error(), "s3cret-password") {
		t.Errorf("error shows the password: %v", err)
	}
	if !strings.Contains(err.Error(), storage.Describe(bad)) {
		t.Errorf("error %q does not name the server %s", err, storage.Describe(bad))
	}
}
