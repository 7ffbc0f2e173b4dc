package memory

import (
	"container/heap"
	"container/list"
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"sync"
)

// The keyword ranking scores every chunk that matches a query, not a
// sample of the matches, with BM25 computed here from statistics the FTS5
// index keeps:
//
//	score(chunk) = Σ over the query's words w of idf(w) · tf(w, chunk)
//
// idf(w) = ln(1 + (N − n + 0.5)/(n + 0.5)) for a word found in n of the N
// chunks, the form Lucene uses: it is positive for every word, so scores
// mean something in a memory of three chunks as in one of a million
// (FTS5's own bm25() gives a word found in half the chunks or more the
// weight 1e-6, which made every score in a small memory read 1e-06).
//
// tf(w, chunk) is BM25's saturated term frequency, k1 = 1.2 and b = 0.75,
// with a match in the title counting titleWeight times, in the tags
// tagsWeight times and in the body once, against the chunk's length in
// tokens: FTS5's formula, taken from bm25() run on the word alone. For a
// word found in more than half of the chunks, tf is 1 whatever the chunk:
// how often such a word occurs says little about what a chunk is about,
// and reading its frequency would mean scoring most of the index on every
// query. Only its presence is read, which is a plain walk of its index
// entry.
//
// Each word's posting list (the chunks holding it, with their tf) is read
// from FTS5 once and kept in postingCache until the index changes, so a
// query costs a merge of sorted lists in memory; the lists of common words
// are long (a word in every chunk of 100k chunks is 1.2 MB) and the cache
// is bounded by postingCacheBytes, least recently used first out.

// BM25 parameters, as FTS5's bm25() uses them.
const (
	bm25K1 = 1.2
	bm25B  = 0.75
)

// postingCacheBytes bounds the posting lists kept between queries: 12
// bytes a chunk a word, so 16 MiB holds every list of a query of ten
// words found in every chunk of 100k chunks.
const postingCacheBytes = 16 << 20

// postingList is where one word (an FTS5 phrase expression) occurs.
type postingList struct {
	// pks are the chunks holding the word, ascending.
	pks []int64
	// tf is the saturated term frequency of each chunk in pks; nil for a
	// word in more than half of the chunks, whose tf counts as 1.
	tf []float32
	// idf is the word's inverse document frequency (see above).
	idf float64
}

// size is the list's memory, in bytes, as postingCache counts it.
func (p *postingList) size() int { return 8*len(p.pks) + 4*len(p.tf) + 64 }

// weight is the score the list gives its i-th chunk.
func (p *postingList) weight(i int) float64 {
	if p.tf == nil {
		return p.idf
	}
	return p.idf * float64(p.tf[i])
}

// postingCache keeps posting lists for one state of the FTS5 index: a
// different state empties it.
type postingCache struct {
	mu    sync.Mutex
	state string
	order *list.List // of *cachedPostings, most recently used first
	items map[string]*list.Element
	bytes int
	limit int
}

type cachedPostings struct {
	expr string
	list *postingList
}

func newPostingCache(limit int) *postingCache {
	return &postingCache{order: list.New(), items: map[string]*list.Element{}, limit: limit}
}

// get returns the list of expr for state, or nil.
func (c *postingCache) get(state, expr string) *postingList {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.state != state {
		return nil
	}
	e, ok := c.items[expr]
	if !ok {
		return nil
	}
	c.order.MoveToFront(e)
	return e.Value.(*cachedPostings).list
}

// put keeps l as expr's list for state, forgetting every list of another
// state and the least recently used ones beyond the limit. A list larger
// than the limit is not kept.
func (c *postingCache) put(state, expr string, l *postingList) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.state != state {
		c.order.Init()
		clear(c.items)
		c.bytes = 0
		c.state = state
	}
	if l.size() > c.limit {
		return
	}
	if e, ok := c.items[expr]; ok {
		c.bytes -= e.Value.(*cachedPostings).list.size()
		c.order.Remove(e)
	}
	c.items[expr] = c.order.PushFront(&cachedPostings{expr: expr, list: l})
	c.bytes += l.size()
	for c.bytes > c.limit {
		last := c.order.Back()
		cp := last.Value.(*cachedPostings)
		c.order.Remove(last)
		delete(c.items, cp.expr)
		c.bytes -= cp.list.size()
	}
}

// ftsState identifies the FTS5 index's content: its averages record (rows
// and tokens per column) and its structure record, whose cookie FTS5
// increments on every change. nRow is the number of indexed chunks.
func (s *store) ftsState(ctx context.Context) (state string, nRow int64, err error) {
	var rows []struct {
		ID    int64  `gorm:"column:id"`
		Block []byte `gorm:"column:block"`
	}
	// Rowids 1 and 10 of an FTS5 table's %_data are its averages and
	// structure records (fts5_index.c, FTS5_AVERAGES_ROWID and
	// FTS5_STRUCTURE_ROWID).
	if err := s.db.WithContext(ctx).Raw(`SELECT id, block FROM chunks_fts_data WHERE id IN (1, 10) ORDER BY id`).Scan(&rows).Error; err != nil {
		return "", 0, fmt.Errorf("read the full-text index's state: %w", err)
	}
	var b []byte
	for _, r := range rows {
		b = fmt.Appendf(b, "%d:%x;", r.ID, r.Block)
		if r.ID == 1 {
			nRow, _ = ftsVarint(r.Block)
		}
	}
	return string(b), nRow, nil
}

// ftsVarint decodes the SQLite varint at the start of b (1 to 9 bytes, big
// endian, 7 bits a byte and all 8 of the ninth) and returns it with its
// length; 0, 0 when b is too short.
func ftsVarint(b []byte) (int64, int) {
	var v uint64
	for i := 0; i < 9 && i < len(b); i++ {
		if i == 8 {
			return int64(v<<8 | uint64(b[i])), 9
		}
		v = v<<7 | uint64(b[i]&0x7f)
		if b[i] < 0x80 {
			return int64(v), i + 1
		}
	}
	return 0, 0
}

// idfOf is the inverse document frequency of a word found in n of nRow
// chunks.
func idfOf(n, nRow int64) float64 {
	return math.Log(1 + (float64(nRow)-float64(n)+0.5)/(float64(n)+0.5))
}

// loadPostings reads the posting list of expr, a single FTS5 phrase, from
// the index whose state has nRow chunks.
func (s *store) loadPostings(ctx context.Context, expr string, nRow int64) (*postingList, error) {
	sqlDB, err := s.db.DB()
	if err != nil {
		return nil, err
	}
	var n int64
	if err := sqlDB.QueryRowContext(ctx, `SELECT COUNT(*) FROM chunks_fts WHERE chunks_fts MATCH ?`, expr).Scan(&n); err != nil {
		return nil, fmt.Errorf("count the chunks with %s: %w", expr, err)
	}
	l := &postingList{pks: make([]int64, 0, n)}
	common := 2*n > nRow
	q := `SELECT rowid, ` + bm25Expr + ` FROM chunks_fts WHERE chunks_fts MATCH ? ORDER BY rowid`
	if common {
		q = `SELECT rowid, 0 FROM chunks_fts WHERE chunks_fts MATCH ? ORDER BY rowid`
	} else {
		l.tf = make([]float32, 0, n)
	}
	rows, err := sqlDB.QueryContext(ctx, q, expr)
	if err != nil {
		return nil, fmt.Errorf("read the chunks with %s: %w", expr, err)
	}
	defer rows.Close()
	var scores []float64
	for rows.Next() {
		var (
			pk    int64
			score float64
		)
		if err := rows.Scan(&pk, &score); err != nil {
			return nil, fmt.Errorf("read the chunks with %s: %w", expr, err)
		}
		l.pks = append(l.pks, pk)
		if !common {
			scores = append(scores, score)
		}
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read the chunks with %s: %w", expr, err)
	}
	if !slices.IsSorted(l.pks) {
		return nil, errors.New("the full-text index returned chunks out of order")
	}
	hits := int64(len(l.pks))
	l.idf = idfOf(hits, nRow)
	if !common {
		// bm25() of one word is −idf·tf with FTS5's idf, floored at 1e-6
		// as FTS5 floors it, which gives tf back.
		ftsIDF := math.Log((float64(nRow) - float64(hits) + 0.5) / (float64(hits) + 0.5))
		if ftsIDF <= 0 {
			ftsIDF = 1e-6
		}
		for _, sc := range scores {
			l.tf = append(l.tf, float32(-sc/ftsIDF))
		}
	}
	return l, nil
}

// postingsFor returns the posting lists of exprs for one state of the
// index, from the cache or read from FTS5. A write that lands while they
// are read makes it read them again, twice at most; after that the lists
// are each consistent but may come from states a write apart.
func (s *store) postingsFor(ctx context.Context, exprs []string) ([]*postingList, error) {
	lists := make([]*postingList, len(exprs))
	for attempt := 0; ; attempt++ {
		state, nRow, err := s.ftsState(ctx)
		if err != nil {
			return nil, err
		}
		for i, e := range exprs {
			if l := s.postings.get(state, e); l != nil {
				lists[i] = l
				continue
			}
			if lists[i], err = s.loadPostings(ctx, e, nRow); err != nil {
				return nil, err
			}
			s.postings.put(state, e, lists[i])
		}
		after, _, err := s.ftsState(ctx)
		if err != nil {
			return nil, err
		}
		if after == state || attempt == 2 {
			return lists, nil
		}
	}
}

// rankWords returns the best n chunks, best first, among those that hold
// every word of exprs (all) or any of them, each an FTS5 phrase
// expression, and in the caller's scope: BM25 as described above, ties to
// the most recently inserted chunk. Every matching chunk is scored.
func (s *store) rankWords(ctx context.Context, exprs []string, all bool, n int) ([]rankedPK, error) {
	if len(exprs) == 0 || n <= 0 {
		return []rankedPK{}, nil
	}
	lists, err := s.postingsFor(ctx, exprs)
	if err != nil {
		return nil, err
	}
	sc := scopeOf(ctx)
	for want := n; ; want *= 4 {
		top, more := topChunks(lists, all, want)
		if sc.all {
			return top[:min(n, len(top))], nil
		}
		kept, err := s.inScope(ctx, sc, top)
		if err != nil {
			return nil, err
		}
		if len(kept) >= n || !more {
			return kept[:min(n, len(kept))], nil
		}
	}
}

// inScope keeps the chunks of ranked whose documents are in sc's
// namespaces, in order.
func (s *store) inScope(ctx context.Context, sc scope, ranked []rankedPK) ([]rankedPK, error) {
	cond, vars := sc.cond("d.namespace")
	allowed := map[int64]bool{}
	for batch := range slices.Chunk(ranked, 500) {
		pks := make([]int64, len(batch))
		for i, r := range batch {
			pks[i] = r.PK
		}
		var ok []int64
		err := s.db.WithContext(ctx).Raw(`SELECT c.pk FROM chunks c JOIN documents d ON d.id = c.document_id
			WHERE c.pk IN ? AND `+cond, slices.Concat([]any{pks}, vars)...).Scan(&ok).Error
		if err != nil {
			return nil, fmt.Errorf("check namespaces: %w", err)
		}
		for _, pk := range ok {
			allowed[pk] = true
		}
	}
	out := make([]rankedPK, 0, len(ranked))
	for _, r := range ranked {
		if allowed[r.PK] {
			out = append(out, r)
		}
	}
	return out, nil
}

// topChunks scores every chunk in all of lists (all) or any of them and
// returns the best n, best first, and whether more chunks matched.
func topChunks(lists []*postingList, all bool, n int) ([]rankedPK, bool) {
	h := &topHeap{}
	matched := 0
	offer := func(pk int64, score float64) {
		matched++
		switch {
		case h.Len() < n:
			heap.Push(h, rankedPK{PK: pk, Score: score})
		case better(rankedPK{PK: pk, Score: score}, (*h)[0]):
			(*h)[0] = rankedPK{PK: pk, Score: score}
			heap.Fix(h, 0)
		}
	}
	if all {
		intersect(lists, offer)
	} else {
		union(lists, offer)
	}
	out := make([]rankedPK, h.Len())
	for i := len(out) - 1; i >= 0; i-- {
		out[i] = heap.Pop(h).(rankedPK)
	}
	return out, matched > n
}

// better orders ranked chunks: higher score, then the more recently
// inserted (higher pk).
func better(a, b rankedPK) bool {
	if a.Score != b.Score {
		return a.Score > b.Score
	}
	return a.PK > b.PK
}

// topHeap is a min-heap of the best chunks so far, the worst on top.
type topHeap []rankedPK

func (h topHeap) Len() int           { return len(h) }
func (h topHeap) Less(i, j int) bool { return better(h[j], h[i]) }
func (h topHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *topHeap) Push(x any)        { *h = append(*h, x.(rankedPK)) }
func (h *topHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

// intersect calls offer for every chunk in all lists with its summed
// weight: the shortest list is walked and the others searched.
func intersect(lists []*postingList, offer func(int64, float64)) {
	order := slices.Clone(lists)
	slices.SortFunc(order, func(a, b *postingList) int { return len(a.pks) - len(b.pks) })
	pos := make([]int, len(order))
	first := order[0]
next:
	for i, pk := range first.pks {
		score := first.weight(i)
		for j := 1; j < len(order); j++ {
			l := order[j]
			k, found := slices.BinarySearch(l.pks[pos[j]:], pk)
			pos[j] += k
			if pos[j] >= len(l.pks) {
				return
			}
			if !found {
				continue next
			}
			score += l.weight(pos[j])
		}
		offer(pk, score)
	}
}

// union calls offer for every chunk in any of lists with its summed
// weight, walking them together in pk order.
func union(lists []*postingList, offer func(int64, float64)) {
	pos := make([]int, len(lists))
	for {
		var (
			pk    int64
			found bool
		)
		for j, l := range lists {
			if pos[j] < len(l.pks) && (!found || l.pks[pos[j]] < pk) {
				pk, found = l.pks[pos[j]], true
			}
		}
		if !found {
			return
		}
		score := 0.0
		for j, l := range lists {
			if pos[j] < len(l.pks) && l.pks[pos[j]] == pk {
				score += l.weight(pos[j])
				pos[j]++
			}
		}
		offer(pk, score)
	}
}
