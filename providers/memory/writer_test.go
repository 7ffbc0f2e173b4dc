package memory

import (
	"fmt"
	"math"
	"testing"
)

// testDoc is a document of namespace "w" with key key and text.
func testDoc(key, title, text string) document {
	return document{SourceID: "mcp:w", SourceKind: SourceKindNote, SourceName: "w", Namespace: "w", Key: key,
		Title: title, Tags: []string{"t-" + key}, Pieces: splitChunks(text, maxChunkRunes), ContentSHA256: contentHash(text)}
}

// TestPutDocumentsBatch writes a batch whose documents wait for one
// another's chunks: the same document twice (the second write replaces the
// first, keeping the chunk they share), a new document and one stored
// before. Each result has the chunks it wrote, with the pks they got.
func TestPutDocumentsBatch(t *testing.T) {
	t.Parallel()
	p, _ := newProvider(t)
	st := storeOf(t, p)
	if _, err := st.putDocuments(t.Context(), []document{testDoc("old", "Old", "Old text about kelp.")}, false); err != nil {
		t.Fatal(err)
	}
	first := longText(4)
	docs := []document{
		testDoc("twice", "Twice", first),
		testDoc("new", "New", "New text about herons."),
		testDoc("twice", "Twice, again", first+"\n\nAnd a last word about otters."),
		testDoc("old", "Old", "Old text about kelp, revised."),
	}
	res, err := st.putDocuments(t.Context(), docs, true)
	if err != nil {
		t.Fatal(err)
	}
	if !res[0].Created || res[2].Created || !res[1].Created || res[3].Created {
		t.Errorf("created = %v %v %v %v, want true true false false", res[0].Created, res[1].Created, res[2].Created, res[3].Created)
	}
	if r := res[2].Replaced; r == nil || !r.TitleChanged || r.ChunksKept != len(res[0].ChunkIDs)-1 || r.ChunksAdded != 1 || r.ChunksRemoved != 1 {
		t.Errorf("second write of the same document: replaced = %+v", r)
	}
	for i, r := range res {
		if len(r.Fresh) == 0 {
			t.Errorf("result %d has no fresh chunks", i)
		}
		if i == 0 {
			continue // the second write replaced its last chunk
		}
		for _, c := range r.Fresh {
			var id string
			if err := p.store.db.Raw(`SELECT id FROM chunks WHERE pk = ? AND document_id = ?`, c.PK, r.DocumentID).Scan(&id).Error; err != nil || id != c.ID {
				t.Errorf("result %d: fresh chunk %s has pk %d, which is chunk %q (%v)", i, c.ID, c.PK, id, err)
			}
		}
	}
	if d := diff(res[2].ChunkIDs, chunkIDs(t, p, res[2].DocumentID)); d != "" {
		t.Errorf("chunks of the document written twice (-want +got):\n%s", d)
	}
	for q, want := range map[string]string{"otters again": "w/twice", "herons": "w/new", "kelp revised": "w/old", "t-twice otters": "w/twice"} {
		if hits := search(t, p, q, 0); len(hits) != 1 || hits[0].DocumentID != want {
			t.Errorf("search %q = %v, want %s", q, hitDocs(hits), want)
		}
	}
	checkIndexInStep(t, p)
}

// TestPutDocumentsAtTheLastPK: once a pk is the largest SQLite has, new
// chunks get the free ones it picks.
func TestPutDocumentsAtTheLastPK(t *testing.T) {
	t.Parallel()
	sqliteOnly(t)
	p, _ := newProvider(t)
	st := storeOf(t, p)
	res, err := st.putDocuments(t.Context(), []document{testDoc("a", "A", "Alpha text.")}, false)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.store.db.Exec(`UPDATE chunks SET pk = ? WHERE pk = ?`, int64(math.MaxInt64), res[0].Fresh[0].PK).Error; err != nil {
		t.Fatal(err)
	}
	var docs []document
	for i := range 3 {
		docs = append(docs, testDoc(fmt.Sprint("b", i), "B", fmt.Sprintf("Beta text %d.", i)))
	}
	res, err = st.putDocuments(t.Context(), docs, false)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[int64]bool{}
	for _, r := range res {
		pk := r.Fresh[0].PK
		if pk <= 0 || pk == math.MaxInt64 || seen[pk] {
			t.Errorf("chunk %s got pk %d", r.Fresh[0].ID, pk)
		}
		seen[pk] = true
	}
	if hits := search(t, p, "beta", 0); len(hits) != 3 {
		t.Errorf("search beta: %d hits, want 3", len(hits))
	}
	checkIndexInStep(t, p)
}

// TestPutDocumentsBatchLinks: a batch may hold a note about a chunk of a
// document written earlier in it, and a document that leaves a source
// which a new document of the batch joins: both find what they refer to.
func TestPutDocumentsBatchLinks(t *testing.T) {
	t.Parallel()
	p, _ := newProvider(t)
	st := storeOf(t, p)
	moving := testDoc("moving", "Moving", "Moving text.")
	moving.SourceID = "mcp:old"
	if _, err := st.putDocuments(t.Context(), []document{moving}, false); err != nil {
		t.Fatal(err)
	}
	target := testDoc("target", "Target", "Target text about gannets.")
	noteText := "A note about gannets."
	note := testDoc("note", "Note on Target", noteText)
	note.NoteChunkID = chunkID(documentID("w", "target"), 0, target.Pieces[0])
	joining := testDoc("joining", "Joining", "Joining text.")
	joining.SourceID = "mcp:old"
	moving.SourceID = "mcp:new"
	moving.ContentSHA256 = "changed"
	if _, err := st.putDocuments(t.Context(), []document{target, note, joining, moving}, true); err != nil {
		t.Fatal(err)
	}
	var link string
	if err := p.store.db.Raw(`SELECT note_chunk_id FROM documents WHERE id = ?`, documentID("w", "note")).Scan(&link).Error; err != nil || link != note.NoteChunkID {
		t.Errorf("note linked to %q (%v), want %s", link, err, note.NoteChunkID)
	}
	var sources []string
	if err := p.store.db.Raw(`SELECT id FROM sources ORDER BY id`).Scan(&sources).Error; err != nil {
		t.Fatal(err)
	}
	if d := diff([]string{"mcp:new", "mcp:old", "mcp:w"}, sources); d != "" {
		t.Errorf("sources (-want +got):\n%s", d)
	}
	checkIndexInStep(t, p)
}
