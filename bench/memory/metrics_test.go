package main

import (
	"database/sql"
	"math"
	"path/filepath"
	"slices"
	"testing"
)

func set(keys ...string) map[string]bool {
	m := map[string]bool{}
	for _, k := range keys {
		m[k] = true
	}
	return m
}

func near(a, b float64) bool { return math.Abs(a-b) < 1e-12 }

func TestTopDocsDedupes(t *testing.T) {
	got := topDocs([]string{"a", "a", "b", "a", "c", "b", "d", "e", "f"}, 5)
	if want := []string{"a", "b", "c", "d", "e"}; !slices.Equal(got, want) {
		t.Fatalf("topDocs = %v, want %v", got, want)
	}
	if got := topDocs(nil, 5); len(got) != 0 {
		t.Fatalf("topDocs(nil) = %v", got)
	}
}

func TestScores(t *testing.T) {
	tests := []struct {
		name     string
		ranked   []string
		relevant map[string]bool
		want     scores
	}{
		{"first is relevant", []string{"a", "x", "y"}, set("a"), scores{Recall: 1, Precision: 0.2, RR: 1}},
		// Chunks of one document count once: x x y z then b is the 4th
		// distinct document.
		{"duplicates skipped", []string{"x", "x", "y", "z", "b", "a"}, set("a", "b"), scores{Recall: 1, Precision: 0.4, RR: 0.25}},
		{"half found", []string{"x", "a", "y", "z", "w", "b"}, set("a", "b"), scores{Recall: 0.5, Precision: 0.2, RR: 0.5}},
		{"nothing returned", nil, set("a"), scores{}},
		{"relevant past 5 counts for MRR only", []string{"1", "2", "3", "4", "5", "6", "a"}, set("a"), scores{RR: 1.0 / 7}},
		{"relevant past 10 counts for nothing", []string{"1", "2", "3", "4", "5", "6", "7", "8", "9", "10", "a"}, set("a"), scores{}},
		{"all five relevant of six", []string{"a", "b", "c", "d", "e", "f"}, set("a", "b", "c", "d", "e", "f"), scores{Recall: 5.0 / 6, Precision: 1, RR: 1}},
	}
	for _, tt := range tests {
		got := score(tt.ranked, tt.relevant)
		if !near(got.Recall, tt.want.Recall) || !near(got.Precision, tt.want.Precision) || !near(got.RR, tt.want.RR) {
			t.Errorf("%s: score = %+v, want %+v", tt.name, got, tt.want)
		}
	}
}

func TestMean(t *testing.T) {
	m := mean([]scores{{Recall: 1, Precision: 0.2, RR: 1}, {Recall: 0, Precision: 0, RR: 0}, {Recall: 0.5, Precision: 0.4, RR: 0.5}})
	if !near(m.Recall, 0.5) || !near(m.Precision, 0.2) || !near(m.RR, 0.5) {
		t.Fatalf("mean = %+v", m)
	}
	if m := mean(nil); m != (scores{}) {
		t.Fatalf("mean(nil) = %+v", m)
	}
}

func TestGrepTerms(t *testing.T) {
	if got, want := grepTerms("How do I undo my LAST commit, undo?"), []string{"undo", "last", "commit"}; !slices.Equal(got, want) {
		t.Errorf("grepTerms = %q, want %q", got, want)
	}
	// Only function words: all of them are kept.
	if got, want := grepTerms("what is it"), []string{"what", "is", "it"}; !slices.Equal(got, want) {
		t.Errorf("grepTerms = %q, want %q", got, want)
	}
	if got := grepTerms("?!"); len(got) != 0 {
		t.Errorf("grepTerms(punctuation) = %q", got)
	}
}

func TestGrepRank(t *testing.T) {
	var g grepIndex
	g.add("reset.txt", "Undo a commit with git reset. Commits can be undone.")
	g.add("revert.txt", "Revert a commit: revert makes a new commit.")
	g.add("faq.txt", "To undo a COMMIT, reset it; to undo a pushed commit, revert it. Commit often.")
	g.add("tag.txt", "Tags name commits.")
	// "commit" also matches "commits"; every term must be present.
	got := g.rank("how do I undo a commit", 10)
	if want := []string{"faq.txt", "reset.txt"}; !slices.Equal(got, want) {
		t.Fatalf("rank = %v, want %v", got, want)
	}
	// Ties are broken by key, and n caps the ranking.
	got = g.rank("commit", 3)
	if want := []string{"faq.txt", "reset.txt", "revert.txt"}; !slices.Equal(got, want) {
		t.Fatalf("rank = %v, want %v", got, want)
	}
	if got := g.rank("rebase", 10); len(got) != 0 {
		t.Fatalf("rank(absent word) = %v", got)
	}
}

func TestQuestionsAreWellFormed(t *testing.T) {
	qs, err := loadQuestions(questionsJSON)
	if err != nil {
		t.Fatal(err)
	}
	kinds := map[string]int{}
	for _, q := range qs.Questions {
		kinds[q.Kind]++
		for _, r := range q.Relevant {
			if r != filepath.ToSlash(filepath.Clean(r)) || filepath.IsAbs(r) {
				t.Errorf("%s: relevant path %q is not a clean relative path", q.ID, r)
			}
		}
	}
	if kinds["natural"] < 15 || kinds["keyword"] < 15 {
		t.Errorf("questions by kind = %v, want at least 15 of each", kinds)
	}
	if _, err := loadQuestions([]byte(`{"questions":[{"id":"a","kind":"other","query":"q","relevant":["x"]}]}`)); err == nil {
		t.Error("a question of an unknown kind was accepted")
	}
}

func TestSplitChunks(t *testing.T) {
	text := "aaaa\n\nbbbb\n\ncccccccccccc\n\nd"
	got := splitChunks(text, 12)
	want := []string{"aaaa\n\nbbbb\n\n", "cccccccccccc", "\n\nd"}
	if !slices.Equal(got, want) {
		t.Fatalf("splitChunks = %q, want %q", got, want)
	}
}

func TestFloorInsert(t *testing.T) {
	for _, layout := range []floorLayout{floorTextOnce, floorTextTwice} {
		dir := t.TempDir()
		res, err := floorInsert(t.Context(), filepath.Join(dir, "floor.db"), []floorChunk{{"t", "alpha beta"}, {"t", "gamma"}}, layout)
		if err != nil {
			t.Fatal(err)
		}
		if res.Chunks != 2 || res.DBBytes == 0 {
			t.Fatalf("floorInsert(%d) = %+v", layout, res)
		}
		db, err := sql.Open("sqlite3", "file:"+filepath.Join(dir, "floor.db"))
		if err != nil {
			t.Fatal(err)
		}
		var hits int
		var snippet string
		err = db.QueryRow(`SELECT count(*) FROM chunks_fts WHERE chunks_fts MATCH 'betas'`).Scan(&hits)
		if err == nil {
			err = db.QueryRow(`SELECT snippet(chunks_fts, 1, '[', ']', '', 4) FROM chunks_fts WHERE chunks_fts MATCH 'betas'`).Scan(&snippet)
		}
		if err == nil {
			_, err = db.Exec(`INSERT INTO chunks_fts (chunks_fts, rank) VALUES ('integrity-check', 1)`)
		}
		db.Close()
		if err != nil || hits != 1 || snippet != "alpha [beta]" {
			t.Errorf("floor %d: search found %d, snippet %q, %v", layout, hits, snippet, err)
		}
	}
}

func TestDocKey(t *testing.T) {
	q := &quality{corpus: &realCorpus{Root: filepath.FromSlash("/c/git-doc")}}
	for id, want := range map[string]string{
		"file:" + filepath.FromSlash("/c/git-doc/git-rm.txt"):       "git-rm.txt",
		"file:" + filepath.FromSlash("/c/git-doc/howto/a.txt"):      "howto/a.txt",
		"file:" + filepath.FromSlash("/c/other/doc-1.md"):           "file:" + filepath.FromSlash("/c/other/doc-1.md"),
		"mcp:default/mcp-store-x":                                   "mcp:default/mcp-store-x",
		"file:" + filepath.FromSlash("/c/git-doc-other/git-rm.txt"): "file:" + filepath.FromSlash("/c/git-doc-other/git-rm.txt"),
	} {
		if got := q.docKey(id); got != want {
			t.Errorf("docKey(%q) = %q, want %q", id, got, want)
		}
	}
}
