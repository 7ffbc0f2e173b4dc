package memory

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/openhuman/openhuman-host/sdk"
	"github.com/openhuman/openhuman-host/sdk/testwait"
)

// refOf builds the chunkRef memory_store gives the first chunk of a note
// document, for comparisons.
func browseIDs(hits []browseHit) []string {
	ids := []string{}
	for _, h := range hits {
		ids = append(ids, h.DocumentID)
	}
	return ids
}

// firstChunk returns the id of a document's first chunk.
func firstChunk(t *testing.T, p *Provider, docID string) string {
	t.Helper()
	ids := chunkIDs(t, p, docID)
	if len(ids) == 0 {
		t.Fatalf("document %s has no chunks", docID)
	}
	return ids[0]
}

func TestBrowse(t *testing.T) {
	t.Parallel()
	p, clock := newProvider(t)
	// Five documents a minute apart, in two namespaces, with entities.
	docs := []map[string]any{
		{"title": "Alpha", "content": "Kickoff with ana@example.com on 2026-01-05.", "namespace": "work"},
		{"title": "Bravo", "content": "Lunch with bob@example.com, follow #garden."},
		{"title": "Charlie", "content": "Ana (ana@example.com) sent the garden plan #garden.", "namespace": "work"},
		{"title": "Delta", "content": "Nothing to extract in this one."},
		{"title": "Echo", "content": "Garden plans for spring."},
	}
	ids := map[string]string{}
	times := map[string]int64{}
	for _, d := range docs {
		r := put(t, p, d)
		ids[d["title"].(string)] = r.DocumentID
		times[d["title"].(string)] = clock.Now().UnixMilli()
		clock.Advance(time.Minute)
	}
	tests := map[string]struct {
		args      map[string]any
		want      []string
		wantTotal int64
	}{
		"everything newest first": {args: map[string]any{}, want: []string{ids["Echo"], ids["Delta"], ids["Charlie"], ids["Bravo"], ids["Alpha"]}, wantTotal: 5},
		"first page":              {args: map[string]any{"k": 2}, want: []string{ids["Echo"], ids["Delta"]}, wantTotal: 5},
		"second page":             {args: map[string]any{"k": 2, "offset": 2}, want: []string{ids["Charlie"], ids["Bravo"]}, wantTotal: 5},
		"past the end":            {args: map[string]any{"offset": 5}, want: []string{}, wantTotal: 5},
		"source id":               {args: map[string]any{"source_ids": []string{"mcp:work"}}, want: []string{ids["Charlie"], ids["Alpha"]}, wantTotal: 2},
		"source kind note":        {args: map[string]any{"source_kinds": []string{"note"}}, want: []string{ids["Echo"], ids["Delta"], ids["Charlie"], ids["Bravo"], ids["Alpha"]}, wantTotal: 5},
		"source kind document":    {args: map[string]any{"source_kinds": []string{"document", "email"}}, want: []string{}, wantTotal: 0},
		"entity":                  {args: map[string]any{"entity_ids": []string{"email:ana@example.com"}}, want: []string{ids["Charlie"], ids["Alpha"]}, wantTotal: 2},
		"entities are alternatives": {args: map[string]any{"entity_ids": []string{"email:bob@example.com", "date:2026-01-05"}},
			want: []string{ids["Bravo"], ids["Alpha"]}, wantTotal: 2},
		"entity and source ANDed": {args: map[string]any{"entity_ids": []string{"hashtag:#garden"}, "source_ids": []string{"mcp:work"}},
			want: []string{ids["Charlie"]}, wantTotal: 1},
		"since inclusive":    {args: map[string]any{"since_ms": times["Delta"]}, want: []string{ids["Echo"], ids["Delta"]}, wantTotal: 2},
		"until exclusive":    {args: map[string]any{"until_ms": times["Bravo"]}, want: []string{ids["Alpha"]}, wantTotal: 1},
		"range":              {args: map[string]any{"since_ms": times["Bravo"], "until_ms": times["Delta"]}, want: []string{ids["Charlie"], ids["Bravo"]}, wantTotal: 2},
		"query":              {args: map[string]any{"query": "garden"}, want: []string{ids["Echo"], ids["Charlie"], ids["Bravo"]}, wantTotal: 3},
		"query all words":    {args: map[string]any{"query": "garden spring"}, want: []string{ids["Echo"]}, wantTotal: 1},
		"query stems":        {args: map[string]any{"query": "garden plan"}, want: []string{ids["Echo"], ids["Charlie"]}, wantTotal: 2},
		"query and source":   {args: map[string]any{"query": "garden", "source_ids": []string{"mcp:mcp"}}, want: []string{ids["Echo"], ids["Bravo"]}, wantTotal: 2},
		"query syntax":       {args: map[string]any{"query": `NEAR( "garden`}, want: []string{}, wantTotal: 0},
		"query without word": {args: map[string]any{"query": `"*"`}, want: []string{}, wantTotal: 0},
		"unknown entity":     {args: map[string]any{"entity_ids": []string{"email:nobody@example.com"}}, want: []string{}, wantTotal: 0},
		"entity id any case": {args: map[string]any{"entity_ids": []string{"email:Ana@Example.COM", "hashtag:#GARDEN"}},
			want: []string{ids["Charlie"], ids["Bravo"], ids["Alpha"]}, wantTotal: 3},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got := call[browseResult](t, p, ToolBrowse, tc.args)
			if diff := diff(tc.want, browseIDs(got.Chunks)); diff != "" {
				t.Errorf("documents (-want +got):\n%s", diff)
			}
			if got.Total != tc.wantTotal {
				t.Errorf("total = %d, want %d", got.Total, tc.wantTotal)
			}
		})
	}

	got := call[browseResult](t, p, ToolBrowse, map[string]any{"query": "garden plan", "source_ids": []string{"mcp:work"}, "k": 1})
	want := browseHit{
		chunkRef: chunkRef{
			ChunkID: firstChunk(t, p, ids["Charlie"]), DocumentID: ids["Charlie"], Title: "Charlie", Namespace: "work",
			SourceID: "mcp:work", SourceKind: "note", Seq: 0, UpdatedMS: times["Charlie"],
		},
		Snippet: "Ana (ana@example.com) sent the **garden** **plan** #**garden**.",
	}
	if diff := diff([]browseHit{want}, got.Chunks); diff != "" {
		t.Errorf("hit (-want +got):\n%s", diff)
	}
	seconds := callRaw(t, p, ToolBrowse, map[string]any{"since_ms": 1_700_000_000, "k": 5})
	if want := "\nNote: since_ms 1700000000 is 1970-01-20 16:13 UTC; times are Unix milliseconds: if you meant seconds, multiply by 1000."; !strings.HasSuffix(seconds.Content[0].Text, want) {
		t.Errorf("seconds hint missing: %q", seconds.Content[0].Text)
	}
	paged := callRaw(t, p, ToolBrowse, map[string]any{"k": 2})
	if !strings.HasSuffix(paged.Content[0].Text, "\nMore: call again with offset 2.") {
		t.Errorf("no next-page hint: %q", paged.Content[0].Text)
	}
	plain := call[browseResult](t, p, ToolBrowse, map[string]any{"k": 1})
	if plain.Chunks[0].Snippet != "Garden plans for spring." {
		t.Errorf("snippet without query = %q", plain.Chunks[0].Snippet)
	}
}

func TestLeadSnippet(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("word ", 100)
	tests := map[string]struct{ in, want string }{
		"short":     {"Hello\n\nworld", "Hello world"},
		"cut":       {long, strings.TrimSpace(strings.Repeat("word ", 48)) + "…"},
		"no spaces": {strings.Repeat("é", 300), strings.Repeat("é", 240) + "…"},
		// Long text is cut before its whitespace collapses: at a
		// character boundary, and still marked as cut.
		"whitespace then text":     {strings.Repeat(" ", 1918) + "é" + strings.Repeat("z", 50), "é…"},
		"cut inside a character":   {strings.Repeat("\n", 1919) + strings.Repeat("é", 10), "…"},
		"long text with few words": {"start " + strings.Repeat("\t", 5000) + " end", "start…"},
	}
	for name, tc := range tests {
		if got := leadSnippet(tc.in); got != tc.want {
			t.Errorf("%s: leadSnippet = %q, want %q", name, got, tc.want)
		}
	}
}

func TestTopEntities(t *testing.T) {
	t.Parallel()
	p, clock := newProvider(t)
	put(t, p, map[string]any{"title": "One", "content": "Mail Ana.Lima@Example.com and ana.lima@example.com; see https://example.org/a."})
	clock.Advance(time.Minute)
	put(t, p, map[string]any{"title": "Two", "content": "Ping @skyways about https://example.org/a on 30 November 2026."})
	clock.Advance(time.Minute)
	third := put(t, p, map[string]any{"title": "Three", "content": "ana.lima@example.com again, with @SkyWays."})
	later := clock.Now().UnixMilli()

	all := call[topEntitiesResult](t, p, ToolTopEntities, map[string]any{"k": 50})
	want := []entityRow{
		{EntityID: "email:ana.lima@example.com", Kind: "email", Surface: "Ana.Lima@Example.com", Count: 3, ChunkCount: 2, LastSeenMS: later},
		{EntityID: "handle:@skyways", Kind: "handle", Surface: "@skyways", Count: 2, ChunkCount: 2, LastSeenMS: later},
		{EntityID: "url:https://example.org/a", Kind: "url", Surface: "https://example.org/a", Count: 2, ChunkCount: 2, LastSeenMS: startMS + time.Minute.Milliseconds()},
		{EntityID: "date:2026-11-30", Kind: "date", Surface: "30 November 2026", Count: 1, ChunkCount: 1, LastSeenMS: startMS + time.Minute.Milliseconds()},
	}
	if diff := diff(want, all.Entities); diff != "" {
		t.Errorf("top entities (-want +got):\n%s", diff)
	}
	if got := call[topEntitiesResult](t, p, ToolTopEntities, map[string]any{"kind": "url"}); len(got.Entities) != 1 || got.Entities[0].Kind != "url" {
		t.Errorf("kind url: %+v", got.Entities)
	}
	if got := call[topEntitiesResult](t, p, ToolTopEntities, map[string]any{"k": 1}); len(got.Entities) != 1 || got.Entities[0].EntityID != want[0].EntityID {
		t.Errorf("k 1: %+v", got.Entities)
	}
	none := callRaw(t, p, ToolTopEntities, map[string]any{"kind": "person"})
	if none.Content[0].Text != `No entities of kind "person" in memory; kinds present: date, email, handle, url.` {
		t.Errorf("unknown kind text = %q", none.Content[0].Text)
	}

	// Replacing a document's content removes its mentions; an entity no
	// chunk mentions any more disappears.
	put(t, p, map[string]any{"title": "Three", "content": "Nothing here."})
	put(t, p, map[string]any{"title": "Two", "content": "Nothing here either."})
	got := call[topEntitiesResult](t, p, ToolTopEntities, map[string]any{})
	want = []entityRow{
		{EntityID: "email:ana.lima@example.com", Kind: "email", Surface: "Ana.Lima@Example.com", Count: 2, ChunkCount: 1, LastSeenMS: later},
		{EntityID: "url:https://example.org/a", Kind: "url", Surface: "https://example.org/a", Count: 1, ChunkCount: 1, LastSeenMS: startMS + time.Minute.Milliseconds()},
	}
	if diff := diff(want, got.Entities); diff != "" {
		t.Errorf("after rewrite (-want +got):\n%s", diff)
	}
	var stale int64
	if err := p.store.db.Raw(`SELECT COUNT(*) FROM entities WHERE mention_count <= 0`).Scan(&stale).Error; err != nil {
		t.Fatal(err)
	}
	if stale != 0 {
		t.Errorf("%d unused entities kept", stale)
	}
	_ = third
}

func TestListSources(t *testing.T) {
	t.Parallel()
	p, clock := newProvider(t)
	put(t, p, map[string]any{"title": "A", "content": "from ana@example.com", "namespace": "probe"})
	clock.Advance(time.Minute)
	put(t, p, map[string]any{"title": "B", "content": "two\n\n" + longText(3)})
	bMS := clock.Now().UnixMilli()

	got := call[listSourcesResult](t, p, ToolListSources, map[string]any{})
	mcpChunks := int64(len(chunkIDs(t, p, "mcp/mcp-store-b")))
	want := []sourceView{
		{SourceID: "mcp:mcp", DisplayName: "Stored with memory_store (namespace mcp)", SourceKind: "note", ChunkCount: mcpChunks, MostRecentMS: bMS},
		{SourceID: "mcp:probe", DisplayName: "Stored with memory_store (namespace probe)", SourceKind: "note", ChunkCount: 1, MostRecentMS: startMS},
	}
	if diff := diff(want, got.Sources); diff != "" {
		t.Errorf("sources (-want +got):\n%s", diff)
	}
	hinted := call[listSourcesResult](t, p, ToolListSources, map[string]any{"user_email_hint": "Ana@Example.com"})
	one, zero := int64(1), int64(0)
	want = []sourceView{
		{SourceID: "mcp:probe", DisplayName: "Stored with memory_store (namespace probe)", SourceKind: "note", ChunkCount: 1, MostRecentMS: startMS, UserMentionCount: &one},
		{SourceID: "mcp:mcp", DisplayName: "Stored with memory_store (namespace mcp)", SourceKind: "note", ChunkCount: mcpChunks, MostRecentMS: bMS, UserMentionCount: &zero},
	}
	if diff := diff(want, hinted.Sources); diff != "" {
		t.Errorf("sources with hint (-want +got):\n%s", diff)
	}
}

func TestListSourcesEmpty(t *testing.T) {
	t.Parallel()
	p, _ := newProvider(t)
	res := callRaw(t, p, ToolListSources, map[string]any{})
	if res.Content[0].Text != "Memory is empty: no sources yet." || string(res.StructuredContent) != `{"sources":[]}` {
		t.Errorf("empty list = %q %s", res.Content[0].Text, res.StructuredContent)
	}
}

func TestTag(t *testing.T) {
	t.Parallel()
	p, _ := newProvider(t)
	doc := put(t, p, map[string]any{"title": "Tagged", "content": "plain words only", "tags": []string{"doclevel"}})
	id := firstChunk(t, p, doc.DocumentID)

	got := call[tagResult](t, p, ToolTag, map[string]any{"chunk_id": id, "tags": []string{"Alpha", " beta ", "alpha", "BETA", "gamma-ray"}})
	if diff := diff(tagResult{ChunkID: id, Tags: []string{"Alpha", "beta", "gamma-ray"}}, got); diff != "" {
		t.Errorf("tag result (-want +got):\n%s", diff)
	}
	read := call[readChunkResult](t, p, ToolReadChunk, map[string]any{"chunk_id": id})
	if diff := diff([]string{"Alpha", "beta", "gamma-ray"}, read.Chunk.Tags); diff != "" {
		t.Errorf("read tags (-want +got):\n%s", diff)
	}
	// Tags are searchable, the document's and the chunk's own.
	for _, q := range []string{"gamma ray", "beta", "doclevel", "alpha plain"} {
		if hits := search(t, p, q, 0); len(hits) != 1 || hits[0].ChunkID != id {
			t.Errorf("search %q: %+v", q, hits)
		}
	}
	// Tagging again replaces the set.
	call[tagResult](t, p, ToolTag, map[string]any{"chunk_id": id, "tags": []string{"delta"}})
	read = call[readChunkResult](t, p, ToolReadChunk, map[string]any{"chunk_id": id})
	if diff := diff([]string{"delta"}, read.Chunk.Tags); diff != "" {
		t.Errorf("replaced tags (-want +got):\n%s", diff)
	}
	if hits := search(t, p, "beta", 0); len(hits) != 0 {
		t.Errorf("old tag still found: %+v", hits)
	}
	checkIndexInStep(t, p)

	// Rewriting the document drops the chunk, its tags go with it.
	put(t, p, map[string]any{"title": "Tagged", "content": "other words"})
	var n int64
	if err := p.store.db.Raw(`SELECT COUNT(*) FROM chunk_tags`).Scan(&n).Error; err != nil {
		t.Fatal(err)
	}
	if n != 0 {
		t.Errorf("%d tags of a deleted chunk kept", n)
	}
	checkIndexInStep(t, p)
}

func TestNote(t *testing.T) {
	t.Parallel()
	p, clock := newProvider(t)
	doc := put(t, p, map[string]any{"title": "Launch", "content": "The launch is on Friday.", "namespace": "work"})
	id := firstChunk(t, p, doc.DocumentID)
	clock.Advance(time.Minute)

	first := callRaw(t, p, ToolNote, map[string]any{"chunk_id": id, "note_text": "Moved to Monday by the ops team."})
	wantDoc := "work/mcp-note-" + id
	want, _ := sdk.StructuredResult(fmt.Sprintf("Added a note on chunk %s (document %s).", id, wantDoc),
		noteResult{ChunkID: id, DocumentID: wantDoc, Replaced: false, ChunkCount: 1})
	if diff := diff(want, first); diff != "" {
		t.Errorf("first note (-want +got):\n%s", diff)
	}
	// The note is searchable and linked to its chunk.
	hits := search(t, p, "monday ops", 0)
	if len(hits) != 1 || hits[0].DocumentID != wantDoc || hits[0].AnnotatesChunkID != id || hits[0].Title != "Note on Launch" || hits[0].SourceID != "mcp:work" {
		t.Fatalf("note hits = %+v", hits)
	}
	read := call[readChunkResult](t, p, ToolReadChunk, map[string]any{"chunk_id": id})
	wantNotes := []noteView{{DocumentID: wantDoc, Text: "Moved to Monday by the ops team.", UpdatedMS: startMS + time.Minute.Milliseconds()}}
	if diff := diff(wantNotes, read.Chunk.Notes); diff != "" {
		t.Errorf("notes (-want +got):\n%s", diff)
	}

	// Noting again replaces the note and says so.
	clock.Advance(time.Minute)
	second := call[noteResult](t, p, ToolNote, map[string]any{"chunk_id": id, "note_text": "Back to Friday."})
	if !second.Replaced || second.DocumentID != wantDoc {
		t.Errorf("second note = %+v", second)
	}
	if hits := search(t, p, "monday", 0); len(hits) != 0 {
		t.Errorf("replaced note still found: %+v", hits)
	}
	// Notes on two chunks never overwrite each other.
	other := put(t, p, map[string]any{"title": "Budget", "content": "Budget is 10k.", "namespace": "work"})
	otherID := firstChunk(t, p, other.DocumentID)
	call[noteResult](t, p, ToolNote, map[string]any{"chunk_id": otherID, "note_text": "Approved."})
	read = call[readChunkResult](t, p, ToolReadChunk, map[string]any{"chunk_id": id})
	if len(read.Chunk.Notes) != 1 || read.Chunk.Notes[0].Text != "Back to Friday." {
		t.Errorf("notes after a note on another chunk = %+v", read.Chunk.Notes)
	}

	// A note outlives its chunk: rewriting the document unlinks it.
	put(t, p, map[string]any{"title": "Launch", "content": "Launch cancelled.", "namespace": "work"})
	hits = search(t, p, "friday", 0)
	if len(hits) != 1 || hits[0].DocumentID != wantDoc || hits[0].AnnotatesChunkID != "" {
		t.Errorf("orphaned note hits = %+v", hits)
	}
	checkIndexInStep(t, p)
}

func TestSearchSyntaxSafe(t *testing.T) {
	t.Parallel()
	p, _ := newProvider(t)
	storeCorpus(t, p)
	for _, q := range []string{`c++ "quote`, `NEAR(`, `NEAR(a b)`, `"`, `*`, `a AND`, `OR`, `title:zebra`, `^zebra`, `zebra*`, `(zebra`, `-zebra`, `{title}: x`, "\x00zebra"} {
		for _, tool := range []string{ToolSearch, ToolRecall, ToolBrowse} {
			res := callRaw(t, p, tool, map[string]any{"query": q})
			if res.IsError {
				t.Errorf("%s %q: %s", tool, q, res.Content[0].Text)
			}
		}
	}
	// Words that are FTS5 operators are plain words.
	if hits := search(t, p, "near and", 0); len(hits) != 1 || hits[0].Title != "Programming" {
		t.Errorf("near and: %+v", hits)
	}
}

func TestRecallKeyword(t *testing.T) {
	t.Parallel()
	p, _ := newProvider(t)
	storeCorpus(t, p)
	put(t, p, map[string]any{"title": "Trip 42", "content": "Planning trip 42 with ana.lima@example.com, flights via @skyways."})

	got := call[recallResult](t, p, ToolRecall, map[string]any{"query": "Who is joining the trip?", "k": 3})
	if got.Mode != recallKeyword || got.FallbackReason != "" {
		t.Errorf("mode = %q reason %q", got.Mode, got.FallbackReason)
	}
	if len(got.Chunks) == 0 || got.Chunks[0].Title != "Trip 42" {
		t.Fatalf("recall hits = %+v", got.Chunks)
	}
	if got.Chunks[0].Similarity != nil || got.Chunks[0].Score <= 0 || !strings.Contains(got.Chunks[0].Snippet, "**trip**") {
		t.Errorf("hit = %+v", got.Chunks[0])
	}
	// Any word suffices: "zebra" alone is enough even with words no chunk has.
	got = call[recallResult](t, p, ToolRecall, map[string]any{"query": "tell me about unicorns and zebra herds"})
	if diff := diff([]string{"Zebra facts", "Savanna animals"}, titles(got.Chunks)); diff != "" {
		t.Errorf("any-token recall (-want +got):\n%s", diff)
	}
	// A question of function words only still runs.
	got = call[recallResult](t, p, ToolRecall, map[string]any{"query": "what is it?"})
	if got.Mode != recallKeyword {
		t.Errorf("mode = %q", got.Mode)
	}
	res := callRaw(t, p, ToolRecall, map[string]any{"query": "?!"})
	if res.IsError || !strings.Contains(res.Content[0].Text, "Mode: keyword") || string(res.StructuredContent) != `{"mode":"keyword","chunks":[]}` {
		t.Errorf("no words: %s %s", res.Content[0].Text, res.StructuredContent)
	}
}

func titles(hits []recallHit) []string {
	out := []string{}
	for _, h := range hits {
		out = append(out, h.Title)
	}
	return out
}

// openWithConfig configures a provider with a [providers.memory] table.
func openWithConfig(t *testing.T, dir string, cfg map[string]any, secrets map[string]string) *Provider {
	t.Helper()
	return openWithClient(t, dir, cfg, secrets, nil)
}

// openWithClient is openWithConfig with client for the embeddings
// endpoint (nil for the default one).
func openWithClient(t *testing.T, dir string, cfg map[string]any, secrets map[string]string, client *http.Client) *Provider {
	t.Helper()
	return openWithDelay(t, dir, cfg, secrets, client, 0)
}

// openWithDelay is openWithClient with the background backfill's start
// delay: time.Hour for a test that runs backfillOnce itself and must not
// share the endpoint with the background loop.
func openWithDelay(t *testing.T, dir string, cfg map[string]any, secrets map[string]string, client *http.Client, delay time.Duration) *Provider {
	t.Helper()
	requireFTS5(t)
	p := New(&Options{Now: newTestClock().Now, HTTPClient: client})
	p.backfillDelay = delay
	raw, err := json.Marshal(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Configure(t.Context(), configureRequest(t, dir, raw, secrets)); err != nil {
		t.Fatalf("Configure: %v", err)
	}
	t.Cleanup(func() { p.Close() })
	return p
}

func TestRecallHybrid(t *testing.T) {
	t.Parallel()
	fake := newFakeEmbeddings(t, 64)
	fake.Synonyms("car", "automobile", "vehicle", "sedan")
	p := openWithConfig(t, t.TempDir(), map[string]any{
		"embeddings": map[string]any{"base_url": fake.URL(), "model": "fake-embed", "api_key_env": "EMBED_KEY"},
	}, map[string]string{"embeddings.api_key": "sk-test"})

	put(t, p, map[string]any{"title": "Garage", "content": "My sedan needs new tyres before winter."})
	put(t, p, map[string]any{"title": "Kitchen", "content": "The oven needs cleaning before winter."})
	put(t, p, map[string]any{"title": "Garden", "content": "Plant tulips in autumn."})
	if fake.LastAuthorization() != "Bearer sk-test" {
		t.Errorf("Authorization = %q", fake.LastAuthorization())
	}
	var embedded int64
	if err := p.store.db.Raw(`SELECT COUNT(*) FROM chunk_embeddings WHERE model = 'fake-embed'`).Scan(&embedded).Error; err != nil {
		t.Fatal(err)
	}
	if embedded != 3 {
		t.Fatalf("%d chunks embedded at store time, want 3", embedded)
	}

	// "automobile" is in no chunk: only the embeddings connect it to the sedan.
	got := call[recallResult](t, p, ToolRecall, map[string]any{"query": "automobile", "k": 2})
	if got.Mode != recallHybrid {
		t.Fatalf("mode = %q (%s)", got.Mode, got.FallbackReason)
	}
	if len(got.Chunks) == 0 || got.Chunks[0].Title != "Garage" || got.Chunks[0].Similarity == nil || *got.Chunks[0].Similarity < 0.3 {
		t.Fatalf("hybrid hits = %+v", got.Chunks)
	}
	// A chunk found by both rankings beats one found by one.
	got = call[recallResult](t, p, ToolRecall, map[string]any{"query": "vehicle tyres", "k": 3})
	if got.Chunks[0].Title != "Garage" {
		t.Errorf("fused order = %v", titles(got.Chunks))
	}

	// The endpoint failing falls back to keywords and says why.
	fake.SetFailure(500)
	got = call[recallResult](t, p, ToolRecall, map[string]any{"query": "winter"})
	if got.Mode != recallKeyword || !strings.Contains(got.FallbackReason, "500") {
		t.Errorf("fallback = %q %q", got.Mode, got.FallbackReason)
	}
	if diff := diff([]string{"Garage", "Kitchen"}, titles(got.Chunks), cmpopts.SortSlices(func(a, b string) bool { return a < b })); diff != "" {
		t.Errorf("fallback hits (-want +got):\n%s", diff)
	}
	// A store while the endpoint fails still succeeds; the backfill embeds
	// the chunk once the endpoint is back.
	put(t, p, map[string]any{"title": "Shed", "content": "The bicycle has a flat tyre."})
	fake.SetFailure(0)
	n, err := p.backfillOnce(t.Context(), p.store)
	if err != nil || n != 1 {
		t.Fatalf("backfillOnce = %d, %v; want 1 chunk", n, err)
	}
	if n, err := p.backfillOnce(t.Context(), p.store); err != nil || n != 0 {
		t.Errorf("second backfillOnce = %d, %v; want nothing left", n, err)
	}
}

// TestBackfillNewModel checks that chunks stored without an embedder, or
// with another model, are embedded when one is configured.
func TestBackfillNewModel(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	plain := openWithConfig(t, dir, map[string]any{}, nil)
	for i := range 5 {
		put(t, plain, map[string]any{"title": fmt.Sprintf("Doc %d", i), "content": fmt.Sprintf("Content number %d about boats.", i)})
	}
	plain.Close()

	fake := newFakeEmbeddings(t, 32)
	p := openWithConfig(t, dir, map[string]any{
		"embeddings": map[string]any{"base_url": fake.URL(), "model": "m1", "batch_size": 2},
	}, nil)
	var with, without int64
	testwait.Until(t, "the backfill to embed all 5 chunks", func() bool {
		var err error
		if with, without, err = p.store.embeddingStats(t.Context(), "m1", 32); err != nil {
			t.Fatal(err)
		}
		return with == 5 && without == 0
	})
	if fake.LastAuthorization() != "" {
		t.Errorf("Authorization sent without a key: %q", fake.LastAuthorization())
	}
}

func TestConfigEmbeddings(t *testing.T) {
	t.Parallel()
	tests := map[string]struct {
		cfg  string
		want string
	}{
		"unknown top key":        {`{"embedding":{}}`, `memory provider: [providers.memory] has unknown key "embedding"; the valid keys are embeddings, scopes, keep_versions_days`},
		"unknown embeddings key": {`{"embeddings":{"base_url":"http://x/v1","model":"m","url":"x"}}`, `memory provider: [providers.memory.embeddings] has unknown key "url"; the valid keys are base_url, model, api_key_env, batch_size, timeout_secs, dimensions`},
		"embeddings not a table": {`{"embeddings":"x"}`, `memory provider: [providers.memory] embeddings must be a table, not a string`},
		"days a fraction":        {`{"keep_versions_days":1.5}`, `memory provider: [providers.memory] keep_versions_days must be an integer, not 1.5`},
		"days a string":          {`{"keep_versions_days":"7"}`, `memory provider: [providers.memory] keep_versions_days must be an integer, not a string`},
		"days a table":           {`{"keep_versions_days":{}}`, `memory provider: [providers.memory] keep_versions_days must be an integer, not a table`},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			_, err := parseConfig(json.RawMessage(tc.cfg))
			if err == nil || err.Error() != tc.want {
				t.Errorf("parseConfig(%s) = %v, want %s", tc.cfg, err, tc.want)
			}
		})
	}
}

// TestEmbeddingDimensionsChange changes the dimensions setting: vectors of
// the old dimension are re-embedded by the backfill, and until then recall
// says why it ranks by keywords.
func TestEmbeddingDimensionsChange(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	fake := newFakeEmbeddings(t, 16)
	first := openWithConfig(t, dir, map[string]any{"embeddings": map[string]any{"base_url": fake.URL(), "model": "m"}}, nil)
	for i := range 3 {
		put(t, first, map[string]any{"title": fmt.Sprintf("Doc %d", i), "content": fmt.Sprintf("kingfisher river number %d", i)})
	}
	if with, without, err := first.store.embeddingStats(t.Context(), "m", 16); err != nil || with != 3 || without != 0 {
		t.Fatalf("16-dimension embeddings: %d with, %d without, %v", with, without, err)
	}
	first.Close()

	p := New(&Options{Now: newTestClock().Now})
	p.backfillDelay = time.Hour // run by hand below
	raw, _ := json.Marshal(map[string]any{"embeddings": map[string]any{"base_url": fake.URL(), "model": "m", "dimensions": 8}})
	if err := p.Configure(t.Context(), configureRequest(t, dir, raw, nil)); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	got := call[recallResult](t, p, ToolRecall, map[string]any{"query": "kingfisher"})
	want := "no chunk has an embedding from model m with 8 dimensions yet; the backfill is embedding 3 chunks"
	if got.Mode != recallKeyword || got.FallbackReason != want || len(got.Chunks) != 3 {
		t.Errorf("recall before the backfill = %q %q %d hits", got.Mode, got.FallbackReason, len(got.Chunks))
	}
	if n, err := p.backfillOnce(t.Context(), p.store); err != nil || n != 3 {
		t.Fatalf("backfill to 8 dimensions = %d, %v; want 3 chunks", n, err)
	}
	got = call[recallResult](t, p, ToolRecall, map[string]any{"query": "kingfisher"})
	if got.Mode != recallHybrid || got.FallbackReason != "" || len(got.Chunks) != 3 || got.Chunks[0].Similarity == nil {
		t.Errorf("recall after the backfill = %+v", got)
	}
}

// TestStemming: English word forms match each other (FTS5's porter
// tokenizer over unicode61), in search, recall and browse alike.
func TestStemming(t *testing.T) {
	t.Parallel()
	p := newProviderWith(t, map[string]any{"title": "Harbour", "content": "The ships approved by the harbour master are handling cargo."})
	for _, q := range []string{"ship", "approve", "handles", "SHIPPING", "masters"} {
		if hits := search(t, p, q, 0); len(hits) != 1 {
			t.Errorf("search %q: %d hits, want 1", q, len(hits))
		}
	}
	got := call[recallResult](t, p, ToolRecall, map[string]any{"query": "Which ship was approved?"})
	if len(got.Chunks) != 1 || !strings.Contains(got.Chunks[0].Snippet, "**ships**") {
		t.Errorf("recall = %+v", got.Chunks)
	}
}

// TestBackfillQuarantine: one chunk the endpoint refuses does not keep
// the backfill from embedding the others.
func TestBackfillQuarantine(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	plain := openWithConfig(t, dir, map[string]any{}, nil)
	put(t, plain, map[string]any{"title": "Poison", "content": "POISON text the model refuses"})
	for i := range 3 {
		put(t, plain, map[string]any{"title": fmt.Sprintf("Fine %d", i), "content": fmt.Sprintf("fine text %d", i)})
	}
	plain.Close()

	fake := newFakeEmbeddings(t, 16)
	fake.Refuse("POISON")
	p := New(&Options{Now: newTestClock().Now})
	p.backfillDelay = time.Hour // driven by hand below
	raw, _ := json.Marshal(map[string]any{"embeddings": map[string]any{"base_url": fake.URL(), "model": "m"}})
	if err := p.Configure(t.Context(), configureRequest(t, dir, raw, nil)); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	n, err := p.backfillOnce(t.Context(), p.store)
	if err != nil || n != 3 {
		t.Fatalf("backfillOnce = %d, %v; want the 3 fine chunks", n, err)
	}
	if n, err := p.backfillOnce(t.Context(), p.store); err != nil || n != 0 {
		t.Errorf("second round = %d, %v; want nothing (the refused chunk is set aside)", n, err)
	}
	// With the endpoint down, nothing is set aside: the error is returned.
	fake.SetFailure(503)
	put(t, p, map[string]any{"title": "Later", "content": "later text"})
	put(t, p, map[string]any{"title": "Later 2", "content": "later text 2"})
	if _, err := p.backfillOnce(t.Context(), p.store); err == nil {
		t.Error("backfill with the endpoint down: want an error")
	}
	fake.SetFailure(0)
	if n, err := p.backfillOnce(t.Context(), p.store); err != nil || n != 2 {
		t.Errorf("after recovery = %d, %v; want the 2 later chunks", n, err)
	}
}

// TestSlowEndpoint: a store whose embedding outlasts the budget still
// succeeds once the budget is spent, and recall falls back at once instead
// of waiting, let alone timing out. The test runs in a synctest bubble,
// whose clock moves only while every goroutine waits: the budget passes
// at once, and the time the calls waited is exact, however loaded the
// machine.
func TestSlowEndpoint(t *testing.T) {
	t.Parallel()
	if onPostgresDriver() {
		// gorm's prepared-statement cache on PostgreSQL starts a
		// goroutine that never ends, which a synctest bubble refuses
		// to be left with; the budget tested here is the same on
		// either driver.
		t.Skip("runs with the SQLite driver: a synctest bubble cannot hold gorm's PostgreSQL statement cache")
	}
	synctest.Test(t, func(t *testing.T) {
		fake := newUnservedFakeEmbeddings(t, 16)
		p := openWithClient(t, t.TempDir(), map[string]any{
			"embeddings": map[string]any{"base_url": fake.URL(), "model": "m", "timeout_secs": 600},
		}, nil, fake.Client())
		fake.SetDelay(time.Hour)
		start := time.Now()
		put(t, p, map[string]any{"title": "Slow", "content": "a slow endpoint"})
		stored := time.Since(start)
		got := call[recallResult](t, p, ToolRecall, map[string]any{"query": "slow endpoint"})
		if got.Mode != recallKeyword || !strings.Contains(got.FallbackReason, "less than a minute ago") || len(got.Chunks) != 1 {
			t.Errorf("recall with a slow endpoint = %+v", got)
		}
		// The store waited for the budget and no longer; the recall,
		// for nothing.
		if stored != syncEmbedBudget {
			t.Errorf("the store waited %v for the endpoint, want the budget %v", stored, syncEmbedBudget)
		}
		if d := time.Since(start) - stored; d != 0 {
			t.Errorf("the recall waited %v for the endpoint, want no wait", d)
		}
	})
}

// TestRefusedTextDoesNotPauseEndpoint: a text the endpoint refuses (400)
// says nothing about the endpoint, so other calls keep embedding; an
// endpoint that is down is not retried text by text.
func TestRefusedTextDoesNotPauseEndpoint(t *testing.T) {
	t.Parallel()
	fake := newFakeEmbeddings(t, 16)
	fake.Refuse("POISON")
	// The background backfill would send requests of its own.
	p := openWithDelay(t, t.TempDir(), map[string]any{"embeddings": map[string]any{"base_url": fake.URL(), "model": "m"}}, nil, nil, time.Hour)
	put(t, p, map[string]any{"title": "Bad", "content": "POISON text"})
	put(t, p, map[string]any{"title": "Good", "content": "good text"})
	got := call[recallResult](t, p, ToolRecall, map[string]any{"query": "good text"})
	if got.Mode != recallHybrid || got.FallbackReason != "" || got.WithoutEmbedding != 1 {
		t.Errorf("recall after a refused text = mode %q, reason %q, without_embedding %d", got.Mode, got.FallbackReason, got.WithoutEmbedding)
	}
	res := callRaw(t, p, ToolRecall, map[string]any{"query": "good text"})
	if !strings.Contains(res.Content[0].Text, "1 chunk has no embedding yet and can be found by keywords only.") {
		t.Errorf("text = %q", res.Content[0].Text)
	}

	// Down: one batch request per round, no retries text by text.
	fake.Refuse("")
	fake.SetFailure(503)
	for i := range 3 {
		put(t, p, map[string]any{"title": fmt.Sprintf("Down %d", i), "content": fmt.Sprintf("down text %d", i)})
	}
	before := fake.Requests()
	if _, err := p.backfillOnce(t.Context(), p.store); err == nil {
		t.Fatal("backfill with the endpoint down: want an error")
	}
	// The client retries a 503 twice: three requests for one batch.
	if n := fake.Requests() - before; n != 3 {
		t.Errorf("backfill sent %d requests with the endpoint down, want 3 (one batch, retried)", n)
	}
}

func TestNormalizeIDs(t *testing.T) {
	t.Parallel()
	checkMapping(t, "normalizeEntityID", normalizeEntityID, map[string]string{
		"email:Ana@Example.COM":        "email:ana@example.com",
		"hashtag:Launch":               "hashtag:#launch",
		"hashtag:#Launch":              "hashtag:#launch",
		"handle:SkyWays":               "handle:@skyways",
		"url:HTTPS://Example.COM/Path": "url:https://example.com/Path",
		"url:https://Example.com?Q=1":  "url:https://example.com?Q=1",
		"date:2026-11-30":              "date:2026-11-30",
		"person:Ana":                   "person:Ana",
	})
	checkMapping(t, "normalizeSourceID", normalizeSourceID, map[string]string{
		"MCP:Work":   "mcp:Work",
		"file:/a/b/": "file:/a/b",
		"file:/":     "file:/",
		"File:/x//":  "file:/x",
		"mcp:team/":  "mcp:team/",
	})
}
