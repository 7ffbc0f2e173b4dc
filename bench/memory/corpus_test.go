package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/openhuman/openhuman-host/providers/memory"
	"github.com/openhuman/openhuman-host/sdk"
)

// writeCorpus writes the first n documents of seed under dir.
func writeCorpus(t *testing.T, seed uint64, n int, dir string) []Doc {
	t.Helper()
	g := NewGenerator(seed)
	docs := make([]Doc, n)
	for i := range docs {
		docs[i] = g.Next()
		path := filepath.Join(dir, filepath.FromSlash(docs[i].Name))
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(docs[i].Text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return docs
}

// TestDeterministic checks that a seed gives byte-identical files and
// queries, and another seed different ones.
func TestDeterministic(t *testing.T) {
	a, b := t.TempDir(), t.TempDir()
	docs := writeCorpus(t, 7, 30, a)
	writeCorpus(t, 7, 30, b)
	for _, d := range docs {
		x, err := os.ReadFile(filepath.Join(a, d.Name))
		if err != nil {
			t.Fatal(err)
		}
		y, err := os.ReadFile(filepath.Join(b, d.Name))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(x, y) {
			t.Fatalf("%s differs between two runs with the same seed", d.Name)
		}
	}
	if other := NewGenerator(8).Next(); other.Text == docs[0].Text {
		t.Error("seeds 7 and 8 gave the same first document")
	}
	q1, q2 := NewQueries(7), NewQueries(7)
	for range 20 {
		if s1, s2 := q1.Search(), q2.Search(); s1 != s2 {
			t.Fatalf("search queries differ with the same seed: %q, %q", s1, s2)
		}
		if r1, r2 := q1.Recall(), q2.Recall(); r1 != r2 {
			t.Fatalf("recall queries differ with the same seed: %q, %q", r1, r2)
		}
	}
}

// TestShape checks the documents' form: a title heading, 1 to about 6
// chunks, and the occasional entity.
func TestShape(t *testing.T) {
	g := NewGenerator(1)
	var chunks, entities int
	const n = 300
	for range n {
		d := g.Next()
		if !strings.HasPrefix(d.Text, "# ") {
			t.Fatalf("%s does not start with a title heading: %.40q", d.Name, d.Text)
		}
		if d.Chunks < 1 || d.Chunks > 7 {
			t.Errorf("%s makes %d chunks, want 1 to 7", d.Name, d.Chunks)
		}
		chunks += d.Chunks
		entities += strings.Count(d.Text, "@") + strings.Count(d.Text, "https://")
	}
	if mean := float64(chunks) / n; mean < 2.5 || mean > 4.5 {
		t.Errorf("%.2f chunks per document on average, want about 3.5", mean)
	}
	if entities == 0 {
		t.Error("no e-mail address, handle or URL in 300 documents")
	}
}

// TestZipf checks that word frequencies follow a Zipf law: in the
// sampler, and in the generated text, where the most common word of the
// vocabulary is the most common word.
func TestZipf(t *testing.T) {
	v := NewVocabulary(1, rand.New(rand.NewPCG(1, 99)))
	if len(v.Words) != vocabSize {
		t.Fatalf("%d words, want %d", len(v.Words), vocabSize)
	}
	seen := map[string]bool{}
	for _, w := range v.Words {
		if seen[w] {
			t.Fatalf("%q appears twice in the vocabulary", w)
		}
		seen[w] = true
	}
	counts := make([]int, vocabSize)
	const draws = 200000
	for range draws {
		counts[v.Rank()]++
	}
	if share := float64(counts[0]) / draws; share < 0.03 || share > 0.10 {
		t.Errorf("the top word is %.1f%% of draws, want 3 to 10%%", 100*share)
	}
	if counts[0] < 100*max(1, counts[999]) {
		t.Errorf("top word drawn %d times, 1000th %d: want the top one at least 100 times as often", counts[0], counts[999])
	}
	if counts[9] <= counts[999] {
		t.Errorf("10th word drawn %d times, 1000th %d", counts[9], counts[999])
	}

	g := NewGenerator(1)
	freq := map[string]int{}
	for range 100 {
		for _, w := range strings.FieldsFunc(strings.ToLower(g.Next().Text), func(r rune) bool { return r < 'a' || r > 'z' }) {
			freq[w]++
		}
	}
	top := g.Vocabulary().Words[0]
	for w, n := range freq {
		if n > freq[top] {
			t.Errorf("%q occurs %d times in the text, more than the top word %q (%d)", w, n, top, freq[top])
		}
	}
}

// TestPredictedChunks checks that the generator predicts the provider's
// chunk count of every file, so the bench reaches each size with one
// import. It needs the sqlite_fts5 build tag and is skipped without it.
func TestPredictedChunks(t *testing.T) {
	dir := t.TempDir()
	docs := writeCorpus(t, 3, 40, filepath.Join(dir, "corpus"))
	want := 0
	for _, d := range docs {
		want += d.Chunks
	}
	p := memory.New(nil)
	ctx := context.Background()
	err := p.Configure(ctx, &sdk.ConfigureRequest{Config: json.RawMessage("{}"), DataDir: dir})
	if errors.Is(err, memory.ErrNoFTS5) {
		t.Skip("built without the sqlite_fts5 tag")
	}
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	sum, err := p.Import(ctx, []string{filepath.Join(dir, "corpus")}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if sum.Written != len(docs) || sum.Chunks != want {
		t.Errorf("import wrote %d files in %d chunks, want %d in %d", sum.Written, sum.Chunks, len(docs), want)
	}
}

// TestSummarize checks the nearest-rank percentiles.
func TestSummarize(t *testing.T) {
	ds := make([]time.Duration, 100)
	for i := range ds {
		ds[len(ds)-1-i] = time.Duration(i+1) * time.Millisecond
	}
	got := summarize(ds)
	want := latency{P50: 50, P90: 90, P99: 99, Max: 100, Mean: 50.5}
	if got != want {
		t.Errorf("summarize = %+v, want %+v", got, want)
	}
}
