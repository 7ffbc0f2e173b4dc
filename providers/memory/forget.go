package memory

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"gorm.io/gorm"
)

// forgetListed bounds the document ids a forget result lists.
const forgetListed = 50

// forgetSelector chooses what memory_forget removes. The set fields are
// ANDed; within ChunkIDs and DocumentIDs the values are alternatives. With
// ChunkIDs, Match or UpdatedBeforeMS set, the selection is of chunks (a
// document goes when none of its chunks is left); otherwise whole
// documents are selected.
type forgetSelector struct {
	ChunkIDs    []string
	DocumentIDs []string
	SourceIDs   []string
	Namespaces  []string
	// Match is an FTS5 expression, "" for none; Terms are the query terms
	// it was made of, from which PostgreSQL's tsquery is made.
	Match string
	Terms []queryTerm
	// UpdatedBeforeMS selects chunks last changed before it (Unix ms).
	UpdatedBeforeMS *int64
	// Scope limits everything to the caller's namespaces.
	Scope scope
}

// chunkLevel reports whether the selector picks chunks rather than whole
// documents.
func (f *forgetSelector) chunkLevel() bool {
	return len(f.ChunkIDs) > 0 || f.Match != "" || f.UpdatedBeforeMS != nil
}

// forgetCounts counts what a forget removed, or would remove.
// The tags give memory_forget's output schema.
type forgetCounts struct {
	Documents int64 `json:"documents" jsonschema:"Documents removed whole (notes included)." schema:"minimum=0"`
	Chunks    int64 `json:"chunks" jsonschema:"Chunks removed, those of removed documents included." schema:"minimum=0"`
	// Notes are memory_note documents removed, among Documents: notes
	// about a removed chunk go with it.
	Notes    int64 `json:"notes" jsonschema:"memory_note notes removed: notes about a removed chunk go with it." schema:"minimum=0"`
	Versions int64 `json:"versions" jsonschema:"Previous versions of removed documents, removed with them." schema:"minimum=0"`
	Sources  int64 `json:"sources" jsonschema:"Sources left empty and removed." schema:"minimum=0"`
	// Embeddings are the chunk vectors removed with the chunks.
	Embeddings int64 `json:"embeddings" jsonschema:"Embeddings removed with their chunks." schema:"minimum=0"`
}

// forgetResult is what store.forget did.
type forgetResult struct {
	forgetCounts
	// DocumentIDs are the documents removed or shortened, at most
	// forgetListed, sorted.
	DocumentIDs []string
	// DocumentsTouched counts them all.
	DocumentsTouched int64
}

// errDryRun rolls a dry run's transaction back.
var errDryRun = errors.New("dry run")

// forget removes what sel selects, in one write transaction, and reports
// what went. With dryRun it does the same and rolls back, so the counts are
// exactly what a real run would remove at that moment.
func (s *store) forget(ctx context.Context, sel forgetSelector, dryRun bool) (forgetResult, error) {
	var res forgetResult
	err := s.write(ctx, func(tx *gorm.DB) error {
		before, err := countAll(tx)
		if err != nil {
			return err
		}
		where, vars := sel.where(s.postgres)
		// The selection goes to a temporary table so every step below
		// reads the same set, whatever the deletes do to the joins.
		stmts := []string{
			`CREATE TEMP TABLE IF NOT EXISTS forget_docs (id TEXT PRIMARY KEY) WITHOUT ROWID`,
			`CREATE TEMP TABLE IF NOT EXISTS forget_chunks (pk INTEGER PRIMARY KEY)`,
			`DELETE FROM temp.forget_docs`,
			`DELETE FROM temp.forget_chunks`,
		}
		if s.postgres {
			stmts[0] = `CREATE TEMP TABLE IF NOT EXISTS forget_docs (id TEXT PRIMARY KEY) ON COMMIT DELETE ROWS`
			stmts[1] = `CREATE TEMP TABLE IF NOT EXISTS forget_chunks (pk BIGINT PRIMARY KEY) ON COMMIT DELETE ROWS`
		}
		for _, q := range stmts {
			if err := tx.Exec(s.tempTables(q)).Error; err != nil {
				return fmt.Errorf("prepare forget: %w", err)
			}
		}
		// Chunk-level selections name chunks; document-level ones name
		// documents, whose chunks are listed too so notes about them go.
		err = tx.Exec(s.tempTables(`INSERT INTO temp.forget_chunks (pk) SELECT c.pk FROM chunks c `+refJoins+` WHERE `+where), vars...).Error
		if err == nil && !sel.chunkLevel() {
			err = tx.Exec(s.tempTables(`INSERT INTO temp.forget_docs (id) SELECT d.id FROM documents d JOIN sources s ON s.id = d.source_id WHERE `+where), vars...).Error
		}
		if err != nil {
			return fmt.Errorf("select what to forget: %w", err)
		}
		// Notes about a chunk that goes, go too.
		notes := `INSERT OR IGNORE INTO temp.forget_docs (id)
			SELECT d.id FROM documents d JOIN chunks c ON c.id = d.note_chunk_id
			WHERE c.pk IN (SELECT pk FROM temp.forget_chunks)`
		if s.postgres {
			notes = `INSERT INTO pg_temp.forget_docs (id)
			SELECT d.id FROM documents d JOIN chunks c ON c.id = d.note_chunk_id
			WHERE c.pk IN (SELECT pk FROM pg_temp.forget_chunks) ON CONFLICT DO NOTHING`
		}
		err = tx.Exec(notes).Error
		if err != nil {
			return fmt.Errorf("select notes to forget: %w", err)
		}
		var touched []string
		err = tx.Raw(s.tempTables(`SELECT id FROM temp.forget_docs
			UNION SELECT c.document_id FROM chunks c WHERE c.pk IN (SELECT pk FROM temp.forget_chunks)
			ORDER BY 1`)).Scan(&touched).Error
		if err != nil {
			return fmt.Errorf("list documents to forget: %w", err)
		}
		res.DocumentsTouched = int64(len(touched))
		res.DocumentIDs = touched[:min(len(touched), forgetListed)]
		var sources []string
		err = tx.Raw(`SELECT DISTINCT source_id FROM documents WHERE id IN ?`, nonEmpty(touched)).Scan(&sources).Error
		if err != nil {
			return fmt.Errorf("list sources: %w", err)
		}
		steps := []string{
			`DELETE FROM chunks WHERE pk IN (SELECT pk FROM temp.forget_chunks)`,
			`DELETE FROM documents WHERE id IN (SELECT id FROM temp.forget_docs)`,
			// A document none of whose chunks is left goes too.
			`DELETE FROM documents WHERE id IN ? AND NOT EXISTS (SELECT 1 FROM chunks WHERE document_id = documents.id)`,
			`DELETE FROM sources WHERE id IN ? AND NOT EXISTS (SELECT 1 FROM documents WHERE source_id = sources.id)`,
			`DELETE FROM temp.forget_docs`,
			`DELETE FROM temp.forget_chunks`,
		}
		for _, q := range steps {
			var args []any
			switch {
			case strings.Contains(q, "FROM documents WHERE id IN ?"):
				args = []any{nonEmpty(touched)}
			case strings.Contains(q, "FROM sources WHERE id IN ?"):
				args = []any{nonEmpty(sources)}
			}
			if err := tx.Exec(s.tempTables(q), args...).Error; err != nil {
				return fmt.Errorf("forget: %w", err)
			}
		}
		if err := dropUnusedEntities(tx); err != nil {
			return err
		}
		after, err := countAll(tx)
		if err != nil {
			return err
		}
		res.forgetCounts = forgetCounts{
			Documents:  before.Documents - after.Documents,
			Chunks:     before.Chunks - after.Chunks,
			Notes:      before.Notes - after.Notes,
			Versions:   before.Versions - after.Versions,
			Sources:    before.Sources - after.Sources,
			Embeddings: before.Embeddings - after.Embeddings,
		}
		if dryRun {
			return errDryRun
		}
		return nil
	})
	if errors.Is(err, errDryRun) {
		err = nil
	}
	return res, err
}

// tempTables returns q with its temp. schema prefixes made pg_temp. on
// PostgreSQL.
func (s *store) tempTables(q string) string {
	if s.postgres {
		return strings.ReplaceAll(q, "temp.", "pg_temp.")
	}
	return q
}

// nonEmpty returns ids, or a list that matches nothing when it is empty:
// "IN ()" is not valid SQL.
func nonEmpty(ids []string) []string {
	if len(ids) == 0 {
		return []string{""}
	}
	return ids
}

// where returns the selector's condition over chunks c, documents d and
// sources s, with its variables; a document-level selector's names d
// only.
func (f *forgetSelector) where(postgres bool) (string, []any) {
	c := conds{postgres: postgres}
	c.in("c.id IN ?", f.ChunkIDs)
	c.in("d.id IN ?", f.DocumentIDs)
	c.in("d.source_id IN ?", f.SourceIDs)
	c.in("d.namespace IN ?", f.Namespaces)
	c.scope(f.Scope)
	if f.UpdatedBeforeMS != nil {
		c.add("c.updated_ms < ?", *f.UpdatedBeforeMS)
	}
	if postgres {
		c.match(tsqueryAll(f.Terms))
	} else {
		c.match(f.Match)
	}
	return c.sql(), c.vars
}

// countAll counts the rows forget reports on.
func countAll(tx *gorm.DB) (forgetCounts, error) {
	var c forgetCounts
	err := tx.Raw(`SELECT
		(SELECT COUNT(*) FROM documents) AS documents,
		(SELECT COUNT(*) FROM chunks) AS chunks,
		(SELECT COUNT(*) FROM documents WHERE substr(key, 1, ?) = ?) AS notes,
		(SELECT COUNT(*) FROM document_versions) AS versions,
		(SELECT COUNT(*) FROM sources) AS sources,
		(SELECT COUNT(*) FROM chunk_embeddings) AS embeddings`, len(noteKeyPrefix), noteKeyPrefix).Scan(&c).Error
	if err != nil {
		return c, fmt.Errorf("count memory: %w", err)
	}
	return c, nil
}
