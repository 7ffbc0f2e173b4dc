package toolindex

import (
	"encoding/json"
	"slices"
	"testing"
)

func TestSearch(t *testing.T) {
	ix, err := New(t.Context(), []Tool{
		{Name: "memory_store", Title: "Store a memory", Description: "Save text to long-term memory under a title.",
			InputSchema: json.RawMessage(`{"type":"object","properties":{"title":{"description":"the document's title"},"content":{}}}`)},
		{Name: "memory_search", Description: "Find stored chunks by keywords."},
		{Name: "web_search", Description: "Search the web through SearXNG.",
			InputSchema: json.RawMessage(`{"type":"object","properties":{"query":{"description":"what to look for online"}}}`)},
		{Name: "github__create_issue", Description: "Open an issue in a GitHub repository."},
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
		{"save this under a title for later", 5, nil, []string{"memory_store"}},
		{"search the web", 1, nil, []string{"web_search"}},
		{"look for something online", 5, nil, []string{"web_search"}},
		{"open a github issue", 5, nil, []string{"github__create_issue"}},
		{"file a bug", 1, nil, []string{"github__create_issue"}},
		{"search", 5, func(n string) bool { return n != "web_search" }, []string{"memory_search"}},
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
