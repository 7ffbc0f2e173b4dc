package memory

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
)

// On PostgreSQL the keyword ranking is BM25's shape computed with
// PostgreSQL's own machinery:
//
//	score(chunk) = Σ over the query's terms t of idf(t) · ts_rank(weights, tsv, t, 1)
//
// idf(t) is the same Lucene-style inverse document frequency as on SQLite
// (rank.go), from the number of chunks whose vector matches t, which the
// GIN index counts. ts_rank of one term plays the part of BM25's saturated
// term frequency: it grows with the term's occurrences, a match in the
// title counting titleWeight times one in the body and in the tags
// tagsWeight times (the weights A, B and D of the chunk's vector), and
// normalization 1 divides it by 1 + the logarithm of the chunk's length.
// Every chunk that matches is scored; ties go to the most recently
// inserted chunk.
//
// The chunk counts are kept in wordCountCache while memory_state.version,
// which every change to chunks increments, stays the same: every replica
// sees every other's writes.

// pgRankWeights are ts_rank's weights for the labels D (body), C (unused),
// B (tags) and A (title), in the ratio of the SQLite BM25 column weights.
var pgRankWeights = fmt.Sprintf("'{%g, %g, %g, %g}'", bodyWeight/4, bodyWeight/4, tagsWeight/4, titleWeight/4)

// pgRankNormalization is ts_rank's normalization: divide by 1 + the
// logarithm of the chunk's length.
const pgRankNormalization = 1

// wordCountCacheMax bounds the terms whose counts are kept.
const wordCountCacheMax = 10_000

// wordCountCache keeps the number of chunks, and of chunks matching each
// recent term, for one version of memory_state.
type wordCountCache struct {
	mu      sync.Mutex
	version int64
	total   int64
	valid   bool
	counts  map[string]int64
}

// get returns the chunk count and the count of expr at version, if known.
func (c *wordCountCache) get(version int64, expr string) (total, n int64, ok bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.valid || c.version != version {
		return 0, 0, false
	}
	n, ok = c.counts[expr]
	return c.total, n, ok
}

// totalAt returns the chunk count at version, if known.
func (c *wordCountCache) totalAt(version int64) (int64, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.total, c.valid && c.version == version
}

// put records the counts of version, forgetting those of any other.
func (c *wordCountCache) put(version, total int64, counts map[string]int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.valid || c.version != version {
		c.version, c.total, c.valid, c.counts = version, total, true, map[string]int64{}
	}
	for e, n := range counts {
		if len(c.counts) >= wordCountCacheMax {
			break
		}
		c.counts[e] = n
	}
}

// termCounts returns the number of chunks and how many match each of
// exprs (tsquery texts), from the cache or counted with the GIN index.
func (s *store) termCounts(ctx context.Context, exprs []string) (int64, []int64, error) {
	db := s.db.WithContext(ctx)
	var version int64
	if err := db.Raw(`SELECT version FROM memory_state WHERE id = 1`).Scan(&version).Error; err != nil {
		return 0, nil, fmt.Errorf("read the full-text index's state: %w", err)
	}
	total, known := s.wordCounts.totalAt(version)
	if !known {
		if err := db.Raw(`SELECT COUNT(*) FROM chunks`).Scan(&total).Error; err != nil {
			return 0, nil, fmt.Errorf("count chunks: %w", err)
		}
	}
	out := make([]int64, len(exprs))
	fresh := map[string]int64{}
	for i, e := range exprs {
		if _, n, ok := s.wordCounts.get(version, e); ok {
			out[i] = n
			continue
		}
		if err := db.Raw(`SELECT COUNT(*) FROM chunks WHERE tsv @@ to_tsquery('`+pgTextConfig+`', ?)`, e).Scan(&out[i]).Error; err != nil {
			return 0, nil, fmt.Errorf("count the chunks matching a query term: %w", err)
		}
		fresh[e] = out[i]
	}
	s.wordCounts.put(version, total, fresh)
	return total, out, nil
}

// rankWordsPostgres is rankWords on PostgreSQL: the best n chunks, best
// first, among those in the caller's scope that match every term of
// exprs (all) or any of them, each a tsquery text (see tsqueryOf).
func (s *store) rankWordsPostgres(ctx context.Context, exprs []string, all bool, n int) ([]rankedPK, error) {
	total, counts, err := s.termCounts(ctx, exprs)
	if err != nil {
		return nil, err
	}
	var (
		scoreSQL []string
		vars     []any
		used     []string
	)
	for i, e := range exprs {
		if counts[i] == 0 {
			if all {
				return []rankedPK{}, nil
			}
			continue
		}
		scoreSQL = append(scoreSQL, `?::float8 * ts_rank(`+pgRankWeights+`, c.tsv, to_tsquery('`+pgTextConfig+`', ?), `+strconv.Itoa(pgRankNormalization)+`)`)
		vars = append(vars, idfOf(counts[i], total), e)
		used = append(used, "("+e+")")
	}
	if len(used) == 0 {
		return []rankedPK{}, nil
	}
	op := " | "
	if all {
		op = " & "
	}
	q := `SELECT c.pk, ` + strings.Join(scoreSQL, " + ") + ` AS score FROM chunks c`
	where := ` WHERE c.tsv @@ to_tsquery('` + pgTextConfig + `', ?)`
	vars = append(vars, strings.Join(used, op))
	if cond, scopeVars := scopeOf(ctx).cond("d.namespace"); cond != "" {
		q += ` JOIN documents d ON d.id = c.document_id`
		where += ` AND ` + cond
		vars = append(vars, scopeVars...)
	}
	var out []rankedPK
	err = s.db.WithContext(ctx).Raw(q+where+` ORDER BY score DESC, c.pk DESC LIMIT ?`, slices.Concat(vars, []any{n})...).Scan(&out).Error
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
		if at := strings.Index(text, plain); at >= 0 {
			if strings.TrimSpace(text[:at]) != "" {
				snip = "…" + snip
			}
			if strings.TrimSpace(text[at+len(plain):]) != "" {
				snip += "…"
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
