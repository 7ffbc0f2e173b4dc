package memory

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"gorm.io/driver/sqlite"
	"gorm.io/gorm"
	gormlogger "gorm.io/gorm/logger"
)

// TestMigrateFromVersion1 builds a database of schema version 1 with data
// in it, as the first release wrote it, and opens it with this version:
// everything is kept, the FTS5 index gains the tags column, and the
// entities of existing chunks are extracted.
func TestMigrateFromVersion1(t *testing.T) {
	t.Parallel()
	sqliteOnly(t)
	requireFTS5(t)
	dir := t.TempDir()
	path := filepath.Join(dir, dbFileName)
	db, err := gorm.Open(sqlite.Open(dsn(path)), &gorm.Config{Logger: gormlogger.Discard, SkipDefaultTransaction: true})
	if err != nil {
		t.Fatal(err)
	}
	err = db.Transaction(func(tx *gorm.DB) error {
		if _, err := migrateSteps(tx, migrationEnv{nowMS: startMS}, migrations[:1]); err != nil {
			return err
		}
		for _, stmt := range []string{
			`INSERT INTO sources (id, kind, display_name, created_ms, updated_ms) VALUES ('mcp:mcp', 'note', 'Stored with memory_store (namespace mcp)', 1, 1)`,
			`INSERT INTO documents (id, source_id, namespace, key, title, tags, created_ms, updated_ms)
				VALUES ('mcp/mcp-store-old', 'mcp:mcp', 'mcp', 'mcp-store-old', 'Old note', '["legacy","v1"]', 1, 1)`,
			`INSERT INTO chunks (id, document_id, seq, content, created_ms, updated_ms)
				VALUES ('chk_000000000000000000000001', 'mcp/mcp-store-old', 0, 'Write to ana@example.com about #harbour.', 1, 1000)`,
			`INSERT INTO chunks (id, document_id, seq, content, created_ms, updated_ms)
				VALUES ('chk_000000000000000000000002', 'mcp/mcp-store-old', 1, 'Second part, ana@example.com again.', 1, 2000)`,
		} {
			if err := tx.Exec(stmt).Error; err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	var version int
	if err := db.Raw(`SELECT MAX(version) FROM schema_migrations`).Scan(&version).Error; err != nil || version != 1 {
		t.Fatalf("built schema version %d, %v", version, err)
	}
	sqlDB, _ := db.DB()
	sqlDB.Close()

	p := openProvider(t, dir, nil)
	// Existing chunks are still found, now by their document's tags too.
	for q, want := range map[string]int{"harbour": 1, "legacy": 2, "second part": 1, "old note": 2} {
		hits := search(t, p, q, 0)
		if len(hits) != want {
			t.Errorf("search %q after migration: %d hits, want %d", q, len(hits), want)
		}
		for _, h := range hits {
			if h.DocumentID != "mcp/mcp-store-old" {
				t.Errorf("search %q after migration: hit %+v", q, h)
			}
		}
	}
	got := call[topEntitiesResult](t, p, ToolTopEntities, map[string]any{})
	want := []entityRow{
		{EntityID: "email:ana@example.com", Kind: "email", Surface: "ana@example.com", Count: 2, ChunkCount: 2, LastSeenMS: 2000},
		{EntityID: "hashtag:#harbour", Kind: "hashtag", Surface: "#harbour", Count: 1, ChunkCount: 1, LastSeenMS: 1000},
	}
	if d := diff(want, got.Entities); d != "" {
		t.Errorf("entities after migration (-want +got):\n%s", d)
	}
	read := call[readChunkResult](t, p, ToolReadChunk, map[string]any{"chunk_id": "chk_000000000000000000000001"})
	if read.Chunk == nil || read.Chunk.SourceKind != "note" || len(read.Chunk.DocumentTags) != 2 {
		t.Errorf("chunk after migration = %+v", read.Chunk)
	}
	// New writes work on the migrated database.
	call[tagResult](t, p, ToolTag, map[string]any{"chunk_id": "chk_000000000000000000000001", "tags": []string{"moved"}})
	if hits := search(t, p, "moved harbour", 0); len(hits) != 1 {
		t.Errorf("tag on migrated chunk not searchable: %+v", hits)
	}
	checkIndexInStep(t, p)
}

// TestMigrateNewer refuses a database written by a newer version.
func TestMigrateNewer(t *testing.T) {
	t.Parallel()
	sqliteOnly(t)
	requireFTS5(t)
	dir := t.TempDir()
	p := openProvider(t, dir, nil)
	if err := p.store.db.Exec(`INSERT INTO schema_migrations (version, name, applied_ms) VALUES (99, 'future', 1)`).Error; err != nil {
		t.Fatal(err)
	}
	_, err := openStore(context.Background(), filepath.Join(dir, dbFileName), time.Now, nil, hclog.NewNullLogger())
	want := "migrate " + filepath.Join(dir, dbFileName) + ": memory.db has schema version 99 but this binary knows only up to 4; upgrade openhuman-host"
	if err == nil || err.Error() != want {
		t.Errorf("open newer database: %v, want %s", err, want)
	}
}

// buildVersion3 creates at dir a database of schema version 3 holding
// documents with and without tags, chunk tags and a note, written with
// SQL as that version's triggers indexed them, and returns the text its
// chunks hold.
func buildVersion3(t *testing.T, dir string, paragraphs int) int {
	t.Helper()
	db, err := gorm.Open(sqlite.Open(dsn(filepath.Join(dir, dbFileName))), &gorm.Config{Logger: gormlogger.Discard, SkipDefaultTransaction: true})
	if err != nil {
		t.Fatal(err)
	}
	text := 0
	err = db.Transaction(func(tx *gorm.DB) error {
		if _, err := migrateSteps(tx, migrationEnv{nowMS: startMS}, migrations[:3]); err != nil {
			return err
		}
		exec := func(q string, args ...any) {
			if err == nil {
				err = tx.Exec(q, args...).Error
			}
		}
		exec(`INSERT INTO sources (id, kind, display_name, created_ms, updated_ms) VALUES
			('mcp:mcp', 'note', 'Stored with memory_store (namespace mcp)', 1, 1),
			('file:/notes', 'document', 'Files imported from /notes', 1, 1)`)
		docs := []struct{ id, source, ns, key, title, tags string }{
			{"mcp/mcp-store-harbour", "mcp:mcp", "mcp", "mcp-store-harbour", "Harbour plan", `["R&D","naïve <tag>"]`},
			{"mcp/mcp-store-crane", "mcp:mcp", "mcp", "mcp-store-crane", "Crane log", `[]`},
			{"file:/notes/ships.md", "file:/notes", "file", "/notes/ships.md", "Ships and cranes", `[]`},
		}
		for i, d := range docs {
			exec(`INSERT INTO documents (id, source_id, namespace, key, title, tags, created_ms, updated_ms) VALUES (?, ?, ?, ?, ?, ?, 1, 1)`,
				d.id, d.source, d.ns, d.key, d.title, d.tags)
			for seq := range 3 {
				var b strings.Builder
				for n := range paragraphs {
					fmt.Fprintf(&b, "Paragraph %d of part %d: the harbour crane lifted %d containers of café beans while ships waited. ", n, seq, i*100+seq*10+n)
				}
				if seq == 1 {
					b.WriteString("Write to ana@example.com about the Zürich berth.")
				}
				text += b.Len()
				exec(`INSERT INTO chunks (id, document_id, seq, content, created_ms, updated_ms) VALUES (?, ?, ?, ?, 1, ?)`,
					fmt.Sprintf("chk_%024d", i*10+seq), d.id, seq, b.String(), 1000+i*10+seq)
			}
		}
		exec(`INSERT INTO chunk_tags (chunk_id, tag, position) VALUES (?, 'urgent', 0), (?, 'berth', 1), (?, 'urgent', 0)`,
			fmt.Sprintf("chk_%024d", 1), fmt.Sprintf("chk_%024d", 1), fmt.Sprintf("chk_%024d", 21))
		exec(`INSERT INTO documents (id, source_id, namespace, key, title, tags, note_chunk_id, created_ms, updated_ms)
			VALUES ('mcp/mcp-note-x', 'mcp:mcp', 'mcp', 'mcp-note-x', 'Note on Harbour plan', '[]', ?, 1, 1)`, fmt.Sprintf("chk_%024d", 1))
		exec(`INSERT INTO chunks (id, document_id, seq, content, created_ms, updated_ms) VALUES ('chk_999999999999999999999999', 'mcp/mcp-note-x', 0, 'Check the crane first.', 1, 5000)`)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	sqlDB, _ := db.DB()
	sqlDB.Close()
	return text
}

// TestMigrateFromVersion3 opens a database of schema version 3 with this
// version, which moves the full-text index to the chunks' own text:
// searches, recalls and browses give the same chunks, scores and snippets
// as before, and the index passes FTS5's integrity check against the view
// it now reads.
func TestMigrateFromVersion3(t *testing.T) {
	t.Parallel()
	sqliteOnly(t)
	requireFTS5(t)
	dir := t.TempDir()
	buildVersion3(t, dir, 12)

	queries := []struct {
		tool string
		args map[string]any
	}{
		{ToolSearch, map[string]any{"query": "harbour crane"}},
		{ToolSearch, map[string]any{"query": "cafe zurich"}},
		{ToolSearch, map[string]any{"query": "urgent berth"}},
		{ToolSearch, map[string]any{"query": "R&D naive"}},
		{ToolSearch, map[string]any{"query": "ships cranes", "k": 3}},
		{ToolSearch, map[string]any{"query": "crane first"}},
		{ToolRecall, map[string]any{"query": "where are the containers of beans?"}},
		{ToolRecall, map[string]any{"query": "who should I write to about the berth"}},
		{ToolBrowse, map[string]any{"query": "container", "k": 20}},
		{ToolBrowse, map[string]any{"query": "ships", "namespaces": []string{"file"}}},
	}
	results := func(p *Provider) []string {
		var out []string
		for _, q := range queries {
			res := callRaw(t, p, q.tool, q.args)
			out = append(out, fmt.Sprintf("%s %v: %s\n%s", q.tool, q.args, res.Content[0].Text, res.StructuredContent))
		}
		return out
	}

	// The tools read the version 3 database as it is: reading needs no
	// migration.
	db, err := gorm.Open(sqlite.Open(dsn(filepath.Join(dir, dbFileName))), &gorm.Config{Logger: gormlogger.Discard, SkipDefaultTransaction: true})
	if err != nil {
		t.Fatal(err)
	}
	old := New(&Options{Now: newTestClock().Now})
	old.store = &store{db: db, now: old.now, writeSlot: make(chan struct{}, 1), postings: newPostingCache(postingCacheBytes)}
	if old.scopes, err = newScopes(nil); err != nil {
		t.Fatal(err)
	}
	before := results(old)
	sqlDB, _ := db.DB()
	sqlDB.Close()

	p := openProvider(t, dir, nil)
	var tables []string
	if err := p.store.db.Raw(`SELECT name FROM sqlite_master WHERE name LIKE 'chunks_fts%' ORDER BY name`).Scan(&tables).Error; err != nil {
		t.Fatal(err)
	}
	// No chunks_fts_content: the index keeps no copy of the text.
	want := []string{"chunks_fts", "chunks_fts_before_delete", "chunks_fts_before_update", "chunks_fts_after_insert", "chunks_fts_after_update",
		"chunks_fts_config", "chunks_fts_data", "chunks_fts_docsize", "chunks_fts_idx", "chunks_fts_source"}
	slices.Sort(want)
	if d := diff(want, tables); d != "" {
		t.Errorf("chunks_fts tables, triggers and view (-want +got):\n%s", d)
	}
	checkIndexInStep(t, p)
	after := results(p)
	if d := diff(before, after); d != "" {
		t.Errorf("results after the migration (-before +after):\n%s", d)
	}
	if !strings.Contains(strings.Join(after, "\n"), "…**Write** to ana@example.com about the Zürich **berth**.") {
		t.Errorf("snippets after the migration mark no match:\n%s", strings.Join(after, "\n"))
	}
}

// TestMigrationStoresTextOnce: after migration 4 the database is smaller by
// about the text of its chunks, which only the chunks table holds now.
func TestMigrationStoresTextOnce(t *testing.T) {
	t.Parallel()
	sqliteOnly(t)
	requireFTS5(t)
	dir := t.TempDir()
	text := buildVersion3(t, dir, 200)
	size := func(db *gorm.DB) int64 {
		t.Helper()
		// VACUUM leaves no free pages, so the page count is what the
		// rows take.
		var pages, pageSize int64
		if err := db.Exec(`VACUUM`).Error; err != nil {
			t.Fatal(err)
		}
		if err := db.Raw(`PRAGMA page_count`).Scan(&pages).Error; err != nil {
			t.Fatal(err)
		}
		if err := db.Raw(`PRAGMA page_size`).Scan(&pageSize).Error; err != nil {
			t.Fatal(err)
		}
		return pages * pageSize
	}
	db, err := gorm.Open(sqlite.Open(dsn(filepath.Join(dir, dbFileName))), &gorm.Config{Logger: gormlogger.Discard, SkipDefaultTransaction: true})
	if err != nil {
		t.Fatal(err)
	}
	before := size(db)
	sqlDB, _ := db.DB()
	sqlDB.Close()

	p := openProvider(t, dir, nil)
	after := size(p.store.db)
	t.Logf("%d bytes before the migration, %d after; %d bytes of chunk text", before, after, text)
	if saved := before - after; saved < int64(text)*9/10 {
		t.Errorf("the database went from %d to %d bytes, saving %d; want at least 90%% of the chunks' %d bytes of text", before, after, saved, text)
	}
	checkIndexInStep(t, p)
}
