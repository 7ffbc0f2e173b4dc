package memory

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestIndexInStepAfterEveryWrite runs every kind of write there is, one
// after the other, and checks after each that the full-text index holds
// one row per chunk and exactly what chunks_fts_source gives for it
// (FTS5's integrity check with rank 1): an external-content index that was
// told to delete other values than it indexed fails it.
func TestIndexInStepAfterEveryWrite(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	p, clock := newProvider(t)
	step := func(name string) {
		t.Helper()
		clock.Advance(time.Minute)
		t.Run(name, func(t *testing.T) { checkIndexInStep(t, p) })
	}

	a := put(t, p, map[string]any{"title": "Harbour plan", "content": longText(6), "tags": []string{"alpha", "R&D", "naïve <tag>"}})
	step("store")
	a = put(t, p, map[string]any{"title": "Harbour plan", "content": longText(9) + "\n\nA new ending about cranes.", "tags": []string{"beta"}})
	step("replace, with other tags")
	put(t, p, map[string]any{"title": "Harbour plan", "content": longText(9) + "\n\nA new ending about cranes."})
	step("store again, tags kept")
	a = put(t, p, map[string]any{"title": "Harbour plan", "content": longText(9) + "\n\nA new ending about cranes.", "tags": []string{}})
	step("tags removed")

	call[tagResult](t, p, ToolTag, map[string]any{"chunk_id": a.ChunkIDs[0], "tags": []string{"urgent", "berth", "Zürich"}})
	step("tag")
	call[tagResult](t, p, ToolTag, map[string]any{"chunk_id": a.ChunkIDs[0], "tags": []string{"berth", "later"}})
	step("untag and tag")
	call[tagResult](t, p, ToolTag, map[string]any{"chunk_id": a.ChunkIDs[1], "tags": []string{"urgent"}})
	step("tag another chunk")

	call[noteResult](t, p, ToolNote, map[string]any{"chunk_id": a.ChunkIDs[0], "note_text": "Check the crane first."})
	step("note")
	call[noteResult](t, p, ToolNote, map[string]any{"chunk_id": a.ChunkIDs[0], "note_text": "Check the crane first, then the berth.\n\n" + longText(3)})
	step("note replaced")

	dir := tempFiles(t, map[string]string{
		"ships.md":      "# Ships\n\n" + longText(5),
		"cranes.md":     "# Cranes\n\nCranes lift containers.",
		"sub/tides.txt": longText(2),
	})
	importPaths(t, p, nil, dir)
	step("import")
	writeFiles(t, dir, map[string]string{"ships.md": "# Ships and boats\n\n" + longText(5) + "\n\nOne more paragraph."})
	if err := os.Remove(filepath.Join(dir, "cranes.md")); err != nil {
		t.Fatal(err)
	}
	importPaths(t, p, nil, dir)
	step("import again: a title changed, a file gone")
	ships := chunkIDs(t, p, importNamespace+":"+filepath.Join(dir, "ships.md"))
	call[tagResult](t, p, ToolTag, map[string]any{"chunk_id": ships[0], "tags": []string{"boats"}})
	writeFiles(t, dir, map[string]string{"ships.md": "# Ships\n\n" + longText(5) + "\n\nOne more paragraph."})
	importPaths(t, p, nil, dir)
	step("import again: the title of a tagged chunk's document changed back")

	// Writes no tool makes, which the triggers cover too.
	for _, q := range []string{
		`UPDATE documents SET title = 'Harbour plan, revised', tags = '["gamma", "de\"lta"]' WHERE id = '` + a.DocumentID + `'`,
		`UPDATE chunks SET content = content || ' Amended.' WHERE id = '` + a.ChunkIDs[1] + `'`,
		// Back as it was: a chunk's id is the hash of its content.
		`UPDATE chunks SET content = substr(content, 1, length(content) - 9) WHERE id = '` + a.ChunkIDs[1] + `'`,
		`UPDATE chunk_tags SET tag = 'later-still' WHERE chunk_id = '` + a.ChunkIDs[0] + `' AND tag = 'later'`,
		`INSERT OR IGNORE INTO chunk_tags (chunk_id, tag, position) VALUES ('` + a.ChunkIDs[0] + `', 'berth', 9), ('` + a.ChunkIDs[0] + `', 'fresh', 10)`,
		`DELETE FROM chunk_tags WHERE tag = 'urgent'`,
	} {
		if p.store.postgres {
			q = strings.Replace(q, "INSERT OR IGNORE INTO chunk_tags (chunk_id, tag, position) VALUES ", "INSERT INTO chunk_tags (chunk_id, tag, position) VALUES ", 1)
			if strings.HasPrefix(q, "INSERT INTO chunk_tags") {
				q += " ON CONFLICT DO NOTHING"
			}
		}
		if err := p.store.db.Exec(q).Error; err != nil {
			t.Fatalf("%s: %v", q, err)
		}
		step("sql " + strings.Join(strings.Fields(q)[:3], " "))
	}

	forget(t, p, map[string]any{"chunk_ids": []string{a.ChunkIDs[2]}})
	step("forget a chunk")
	forget(t, p, map[string]any{"query": "ending cranes"})
	step("forget by query")
	var export bytes.Buffer
	if _, err := p.Export(ctx, &export, nil); err != nil {
		t.Fatal(err)
	}
	forget(t, p, map[string]any{"document_ids": []string{a.DocumentID}})
	step("forget a document with a note")
	forget(t, p, map[string]any{"namespaces": []string{importNamespace}})
	step("forget a namespace")

	if _, err := p.ImportJSONL(ctx, bytes.NewReader(export.Bytes()), nil); err != nil {
		t.Fatal(err)
	}
	step("restore an export")
	if _, err := p.ImportJSONL(ctx, bytes.NewReader(export.Bytes()), nil); err != nil {
		t.Fatal(err)
	}
	step("restore it again over itself")
	if err := p.store.db.Exec(`DELETE FROM sources WHERE id LIKE 'file:%'`).Error; err != nil {
		t.Fatal(err)
	}
	step("sql DELETE FROM sources")
	if p.store.postgres {
		return // backup and recover are memory.db's
	}

	backup := filepath.Join(t.TempDir(), "data", dbFileName)
	if err := os.MkdirAll(filepath.Dir(backup), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := p.Backup(ctx, backup); err != nil {
		t.Fatal(err)
	}
	if _, err := New(nil).Recover(ctx, filepath.Dir(backup), &RecoverOptions{Force: true}); err != nil {
		t.Fatal(err)
	}
	q := openProvider(t, filepath.Dir(backup), nil)
	checkIndexInStep(t, q)
	if hits := search(t, q, "later still", 0); len(hits) != 1 {
		t.Errorf("after backup and recovery, search for a chunk tag found %d chunks, want 1", len(hits))
	}
}
