package memory

import (
	"container/heap"
	"container/list"
	"context"
	"encoding/binary"
	"fmt"
	"math"
	"slices"
	"strings"
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

// postingCacheBytes bounds the posting lists kept between queries. A list
// takes about a byte per chunk for a word in most chunks (gaps between
// chunk pks, varint-encoded) and five for other words, so 16 MiB holds
// the lists of well over a hundred words found in every chunk of 100k
// chunks.
const postingCacheBytes = 16 << 20

// postingList is where one word (an FTS5 phrase expression) occurs.
type postingList struct {
	// gaps are the pks of the chunks holding the word, ascending, as the
	// varint-encoded differences between neighbours (the first from 0).
	gaps []byte
	// n is the number of chunks in the list.
	n int
	// tf is the saturated term frequency of each chunk, in pk order; nil
	// for a word in more than half of the chunks, whose tf counts as 1.
	tf []float32
	// idf is the word's inverse document frequency (see above).
	idf float64
}

// size is the list's memory, in bytes, as postingCache counts it.
func (p *postingList) size() int { return len(p.gaps) + 4*len(p.tf) + 64 }

// cursor walks a postingList in pk order.
type cursor struct {
	l   *postingList
	off int
	// i is the index of pk in the list, -1 before the first.
	i  int
	pk int64
	ok bool
}

func newCursor(l *postingList) *cursor {
	c := &cursor{l: l, i: -1}
	c.next()
	return c
}

// next moves to the following chunk; ok turns false after the last.
func (c *cursor) next() {
	if c.off >= len(c.l.gaps) {
		c.ok = false
		return
	}
	d, n := binary.Uvarint(c.l.gaps[c.off:])
	c.off += n
	c.pk += int64(d)
	c.i++
	c.ok = true
}

// weight is the score the list gives the cursor's chunk.
func (c *cursor) weight() float64 {
	if c.l.tf == nil {
		return c.l.idf
	}
	return c.l.idf * float64(c.l.tf[c.i])
}

// postingCache keeps posting lists and document counts for one state of
// the FTS5 index: a different state empties it.
type postingCache struct {
	mu    sync.Mutex
	state string
	order *list.List // of *cachedPostings, most recently used first
	items map[string]*list.Element
	bytes int
	limit int
	// counts are the words' document counts, however their lists fare.
	counts map[string]int64
}

type cachedPostings struct {
	expr string
	list *postingList
}

func newPostingCache(limit int) *postingCache {
	return &postingCache{order: list.New(), items: map[string]*list.Element{}, counts: map[string]int64{}, limit: limit}
}

// reset empties the cache for state; c.mu is held.
func (c *postingCache) reset(state string) {
	if c.state == state {
		return
	}
	c.order.Init()
	clear(c.items)
	clear(c.counts)
	c.bytes = 0
	c.state = state
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
	c.reset(state)
	c.counts[expr] = int64(l.n)
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

// count returns expr's document count for state, if known.
func (c *postingCache) count(state, expr string) (int64, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.state != state {
		return 0, false
	}
	n, ok := c.counts[expr]
	return n, ok
}

// putCount records expr's document count for state.
func (c *postingCache) putCount(state, expr string, n int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.reset(state)
	if len(c.counts) < 100_000 {
		c.counts[expr] = n
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

// isCommon reports whether a word in n of nRow chunks counts by presence.
func isCommon(n, nRow int64) bool { return 2*n > nRow }

// countChunks returns how many chunks hold expr, for state.
func (s *store) countChunks(ctx context.Context, state, expr string) (int64, error) {
	if n, ok := s.postings.count(state, expr); ok {
		return n, nil
	}
	var n int64
	if err := s.db.WithContext(ctx).Raw(`SELECT COUNT(*) FROM chunks_fts WHERE chunks_fts MATCH ?`, expr).Scan(&n).Error; err != nil {
		return 0, fmt.Errorf("count the chunks with %s: %w", expr, err)
	}
	s.postings.putCount(state, expr, n)
	return n, nil
}

// cancelCheckRows is how often, in rows, a read of a posting list checks
// that its call is still wanted.
const cancelCheckRows = 1024

// uninterrupted returns ctx without its cancellation, for the statements
// that read a posting list a row at a time: go-sqlite3 runs every step of
// a cancellable statement on a new goroutine so that it can interrupt it,
// which costs more than the step. The loops check ctx themselves every
// cancelCheckRows rows instead.
func uninterrupted(ctx context.Context) context.Context { return context.WithoutCancel(ctx) }

// pkReader collects pks that must come in ascending order into a
// postingList's gaps.
type pkReader struct {
	l    *postingList
	last int64
}

// add appends pk, or fails when it is not above the last.
func (r *pkReader) add(pk int64) error {
	if pk < 0 || r.l.n > 0 && pk <= r.last {
		return fmt.Errorf("the full-text index returned chunk %d after %d", pk, r.last)
	}
	r.l.gaps = binary.AppendUvarint(r.l.gaps, uint64(pk-r.last))
	r.last = pk
	r.l.n++
	return nil
}

// loadPostings reads the posting list of expr, a single FTS5 phrase found
// in n chunks, from the index whose state has nRow chunks.
func (s *store) loadPostings(ctx context.Context, expr string, n, nRow int64) (*postingList, error) {
	sqlDB, err := s.db.DB()
	if err != nil {
		return nil, err
	}
	common := isCommon(n, nRow)
	l := &postingList{gaps: make([]byte, 0, n+n/4)}
	q := `SELECT rowid, ` + bm25Expr + ` FROM chunks_fts WHERE chunks_fts MATCH ? ORDER BY rowid`
	if common {
		q = `SELECT rowid, 0 FROM chunks_fts WHERE chunks_fts MATCH ? ORDER BY rowid`
	} else {
		l.tf = make([]float32, 0, n)
	}
	rows, err := sqlDB.QueryContext(uninterrupted(ctx), q, expr)
	if err != nil {
		return nil, fmt.Errorf("read the chunks with %s: %w", expr, err)
	}
	defer rows.Close()
	var scores []float64
	r := pkReader{l: l}
	for rows.Next() {
		var (
			pk    int64
			score float64
		)
		if err := rows.Scan(&pk, &score); err != nil {
			return nil, fmt.Errorf("read the chunks with %s: %w", expr, err)
		}
		if l.n%cancelCheckRows == 0 && ctx.Err() != nil {
			return nil, fmt.Errorf("read the chunks with %s: %w", expr, ctx.Err())
		}
		if err := r.add(pk); err != nil {
			return nil, fmt.Errorf("read the chunks with %s: %w", expr, err)
		}
		if !common {
			scores = append(scores, score)
		}
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read the chunks with %s: %w", expr, err)
	}
	hits := int64(l.n)
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

// postingsOf returns expr's posting list for state, from the cache or
// read from FTS5.
func (s *store) postingsOf(ctx context.Context, state, expr string, nRow int64) (*postingList, error) {
	if l := s.postings.get(state, expr); l != nil {
		return l, nil
	}
	n, err := s.countChunks(ctx, state, expr)
	if err != nil {
		return nil, err
	}
	l, err := s.loadPostings(ctx, expr, n, nRow)
	if err != nil {
		return nil, err
	}
	s.postings.put(state, expr, l)
	return l, nil
}

// rankWords returns the best n chunks, best first, among those that hold
// every term of exprs (all) or any of them, each an FTS5 phrase
// expression, and in the caller's scope: BM25 as described above, ties to
// the most recently inserted chunk. Every matching chunk is scored. A
// write that lands while the index is read makes it start again, twice at
// most.
func (s *store) rankWords(ctx context.Context, exprs []string, all bool, n int) ([]rankedPK, error) {
	if len(exprs) == 0 || n <= 0 {
		return []rankedPK{}, nil
	}
	for attempt := 0; ; attempt++ {
		state, nRow, err := s.ftsState(ctx)
		if err != nil {
			return nil, err
		}
		out, err := s.rankAt(ctx, state, nRow, exprs, all, n)
		if err != nil {
			return nil, err
		}
		after, _, err := s.ftsState(ctx)
		if err != nil {
			return nil, err
		}
		if after == state || attempt == 2 {
			return out, nil
		}
	}
}

// rankAt is rankWords for one state of the index.
func (s *store) rankAt(ctx context.Context, state string, nRow int64, exprs []string, all bool, n int) ([]rankedPK, error) {
	var common, rare []int
	constant := 0.0
	counts := make([]int64, len(exprs))
	for i, e := range exprs {
		c, err := s.countChunks(ctx, state, e)
		if err != nil {
			return nil, err
		}
		counts[i] = c
		switch {
		case c == 0 && all:
			return []rankedPK{}, nil
		case c == 0:
		case isCommon(c, nRow):
			common = append(common, i)
			constant += idfOf(c, nRow)
		default:
			rare = append(rare, i)
		}
	}
	if all && len(rare) == 0 {
		// Every match holds every word and each counts by presence: all
		// score the same, so the newest come first, and FTS5 walks the
		// index from the newest match.
		return s.newestMatches(ctx, exprs, constant, n)
	}
	var lists []*postingList
	for _, i := range rare {
		l, err := s.postingsOf(ctx, state, exprs[i], nRow)
		if err != nil {
			return nil, err
		}
		lists = append(lists, l)
	}
	var commonLists []*postingList
	for _, i := range common {
		if l := s.postings.get(state, exprs[i]); l != nil {
			commonLists = append(commonLists, l)
		}
	}
	if len(commonLists) == len(common) {
		lists = append(lists, commonLists...)
	} else if all {
		// The chunks with every rare word must hold the common ones too:
		// FTS5 says which do, without reading the common words' lists.
		return s.rankCandidates(ctx, lists, exprs, constant, n)
	} else if len(rare) > 0 {
		// FTS5 says which chunks with a rare word hold each common word,
		// which scores them exactly. A chunk with common words only
		// scores at most their summed idf: when the n-th best scores
		// more, the common words' lists need not be read.
		withCommon := slices.Clone(lists)
		anyRare := make([]string, len(rare))
		for j, i := range rare {
			anyRare[j] = exprs[i]
		}
		bound := 0.0
		for _, i := range common {
			l, err := s.matchList(ctx, "("+strings.Join(anyRare, " OR ")+") AND "+exprs[i])
			if err != nil {
				return nil, err
			}
			l.idf = idfOf(counts[i], nRow)
			bound += l.idf
			withCommon = append(withCommon, l)
		}
		best, err := s.topInScope(ctx, n, func(m int) ([]rankedPK, bool) { return topChunks(withCommon, false, m) })
		if err != nil || len(best) == n && best[n-1].Score > bound {
			return best, err
		}
		for _, i := range common {
			l, err := s.postingsOf(ctx, state, exprs[i], nRow)
			if err != nil {
				return nil, err
			}
			lists = append(lists, l)
		}
	} else {
		for _, i := range common {
			l, err := s.postingsOf(ctx, state, exprs[i], nRow)
			if err != nil {
				return nil, err
			}
			lists = append(lists, l)
		}
	}
	if len(lists) == 0 {
		return []rankedPK{}, nil
	}
	return s.topInScope(ctx, n, func(m int) ([]rankedPK, bool) { return topChunks(lists, all, m) })
}

// rankCandidates ranks the chunks in every list of rare that FTS5 finds
// holding every word of exprs, adding constant (the common words' share)
// to each score.
func (s *store) rankCandidates(ctx context.Context, rare []*postingList, exprs []string, constant float64, n int) ([]rankedPK, error) {
	matches, err := s.matchList(ctx, strings.Join(exprs, " "))
	if err != nil {
		return nil, err
	}
	// The matches, as a list worth constant, narrow the rare lists'
	// intersection and add the common words' share.
	matches.idf = constant
	lists := append(slices.Clone(rare), matches)
	return s.topInScope(ctx, n, func(m int) ([]rankedPK, bool) { return topChunks(lists, true, m) })
}

// matchList returns the chunks matching the FTS5 expression match as a
// posting list without term frequencies (its idf left 0).
func (s *store) matchList(ctx context.Context, match string) (*postingList, error) {
	sqlDB, err := s.db.DB()
	if err != nil {
		return nil, err
	}
	rows, err := sqlDB.QueryContext(uninterrupted(ctx), `SELECT rowid FROM chunks_fts WHERE chunks_fts MATCH ? ORDER BY rowid`, match)
	if err != nil {
		return nil, fmt.Errorf("match %s: %w", match, err)
	}
	defer rows.Close()
	l := &postingList{}
	r := pkReader{l: l}
	for rows.Next() {
		var pk int64
		if err := rows.Scan(&pk); err != nil {
			return nil, fmt.Errorf("match %s: %w", match, err)
		}
		if l.n%cancelCheckRows == 0 && ctx.Err() != nil {
			return nil, fmt.Errorf("match %s: %w", match, ctx.Err())
		}
		if err := r.add(pk); err != nil {
			return nil, fmt.Errorf("match %s: %w", match, err)
		}
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("match %s: %w", match, err)
	}
	return l, nil
}

// newestMatches returns the n most recently inserted chunks matching every
// word of exprs in the caller's scope, each scored constant.
func (s *store) newestMatches(ctx context.Context, exprs []string, constant float64, n int) ([]rankedPK, error) {
	cond, vars := scopeOf(ctx).cond("d.namespace")
	if cond != "" {
		cond = ` AND EXISTS (SELECT 1 FROM chunks c JOIN documents d ON d.id = c.document_id
				WHERE c.pk = chunks_fts.rowid AND ` + cond + `)`
	}
	var pks []int64
	err := s.db.WithContext(ctx).Raw(`SELECT rowid FROM chunks_fts WHERE chunks_fts MATCH ?`+cond+` ORDER BY rowid DESC LIMIT ?`,
		slices.Concat([]any{strings.Join(exprs, " ")}, vars, []any{n})...).Scan(&pks).Error
	if err != nil {
		return nil, fmt.Errorf("rank chunks: %w", err)
	}
	out := make([]rankedPK, len(pks))
	for i, pk := range pks {
		out[i] = rankedPK{PK: pk, Score: constant}
	}
	return out, nil
}

// topInScope returns the best n chunks that top, asked for its best m,
// gives in the caller's scope, asking for four times more while too many
// fall outside.
func (s *store) topInScope(ctx context.Context, n int, top func(m int) ([]rankedPK, bool)) ([]rankedPK, error) {
	sc := scopeOf(ctx)
	for want := n; ; want *= 4 {
		best, more := top(want)
		if sc.all {
			return best[:min(n, len(best))], nil
		}
		kept, err := s.inScope(ctx, sc, best)
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

// intersect calls offer, in pk order, for every chunk in all lists with
// its summed weight.
func intersect(lists []*postingList, offer func(int64, float64)) {
	cs := make([]*cursor, len(lists))
	for i, l := range lists {
		if cs[i] = newCursor(l); !cs[i].ok {
			return
		}
	}
	// The shortest list leads: the others skip to its chunks.
	slices.SortFunc(cs, func(a, b *cursor) int { return a.l.n - b.l.n })
	for {
		target := cs[0].pk
		agreed := true
		for _, c := range cs[1:] {
			for c.ok && c.pk < target {
				c.next()
			}
			if !c.ok {
				return
			}
			if c.pk > target {
				agreed = false
				target = c.pk
			}
		}
		if !agreed {
			for cs[0].ok && cs[0].pk < target {
				cs[0].next()
			}
			if !cs[0].ok {
				return
			}
			continue
		}
		score := 0.0
		for _, c := range cs {
			score += c.weight()
		}
		offer(target, score)
		if cs[0].next(); !cs[0].ok {
			return
		}
	}
}

// union calls offer, in pk order, for every chunk in any of lists with its
// summed weight.
func union(lists []*postingList, offer func(int64, float64)) {
	cs := make([]*cursor, len(lists))
	for i, l := range lists {
		cs[i] = newCursor(l)
	}
	for {
		var (
			pk    int64
			found bool
		)
		for _, c := range cs {
			if c.ok && (!found || c.pk < pk) {
				pk, found = c.pk, true
			}
		}
		if !found {
			return
		}
		score := 0.0
		for _, c := range cs {
			if c.ok && c.pk == pk {
				score += c.weight()
				c.next()
			}
		}
		offer(pk, score)
	}
}
