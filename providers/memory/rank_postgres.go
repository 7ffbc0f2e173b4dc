package memory

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"unicode"
)

// On PostgreSQL the keyword ranking is rank.go's, the same BM25 over the
// same posting lists, read from PostgreSQL's own machinery instead of
// FTS5: a term's chunks are those whose vector (chunks.tsv) matches its
// tsquery, found with the GIN index, and its weighted count in a chunk is
// what ts_rank_cd gives for that single term with the weights below (a
// match in the title counting titleWeight times, in the tags tagsWeight
// times, in the body once), which BM25's saturation turns into tf against
// the chunk's length in words (chunks.tokens) and the average length
// (memory_state). The index's state is memory_state's version, which every
// change to chunks increments: each replica's cached lists follow every
// other replica's writes.

// pgRankWeights are ts_rank_cd's weights for the labels D (body), C
// (unused), B (tags) and A (title): PostgreSQL takes weights up to 1, so
// they are the column weights over titleWeight, and the result is
// multiplied back.
var pgRankWeights = fmt.Sprintf("'{%g, %g, %g, %g}'", bodyWeight/titleWeight, bodyWeight/titleWeight, tagsWeight/titleWeight, 1.0)

// pgTermFrequency is the SQL expression of a chunk c's weighted count of
// the tsquery $1.
var pgTermFrequency = strconv.FormatFloat(titleWeight, 'f', -1, 64) + ` * ts_rank_cd(` + pgRankWeights + `, c.tsv, to_tsquery('` + pgTextConfig + `', $1), 0)`

// bm25B is BM25's b, as FTS5's bm25() uses it.
const bm25B = 0.75

// ftsStatePostgres is ftsState on PostgreSQL: memory_state's version with
// the chunk and word counts, and the number of chunks.
func (s *store) ftsStatePostgres(ctx context.Context) (string, int64, error) {
	var st struct {
		Version int64 `gorm:"column:version"`
		Chunks  int64 `gorm:"column:chunks"`
		Tokens  int64 `gorm:"column:tokens"`
	}
	if err := s.db.WithContext(ctx).Raw(`SELECT version, chunks, tokens FROM memory_state WHERE id = 1`).Scan(&st).Error; err != nil {
		return "", 0, fmt.Errorf("read the full-text index's state: %w", err)
	}
	return fmt.Sprintf("%d:%d:%d", st.Version, st.Chunks, st.Tokens), st.Chunks, nil
}

// avgTokensOf is the average chunk length in words of a state of
// ftsStatePostgres; 1 when unknown.
func avgTokensOf(state string) float64 {
	var version, chunks, tokens int64
	if _, err := fmt.Sscanf(state, "%d:%d:%d", &version, &chunks, &tokens); err != nil || chunks <= 0 || tokens <= 0 {
		return 1
	}
	return float64(tokens) / float64(chunks)
}

// bm25TF is BM25's saturated term frequency of a weighted count f in a
// chunk of tokens words, avg words on average.
func bm25TF(f float64, tokens int64, avg float64) float64 {
	if f <= 0 {
		return 0
	}
	return f * (bm25K1 + 1) / (f + bm25K1*(1-bm25B+bm25B*float64(tokens)/avg))
}

// loadPostingsPostgres is loadPostings on PostgreSQL.
func (s *store) loadPostingsPostgres(ctx context.Context, expr string, n, nRow int64) (*postingList, error) {
	state, _, err := s.ftsStatePostgres(ctx)
	if err != nil {
		return nil, err
	}
	l, err := s.tfList(ctx, `c.tsv @@ to_tsquery('`+pgTextConfig+`', $1)`, expr, !isCommon(n, nRow), avgTokensOf(state))
	if err != nil {
		return nil, err
	}
	hits := int64(l.n)
	l.idf, l.ftsIDF = idfOf(hits, nRow), ftsIDFOf(hits, nRow)
	return l, nil
}

// pairListPostgres is pairList on PostgreSQL: w's list restricted to the
// chunks holding any word of readExprs, with its tf there (its idf set).
func (s *store) pairListPostgres(ctx context.Context, readExprs []string, w queryWord) (*postingList, error) {
	parts := make([]string, len(readExprs))
	for i, e := range readExprs {
		parts[i] = "(" + e + ")"
	}
	state, _, err := s.ftsStatePostgres(ctx)
	if err != nil {
		return nil, err
	}
	cond := `c.tsv @@ to_tsquery('` + pgTextConfig + `', $1) AND c.tsv @@ to_tsquery('` + pgTextConfig + `', $2)`
	l, err := s.tfList(ctx, cond, w.expr, !w.common, avgTokensOf(state), strings.Join(parts, " | "))
	if err != nil {
		return nil, err
	}
	l.idf = w.idf
	return l, nil
}

// tfList reads the chunks that pass cond, whose $1 is expr and $2… are
// more, as a posting list; withTF also reads each chunk's tf of expr. The
// rows are sorted here, not by the statement: ORDER BY pk would lead the
// planner to walk the primary key and test every chunk's vector instead of
// asking the GIN index.
func (s *store) tfList(ctx context.Context, cond, expr string, withTF bool, avg float64, more ...any) (*postingList, error) {
	sqlDB, err := s.db.DB()
	if err != nil {
		return nil, err
	}
	q := `SELECT c.pk, 0, 0 FROM chunks c WHERE ` + cond
	if withTF {
		q = `SELECT c.pk, ` + pgTermFrequency + `, c.tokens FROM chunks c WHERE ` + cond
	}
	rows, err := sqlDB.QueryContext(ctx, q, append([]any{expr}, more...)...)
	if err != nil {
		return nil, fmt.Errorf("read the chunks matching a query term: %w", err)
	}
	defer rows.Close()
	type hit struct {
		pk     int64
		f      float64
		tokens int64
	}
	var hits []hit
	for rows.Next() {
		var h hit
		if err := rows.Scan(&h.pk, &h.f, &h.tokens); err != nil {
			return nil, fmt.Errorf("read the chunks matching a query term: %w", err)
		}
		hits = append(hits, h)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read the chunks matching a query term: %w", err)
	}
	slices.SortFunc(hits, func(a, b hit) int { return cmp.Compare(a.pk, b.pk) })
	l := &postingList{gaps: make([]byte, 0, len(hits)+len(hits)/4)}
	if withTF {
		l.tf = make([]float64, 0, len(hits))
	}
	r := pkReader{l: l}
	for _, h := range hits {
		if err := r.add(h.pk); err != nil {
			return nil, fmt.Errorf("read the chunks matching a query term: %w", err)
		}
		if withTF {
			l.tf = append(l.tf, bm25TF(h.f, h.tokens, avg))
		}
	}
	return l, nil
}

// newestMatchesPostgres is newestMatches on PostgreSQL.
func (s *store) newestMatchesPostgres(ctx context.Context, exprs []string, constant float64, n int) ([]rankedPK, error) {
	parts := make([]string, len(exprs))
	for i, e := range exprs {
		parts[i] = "(" + e + ")"
	}
	q := `SELECT c.pk FROM chunks c`
	where := ` WHERE c.tsv @@ to_tsquery('` + pgTextConfig + `', ?)`
	vars := []any{strings.Join(parts, " & ")}
	if cond, scopeVars := scopeOf(ctx).cond("d.namespace"); cond != "" {
		q += ` JOIN documents d ON d.id = c.document_id`
		where += ` AND ` + cond
		vars = append(vars, scopeVars...)
	}
	var pks []int64
	if err := s.db.WithContext(ctx).Raw(q+where+` ORDER BY c.pk DESC LIMIT ?`, append(vars, n)...).Scan(&pks).Error; err != nil {
		return nil, fmt.Errorf("rank chunks: %w", err)
	}
	out := make([]rankedPK, len(pks))
	for i, pk := range pks {
		out[i] = rankedPK{PK: pk, Score: constant}
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
func tsqueryExprs(terms []queryTerm) []string { return mapSlice(terms, queryTerm.tsqueryOf) }

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
