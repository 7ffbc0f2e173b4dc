package memory

import (
	"crypto/sha256"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp/cmpopts"
	"gorm.io/gorm"

	"github.com/openhuman/openhuman-host/sdk"
)

func TestStore(t *testing.T) {
	t.Parallel()
	tests := map[string]struct {
		args      map[string]any
		wantText  string
		want      storeResult
		wantChunk chunkView
	}{
		"defaults": {
			args:     map[string]any{"title": "Lighthouse", "content": "Ingrid keeps the light."},
			wantText: `Stored mcp/mcp-store-lighthouse (title "Lighthouse", 1 chunk; no tags). Chunk ids: %s.`,
			want:     storeResult{DocumentID: "mcp/mcp-store-lighthouse", Namespace: "mcp", Key: "mcp-store-lighthouse", ChunkCount: 1},
			wantChunk: chunkView{
				chunkRef: chunkRef{DocumentID: "mcp/mcp-store-lighthouse", Title: "Lighthouse", Namespace: "mcp", SourceID: "mcp:mcp", SourceKind: "note", UpdatedMS: startMS},
				Content:  "Ingrid keeps the light.", Tags: []string{}, DocumentTags: []string{}, Notes: []noteView{}, CreatedMS: startMS,
			},
		},
		"namespace and tags": {
			args:     map[string]any{"title": "Q3 plan", "content": "Ship it.", "namespace": "work.team-1", "tags": []string{"b", "a", " b ", "c"}},
			wantText: `Stored work.team-1/mcp-store-q3-plan (title "Q3 plan", 1 chunk; tags: b, a, c). Chunk ids: %s.`,
			want:     storeResult{DocumentID: "work.team-1/mcp-store-q3-plan", Namespace: "work.team-1", Key: "mcp-store-q3-plan", ChunkCount: 1},
			wantChunk: chunkView{
				chunkRef: chunkRef{DocumentID: "work.team-1/mcp-store-q3-plan", Title: "Q3 plan", Namespace: "work.team-1", SourceID: "mcp:work.team-1", SourceKind: "note", UpdatedMS: startMS},
				Content:  "Ship it.", Tags: []string{}, DocumentTags: []string{"b", "a", "c"}, Notes: []noteView{}, CreatedMS: startMS,
			},
		},
		"title without ASCII letters": {
			args:     map[string]any{"title": "日本語", "content": "テキスト"},
			wantText: `Stored mcp/mcp-store-untitled (title "日本語", 1 chunk; no tags). Chunk ids: %s.`,
			want:     storeResult{DocumentID: "mcp/mcp-store-untitled", Namespace: "mcp", Key: "mcp-store-untitled", ChunkCount: 1},
			wantChunk: chunkView{
				chunkRef: chunkRef{DocumentID: "mcp/mcp-store-untitled", Title: "日本語", Namespace: "mcp", SourceID: "mcp:mcp", SourceKind: "note", UpdatedMS: startMS},
				Content:  "テキスト", Tags: []string{}, DocumentTags: []string{}, Notes: []noteView{}, CreatedMS: startMS,
			},
		},
		"title trimmed, content kept verbatim": {
			args:     map[string]any{"title": "  Spaced out \n", "content": "\n  indented body\n"},
			wantText: `Stored mcp/mcp-store-spaced-out (title "Spaced out", 1 chunk; no tags). Chunk ids: %s.`,
			want:     storeResult{DocumentID: "mcp/mcp-store-spaced-out", Namespace: "mcp", Key: "mcp-store-spaced-out", ChunkCount: 1},
			wantChunk: chunkView{
				chunkRef: chunkRef{DocumentID: "mcp/mcp-store-spaced-out", Title: "Spaced out", Namespace: "mcp", SourceID: "mcp:mcp", SourceKind: "note", UpdatedMS: startMS},
				Content:  "\n  indented body\n", Tags: []string{}, DocumentTags: []string{}, Notes: []noteView{}, CreatedMS: startMS,
			},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			p, _ := newProvider(t)
			got := callRaw(t, p, ToolStore, tc.args)
			ids := chunkIDs(t, p, tc.want.DocumentID)
			if len(ids) != 1 {
				t.Fatalf("chunks = %v, want 1", ids)
			}
			tc.want.ChunkIDs = ids
			tc.want.Tags = tc.wantChunk.DocumentTags
			want, err := sdk.StructuredResult(fmt.Sprintf(tc.wantText, ids[0]), tc.want)
			if err != nil {
				t.Fatal(err)
			}
			if diff := diff(want, got); diff != "" {
				t.Errorf("store result (-want +got):\n%s", diff)
			}
			tc.wantChunk.ChunkID = ids[0]
			read := call[readChunkResult](t, p, ToolReadChunk, map[string]any{"chunk_id": ids[0]})
			if diff := diff(readChunkResult{Chunk: &tc.wantChunk}, read); diff != "" {
				t.Errorf("stored chunk (-want +got):\n%s", diff)
			}
			checkIndexInStep(t, p)
		})
	}
}

// TestStoreSameTitleReplaces stores a title twice: the second call updates
// the same document and its old text is no longer found.
func TestStoreSameTitleReplaces(t *testing.T) {
	t.Parallel()
	p, clock := newProvider(t)
	first := put(t, p, map[string]any{"title": "Project Plan", "content": "alpha bravo\n\n" + longText(6), "tags": []string{"x"}})
	if first.ChunkCount < 2 {
		t.Fatalf("first version has %d chunks, want several", first.ChunkCount)
	}
	oldIDs := chunkIDs(t, p, first.DocumentID)
	if hits := search(t, p, "alpha", 0); len(hits) != 1 {
		t.Fatalf("before update: %d hits for alpha", len(hits))
	}

	clock.Advance(time.Minute)
	second := put(t, p, map[string]any{"title": "Project Plan", "content": "charlie delta", "tags": []string{"y"}})
	want := storeResult{DocumentID: first.DocumentID, Namespace: "mcp", Key: "mcp-store-project-plan", ChunkCount: 1,
		ChunkIDs: chunkIDs(t, p, first.DocumentID), Tags: []string{"y"},
		Replaced: &replacement{Version: 1, PreviousBytes: int64(len("alpha bravo\n\n" + longText(6))), Bytes: 13, ChunksAdded: 1, ChunksRemoved: first.ChunkCount}}
	if diff := diff(want, second); diff != "" {
		t.Errorf("second store (-want +got):\n%s", diff)
	}

	tests := map[string]struct {
		query string
		want  []string
	}{
		"old first words gone":  {query: "alpha", want: []string{}},
		"old later chunks gone": {query: "lighthouses", want: []string{}},
		"new text found":        {query: "charlie", want: []string{first.DocumentID}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			if diff := diff(tc.want, hitDocs(search(t, p, tc.query, 0))); diff != "" {
				t.Errorf("search %q (-want +got):\n%s", tc.query, diff)
			}
		})
	}
	for _, id := range oldIDs {
		if got := call[readChunkResult](t, p, ToolReadChunk, map[string]any{"chunk_id": id}); got.Chunk != nil {
			t.Errorf("old chunk %s still readable", id)
		}
	}
	var doc documentRow
	if err := p.store.db.Where("id = ?", first.DocumentID).Take(&doc).Error; err != nil {
		t.Fatal(err)
	}
	wantDoc := documentRow{
		ID: first.DocumentID, SourceID: "mcp:mcp", Namespace: "mcp", Key: "mcp-store-project-plan", Title: "Project Plan",
		Tags: `["y"]`, ContentSHA256: fmt.Sprintf("%x", sha256.Sum256([]byte("charlie delta"))),
		CreatedMS: startMS, UpdatedMS: startMS + time.Minute.Milliseconds(),
	}
	if diff := diff(wantDoc, doc); diff != "" {
		t.Errorf("document row (-want +got):\n%s", diff)
	}
	checkIndexInStep(t, p)

	// Storing the same content again is idempotent: same chunk, same
	// creation time.
	newIDs := chunkIDs(t, p, first.DocumentID)
	clock.Advance(time.Minute)
	put(t, p, map[string]any{"title": "Project Plan", "content": "charlie delta", "tags": []string{"y"}})
	if diff := diff(newIDs, chunkIDs(t, p, first.DocumentID)); diff != "" {
		t.Errorf("chunk ids after identical store (-want +got):\n%s", diff)
	}
	read := call[readChunkResult](t, p, ToolReadChunk, map[string]any{"chunk_id": newIDs[0]})
	if read.Chunk == nil || read.Chunk.CreatedMS != startMS+time.Minute.Milliseconds() {
		t.Errorf("unchanged chunk was rewritten: %+v", read.Chunk)
	}
}

// TestStoreDifferentTitleSameSlug checks that titles which slug alike get
// distinct documents instead of overwriting each other.
func TestStoreDifferentTitleSameSlug(t *testing.T) {
	t.Parallel()
	p, _ := newProvider(t)
	a := put(t, p, map[string]any{"title": "Meeting Notes", "content": "budget approved"})
	b := put(t, p, map[string]any{"title": "meeting notes!", "content": "budget rejected"})
	other := put(t, p, map[string]any{"title": "meeting notes!", "content": "budget elsewhere", "namespace": "other"})
	b2 := put(t, p, map[string]any{"title": "meeting notes!", "content": "budget postponed"})

	hashed := "mcp-store-meeting-notes-" + sha8("meeting notes!")
	got := []storeResult{a, b, other, b2}
	want := []storeResult{
		{DocumentID: "mcp/mcp-store-meeting-notes", Namespace: "mcp", Key: "mcp-store-meeting-notes", ChunkCount: 1},
		{DocumentID: "mcp/" + hashed, Namespace: "mcp", Key: hashed, ChunkCount: 1},
		{DocumentID: "other/mcp-store-meeting-notes", Namespace: "other", Key: "mcp-store-meeting-notes", ChunkCount: 1},
		{DocumentID: "mcp/" + hashed, Namespace: "mcp", Key: hashed, ChunkCount: 1,
			Replaced: &replacement{Version: 1, PreviousBytes: 15, Bytes: 16, ChunksAdded: 1, ChunksRemoved: 1}},
	}
	if diff := diff(want, got, cmpopts.IgnoreFields(storeResult{}, "ChunkIDs", "Tags")); diff != "" {
		t.Errorf("store results (-want +got):\n%s", diff)
	}

	tests := map[string]struct {
		query string
		want  []string
	}{
		"first title kept":       {query: "approved", want: []string{"mcp/mcp-store-meeting-notes"}},
		"second title replaced":  {query: "rejected", want: []string{}},
		"second title current":   {query: "postponed", want: []string{"mcp/" + hashed}},
		"other namespace intact": {query: "elsewhere", want: []string{"other/mcp-store-meeting-notes"}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			if diff := diff(tc.want, hitDocs(search(t, p, tc.query, 0))); diff != "" {
				t.Errorf("search %q (-want +got):\n%s", tc.query, diff)
			}
		})
	}
	var titles []string
	if err := p.store.db.Model(&documentRow{}).Order("id").Pluck("title", &titles).Error; err != nil {
		t.Fatal(err)
	}
	if diff := diff([]string{"Meeting Notes", "meeting notes!", "meeting notes!"}, titles); diff != "" {
		t.Errorf("document titles (-want +got):\n%s", diff)
	}
}

// TestStoreLongContent stores text that needs many chunks, with multi-byte
// characters, and reads every chunk back.
func TestStoreLongContent(t *testing.T) {
	t.Parallel()
	content := longText(8) + "\n\n" + strings.Repeat("東京タワーの夜景はきれいです。", 300) + "\n\nFinal words: zeppelin omega."
	p, _ := newProvider(t)
	res := put(t, p, map[string]any{"title": "Long read", "content": content})
	ids := chunkIDs(t, p, res.DocumentID)
	if res.ChunkCount != len(ids) || res.ChunkCount < 5 {
		t.Fatalf("chunk_count %d, %d chunks stored; want the same, at least 5", res.ChunkCount, len(ids))
	}
	idFormat := regexp.MustCompile(`^chk_[0-9a-f]{24}$`)
	var rebuilt strings.Builder
	for seq, id := range ids {
		c := call[readChunkResult](t, p, ToolReadChunk, map[string]any{"chunk_id": id}).Chunk
		if c == nil {
			t.Fatalf("chunk %s not found", id)
		}
		if c.Seq != seq || !idFormat.MatchString(c.ChunkID) || c.ChunkID != chunkID(res.DocumentID, seq, c.Content) {
			t.Errorf("chunk %d: seq %d, id %s", seq, c.Seq, c.ChunkID)
		}
		if n := utf8.RuneCountInString(c.Content); n > maxChunkRunes || n == 0 {
			t.Errorf("chunk %d has %d characters", seq, n)
		}
		if !utf8.ValidString(c.Content) {
			t.Errorf("chunk %d is not valid UTF-8", seq)
		}
		rebuilt.WriteString(c.Content)
	}
	if rebuilt.String() != content {
		t.Error("chunks do not reassemble the stored content")
	}
	hits := search(t, p, "zeppelin omega", 0)
	if len(hits) != 1 || hits[0].Seq != len(ids)-1 {
		t.Errorf("last-chunk search hits = %+v, want seq %d", hits, len(ids)-1)
	}
	checkIndexInStep(t, p)
}

// chunkIDs lists a document's chunk ids in order, straight from the
// database.
func chunkIDs(t *testing.T, p *Provider, docID string) []string {
	t.Helper()
	var ids []string
	if err := p.store.db.Model(&chunkRow{}).Where("document_id = ?", docID).Order("seq").Pluck("id", &ids).Error; err != nil {
		t.Fatal(err)
	}
	return ids
}

// checkIndexInStep checks that the FTS index has exactly one row per chunk
// and passes FTS5's own integrity check, including the comparison of the
// index with what chunks_fts_source gives (rank 1): that fails when a
// write left a row indexed with other values than the view has now.
func checkIndexInStep(t *testing.T, p *Provider) {
	t.Helper()
	checkIndexOf(t, p.store.db)
}

// checkIndexOf is checkIndexInStep on the database db.
func checkIndexOf(t *testing.T, db *gorm.DB) {
	t.Helper()
	if onPostgres(db) {
		// Every chunk's vector is what its title, tags and text give now.
		var stale int
		err := db.Raw(`SELECT COUNT(*) FROM chunks c WHERE c.tsv IS DISTINCT FROM memory_chunk_tsv(c.document_id, c.id, c.content)`).Scan(&stale).Error
		if err != nil {
			t.Fatal(err)
		}
		if stale != 0 {
			t.Errorf("%d chunks have a full-text vector out of step", stale)
		}
		return
	}
	// chunks_fts_docsize has a row per indexed row; a scan of chunks_fts
	// itself would read the view, not the index.
	var counts struct {
		Chunks   int
		Indexed  int
		Missing  int
		Orphaned int
	}
	err := db.Raw(`SELECT
		(SELECT COUNT(*) FROM chunks) AS chunks,
		(SELECT COUNT(*) FROM chunks_fts_docsize) AS indexed,
		(SELECT COUNT(*) FROM chunks c WHERE NOT EXISTS (SELECT 1 FROM chunks_fts_docsize f WHERE f.id = c.pk)) AS missing,
		(SELECT COUNT(*) FROM chunks_fts_docsize f WHERE NOT EXISTS (SELECT 1 FROM chunks c WHERE c.pk = f.id)) AS orphaned`).Scan(&counts).Error
	if err != nil {
		t.Fatal(err)
	}
	if counts.Chunks != counts.Indexed || counts.Missing != 0 || counts.Orphaned != 0 {
		t.Errorf("index out of step: %+v", counts)
	}
	if err := db.Exec(`INSERT INTO chunks_fts (chunks_fts, rank) VALUES ('integrity-check', 1)`).Error; err != nil {
		t.Errorf("FTS5 integrity check: %v", err)
	}
}

// TestStoreKeepsTagsWhenOmitted: storing a title again without tags keeps
// the document's tags; an empty list removes them.
func TestStoreKeepsTagsWhenOmitted(t *testing.T) {
	t.Parallel()
	p, _ := newProvider(t)
	put(t, p, map[string]any{"title": "Launch plan", "content": "Ship in Q4.", "tags": []string{"q4", "rocket"}})
	res := callRaw(t, p, ToolStore, map[string]any{"title": "Launch plan", "content": "Ship in Q1."})
	if !strings.Contains(res.Content[0].Text, "tags kept, tags: q4, rocket") {
		t.Errorf("text = %q", res.Content[0].Text)
	}
	if hits := search(t, p, "rocket q1", 0); len(hits) != 1 {
		t.Errorf("tags not kept: %+v", hits)
	}
	got := put(t, p, map[string]any{"title": "Launch plan", "content": "Ship in Q1.", "tags": []string{}})
	if len(got.Tags) != 0 {
		t.Errorf("tags after [] = %v", got.Tags)
	}
	if hits := search(t, p, "rocket q1", 0); len(hits) != 0 {
		t.Errorf("tags still searchable after []: %+v", hits)
	}
}

// TestStoreCraftedCollision: a title made to look like another title's
// disambiguated key does not make that title unstorable.
func TestStoreCraftedCollision(t *testing.T) {
	t.Parallel()
	p, _ := newProvider(t)
	crafted := put(t, p, map[string]any{"title": "coll " + sha8("Coll"), "content": "crafted"})
	plain := put(t, p, map[string]any{"title": "coll", "content": "plain"})
	upper := put(t, p, map[string]any{"title": "Coll", "content": "upper"})
	full := fmt.Sprintf("%x", sha256.Sum256([]byte("Coll")))
	want := []string{"mcp/mcp-store-coll-" + sha8("Coll"), "mcp/mcp-store-coll", "mcp/mcp-store-coll-" + full[:16]}
	if d := diff(want, []string{crafted.DocumentID, plain.DocumentID, upper.DocumentID}); d != "" {
		t.Errorf("document ids (-want +got):\n%s", d)
	}
	for q, id := range map[string]string{"crafted": want[0], "plain": want[1], "upper": want[2]} {
		if hits := search(t, p, q, 0); len(hits) != 1 || hits[0].DocumentID != id {
			t.Errorf("search %q = %+v, want %s", q, hits, id)
		}
	}
}
