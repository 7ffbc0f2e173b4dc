package memory

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

func TestFTSVarint(t *testing.T) {
	for _, tc := range []struct {
		in   []byte
		want int64
		n    int
	}{
		{[]byte{0x00}, 0, 1},
		{[]byte{0x7f, 0xff}, 127, 1},
		{[]byte{0x81, 0x00}, 128, 2},
		{[]byte{0x86, 0x8d, 0x21}, 100001, 3},
		{[]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}, -1, 9},
		{[]byte{0x81}, 0, 0},
		{nil, 0, 0},
	} {
		if got, n := ftsVarint(tc.in); got != tc.want || n != tc.n {
			t.Errorf("ftsVarint(%x) = %d, %d; want %d, %d", tc.in, got, n, tc.want, tc.n)
		}
	}
}

func TestPostingCache(t *testing.T) {
	list := func(n int) *postingList { return &postingList{gaps: make([]byte, n), n: n} }
	c := newPostingCache(3 * list(10).size())
	c.put("s1", "a", list(10))
	c.put("s1", "b", list(10))
	c.put("s1", "c", list(10))
	if c.get("s1", "a") == nil { // a is now the most recently used
		t.Fatal("a was not kept")
	}
	c.put("s1", "d", list(10))
	if c.get("s1", "b") != nil {
		t.Error("b, the least recently used, was kept beyond the limit")
	}
	for _, e := range []string{"a", "c", "d"} {
		if c.get("s1", e) == nil {
			t.Errorf("%s was dropped", e)
		}
	}
	if c.get("s2", "a") != nil {
		t.Error("a list of another index state was returned")
	}
	c.put("s2", "e", list(10))
	if c.get("s1", "a") != nil || c.get("s2", "e") == nil || c.bytes != list(10).size() {
		t.Errorf("a new state did not replace the old one: %d bytes", c.bytes)
	}
	c.put("s2", "huge", list(1000))
	if c.get("s2", "huge") != nil || c.get("s2", "e") == nil {
		t.Error("a list larger than the cache evicted the others or was kept")
	}
}

// TestRankWordsMatchesBruteForce scores a random corpus by brute force,
// one chunk and one word at a time with FTS5's bm25() (on PostgreSQL,
// ts_rank_cd's weighted count of the word with BM25's saturation), and
// checks that rankWords returns exactly the best chunks with the same
// scores, for queries that need every word and queries that need any.
func TestRankWordsMatchesBruteForce(t *testing.T) {
	t.Parallel()
	p, _ := newProvider(t)
	st := p.store
	rng := rand.New(rand.NewPCG(7, 11))
	// Word i is in about 1/(i+1) of the chunks, so some are in most
	// chunks (frequency not read) and some in few.
	vocab := []string{"alder", "birch", "cedar", "dogwood", "elm", "fir", "ginkgo", "hazel", "ivy", "juniper"}
	var docs []document
	for d := range 40 {
		var pieces []string
		for range 5 {
			var words []string
			for range 2 + rng.IntN(6) {
				i := int(math.Floor(float64(len(vocab)) * math.Pow(rng.Float64(), 3)))
				words = append(words, vocab[i])
			}
			pieces = append(pieces, strings.Join(words, " ")+". ")
		}
		title := vocab[rng.IntN(len(vocab))] + " notes"
		docs = append(docs, document{SourceID: "mcp:mcp", SourceKind: SourceKindNote, SourceName: "t", Namespace: "mcp",
			Key: fmt.Sprintf("d%d", d), Title: title, Pieces: pieces, Tags: []string{vocab[rng.IntN(len(vocab))]}})
	}
	if _, err := st.putDocuments(t.Context(), docs, false); err != nil {
		t.Fatal(err)
	}
	state, nRow, err := st.ftsState(t.Context())
	if err != nil || nRow != 200 {
		t.Fatalf("index rows = %d, %v; want 200", nRow, err)
	}
	expr := func(w string) string { return st.termExprs(wordTerms([]string{w}))[0] }
	// weight[w][pk] is idf·tf of word w in chunk pk, from bm25() alone.
	weight := map[string]map[int64]float64{}
	for _, w := range vocab {
		var rows []struct {
			PK    int64   `gorm:"column:pk"`
			Score float64 `gorm:"column:score"`
		}
		if st.postgres {
			var pg []struct {
				PK     int64   `gorm:"column:pk"`
				F      float64 `gorm:"column:f"`
				Tokens int64   `gorm:"column:tokens"`
			}
			err := st.db.Raw(`SELECT c.pk, ts_rank_cd(`+pgRankWeights+`, c.tsv, to_tsquery('`+pgTextConfig+`', ?), 0) AS f, c.tokens
				FROM chunks c WHERE c.tsv @@ to_tsquery('`+pgTextConfig+`', ?)`, expr(w), expr(w)).Scan(&pg).Error
			if err != nil {
				t.Fatal(err)
			}
			// The same as FTS5's bm25() of one word: −idf·tf.
			n := int64(len(pg))
			for _, r := range pg {
				score := -ftsIDFOf(n, nRow) * bm25TF(titleWeight*r.F, r.Tokens, avgTokensOf(state))
				rows = append(rows, struct {
					PK    int64   `gorm:"column:pk"`
					Score float64 `gorm:"column:score"`
				}{r.PK, score})
			}
		} else if err := st.db.Raw(`SELECT rowid AS pk, `+bm25Expr+` AS score FROM chunks_fts WHERE chunks_fts MATCH ?`, `"`+w+`"`).Scan(&rows).Error; err != nil {
			t.Fatal(err)
		}
		n := int64(len(rows))
		ftsIDF := math.Log((float64(nRow) - float64(n) + 0.5) / (float64(n) + 0.5))
		if ftsIDF <= 0 {
			ftsIDF = 1e-6
		}
		weight[w] = map[int64]float64{}
		for _, r := range rows {
			tf := -r.Score / ftsIDF
			if 2*n > nRow {
				tf = 1
			}
			weight[w][r.PK] = idfOf(n, nRow) * tf
		}
	}
	var common, rare int
	for _, w := range vocab {
		if 2*int64(len(weight[w])) > nRow {
			common++
		} else if len(weight[w]) > 0 {
			rare++
		}
	}
	if common == 0 || rare == 0 {
		t.Fatalf("corpus has %d words in most chunks and %d in fewer; want both", common, rare)
	}
	// Twice: first with nothing kept (as after a write: common words'
	// lists read only when needed), then with every list read and kept.
	for q := range 400 {
		if q < 200 {
			st.postings.mu.Lock()
			st.postings.reset("")
			st.postings.mu.Unlock()
		}
		if q == 200 {
			for _, w := range vocab {
				if _, err := st.postingsOf(t.Context(), state, expr(w), nRow); err != nil {
					t.Fatal(err)
				}
			}
		}
		words := slices.Clone(vocab)
		rng.Shuffle(len(words), func(i, j int) { words[i], words[j] = words[j], words[i] })
		words = words[:1+(q/2)%4]
		all := q%2 == 0
		// k past the rare words' chunks makes recall read the common
		// words' lists.
		k := 7
		if q%3 == 0 {
			k = 150
		}
		var want []rankedPK
		for pk := range int64(400) {
			score, hits := 0.0, 0
			for _, w := range words {
				if v, ok := weight[w][pk]; ok {
					score += v
					hits++
				}
			}
			if hits > 0 && (!all || hits == len(words)) {
				want = append(want, rankedPK{PK: pk, Score: score})
			}
		}
		slices.SortFunc(want, func(a, b rankedPK) int {
			if better(a, b) {
				return -1
			}
			return 1
		})
		want = want[:min(k, len(want))]
		got, err := st.rankWords(t.Context(), st.termExprs(wordTerms(words)), all, k)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != len(want) {
			t.Fatalf("%v all=%v: %d chunks, want %d", words, all, len(got), len(want))
		}
		for i := range want {
			if got[i].PK != want[i].PK || math.Abs(got[i].Score-want[i].Score) > 1e-5*want[i].Score {
				t.Errorf("%v all=%v: #%d = %+v, want %+v", words, all, i, got[i], want[i])
			}
		}
	}
}

// TestRankingSeesWrites checks that a write after a query reaches the
// next query although the posting lists are cached.
func TestRankingSeesWrites(t *testing.T) {
	t.Parallel()
	p := newProviderWith(t, map[string]any{"title": "One", "content": "the lighthouse keeper"})
	if hits := search(t, p, "lighthouse", 5); len(hits) != 1 {
		t.Fatalf("first search: %v", hitDocs(hits))
	}
	put(t, p, map[string]any{"title": "Two", "content": "a lighthouse lighthouse lighthouse at the cape"})
	hits := search(t, p, "lighthouse", 5)
	if len(hits) != 2 || hits[0].Title != "Two" {
		t.Fatalf("after a write: %v, want Two first", hitDocs(hits))
	}
	put(t, p, map[string]any{"title": "Two", "content": "nothing here any more"})
	if hits := search(t, p, "lighthouse", 5); len(hits) != 1 || hits[0].Title != "One" {
		t.Errorf("after a replace: %v, want One only", hitDocs(hits))
	}
}

// TestRankingKeepsScope checks that a client limited to a namespace gets
// its best chunks even when better ones elsewhere outnumber k many times.
func TestRankingKeepsScope(t *testing.T) {
	t.Parallel()
	p, _ := newProvider(t)
	for i := range 60 {
		put(t, p, map[string]any{"title": fmt.Sprintf("Elsewhere %d", i), "namespace": "other",
			"content": "kestrel kestrel kestrel kestrel hunting"})
	}
	put(t, p, map[string]any{"title": "Mine", "namespace": "mine", "content": "a kestrel in the field"})
	ctx := withScope(t.Context(), scope{namespaces: []string{"mine"}, def: "mine"})
	got, err := p.store.rankWords(ctx, termExprs(wordTerms([]string{"kestrel"})), true, 3)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 {
		t.Fatalf("scoped ranking = %+v, want the one chunk in namespace mine", got)
	}
	ref, err := p.store.refsByPK(ctx, []int64{got[0].PK}, "")
	if err != nil || ref[got[0].PK].Title != "Mine" {
		t.Errorf("scoped hit = %+v, %v", ref, err)
	}
}
