package memory

import (
	"fmt"
	"strings"
	"testing"
)

// TestRankingDropsDuplicateText checks that search and recall show a text
// stored in several documents once, and still fill k with other chunks.
func TestRankingDropsDuplicateText(t *testing.T) {
	t.Parallel()
	p, _ := newProvider(t)
	for i := range 6 {
		put(t, p, map[string]any{"title": fmt.Sprintf("Copy %d", i), "content": "the heron nests by the river"})
	}
	put(t, p, map[string]any{"title": "Other", "content": "a heron fishing at dawn"})
	if hits := search(t, p, "heron", 5); len(hits) != 2 {
		t.Errorf("search heron: %v, want the copied text once and the other", hitDocs(hits))
	}
	got := call[recallResult](t, p, ToolRecall, map[string]any{"query": "where does the heron nest?", "k": 5})
	if len(got.Chunks) != 2 {
		t.Errorf("recall: %d chunks, want 2", len(got.Chunks))
	}
}

// TestSearchIgnoresFunctionWords checks that a question finds what its
// content words find, and that a query of function words alone still
// searches for them.
func TestSearchIgnoresFunctionWords(t *testing.T) {
	t.Parallel()
	p := newProviderWith(t, map[string]any{"title": "Wifi", "content": "The wifi password is tangerine."})
	if hits := search(t, p, "what is the password for the wifi", 0); len(hits) != 1 {
		t.Errorf("question: %v, want the wifi note", hitDocs(hits))
	}
	if hits := search(t, p, "the", 0); len(hits) != 1 {
		t.Errorf("a function word alone: %v, want the note that has it", hitDocs(hits))
	}
}

func TestCleanSnippet(t *testing.T) {
	checkMapping(t, "cleanSnippet", cleanSnippet, map[string]string{
		"see **http****example** here": "see **httpexample** here",
		"********":                     "",
		"plain **word**":               "plain **word**",
	})
}

// TestRecallFindsOldRareWords checks that when a question's words match
// more chunks than a ranking scores, recall still finds an old chunk with
// its rarest word instead of ranking only the newest matches.
func TestRecallFindsOldRareWords(t *testing.T) {
	t.Parallel()
	p := newProviderWith(t, map[string]any{"title": "Workshop", "content": "The carburetor of the old engine was rebuilt in May."})
	st := storeOf(t, p)
	docs := make([]document, 0, 2100)
	for i := range 2100 {
		text := fmt.Sprintf("engine log entry %d: the engine ran fine", i)
		docs = append(docs, document{SourceID: "mcp:logs", SourceKind: SourceKindNote, SourceName: "logs", Namespace: "logs",
			Key: fmt.Sprintf("log-%d", i), Title: "Engine log", Pieces: []string{text}, ContentSHA256: contentHash(text)})
	}
	if _, err := st.putDocuments(t.Context(), docs, false); err != nil {
		t.Fatal(err)
	}
	got := call[recallResult](t, p, ToolRecall, map[string]any{"query": "what happened to the engine carburetor?", "k": 3})
	if len(got.Chunks) == 0 || got.Chunks[0].Title != "Workshop" {
		t.Errorf("recall: %+v, want the workshop chunk first", got.Chunks)
	}
}

// TestSearchPhrasesAndPrefixes checks that a quoted phrase needs its words
// together and in order, and that word* finds every word starting with it.
func TestSearchPhrasesAndPrefixes(t *testing.T) {
	t.Parallel()
	p := newProviderWith(t,
		map[string]any{"title": "Keeper", "content": "The lighthouse keeper retired in May."},
		map[string]any{"title": "Apart", "content": "The keeper of the old lighthouse left."},
		map[string]any{"title": "Rollout", "content": "Configuration notes for the staging cluster."},
	)
	if hits := search(t, p, `"lighthouse keeper"`, 0); len(hits) != 1 || hits[0].Title != "Keeper" {
		t.Errorf("phrase: %v, want Keeper only", hitDocs(hits))
	}
	if hits := search(t, p, `lighthouse keeper`, 0); len(hits) != 2 {
		t.Errorf("words: %v, want both", hitDocs(hits))
	}
	if hits := search(t, p, `config`, 0); len(hits) != 0 {
		t.Errorf("config without *: %v, want nothing", hitDocs(hits))
	}
	hits := search(t, p, `config* staging`, 0)
	if len(hits) != 1 || hits[0].Title != "Rollout" || !strings.Contains(hits[0].Snippet, "**Configuration**") {
		t.Errorf("prefix: %+v, want Rollout with Configuration marked", hits)
	}
	got := call[recallResult](t, p, ToolRecall, map[string]any{"query": `who was the "lighthouse keeper"?`, "k": 5})
	if len(got.Chunks) != 1 || got.Chunks[0].Title != "Keeper" {
		t.Errorf("recall with a phrase: %+v, want Keeper only", got.Chunks)
	}
}
