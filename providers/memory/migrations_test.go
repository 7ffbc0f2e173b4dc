package memory

import (
	"context"
	"path/filepath"
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
	requireFTS5(t)
	dir := t.TempDir()
	p := openProvider(t, dir, nil)
	if err := p.store.db.Exec(`INSERT INTO schema_migrations (version, name, applied_ms) VALUES (99, 'future', 1)`).Error; err != nil {
		t.Fatal(err)
	}
	_, err := openStore(context.Background(), filepath.Join(dir, dbFileName), time.Now, nil, hclog.NewNullLogger())
	want := "migrate " + filepath.Join(dir, dbFileName) + ": memory.db has schema version 99 but this binary knows only up to 3; upgrade openhuman-host"
	if err == nil || err.Error() != want {
		t.Errorf("open newer database: %v, want %s", err, want)
	}
}
