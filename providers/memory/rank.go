package memory

import (
	"container/heap"
	"container/list"
	"context"
	"database/sql"
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
	tf []float64
	// idf is the word's inverse document frequency (see above).
	idf float64
	// ftsIDF is the idf FTS5's bm25() gives the word, which derives tf
	// from bm25() values.
	ftsIDF float64
}

// size is the list's memory, in bytes, as postingCache counts it.
func (p *postingList) size() int { return len(p.gaps) + 8*len(p.tf) + 64 }

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
	if s.postgres {
		return s.ftsStatePostgres(ctx)
	}
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

// ftsIDFOf is the idf FTS5's bm25() gives a word found in n of nRow
// chunks: floored at 1e-6, as FTS5 floors it.
func ftsIDFOf(n, nRow int64) float64 {
	idf := math.Log((float64(nRow) - float64(n) + 0.5) / (float64(n) + 0.5))
	if idf <= 0 {
		return 1e-6
	}
	return idf
}

// isCommon reports whether a word in n of nRow chunks counts by presence.
func isCommon(n, nRow int64) bool { return 2*n > nRow }

// countChunks returns how many chunks hold expr, for state.
func (s *store) countChunks(ctx context.Context, state, expr string) (int64, error) {
	if n, ok := s.postings.count(state, expr); ok {
		return n, nil
	}
	q := `SELECT COUNT(*) FROM chunks_fts WHERE chunks_fts MATCH ?`
	if s.postgres {
		q = `SELECT COUNT(*) FROM chunks WHERE tsv @@ to_tsquery('` + pgTextConfig + `', ?)`
	}
	var n int64
	if err := s.db.WithContext(ctx).Raw(q, expr).Scan(&n).Error; err != nil {
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

// readPostings appends the chunks of rows, which come in ascending pk, to
// l's gaps, checking every cancelCheckRows rows that ctx is still wanted.
// A row holds a pk and, when scored, a score after it; each, when not
// nil, is called with both for every row (score 0 when not scored). The
// error is the scan's, ctx's, an out-of-order pk's or rows'.
func readPostings(ctx context.Context, rows *sql.Rows, l *postingList, scored bool, each func(pk int64, score float64)) error {
	var (
		pk    int64
		score float64
	)
	dest := []any{&pk, &score}
	if !scored {
		dest = dest[:1]
	}
	r := pkReader{l: l}
	for rows.Next() {
		if err := rows.Scan(dest...); err != nil {
			return err
		}
		if l.n%cancelCheckRows == 0 && ctx.Err() != nil {
			return ctx.Err()
		}
		if err := r.add(pk); err != nil {
			return err
		}
		if each != nil {
			each(pk, score)
		}
	}
	return rows.Err()
}

// loadPostings reads the posting list of expr, a single FTS5 phrase found
// in n chunks, from the index whose state has nRow chunks.
func (s *store) loadPostings(ctx context.Context, expr string, n, nRow int64) (*postingList, error) {
	if s.postgres {
		return s.loadPostingsPostgres(ctx, expr, n, nRow)
	}
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
		l.tf = make([]float64, 0, n)
	}
	rows, err := sqlDB.QueryContext(uninterrupted(ctx), q, expr)
	if err != nil {
		return nil, fmt.Errorf("read the chunks with %s: %w", expr, err)
	}
	defer rows.Close()
	var scores []float64
	var each func(pk int64, score float64)
	if !common {
		each = func(_ int64, score float64) { scores = append(scores, score) }
	}
	if err := readPostings(ctx, rows, l, true, each); err != nil {
		return nil, fmt.Errorf("read the chunks with %s: %w", expr, err)
	}
	hits := int64(l.n)
	l.idf, l.ftsIDF = idfOf(hits, nRow), ftsIDFOf(hits, nRow)
	if !common {
		// bm25() of one word is −idf·tf with FTS5's idf, which gives tf
		// back.
		for _, sc := range scores {
			l.tf = append(l.tf, -sc/l.ftsIDF)
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

// bm25K1 is BM25's k1, as FTS5's bm25() uses it: a word's tf is below
// k1+1 in every chunk.
const bm25K1 = 1.2

// phaseOneMax is the document count up to which recall reads a rare
// word's whole posting list before looking at the others: rarer words are
// cheap to read and carry most of the score.
const phaseOneMax = 5000

// queryWord is one word of a ranking, with its statistics.
type queryWord struct {
	expr   string
	n      int64
	common bool
	// idf is the word's idf; bound is the most it adds to a chunk's
	// score: idf for a common word, idf·(k1+1) for another.
	idf, bound float64
}

// rankAt is rankWords for one state of the index. Every matching chunk is
// scored, but the posting lists of frequent words are not always read:
//
//   - Every word (search): the candidates are the chunks of the rarest
//     word. For each other word, FTS5 lists the candidates that hold it
//     too, with bm25() over both words, from which that word's tf
//     follows; a common word only needs the list of candidates.
//   - Any word (recall): the lists of the rare words are read, rarest
//     first, up to phaseOneMax chunks a word (and at least one). The other
//     words are scored on those chunks the same way. A chunk with none of
//     the words read scores at most the others' bounds summed: when the
//     k-th best scores more, nothing else can reach the top k; otherwise
//     every list is read.
//
// Lists already kept are used as they are.
func (s *store) rankAt(ctx context.Context, state string, nRow int64, exprs []string, all bool, n int) ([]rankedPK, error) {
	var words []queryWord
	constant := 0.0
	rare := 0
	for _, e := range exprs {
		c, err := s.countChunks(ctx, state, e)
		if err != nil {
			return nil, err
		}
		if c == 0 {
			if all {
				return []rankedPK{}, nil
			}
			continue
		}
		w := queryWord{expr: e, n: c, common: isCommon(c, nRow), idf: idfOf(c, nRow)}
		w.bound = w.idf
		if w.common {
			constant += w.idf
		} else {
			w.bound *= 1 + bm25K1
			rare++
		}
		words = append(words, w)
	}
	if len(words) == 0 {
		return []rankedPK{}, nil
	}
	if all && rare == 0 {
		// Every match holds every word and each counts by presence: all
		// score the same, so the newest come first, and FTS5 walks the
		// index from the newest match.
		return s.newestMatches(ctx, exprs, constant, n)
	}
	slices.SortStableFunc(words, func(a, b queryWord) int { return int(a.n - b.n) })
	top := func(lists []*postingList) ([]rankedPK, error) {
		return s.topInScope(ctx, n, func(m int) ([]rankedPK, bool) { return topChunks(lists, all, m) })
	}

	// Every list kept already: a merge in memory.
	var kept []*postingList
	for _, w := range words {
		if l := s.postings.get(state, w.expr); l != nil {
			kept = append(kept, l)
		}
	}
	if len(kept) == len(words) {
		return top(kept)
	}

	// Phase one: the rarest words' whole lists.
	var read []*postingList
	var readExprs []string
	rest := words
	for len(rest) > 0 && !rest[0].common && (len(read) == 0 || !all && rest[0].n <= phaseOneMax) {
		l, err := s.postingsOf(ctx, state, rest[0].expr, nRow)
		if err != nil {
			return nil, err
		}
		read, readExprs, rest = append(read, l), append(readExprs, rest[0].expr), rest[1:]
	}
	if len(read) == 0 {
		// Recall of common words alone: their lists are all there is.
		return s.readAll(ctx, state, nRow, words, top)
	}
	// Phase two: the other words, on the chunks of those read.
	lists := slices.Clone(read)
	for _, w := range rest {
		if l := s.postings.get(state, w.expr); l != nil && all {
			lists = append(lists, l)
			continue
		}
		l, err := s.pairList(ctx, nRow, readExprs, read, w)
		if err != nil {
			return nil, err
		}
		lists = append(lists, l)
	}
	best, err := top(lists)
	if err != nil || all || len(rest) == 0 {
		return best, err
	}
	bound := 0.0
	for _, w := range rest {
		bound += w.bound
	}
	if len(best) == n && best[n-1].Score > bound {
		return best, nil
	}
	// A chunk without any word read could still make the top k: read
	// every list.
	return s.readAll(ctx, state, nRow, words, top)
}

// readAll ranks by the whole posting lists of words.
func (s *store) readAll(ctx context.Context, state string, nRow int64, words []queryWord, top func([]*postingList) ([]rankedPK, error)) ([]rankedPK, error) {
	lists := make([]*postingList, 0, len(words))
	for _, w := range words {
		l, err := s.postingsOf(ctx, state, w.expr, nRow)
		if err != nil {
			return nil, err
		}
		lists = append(lists, l)
	}
	return top(lists)
}

// pairList returns w's posting list restricted to the chunks holding any
// word of readExprs, whose lists are read. For a common word it is the
// list of those chunks FTS5 finds holding w. For another, FTS5's bm25()
// over "(read words) AND w" is, on each chunk, the read words' share,
// known from their lists, plus w's, which gives w's tf.
func (s *store) pairList(ctx context.Context, nRow int64, readExprs []string, read []*postingList, w queryWord) (*postingList, error) {
	if s.postgres {
		return s.pairListPostgres(ctx, readExprs, w)
	}
	match := "(" + strings.Join(readExprs, " OR ") + ") AND " + w.expr
	if w.common {
		l, err := s.matchList(ctx, match)
		if err != nil {
			return nil, err
		}
		l.idf = w.idf
		return l, nil
	}
	sqlDB, err := s.db.DB()
	if err != nil {
		return nil, err
	}
	rows, err := sqlDB.QueryContext(uninterrupted(ctx), `SELECT rowid, `+bm25Expr+` FROM chunks_fts WHERE chunks_fts MATCH ? ORDER BY rowid`, match)
	if err != nil {
		return nil, fmt.Errorf("match %s: %w", match, err)
	}
	defer rows.Close()
	l := &postingList{idf: w.idf, tf: []float64{}}
	cs := make([]*cursor, len(read))
	for i, rl := range read {
		cs[i] = newCursor(rl)
	}
	wFTSIDF := ftsIDFOf(w.n, nRow)
	err = readPostings(ctx, rows, l, true, func(pk int64, score float64) {
		share := -score
		for _, c := range cs {
			for c.ok && c.pk < pk {
				c.next()
			}
			if c.ok && c.pk == pk {
				share -= c.l.ftsIDF * c.l.tf[c.i]
			}
		}
		l.tf = append(l.tf, max(0, share/wFTSIDF))
	})
	if err != nil {
		return nil, fmt.Errorf("match %s: %w", match, err)
	}
	return l, nil
}

// matchList returns the chunks matching the FTS5 expression match as a
// posting list without term frequencies (its idf left 0).
func (s *store) matchList(ctx context.Context, match string) (*postingList, error) {
	sqlDB, err := s.db.DB()
	if err != nil {
		return nil, err
	}
	if s.postgres {
		return s.tfList(ctx, `c.tsv @@ to_tsquery('`+pgTextConfig+`', $1)`, match, false, 1)
	}
	rows, err := sqlDB.QueryContext(uninterrupted(ctx), `SELECT rowid FROM chunks_fts WHERE chunks_fts MATCH ? ORDER BY rowid`, match)
	if err != nil {
		return nil, fmt.Errorf("match %s: %w", match, err)
	}
	defer rows.Close()
	l := &postingList{}
	if err := readPostings(ctx, rows, l, false, nil); err != nil {
		return nil, fmt.Errorf("match %s: %w", match, err)
	}
	return l, nil
}

// newestMatches returns the n most recently inserted chunks matching every
// word of exprs in the caller's scope, each scored constant.
func (s *store) newestMatches(ctx context.Context, exprs []string, constant float64, n int) ([]rankedPK, error) {
	if s.postgres {
		return s.newestMatchesPostgres(ctx, exprs, constant, n)
	}
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
	return h.drain(), matched > n
}

// better orders ranked chunks: higher score, then the more recently
// inserted (higher pk).
func better(a, b rankedPK) bool {
	if a.Score != b.Score {
		return a.Score > b.Score
	}
	return a.PK > b.PK
}

// topHeap is a min-heap of the best chunks so far, the worst on top: on a
// tie in score, the older (smaller) pk, so that newer chunks win.
type topHeap []rankedPK

// drain empties the heap and returns its chunks, best first.
func (h *topHeap) drain() []rankedPK {
	out := make([]rankedPK, h.Len())
	for i := len(out) - 1; i >= 0; i-- {
		out[i] = heap.Pop(h).(rankedPK)
	}
	return out
}

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
