package memory

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"strings"
	"unicode/utf8"

	"gorm.io/gorm"
)

const (
	// BM25 column weights: a match in a document's title counts three
	// times one in the body, a match in its tags twice. Titles weigh more
	// because they name what a document is about, but not so much that any
	// title sharing a common word outranks the body that answers the
	// query (5, the weight before, measured no better in bench/memory).
	titleWeight = 3.0
	bodyWeight  = 1.0
	tagsWeight  = 2.0
	// snippetTokens is the length of a search snippet, in tokens.
	snippetTokens = 32
	// leadRunes is the length of a snippet taken from the start of a
	// chunk when no query marks a match, in characters.
	leadRunes = 240
)

// bm25Expr is FTS5's bm25 with the column weights above; rank.go derives
// each word's term frequency from it.
var bm25Expr = fmt.Sprintf("bm25(chunks_fts, %.1f, %.1f, %.1f)", titleWeight, bodyWeight, tagsWeight)

// chunkRef identifies a chunk and where it belongs. Every hit and chunk
// view starts with these fields, flat, chunk_id first; the tags give their
// output schema.
type chunkRef struct {
	ChunkID    string `json:"chunk_id" jsonschema:"Pass it to tree_read_chunk, memory_note or tree_tag."`
	DocumentID string `json:"document_id"`
	Title      string `json:"title" jsonschema:"The document's title."`
	Namespace  string `json:"namespace"`
	SourceID   string `json:"source_id" jsonschema:"Where the document came from, e.g. mcp:<namespace> or file:<directory>."`
	SourceKind string `json:"source_kind" schema:"enum=chat|email|document|note"`
	Seq        int    `json:"seq" jsonschema:"Position of the chunk in its document, from 0." schema:"minimum=0"`
	// AnnotatesChunkID is set when the chunk is part of a note written by
	// memory_note: the chunk the note is about.
	AnnotatesChunkID string `json:"annotates_chunk_id,omitempty" jsonschema:"Only on notes written by memory_note: the chunk the note is about."`
	UpdatedMS        int64  `json:"updated_ms" jsonschema:"Last change of the chunk, Unix milliseconds."`
}

// refRow is a row of a query that selects refColumns, and possibly a
// snippet, a score, the content and more: gorm scans flat structs only.
type refRow struct {
	PK               int64   `gorm:"column:pk"`
	ChunkID          string  `gorm:"column:chunk_id"`
	DocumentID       string  `gorm:"column:document_id"`
	Title            string  `gorm:"column:title"`
	Namespace        string  `gorm:"column:namespace"`
	SourceID         string  `gorm:"column:source_id"`
	SourceKind       string  `gorm:"column:source_kind"`
	Seq              int     `gorm:"column:seq"`
	AnnotatesChunkID string  `gorm:"column:annotates_chunk_id"`
	UpdatedMS        int64   `gorm:"column:updated_ms"`
	Snippet          string  `gorm:"column:snippet"`
	Score            float64 `gorm:"column:score"`
	Content          string  `gorm:"column:content"`
	CreatedMS        int64   `gorm:"column:created_ms"`
	TagsJSON         string  `gorm:"column:tags_json"`
	// Matched counts the ranked candidates of a search.
	Matched int64 `gorm:"column:matched"`
}

// ref returns the row's chunkRef.
func (r *refRow) ref() chunkRef {
	return chunkRef{
		ChunkID: r.ChunkID, DocumentID: r.DocumentID, Title: r.Title, Namespace: r.Namespace, SourceID: r.SourceID,
		SourceKind: r.SourceKind, Seq: r.Seq, AnnotatesChunkID: r.AnnotatesChunkID, UpdatedMS: r.UpdatedMS,
	}
}

// refColumns selects a chunkRef from chunks c joined by refJoins.
const refColumns = `c.id AS chunk_id, c.document_id, d.title, d.namespace, d.source_id, s.kind AS source_kind,
	c.seq, COALESCE(d.note_chunk_id, '') AS annotates_chunk_id, c.updated_ms`

// refJoins joins a chunk c to its document d and source s.
const refJoins = `JOIN documents d ON d.id = c.document_id JOIN sources s ON s.id = d.source_id`

// searchHit is one ranked chunk of memory_search.
type searchHit struct {
	chunkRef
	Snippet string  `json:"snippet" jsonschema:"Excerpt of the chunk with matches marked **like this**."`
	Score   float64 `json:"score" jsonschema:"BM25 relevance; higher is better." schema:"exclusiveMinimum=0"`
}

// search returns up to k chunks that hold every term, best first (see
// rankWords), a chunk whose text equals a better one's left out. Snippets,
// the costly part, are made for the k chunks returned only.
func (s *store) search(ctx context.Context, terms []queryTerm, k int) ([]searchHit, error) {
	ranked, err := s.rankWords(ctx, s.termExprs(terms), true, k+dupSlack(k))
	if err != nil || len(ranked) == 0 {
		return []searchHit{}, err
	}
	match := s.matchAll(terms)
	pks := make([]int64, len(ranked))
	for i, r := range ranked {
		pks[i] = r.PK
	}
	var texts []struct {
		PK      int64  `gorm:"column:pk"`
		Content string `gorm:"column:content"`
	}
	if err := s.db.WithContext(ctx).Raw(`SELECT pk, content FROM chunks WHERE pk IN ?`, pks).Scan(&texts).Error; err != nil {
		return nil, fmt.Errorf("read chunks: %w", err)
	}
	keys := make(map[int64][sha256.Size]byte, len(texts))
	for _, t := range texts {
		keys[t.PK] = sha256.Sum256([]byte(t.Content))
	}
	seen := map[[sha256.Size]byte]bool{}
	kept := ranked[:0]
	for _, r := range ranked {
		key, ok := keys[r.PK]
		if !ok || seen[key] {
			continue // deleted since it was ranked, or the same text as a better chunk
		}
		seen[key] = true
		if kept = append(kept, r); len(kept) == k {
			break
		}
	}
	pks = pks[:0]
	for _, r := range kept {
		pks = append(pks, r.PK)
	}
	refs, err := s.refsByPK(ctx, pks, match)
	if err != nil {
		return nil, err
	}
	hits := make([]searchHit, 0, len(kept))
	for _, r := range kept {
		if ref, ok := refs[r.PK]; ok {
			hits = append(hits, searchHit{chunkRef: ref.chunkRef, Snippet: ref.Snippet, Score: r.Score})
		}
	}
	return hits, nil
}

// dupSlack is how many more rows than the k asked for a ranking reads, so
// that k remain once chunks with the same text as a better one (the same
// file imported twice, say) are dropped.
func dupSlack(k int) int { return k }

// cleanSnippet merges the marks FTS5 puts around adjacent matches
// ("**a****b**" becomes "**ab**") and drops empty ones.
func cleanSnippet(s string) string {
	return strings.ReplaceAll(s, "****", "")
}

// rankedPK is a chunk's pk with a score, higher is better.
type rankedPK struct {
	PK    int64   `gorm:"column:pk"`
	Score float64 `gorm:"column:score"`
}

// refsByPK returns the chunks with the given pks, keyed by pk. With a
// non-empty match, the snippets of chunks that match it mark the matches;
// the others start at the beginning of the chunk.
func (s *store) refsByPK(ctx context.Context, pks []int64, match string) (map[int64]browseHit, error) {
	out := make(map[int64]browseHit, len(pks))
	if len(pks) == 0 {
		return out, nil
	}
	var rows []refRow
	err := s.db.WithContext(ctx).Raw(`SELECT c.pk, `+refColumns+`, c.content FROM chunks c `+refJoins+` WHERE c.pk IN ?`, pks).Scan(&rows).Error
	if err != nil {
		return nil, fmt.Errorf("read chunks: %w", err)
	}
	content := make(map[int64]string, len(rows))
	for i := range rows {
		out[rows[i].PK] = browseHit{chunkRef: rows[i].ref(), textKey: sha256.Sum256([]byte(rows[i].Content))}
		content[rows[i].PK] = rows[i].Content
	}
	// Chunks without a marked snippet start at their beginning; the lead
	// is made only for those.
	defer func() {
		for pk, r := range out {
			if r.Snippet == "" {
				r.Snippet = leadSnippet(content[pk])
				out[pk] = r
			}
		}
	}()
	if match == "" {
		return out, nil
	}
	if s.postgres {
		return out, s.markSnippetsPostgres(ctx, out, content, match)
	}
	var snippets []struct {
		PK      int64  `gorm:"column:pk"`
		Snippet string `gorm:"column:snippet"`
	}
	err = s.db.WithContext(ctx).Raw(`
		SELECT rowid AS pk, snippet(chunks_fts, 1, '**', '**', '…', ?) AS snippet
		FROM chunks_fts WHERE chunks_fts MATCH ? AND rowid IN ?`, snippetTokens, match, pks).Scan(&snippets).Error
	if err != nil {
		return nil, fmt.Errorf("make snippets: %w", err)
	}
	for _, sn := range snippets {
		if r, ok := out[sn.PK]; ok {
			r.Snippet = cleanSnippet(sn.Snippet)
			out[sn.PK] = r
		}
	}
	return out, nil
}

// leadSnippet is the start of content on one line, cut at a word boundary
// near leadRunes characters, with "…" when something was cut.
func leadSnippet(content string) string {
	// Only the start is shown: cut long text before collapsing its
	// whitespace, at a character boundary, leaving room for runs of it.
	cut := false
	if limit := 8 * leadRunes; len(content) > limit {
		for limit > 0 && !utf8.RuneStart(content[limit]) {
			limit--
		}
		content, cut = content[:limit], true
	}
	s := oneLine(content)
	if utf8.RuneCountInString(s) <= leadRunes {
		if cut {
			return s + "…"
		}
		return s
	}
	lead := string([]rune(s)[:leadRunes])
	if i := strings.LastIndexByte(lead, ' '); i > len(lead)/2 {
		lead = lead[:i]
	}
	return lead + "…"
}

// browseFilter is tree_browse's filter; every set field narrows the result
// (the fields are ANDed, the values within one list are alternatives).
type browseFilter struct {
	SourceKinds []string
	SourceIDs   []string
	EntityIDs   []string
	// SinceMS is inclusive, UntilMS exclusive; nil means unbounded.
	SinceMS, UntilMS *int64
	// Match is an FTS5 expression, "" for none; Terms are the query terms
	// it was made of, from which PostgreSQL's tsquery is made.
	Match string
	Terms []queryTerm
}

// browseHit is one chunk of tree_browse.
type browseHit struct {
	chunkRef
	Snippet string `json:"snippet" jsonschema:"The start of the chunk, or an excerpt with matches marked **like this** when query is given."`
	// textKey is the SHA-256 of the chunk's text, to drop duplicates.
	textKey [sha256.Size]byte
}

// browse returns the chunks that pass f, newest first (by updated_ms,
// then most recently inserted), offset and k applied, and how many pass
// in all.
func (s *store) browse(ctx context.Context, f browseFilter, k, offset int) ([]browseHit, int64, error) {
	c := conds{postgres: s.postgres}
	c.in("s.kind IN ?", f.SourceKinds)
	c.in("d.source_id IN ?", f.SourceIDs)
	c.in("c.pk IN (SELECT chunk_pk FROM chunk_entities WHERE entity_id IN ?)", f.EntityIDs)
	if f.SinceMS != nil {
		c.add("c.updated_ms >= ?", *f.SinceMS)
	}
	if f.UntilMS != nil {
		c.add("c.updated_ms < ?", *f.UntilMS)
	}
	match := f.Match
	if s.postgres {
		match = tsqueryAll(f.Terms)
	}
	c.match(match)
	c.scope(scopeOf(ctx))
	cond, vars := "WHERE "+c.sql(), c.vars
	db := s.db.WithContext(ctx)
	var total int64
	if err := db.Raw(`SELECT COUNT(*) FROM chunks c `+refJoins+` `+cond, vars...).Scan(&total).Error; err != nil {
		return nil, 0, fmt.Errorf("count chunks: %w", err)
	}
	hits := []browseHit{}
	if total == 0 || int64(offset) >= total {
		return hits, total, nil
	}
	var pks []int64
	err := db.Raw(`SELECT c.pk FROM chunks c `+refJoins+` `+cond+` ORDER BY c.updated_ms DESC, c.pk DESC LIMIT ? OFFSET ?`,
		append(vars, k, offset)...).Scan(&pks).Error
	if err != nil {
		return nil, 0, fmt.Errorf("browse chunks: %w", err)
	}
	refs, err := s.refsByPK(ctx, pks, match)
	if err != nil {
		return nil, 0, err
	}
	for _, pk := range pks {
		if r, ok := refs[pk]; ok {
			hits = append(hits, r)
		}
	}
	return hits, total, nil
}

// chunkView is one chunk in full with its document's details, its own tags
// and the notes written about it.
type chunkView struct {
	chunkRef
	Content string `json:"content"`
	// Tags is the chunk's own tag set, as tree_tag sets it.
	Tags []string `json:"tags" jsonschema:"The chunk's own tags, as tree_tag set them."`
	// DocumentTags are the tags memory_store gave the whole document.
	DocumentTags []string   `json:"document_tags" jsonschema:"The tags of the whole document, as memory_store set them."`
	Notes        []noteView `json:"notes" jsonschema:"Notes memory_note attached to this chunk."`
	CreatedMS    int64      `json:"created_ms" jsonschema:"When the chunk was first stored, Unix milliseconds."`
}

// noteView is a note about a chunk.
type noteView struct {
	DocumentID string `json:"document_id"`
	Text       string `json:"text"`
	UpdatedMS  int64  `json:"updated_ms"`
}

// chunk returns the chunk with id, or nil when there is none.
func (s *store) chunk(ctx context.Context, id string) (*chunkView, error) {
	db := s.db.WithContext(ctx)
	var rows []refRow
	err := db.Raw(`SELECT `+refColumns+`, c.content, c.created_ms, d.tags AS tags_json
		FROM chunks c `+refJoins+` WHERE c.id = ?`, id).Scan(&rows).Error
	if err != nil {
		return nil, fmt.Errorf("read chunk: %w", err)
	}
	if len(rows) == 0 || !scopeOf(ctx).allows(rows[0].Namespace) {
		return nil, nil
	}
	r := rows[0]
	v := &chunkView{chunkRef: r.ref(), Content: r.Content, CreatedMS: r.CreatedMS, Tags: []string{}, DocumentTags: []string{}, Notes: []noteView{}}
	if err := json.Unmarshal([]byte(r.TagsJSON), &v.DocumentTags); err != nil {
		return nil, fmt.Errorf("decode tags of document %s: %w", v.DocumentID, err)
	}
	if v.DocumentTags == nil {
		v.DocumentTags = []string{}
	}
	if err := db.Raw(`SELECT tag FROM chunk_tags WHERE chunk_id = ? ORDER BY position`, id).Scan(&v.Tags).Error; err != nil {
		return nil, fmt.Errorf("read chunk tags: %w", err)
	}
	var notes []struct {
		DocumentID string `gorm:"column:document_id"`
		Content    string `gorm:"column:content"`
		UpdatedMS  int64  `gorm:"column:updated_ms"`
	}
	err = db.Raw(`SELECT d.id AS document_id, c.content, d.updated_ms
		FROM documents d JOIN chunks c ON c.document_id = d.id
		WHERE d.note_chunk_id = ? ORDER BY d.updated_ms DESC, d.id, c.seq`, id).Scan(&notes).Error
	if err != nil {
		return nil, fmt.Errorf("read notes: %w", err)
	}
	for _, n := range notes {
		if l := len(v.Notes); l > 0 && v.Notes[l-1].DocumentID == n.DocumentID {
			v.Notes[l-1].Text += n.Content
			continue
		}
		v.Notes = append(v.Notes, noteView{DocumentID: n.DocumentID, Text: n.Content, UpdatedMS: n.UpdatedMS})
	}
	return v, nil
}

// chunkParent is a chunk's document, as memory_note needs it.
type chunkParent struct {
	DocumentID string `gorm:"column:document_id"`
	Title      string `gorm:"column:title"`
	Namespace  string `gorm:"column:namespace"`
	SourceID   string `gorm:"column:source_id"`
	SourceKind string `gorm:"column:source_kind"`
	SourceName string `gorm:"column:source_name"`
}

// parentOf returns the document of chunk id inside tx, or nil when no
// chunk has that id.
func parentOf(tx *gorm.DB, id string) (*chunkParent, error) {
	var rows []chunkParent
	err := tx.Raw(`SELECT d.id AS document_id, d.title, d.namespace, d.source_id, s.kind AS source_kind, s.display_name AS source_name
		FROM chunks c `+refJoins+` WHERE c.id = ?`, id).Scan(&rows).Error
	if err != nil {
		return nil, fmt.Errorf("look up chunk: %w", err)
	}
	if len(rows) == 0 {
		return nil, nil
	}
	return &rows[0], nil
}

// errNoChunk means a write named a chunk that does not exist.
var errNoChunk = fmt.Errorf("no such chunk")

// setChunkTags replaces the tag set of chunk id with tags, in order. It
// returns errNoChunk when there is no such chunk.
func (s *store) setChunkTags(ctx context.Context, id string, tags []string) error {
	return s.write(ctx, func(tx *gorm.DB) error {
		parent, err := parentOf(tx, id)
		if err != nil {
			return err
		}
		if parent == nil || !scopeOf(ctx).allows(parent.Namespace) {
			return errNoChunk
		}
		if err := tx.Exec(`DELETE FROM chunk_tags WHERE chunk_id = ?`, id).Error; err != nil {
			return fmt.Errorf("delete tags: %w", err)
		}
		if len(tags) == 0 {
			return nil
		}
		vars := make([]any, 0, 3*len(tags))
		for i, t := range tags {
			vars = append(vars, id, t, i)
		}
		if err := tx.Exec(`INSERT INTO chunk_tags (chunk_id, tag, position) VALUES `+valueTuples(len(tags), 3), vars...).Error; err != nil {
			return fmt.Errorf("insert tags: %w", err)
		}
		return nil
	})
}

// putNote writes text as the note about chunk id: a document keyed
// mcp-note-<chunk id> in the chunk's namespace and source, linked to the
// chunk. Writing it again replaces it. It returns errNoChunk when there is
// no such chunk.
func (s *store) putNote(ctx context.Context, id, text string) (putResult, error) {
	var res putResult
	nowMS := s.now().UnixMilli()
	err := s.write(ctx, func(tx *gorm.DB) error {
		parent, err := parentOf(tx, id)
		if err != nil {
			return err
		}
		if parent == nil || !scopeOf(ctx).allows(parent.Namespace) {
			return errNoChunk
		}
		doc := document{
			SourceID:      parent.SourceID,
			SourceKind:    parent.SourceKind,
			SourceName:    parent.SourceName,
			Namespace:     parent.Namespace,
			Key:           noteKeyPrefix + id,
			Title:         noteTitle(parent.Title),
			NoteChunkID:   id,
			Pieces:        splitChunks(text, maxChunkRunes),
			ContentSHA256: contentHash(text),
			KeepVersion:   true,
		}
		var deleted bool
		res, deleted, err = s.putInTx(tx, doc, false, nowMS)
		if err != nil {
			return err
		}
		if deleted {
			return dropUnusedEntities(tx)
		}
		return nil
	})
	return res, err
}

// noteTitle is the title of a note about a chunk of a document titled
// title.
func noteTitle(title string) string {
	const prefix = "Note on "
	if utf8.RuneCountInString(title) > maxTitleRunes-len(prefix) {
		title = string([]rune(title)[:maxTitleRunes-len(prefix)-1]) + "…"
	}
	return prefix + title
}

// entityRow is one entity of tree_top_entities.
type entityRow struct {
	EntityID   string `json:"entity_id" gorm:"column:entity_id" jsonschema:"<kind>:<normalised form>, e.g. email:ana@example.com."`
	Kind       string `json:"kind" gorm:"column:kind"`
	Surface    string `json:"surface" gorm:"column:surface" jsonschema:"The entity as first written."`
	Count      int64  `json:"count" gorm:"column:count" jsonschema:"Mentions across all chunks." schema:"minimum=1"`
	ChunkCount int64  `json:"chunk_count" gorm:"column:chunk_count" jsonschema:"Chunks that mention it." schema:"minimum=1"`
	LastSeenMS int64  `json:"last_seen_ms" gorm:"column:last_seen_ms" jsonschema:"Latest change of a chunk that mentions it, Unix milliseconds."`
}

// topEntities returns up to k entities, most mentioned first, then most
// recently seen, then by id; kind "" means every kind.
func (s *store) topEntities(ctx context.Context, kind string, k int) ([]entityRow, error) {
	cond, nsVars := scopeOf(ctx).cond("d.namespace")
	var (
		q    string
		vars []any
	)
	if cond == "" {
		q = `SELECT id AS entity_id, kind, surface, mention_count AS count, chunk_count, last_seen_ms FROM entities WHERE mention_count > 0`
	} else {
		// Counted over the scope's chunks only, so a client never learns of
		// entities outside its namespaces.
		q = `SELECT e.id AS entity_id, e.kind, e.surface, SUM(ce.count) AS count, COUNT(*) AS chunk_count, MAX(c.updated_ms) AS last_seen_ms
			FROM chunk_entities ce JOIN entities e ON e.id = ce.entity_id
			JOIN chunks c ON c.pk = ce.chunk_pk JOIN documents d ON d.id = c.document_id
			WHERE ` + cond
		vars = nsVars
	}
	if kind != "" {
		q += ` AND kind = ?`
		vars = append(vars, kind)
	}
	if cond != "" {
		q += ` GROUP BY e.id`
	}
	q += ` ORDER BY count DESC, last_seen_ms DESC, entity_id LIMIT ?`
	rows := []entityRow{}
	if err := s.db.WithContext(ctx).Raw(q, append(vars, k)...).Scan(&rows).Error; err != nil {
		return nil, fmt.Errorf("rank entities: %w", err)
	}
	return rows, nil
}

// entityKinds lists the kinds of the entities memory mentions, sorted.
func (s *store) entityKinds(ctx context.Context) ([]string, error) {
	var kinds []string
	q, vars := `SELECT DISTINCT kind FROM entities WHERE mention_count > 0 ORDER BY kind`, []any(nil)
	if cond, v := scopeOf(ctx).cond("d.namespace"); cond != "" {
		q = `SELECT DISTINCT e.kind FROM chunk_entities ce JOIN entities e ON e.id = ce.entity_id
			JOIN chunks c ON c.pk = ce.chunk_pk JOIN documents d ON d.id = c.document_id
			WHERE ` + cond + ` ORDER BY e.kind`
		vars = v
	}
	if err := s.db.WithContext(ctx).Raw(q, vars...).Scan(&kinds).Error; err != nil {
		return nil, fmt.Errorf("list entity kinds: %w", err)
	}
	return kinds, nil
}

// sourceView is one source of tree_list_sources.
type sourceView struct {
	SourceID     string `json:"source_id" gorm:"column:source_id"`
	DisplayName  string `json:"display_name" gorm:"column:display_name"`
	SourceKind   string `json:"source_kind" gorm:"column:source_kind" schema:"enum=chat|email|document|note"`
	ChunkCount   int64  `json:"chunk_count" gorm:"column:chunk_count" schema:"minimum=0"`
	MostRecentMS int64  `json:"most_recent_ms" gorm:"column:most_recent_ms" jsonschema:"Latest change in the source, Unix milliseconds."`
	// UserMentionCount is set only when tree_list_sources got a
	// user_email_hint.
	UserMentionCount *int64 `json:"user_mention_count,omitempty" gorm:"-" jsonschema:"Only with user_email_hint: chunks of this source that mention that address." schema:"minimum=0"`
}

// mentionsBySource counts, per source, the chunks that mention entity.
func (s *store) mentionsBySource(ctx context.Context, entity string) (map[string]int64, error) {
	var rows []struct {
		SourceID string `gorm:"column:source_id"`
		N        int64  `gorm:"column:n"`
	}
	cond, vars := scopeOf(ctx).cond("d.namespace")
	if cond != "" {
		cond = " AND " + cond
	}
	err := s.db.WithContext(ctx).Raw(`
		SELECT d.source_id, COUNT(*) AS n
		FROM chunk_entities ce
		JOIN chunks c ON c.pk = ce.chunk_pk
		JOIN documents d ON d.id = c.document_id
		WHERE ce.entity_id = ?`+cond+`
		GROUP BY d.source_id`, append([]any{entity}, vars...)...).Scan(&rows).Error
	if err != nil {
		return nil, fmt.Errorf("count mentions: %w", err)
	}
	out := make(map[string]int64, len(rows))
	for _, r := range rows {
		out[r.SourceID] = r.N
	}
	return out, nil
}

// listSources returns every source with its chunk count and its most
// recent change, most recent first.
func (s *store) listSources(ctx context.Context) ([]sourceView, error) {
	rows := []sourceView{}
	// A restricted scope sees the sources that hold documents of its
	// namespaces, counted over those documents only.
	join, having, vars := "LEFT JOIN", "", []any(nil)
	if cond, v := scopeOf(ctx).cond("d.namespace"); cond != "" {
		join, having, vars = "JOIN", " AND "+cond, v
	}
	err := s.db.WithContext(ctx).Raw(`
		SELECT s.id AS source_id, s.display_name, s.kind AS source_kind,
			COUNT(c.pk) AS chunk_count,
			COALESCE(MAX(c.updated_ms), s.updated_ms) AS most_recent_ms
		FROM sources s
		`+join+` documents d ON d.source_id = s.id`+having+`
		LEFT JOIN chunks c ON c.document_id = d.id
		GROUP BY s.id
		ORDER BY most_recent_ms DESC, s.id`, vars...).Scan(&rows).Error
	if err != nil {
		return nil, fmt.Errorf("list sources: %w", err)
	}
	return rows, nil
}
