package memory

import (
	"bytes"
	"context"
	"database/sql"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/openhuman/openhuman-host/sdk/storage/sqliteuri"
)

// exportFixture fills a provider with what an export must carry: documents
// in two namespaces, multi-chunk documents, document tags, chunk tags, a
// note, an embedding, and an entity whose last sighting was in a chunk
// since rewritten (which extracting the entities again cannot know).
type exportFixture struct {
	p     *Provider
	clock *testClock
	dir   string
	alpha storeResult // namespace mcp, 3 chunks, tags
	beta  storeResult // namespace work, 2 chunks, no tags
	note  noteResult  // on beta's first chunk
}

func newExportFixture(t *testing.T) *exportFixture {
	t.Helper()
	f := &exportFixture{dir: t.TempDir(), clock: newTestClock()}
	f.p = openProvider(t, f.dir, f.clock)
	long := func(marker string) string {
		var b strings.Builder
		for i := range 3 {
			fmt.Fprintf(&b, "Paragraph %d of %s: %s\n\n", i, marker, strings.Repeat("harbour planning detail. ", 70))
		}
		return b.String()
	}
	f.alpha = put(t, f.p, map[string]any{"title": "Alpha <plan>", "content": "Mail ana@example.com about #Reef.\n\n" + long("alpha"), "tags": []string{"plan", "alpha"}})
	f.clock.Advance(time.Minute)
	f.beta = put(t, f.p, map[string]any{"title": "Beta notes", "namespace": "work", "content": long("beta") + "Due 2026-11-30."})
	f.clock.Advance(time.Minute)
	put(t, f.p, map[string]any{"title": "Gamma", "content": "Also about #reef and https://example.com/x."})
	f.clock.Advance(time.Minute)
	// Gamma no longer mentions #reef: the entity's last sighting stays at
	// Gamma's first version.
	put(t, f.p, map[string]any{"title": "Gamma", "content": "Nothing to see."})
	f.clock.Advance(time.Minute)
	call[tagResult](t, f.p, ToolTag, map[string]any{"chunk_id": f.alpha.ChunkIDs[1], "tags": []string{"important", "later"}})
	f.note = call[noteResult](t, f.p, ToolNote, map[string]any{"chunk_id": f.beta.ChunkIDs[0], "note_text": "Check the figures with @ana."})
	err := f.p.store.db.Exec(`INSERT INTO chunk_embeddings (chunk_pk, model, dims, vector, created_ms)
		SELECT pk, 'test-model', 3, ?, ? FROM chunks WHERE id = ?`, encodeVector([]float32{0.6, 0.8, 0}), startMS+42, f.alpha.ChunkIDs[0]).Error
	if err != nil {
		t.Fatal(err)
	}
	if len(f.alpha.ChunkIDs) != 3 || len(f.beta.ChunkIDs) != 3 {
		t.Fatalf("the fixture needs 3 and 3 chunks, got %d and %d", len(f.alpha.ChunkIDs), len(f.beta.ChunkIDs))
	}
	return f
}

// dumpAll is dumpMemory with what a restore must also keep exactly: the
// entities' sightings, the chunk-entity links and the full-text index.
func dumpAll(t *testing.T, path string) map[string][]string {
	t.Helper()
	out := dumpMemory(t, path)
	db, err := sql.Open("sqlite3", sqliteuri.File(path, "mode=ro"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for name, q := range map[string]string{
		"versions":       `SELECT document_id || ' ' || version || ' ' || title || ' ' || tags || ' ' || content || ' ' || content_sha256 || ' ' || updated_ms || ' ' || replaced_ms FROM document_versions ORDER BY 1`,
		"entity_times":   `SELECT id || ' ' || surface || ' ' || first_seen_ms || ' ' || last_seen_ms FROM entities ORDER BY id`,
		"chunk_entities": `SELECT c.id || ' ' || ce.entity_id || ' ' || ce.count FROM chunk_entities ce JOIN chunks c ON c.pk = ce.chunk_pk ORDER BY 1`,
		"fts":            `SELECT c.id || ' | ' || f.title || ' | ' || f.tags || ' | ' || length(f.content) FROM chunks_fts f JOIN chunks c ON c.pk = f.rowid ORDER BY 1`,
	} {
		rows, err := db.Query(q)
		if err != nil {
			t.Fatalf("dump %s: %v", name, err)
		}
		for rows.Next() {
			var s string
			if err := rows.Scan(&s); err != nil {
				t.Fatal(err)
			}
			out[name] = append(out[name], s)
		}
		if err := rows.Err(); err != nil {
			t.Fatal(err)
		}
		rows.Close()
	}
	return out
}

func exportBytes(t *testing.T, p *Provider, opts *ExportOptions) ([]byte, ExportSummary) {
	t.Helper()
	var b bytes.Buffer
	sum, err := p.Export(context.Background(), &b, opts)
	if err != nil {
		t.Fatalf("Export: %v", err)
	}
	if int64(b.Len()) != sum.Bytes {
		t.Errorf("summary says %d bytes, wrote %d", sum.Bytes, b.Len())
	}
	return b.Bytes(), sum
}

func TestExportImportRoundTrip(t *testing.T) {
	t.Parallel()
	sqliteOnly(t)
	f := newExportFixture(t)
	data, sum := exportBytes(t, f.p, &ExportOptions{Embeddings: true})
	want := ExportCounts{Sources: 2, Documents: 4, Chunks: 3 + 3 + 1 + 1, ChunkTags: 2, Embeddings: 1, Entities: 4, Versions: 1}
	if d := diff(want, sum.Counts); d != "" {
		t.Errorf("export counts (-want +got):\n%s", d)
	}
	lines := strings.Split(strings.TrimSuffix(string(data), "\n"), "\n")
	wantHeader := fmt.Sprintf(`{"type":"header","format":"openhuman-host-memory","version":2,"schema_version":%d,"exported_ms":%d,"embeddings":true}`,
		schemaVersion(), f.clock.Now().UnixMilli())
	if lines[0] != wantHeader {
		t.Errorf("header line\n%s\nwant\n%s", lines[0], wantHeader)
	}
	if last := lines[len(lines)-1]; last != `{"type":"end","counts":{"source":2,"document":4,"chunk":8,"chunk_tag":2,"embedding":1,"entity":4,"version":1}}` {
		t.Errorf("end line %s", last)
	}
	if !IsJSONLExport([]byte(lines[0])) || IsJSONLExport([]byte(lines[1])) {
		t.Error("IsJSONLExport does not tell the header from other lines")
	}
	for _, want := range []string{
		`{"type":"chunk_tag","chunk_id":"` + f.alpha.ChunkIDs[1] + `","tag":"important","position":0}`,
		`{"type":"embedding","chunk_id":"` + f.alpha.ChunkIDs[0] + `","model":"test-model","dims":3,"vector":"mpkZP83MTD8AAAAA","created_ms":1700000000042}`,
		`{"type":"entity","id":"hashtag:#reef","kind":"hashtag","surface":"#Reef","first_seen_ms":1700000000000,"last_seen_ms":1700000120000}`,
		`"title":"Alpha <plan>","tags":["plan","alpha"],"note_chunk_id":null,`,
		`"note_chunk_id":"` + f.beta.ChunkIDs[0] + `"`,
	} {
		if !strings.Contains(string(data), want) {
			t.Errorf("the export lacks %s", want)
		}
	}

	srcPath := filepath.Join(f.dir, dbFileName)
	before := dumpAll(t, srcPath)
	if len(before["entity_times"]) != 4 || len(before["embeddings"]) != 1 {
		t.Fatalf("fixture: %v", before)
	}

	// A fresh data dir, later: the restore keeps every time as exported.
	clock := newTestClock()
	clock.Advance(48 * time.Hour)
	dir := t.TempDir()
	q := openProvider(t, dir, clock)
	isum, err := q.ImportJSONL(context.Background(), bytes.NewReader(data), nil)
	if err != nil {
		t.Fatalf("ImportJSONL: %v", err)
	}
	if isum.Counts != want || isum.New != 4 || isum.Replaced != 0 || isum.Lines != len(lines) || isum.Version != JSONLVersion ||
		isum.SchemaVersion != schemaVersion() || isum.ExportedMS != sum.ExportedMS {
		t.Errorf("import summary %+v", isum)
	}
	dstPath := filepath.Join(dir, dbFileName)
	if d := diff(before, dumpAll(t, dstPath)); d != "" {
		t.Errorf("restored database (-exported +restored):\n%s", d)
	}
	// Search and the tools work on the restored database.
	got := search(t, q, "ana@example.com", 5)
	if len(got) == 0 || got[0].DocumentID != f.alpha.DocumentID {
		t.Errorf("search after restore = %v", hitDocs(got))
	}
	ents := call[topEntitiesResult](t, q, ToolTopEntities, map[string]any{"kind": "hashtag"})
	if len(ents.Entities) != 1 || ents.Entities[0].EntityID != "hashtag:#reef" || ents.Entities[0].LastSeenMS != startMS+120_000 {
		t.Errorf("tree_top_entities after restore = %+v", ents)
	}

	// Importing it again replaces every document with itself.
	isum, err = q.ImportJSONL(context.Background(), bytes.NewReader(data), nil)
	if err != nil {
		t.Fatalf("second ImportJSONL: %v", err)
	}
	if isum.New != 0 || isum.Replaced != 4 || isum.NotesUnlinked != 0 {
		t.Errorf("second import: new %d, replaced %d, unlinked %d; want 0, 4, 0", isum.New, isum.Replaced, isum.NotesUnlinked)
	}
	if d := diff(before, dumpAll(t, dstPath)); d != "" {
		t.Errorf("database after importing twice (-exported +restored):\n%s", d)
	}
	// The same export, written again from the restored database, is the
	// same file but for its time.
	again, _ := exportBytes(t, q, &ExportOptions{Embeddings: true})
	if a, b := string(again[strings.IndexByte(string(again), '\n'):]), string(data[strings.IndexByte(string(data), '\n'):]); a != b {
		t.Error("an export of the restored database differs from the original export")
	}
}

func TestExportNamespacesAndNoEmbeddings(t *testing.T) {
	t.Parallel()
	f := newExportFixture(t)
	data, sum := exportBytes(t, f.p, &ExportOptions{Namespaces: []string{"work"}})
	// Beta and the note on it, their source, their entities.
	want := ExportCounts{Sources: 1, Documents: 2, Chunks: 4, Entities: 2}
	if d := diff(want, sum.Counts); d != "" {
		t.Errorf("export counts (-want +got):\n%s", d)
	}
	if !strings.Contains(string(data), `"namespaces":["work"],"embeddings":false}`) || strings.Contains(string(data), `"namespace":"mcp"`) {
		t.Errorf("export of namespace work:\n%s", data)
	}
	q := openProvider(t, t.TempDir(), nil)
	isum, err := q.ImportJSONL(context.Background(), bytes.NewReader(data), nil)
	if err != nil || isum.New != 2 || isum.Counts != want {
		t.Fatalf("ImportJSONL = %+v, %v", isum, err)
	}
	st, err := q.Stats(context.Background())
	if err != nil || st.Documents != 2 || st.Chunks != 4 || st.Notes != 1 || st.Embeddings != 0 || st.Entities != 2 {
		t.Errorf("Stats after import = %+v, %v", st, err)
	}
}

// TestImportJSONLRefusesBadFiles checks that a file cut short, a corrupted
// line and the other malformed files fail with the line named and change
// nothing.
func TestImportJSONLRefusesBadFiles(t *testing.T) {
	t.Parallel()
	sqliteOnly(t)
	f := newExportFixture(t)
	data, _ := exportBytes(t, f.p, &ExportOptions{Embeddings: true})
	lines := strings.Split(strings.TrimSuffix(string(data), "\n"), "\n")
	n := len(lines)
	join := func(ls []string) string { return strings.Join(ls, "\n") + "\n" }
	replace := func(i int, s string) string {
		ls := append([]string{}, lines...)
		ls[i] = s
		return join(ls)
	}
	lineOf := func(prefix string) int {
		for i, l := range lines {
			if strings.HasPrefix(l, prefix) {
				return i
			}
		}
		t.Fatalf("no line starts with %s", prefix)
		return 0
	}
	chunk := lineOf(`{"type":"chunk"`)
	tag := lineOf(`{"type":"chunk_tag"`)
	doc := lineOf(`{"type":"document"`)

	// The target holds a restored copy and a document of its own; the
	// bad files would replace the copy.
	dir := t.TempDir()
	q := openProvider(t, dir, nil)
	if _, err := q.ImportJSONL(context.Background(), bytes.NewReader(data), nil); err != nil {
		t.Fatal(err)
	}
	put(t, q, map[string]any{"title": "Own", "content": "Kept whatever happens."})
	path := filepath.Join(dir, dbFileName)
	before := dumpAll(t, path)

	for name, tt := range map[string]struct {
		file    string
		maxLine int
		wantErr string
	}{
		"truncated at a line":     {file: join(lines[:n-1]), wantErr: fmt.Sprintf("the file ends after line %d without its end record: it was cut short", n-1)},
		"truncated inside a line": {file: string(data[:len(data)-30]), wantErr: fmt.Sprintf("line %d is not a JSON object", n)},
		"corrupted chunk":         {file: replace(chunk, strings.Replace(lines[chunk], "harbour", "harbor", 1)), wantErr: fmt.Sprintf("line %d: chunk record: chunk id %s does not match", chunk+1, f.alpha.ChunkIDs[0])},
		"garbage line":            {file: replace(tag, `{"type":"chunk_tag","chunk_id":`), wantErr: fmt.Sprintf("line %d is not a JSON object", tag+1)},
		"unknown type":            {file: replace(tag, `{"type":"document_version","id":"x"}`), wantErr: fmt.Sprintf(`line %d: unknown record type "document_version"`, tag+1)},
		"unknown field":           {file: replace(tag, strings.Replace(lines[tag], `"tag":`, `"colour":"red","tag":`, 1)), wantErr: fmt.Sprintf(`line %d: chunk_tag record: unknown field "colour"`, tag+1)},
		"missing field":           {file: replace(doc, strings.Replace(lines[doc], `"title":"Alpha <plan>",`, ``, 1)), wantErr: fmt.Sprintf(`line %d: document record: missing field "title"`, doc+1)},
		"wrong type":              {file: replace(chunk, strings.Replace(lines[chunk], `"seq":0`, `"seq":"0"`, 1)), wantErr: fmt.Sprintf(`line %d: chunk record: field "seq": must be an integer, not string`, chunk+1)},
		"line missing":            {file: join(append(append([]string{}, lines[:tag]...), lines[tag+1:]...)), wantErr: "the end record counts 2 chunk_tag records, but the file holds 1"},
		"no header":               {file: join(lines[1:]), wantErr: "line 1: not an openhuman-host memory export: the first line must be the header record"},
		"newer version":           {file: replace(0, strings.Replace(lines[0], `"version":2`, `"version":3`, 1)), wantErr: "the export is of format version 3, and this openhuman-host reads versions up to 2; upgrade"},
		"not json":                {file: "# Notes\n\nhello\n", wantErr: "line 1 is not a JSON object"},
		"empty":                   {file: "", wantErr: "the file is empty"},
		"after end":               {file: join(append(append([]string{}, lines...), lines[1])), wantErr: fmt.Sprintf(`line %d: a "source" record after the end record`, n+1)},
		"empty line":              {file: replace(tag, ""), wantErr: fmt.Sprintf("line %d is empty", tag+1)},
		"line too long":           {file: string(data), maxLine: 200, wantErr: "is longer than 200 bytes"},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := q.ImportJSONL(context.Background(), strings.NewReader(tt.file), &JSONLImportOptions{MaxLineBytes: tt.maxLine})
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) || !strings.HasSuffix(err.Error(), "nothing was changed") {
				t.Fatalf("ImportJSONL = %v, want an error with %q ending in \"nothing was changed\"", err, tt.wantErr)
			}
			if d := diff(before, dumpAll(t, path)); d != "" {
				t.Errorf("a refused import changed the database (-before +after):\n%s", d)
			}
		})
	}
}

// TestImportJSONLRelinksNotes replaces a document whose chunk has a note
// that the file does not hold: the note is linked again to the same chunk.
func TestImportJSONLRelinksNotes(t *testing.T) {
	t.Parallel()
	f := newExportFixture(t)
	data, _ := exportBytes(t, f.p, &ExportOptions{Namespaces: []string{"mcp"}})
	// The note on beta (namespace work) is not in the file; it annotates
	// alpha's first chunk now.
	if err := f.p.store.db.Exec(`UPDATE documents SET note_chunk_id = ? WHERE id = ?`, f.alpha.ChunkIDs[0], f.note.DocumentID).Error; err != nil {
		t.Fatal(err)
	}
	sum, err := f.p.ImportJSONL(context.Background(), bytes.NewReader(data), nil)
	if err != nil || sum.Replaced != 2 || sum.NotesUnlinked != 0 {
		t.Fatalf("ImportJSONL = %+v, %v", sum, err)
	}
	var link string
	if err := f.p.store.db.Raw(`SELECT note_chunk_id FROM documents WHERE id = ?`, f.note.DocumentID).Scan(&link).Error; err != nil || link != f.alpha.ChunkIDs[0] {
		t.Errorf("note link after the import = %q, %v; want %s", link, err, f.alpha.ChunkIDs[0])
	}
}
