package memory

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"unicode"
)

// On PostgreSQL the keyword ranking is the BM25 of SQLite's (rank.go),
// computed with PostgreSQL's own machinery:
//
//	score(chunk) = Σ over the query's terms t of idf(t) · tf(t, chunk)
//
// idf(t) is the same Lucene-style inverse document frequency, from the
// number of chunks whose vector matches t, which the GIN index counts.
// tf(t, chunk) is BM25's saturated term frequency, k1 = 1.2 and b = 0.75,
// of the weighted count of t in the chunk, which is what ts_rank_cd gives
// for a single term with the weights below (a match in the title counting
// titleWeight times, in the tags tagsWeight times, in the body once),
// against the chunk's length in words (chunks.tokens) and the average
// length (memory_state). A term found in more than half of the chunks
// counts by its presence, idf alone, as on SQLite. Every chunk that
// matches is scored; ties go to the most recently inserted chunk.
//
// The term counts are kept in wordCountCache while memory_state.version,
// which every change to chunks increments, stays the same: every replica
// sees every other's writes.

// pgRankWeights are ts_rank_cd's weights for the labels D (body), C
// (unused), B (tags) and A (title): PostgreSQL takes weights up to 1, so
// they are the column weights over titleWeight, and the result is
// multiplied back.
var pgRankWeights = fmt.Sprintf("'{%g, %g, %g, %g}'", bodyWeight/titleWeight, bodyWeight/titleWeight, tagsWeight/titleWeight, 1.0)

// bm25B is BM25's b, as FTS5's bm25() uses it.
const bm25B = 0.75

// wordCountCacheMax bounds the terms whose counts are kept.
const wordCountCacheMax = 10_000

// wordCountCache keeps the number of chunks matching each recent term for
// one version of memory_state.
type wordCountCache struct {
	mu      sync.Mutex
	version int64
	valid   bool
	counts  map[string]int64
}

// get returns the count of expr at version, if known.
func (c *wordCountCache) get(version int64, expr string) (int64, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.valid || c.version != version {
		return 0, false
	}
	n, ok := c.counts[expr]
	return n, ok
}

// put records counts at version, forgetting those of any other.
func (c *wordCountCache) put(version int64, counts map[string]int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.valid || c.version != version {
		c.version, c.valid, c.counts = version, true, map[string]int64{}
	}
	for e, n := range counts {
		if len(c.counts) >= wordCountCacheMax {
			break
		}
		c.counts[e] = n
	}
}

// indexStats are what BM25 needs of the whole index.
type indexStats struct {
	version int64
	chunks  int64
	// avgTokens is the average length of a chunk in words.
	avgTokens float64
	// counts are the chunks matching each term.
	counts []int64
}

// termCounts returns the index's statistics with how many chunks match
// each of exprs (tsquery texts), from the cache or counted with the GIN
// index.
func (s *store) termCounts(ctx context.Context, exprs []string) (indexStats, error) {
	db := s.db.WithContext(ctx)
	var st struct {
		Version int64 `gorm:"column:version"`
		Chunks  int64 `gorm:"column:chunks"`
		Tokens  int64 `gorm:"column:tokens"`
	}
	if err := db.Raw(`SELECT version, chunks, tokens FROM memory_state WHERE id = 1`).Scan(&st).Error; err != nil {
		return indexStats{}, fmt.Errorf("read the full-text index's state: %w", err)
	}
	out := indexStats{version: st.Version, chunks: st.Chunks, avgTokens: 1, counts: make([]int64, len(exprs))}
	if st.Chunks > 0 && st.Tokens > 0 {
		out.avgTokens = float64(st.Tokens) / float64(st.Chunks)
	}
	fresh := map[string]int64{}
	for i, e := range exprs {
		if n, ok := s.wordCounts.get(st.Version, e); ok {
			out.counts[i] = n
			continue
		}
		if err := db.Raw(`SELECT COUNT(*) FROM chunks WHERE tsv @@ to_tsquery('`+pgTextConfig+`', ?)`, e).Scan(&out.counts[i]).Error; err != nil {
			return indexStats{}, fmt.Errorf("count the chunks matching a query term: %w", err)
		}
		fresh[e] = out.counts[i]
	}
	s.wordCounts.put(st.Version, fresh)
	return out, nil
}

// rankWordsPostgres is rankWords on PostgreSQL: the best n chunks, best
// first, among those in the caller's scope that match every term of
// exprs (all) or any of them, each a tsquery text (see tsqueryOf).
func (s *store) rankWordsPostgres(ctx context.Context, exprs []string, all bool, n int) ([]rankedPK, error) {
	st, err := s.termCounts(ctx, exprs)
	if err != nil {
		return nil, err
	}
	var (
		freqs []string // ts_rank_cd of each rare term, in the lateral subquery
		terms []string // each term's share of the score
		fVars []any
		tVars []any
		used  []string
	)
	const q = `to_tsquery('` + pgTextConfig + `', ?)`
	for i, e := range exprs {
		c := st.counts[i]
		if c == 0 {
			if all {
				return []rankedPK{}, nil
			}
			continue
		}
		idf := idfOf(c, st.chunks)
		used = append(used, "("+e+")")
		switch {
		case isCommon(c, st.chunks) && all:
			terms = append(terms, `?::float8`)
			tVars = append(tVars, idf)
		case isCommon(c, st.chunks):
			terms = append(terms, `CASE WHEN c.tsv @@ `+q+` THEN ?::float8 ELSE 0 END`)
			tVars = append(tVars, e, idf)
		default:
			f := "r.f" + strconv.Itoa(len(freqs))
			freqs = append(freqs, strconv.FormatFloat(titleWeight, 'f', -1, 64)+` * ts_rank_cd(`+pgRankWeights+`, c.tsv, `+q+`, 0) AS `+f[2:])
			fVars = append(fVars, e)
			// BM25's tf: f·(k1+1) / (f + k1·(1 − b + b·len/avglen)).
			terms = append(terms, `?::float8 * `+f+` * `+strconv.FormatFloat(bm25K1+1, 'f', -1, 64)+` / (`+f+` + ?::float8 * c.tokens + ?::float8)`)
			tVars = append(tVars, idf, bm25K1*bm25B/st.avgTokens, bm25K1*(1-bm25B))
		}
	}
	if len(used) == 0 {
		return []rankedPK{}, nil
	}
	op := " | "
	if all {
		op = " & "
	}
	sql := `SELECT c.pk, ` + strings.Join(terms, " + ") + ` AS score FROM chunks c`
	var vars []any
	if len(freqs) > 0 {
		sql += ` CROSS JOIN LATERAL (SELECT ` + strings.Join(freqs, ", ") + `) AS r`
		vars = append(vars, fVars...)
	}
	vars = slices.Concat(tVars, vars)
	where := ` WHERE c.tsv @@ to_tsquery('` + pgTextConfig + `', ?)`
	vars = append(vars, strings.Join(used, op))
	if cond, scopeVars := scopeOf(ctx).cond("d.namespace"); cond != "" {
		sql += ` JOIN documents d ON d.id = c.document_id`
		where += ` AND ` + cond
		vars = append(vars, scopeVars...)
	}
	var out []rankedPK
	err = s.db.WithContext(ctx).Raw(sql+where+` ORDER BY score DESC, c.pk DESC LIMIT ?`, append(vars, n)...).Scan(&out).Error
	if err != nil {
		return nil, fmt.Errorf("rank chunks: %w", err)
	}
	if out == nil {
		out = []rankedPK{}
	}
	return out, nil
}

// pgHeadlineOptions make ts_headline mark matches as FTS5's snippets do,
// in an excerpt of about snippetTokens words.
var pgHeadlineOptions = fmt.Sprintf("StartSel=**, StopSel=**, MaxWords=%d, MinWords=%d, ShortWord=0, MaxFragments=1, FragmentDelimiter=\" … \"",
	snippetTokens, snippetTokens/2)

// markSnippetsPostgres sets the snippets of the chunks of out that match
// match (a tsquery text) to an excerpt with the matches marked, cut with
// "…" where the excerpt does not reach the chunk's start or end; content
// holds the chunks' text.
func (s *store) markSnippetsPostgres(ctx context.Context, out map[int64]browseHit, content map[int64]string, match string) error {
	pks := make([]int64, 0, len(out))
	for pk := range out {
		pks = append(pks, pk)
	}
	var snippets []struct {
		PK      int64  `gorm:"column:pk"`
		Snippet string `gorm:"column:snippet"`
	}
	err := s.db.WithContext(ctx).Raw(`
		SELECT c.pk, ts_headline('`+pgTextConfig+`', c.content, q.q, ?) AS snippet
		FROM chunks c, to_tsquery('`+pgTextConfig+`', ?) AS q (q)
		WHERE c.pk IN ? AND c.tsv @@ q.q`, pgHeadlineOptions, match, pks).Scan(&snippets).Error
	if err != nil {
		return fmt.Errorf("make snippets: %w", err)
	}
	for _, sn := range snippets {
		r, ok := out[sn.PK]
		if !ok {
			continue
		}
		snip := cleanSnippet(sn.Snippet)
		plain := strings.ReplaceAll(snip, "**", "")
		text := content[sn.PK]
		// ts_headline leaves out the punctuation around its excerpt:
		// it is put back, unless words were left out too, which "…"
		// stands for.
		if at := strings.Index(text, plain); at >= 0 {
			if before := text[:at]; strings.IndexFunc(before, isWordBase) >= 0 {
				snip = "…" + snip
			} else {
				snip = strings.TrimLeftFunc(before, unicode.IsSpace) + snip
			}
			if after := text[at+len(plain):]; strings.IndexFunc(after, isWordBase) >= 0 {
				snip += "…"
			} else {
				snip += strings.TrimRightFunc(after, unicode.IsSpace)
			}
		}
		r.Snippet = snip
		out[sn.PK] = r
	}
	return nil
}

// tsqueryOf is the term as the text of a tsquery in to_tsquery's syntax:
// each word a quoted operand (its quotes and backslashes escaped, though
// words have none), a phrase's words joined by <->, and :* after a
// prefix. to_tsquery then normalises each operand with memory_text, as the
// chunks were indexed; nothing the user typed is read as tsquery syntax.
func (t queryTerm) tsqueryOf() string {
	q := make([]string, len(t.words))
	for i, w := range t.words {
		w = strings.ReplaceAll(w, `\`, `\\`)
		q[i] = "'" + strings.ReplaceAll(w, "'", "''") + "'"
	}
	e := strings.Join(q, " <-> ")
	if t.prefix {
		e += ":*"
	}
	return e
}

// tsqueryExprs returns the tsquery text of each term.
func tsqueryExprs(terms []queryTerm) []string {
	out := make([]string, len(terms))
	for i, t := range terms {
		out[i] = t.tsqueryOf()
	}
	return out
}

// tsqueryAll is the tsquery text that requires every term; "" when terms
// is empty.
func tsqueryAll(terms []queryTerm) string { return tsqueryJoin(terms, " & ") }

// tsqueryAny is the tsquery text that any of terms satisfies; "" when
// terms is empty.
func tsqueryAny(terms []queryTerm) string { return tsqueryJoin(terms, " | ") }

func tsqueryJoin(terms []queryTerm, op string) string {
	parts := tsqueryExprs(terms)
	for i, p := range parts {
		parts[i] = "(" + p + ")"
	}
	return strings.Join(parts, op)
}

// termExprs returns each term's expression for rankWords: FTS5 phrase
// expressions, or tsquery texts on PostgreSQL.
func (s *store) termExprs(terms []queryTerm) []string {
	if s.postgres {
		return tsqueryExprs(terms)
	}
	return termExprs(terms)
}

// matchAll is the expression for refsByPK and browse that every term
// satisfies: FTS5's or, on PostgreSQL, a tsquery text.
func (s *store) matchAll(terms []queryTerm) string {
	if s.postgres {
		return tsqueryAll(terms)
	}
	return matchAll(terms)
}

// matchAny is the expression that any of terms satisfies (see matchAll).
func (s *store) matchAny(terms []queryTerm) string {
	if s.postgres {
		return tsqueryAny(terms)
	}
	return matchAny(terms)
}
