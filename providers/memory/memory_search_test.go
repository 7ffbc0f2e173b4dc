package memory

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/openhuman/openhuman-host/sdk"
)

// searchCorpus is stored by the search tests; the filler documents keep
// BM25's inverse document frequencies meaningful.
var searchCorpus = []map[string]any{
	{"title": "Zebra facts", "content": "Stripes may help with temperature. Herds graze together."},
	{"title": "Savanna animals", "content": "Lions, giraffes and a zebra share the plains with many other animals that live there all year."},
	{"title": "Café notes", "content": "The crème brûlée at Café Lumière was excellent."},
	{"title": "Programming", "content": "C++ templates or Go generics; NEAR and AND are just words here."},
	{"title": "Tides", "content": "The lighthouse keeper logs the TIDES every morning."},
	{"title": "Weather", "content": "Rain is expected on Tuesday."},
	{"title": "Groceries", "content": "Buy bread, milk and apples."},
	{"title": "Books", "content": "Reading a novel about mountains."},
	{"title": "Music", "content": "Practice the piano scales."},
}

func storeCorpus(t *testing.T, p *Provider) {
	t.Helper()
	for _, doc := range searchCorpus {
		put(t, p, doc)
	}
}

func TestSearch(t *testing.T) {
	t.Parallel()
	p, _ := newProvider(t)
	storeCorpus(t, p)
	const (
		zebra    = "mcp/mcp-store-zebra-facts"
		savanna  = "mcp/mcp-store-savanna-animals"
		cafe     = "mcp/mcp-store-caf-notes"
		program  = "mcp/mcp-store-programming"
		tides    = "mcp/mcp-store-tides"
		noResult = ""
	)
	tests := map[string]struct {
		query string
		want  []string
	}{
		"title hit ranks above body hit": {query: "zebra", want: []string{zebra, savanna}},
		"all words must match":           {query: "zebra lions", want: []string{savanna}},
		"words across title and body":    {query: "zebra herds", want: []string{zebra}},
		"one word missing":               {query: "zebra unicorn", want: []string{}},
		"upper-case query":               {query: "ZEBRA Lions", want: []string{savanna}},
		"upper-case content":             {query: "tides morning", want: []string{tides}},
		"accents ignored in query":       {query: "creme brulee", want: []string{cafe}},
		"accents in query":               {query: "Crème BRÛLÉE", want: []string{cafe}},
		"c++ and open quote":             {query: `c++ "quote`, want: []string{}},
		"c++ templates":                  {query: `c++ templates`, want: []string{program}},
		"NEAR group":                     {query: "NEAR(", want: []string{program}},
		"AND OR as words":                {query: "AND OR", want: []string{program}},
		"NOT is a word, and ignored":     {query: "NOT lighthouse", want: []string{tides}},
		"star alone":                     {query: "*", want: []string{}},
		"prefix star":                    {query: "light*", want: []string{tides}},
		"column filter":                  {query: "title:tides", want: []string{}},
		"negation":                       {query: "-lighthouse", want: []string{tides}},
		"unbalanced parenthesis":         {query: "(tides", want: []string{tides}},
		"caret and plus":                 {query: "^tides +keeper", want: []string{tides}},
		"quotes around words":            {query: `"lighthouse keeper"`, want: []string{tides}},
		"doubled quotes":                 {query: `"" lighthouse ""`, want: []string{tides}},
		"braces":                         {query: "{title}: zebra", want: []string{}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			if diff := diff(tc.want, hitDocs(search(t, p, tc.query, 0))); diff != "" {
				t.Errorf("search %q (-want +got):\n%s", tc.query, diff)
			}
		})
	}
}

// TestSearchResult checks one whole result: hit fields, snippet marks,
// positive scores and the one-line-per-hit text block.
func TestSearchResult(t *testing.T) {
	t.Parallel()
	p, _ := newProvider(t)
	storeCorpus(t, p)
	got := callRaw(t, p, ToolSearch, map[string]any{"query": "zebra"})
	var res searchResult
	if err := json.Unmarshal(got.StructuredContent, &res); err != nil {
		t.Fatal(err)
	}
	want := searchResult{Chunks: []searchHit{
		{
			chunkRef: chunkRef{
				ChunkID:    chunkIDs(t, p, "mcp/mcp-store-zebra-facts")[0],
				DocumentID: "mcp/mcp-store-zebra-facts", Title: "Zebra facts", Namespace: "mcp", SourceID: "mcp:mcp", SourceKind: "note",
				Seq: 0, UpdatedMS: startMS,
			},
			Snippet: "Stripes may help with temperature. Herds graze together.",
		},
		{
			chunkRef: chunkRef{
				ChunkID:    chunkIDs(t, p, "mcp/mcp-store-savanna-animals")[0],
				DocumentID: "mcp/mcp-store-savanna-animals", Title: "Savanna animals", Namespace: "mcp", SourceID: "mcp:mcp", SourceKind: "note",
				Seq: 0, UpdatedMS: startMS,
			},
			Snippet: "Lions, giraffes and a **zebra** share the plains with many other animals that live there all year.",
		},
	}}
	if diff := diff(want, res, cmpopts.IgnoreFields(searchHit{}, "Score")); diff != "" {
		t.Errorf("search result (-want +got):\n%s", diff)
	}
	for i, h := range res.Chunks {
		if h.Score <= 0 {
			t.Errorf("hit %d score %v, want > 0", i, h.Score)
		}
	}
	lines := strings.Split(got.Content[0].Text, "\n")
	if len(lines) != len(res.Chunks) {
		t.Fatalf("text has %d lines for %d hits:\n%s", len(lines), len(res.Chunks), got.Content[0].Text)
	}
	for i, h := range res.Chunks {
		prefix := fmt.Sprintf("%d. %s score=", i+1, h.ChunkID)
		if !strings.HasPrefix(lines[i], prefix) || !strings.Contains(lines[i], oneLine(h.Snippet)) {
			t.Errorf("line %d = %q, want prefix %q and the snippet", i, lines[i], prefix)
		}
	}
}

// TestSearchEmpty covers searches that find nothing: they are results, not
// errors.
func TestSearchEmpty(t *testing.T) {
	t.Parallel()
	p, _ := newProvider(t)
	storeCorpus(t, p)
	tests := map[string]struct {
		query    string
		wantText string
	}{
		"no searchable word": {query: `* () "" --`, wantText: `No results: the query "* () \"\" --" has no letters or digits to search for.`},
		"no match":           {query: "unicorn", wantText: `No chunks contain all of: unicorn.`},
		"no match for all":   {query: "zebra, unicorn!", wantText: `No chunks contain all of: zebra unicorn.`},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			want, err := sdk.StructuredResult(tc.wantText, searchResult{Chunks: []searchHit{}})
			if err != nil {
				t.Fatal(err)
			}
			if diff := diff(want, callRaw(t, p, ToolSearch, map[string]any{"query": tc.query})); diff != "" {
				t.Errorf("result (-want +got):\n%s", diff)
			}
		})
	}
}

func TestSearchK(t *testing.T) {
	t.Parallel()
	p, _ := newProvider(t)
	for i := range 12 {
		put(t, p, map[string]any{"title": fmt.Sprintf("Note %d", i), "content": fmt.Sprintf("common ground %d", i)})
	}
	tests := map[string]struct {
		args string
		want int
	}{
		"default k":          {args: `{"query":"common"}`, want: 10},
		"k 1":                {args: `{"query":"common","k":1}`, want: 1},
		"k 5":                {args: `{"query":"common","k":5}`, want: 5},
		"k 50 above matches": {args: `{"query":"common","k":50}`, want: 12},
		"k written as 3.0":   {args: `{"query":"common","k":3.0}`, want: 3},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			got := call[searchResult](t, p, ToolSearch, json.RawMessage(tc.args))
			if len(got.Chunks) != tc.want {
				t.Errorf("%d hits, want %d", len(got.Chunks), tc.want)
			}
		})
	}
}

// TestSearchRanksEveryMatch: with thousands of matches, the chunk that
// holds the word most often comes first although it is the oldest, for
// search and recall alike; a word in most chunks ranks by recency.
func TestSearchRanksEveryMatch(t *testing.T) {
	t.Parallel()
	p, _ := newProvider(t)
	pieces := make([]string, 2100)
	for i := range pieces {
		pieces[i] = fmt.Sprintf("common filler number %d. ", i)
		if i%3 == 0 {
			pieces[i] = fmt.Sprintf("common widget filler number %d. ", i)
		}
	}
	pieces[3] = "common widget widget widget, the widget chunk. "
	_, err := p.store.putDocument(t.Context(), document{
		SourceID: "mcp:mcp", SourceKind: SourceKindNote, SourceName: "test", Namespace: "mcp",
		Key: "bulk", Title: "Bulk", Pieces: pieces,
	})
	if err != nil {
		t.Fatal(err)
	}
	res := callRaw(t, p, ToolSearch, map[string]any{"query": "widget", "k": 3})
	var got searchResult
	if err := json.Unmarshal(res.StructuredContent, &got); err != nil {
		t.Fatal(err)
	}
	if len(got.Chunks) != 3 || got.Chunks[0].Seq != 3 {
		t.Fatalf("search widget = %+v, want seq 3 first", got.Chunks)
	}
	if got.Chunks[0].Score <= got.Chunks[1].Score || got.Chunks[1].Score != got.Chunks[2].Score || got.Chunks[1].Seq <= got.Chunks[2].Seq {
		t.Errorf("scores %v, %v, %v (seq %d, %d): want the repeated word first, then ties newest first",
			got.Chunks[0].Score, got.Chunks[1].Score, got.Chunks[2].Score, got.Chunks[1].Seq, got.Chunks[2].Seq)
	}
	rec := call[recallResult](t, p, ToolRecall, map[string]any{"query": "where is the widget?", "k": 2})
	if len(rec.Chunks) != 2 || rec.Chunks[0].Seq != 3 {
		t.Errorf("recall widget = %+v, want seq 3 first", rec.Chunks)
	}
	// "common" is in every chunk: its frequency is not read, so the
	// newest chunks come first, and the score is still positive.
	got = searchResult{}
	if err := json.Unmarshal(callRaw(t, p, ToolSearch, map[string]any{"query": "common", "k": 2}).StructuredContent, &got); err != nil {
		t.Fatal(err)
	}
	if len(got.Chunks) != 2 || got.Chunks[0].Seq != 2099 || got.Chunks[1].Seq != 2098 || got.Chunks[0].Score <= 0 {
		t.Errorf("search common = %+v, want the newest two with a positive score", got.Chunks)
	}
}
