package toolindex

import (
	"encoding/json"
	"slices"
	"testing"
)

func TestSearch(t *testing.T) {
	ix, err := New(t.Context(), []Tool{
		{Name: "notes_store", Title: "Store a memory", Description: "Save text to long-term memory under a title.",
			InputSchema: json.RawMessage(`{"type":"object","properties":{"title":{"description":"the document's title"},"content":{}}}`)},
		{Name: "notes_search", Description: "Find stored chunks by keywords."},
		{Name: "web_search", Description: "Search the web through SearXNG.",
			InputSchema: json.RawMessage(`{"type":"object","properties":{"query":{"description":"what to look for online"}}}`)},
		{Name: "github__create_issue", Description: "Open an issue in a GitHub repository."},
		{Name: "drive__create_permission", Description: "Let someone view or edit a document in Drive."},
		{Name: "drive__list_permission", Description: "List who may edit a document."},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer ix.Close()
	names := func(hits []Hit) []string {
		var out []string
		for _, h := range hits {
			out = append(out, h.Name)
		}
		return out
	}
	tests := []struct {
		query string
		k     int
		keep  func(string) bool
		want  []string
	}{
		{"save this under a title for later", 5, nil, []string{"notes_store"}},
		{"search the web", 1, nil, []string{"web_search"}},
		{"look for something online", 5, nil, []string{"web_search"}},
		{"open a github issue", 5, nil, []string{"github__create_issue"}},
		{"file a bug", 1, nil, []string{"github__create_issue"}},
		{"share the report with finance so they can edit it", 2, nil, []string{"drive__create_permission"}},
		{"search", 5, func(n string) bool { return n != "web_search" }, []string{"notes_search"}},
		{"the a of", 5, nil, nil},
		{`"quotes" OR (parens) NEAR* -x`, 5, nil, nil},
	}
	for _, tc := range tests {
		hits, err := ix.Search(t.Context(), tc.query, tc.k, tc.keep)
		if err != nil {
			t.Errorf("Search(%q): %v", tc.query, err)
			continue
		}
		got := names(hits)
		if len(tc.want) == 0 && len(got) != 0 || len(tc.want) > 0 && (len(got) == 0 || got[0] != tc.want[0]) {
			t.Errorf("Search(%q, %d) = %v, want %v first", tc.query, tc.k, got, tc.want)
		}
		if keep := tc.keep; keep != nil && slices.ContainsFunc(got, func(n string) bool { return !keep(n) }) {
			t.Errorf("Search(%q) = %v returns a tool keep refused", tc.query, got)
		}
	}
	if got := Words("Tools to Search the WEB, search!"); !slices.Equal(got, []string{"search", "web"}) {
		t.Errorf("Words() = %v", got)
	}
}

func TestSummaryOf(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"", ""},
		{"Send an SMS.", "Send an SMS."},
		{"Send an SMS. It costs money.", "Send an SMS."},
		{"Is it up? Ask the server.", "Is it up?"},
		{"Stop now! Really.", "Stop now!"},
		{"First line\nSecond. line", "First line"},
		{"Use v1.2 of the API. Then more.", "Use v1.2 of the API."},
	} {
		if got := summaryOf(tc.in); got != tc.want {
			t.Errorf("summaryOf(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

// A word in a tool's first sentence, which says what it does, outweighs
// the same word among the details of a longer description.
func TestSummaryWeighsMore(t *testing.T) {
	ix, err := New(t.Context(), []Tool{
		{Name: "notes_read", Description: "Read a note. The note's attached comments come with it."},
		{Name: "notes_label", Description: "Attach labels to a note, replacing the labels it had before and merging " +
			"duplicates that differ only in case, up to fifty labels in one call."},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer ix.Close()
	hits, err := ix.Search(t.Context(), "attach something to a note", 2, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(hits) != 2 || hits[0].Name != "notes_label" {
		t.Fatalf("Search = %v, want notes_label first", hits)
	}
}
