package memory

import (
	"container/heap"
	"context"
	"fmt"
	"strings"

	"gorm.io/gorm"

	"github.com/openhuman/openhuman-host/sdk/embeddings"
)

// chunkText is a chunk to embed.
type chunkText struct {
	PK      int64  `gorm:"column:pk"`
	ID      string `gorm:"column:id"`
	Content string `gorm:"column:content"`
}

// missingEmbeddings returns up to limit chunks, oldest first and not in
// skip, that have no embedding from model or, when dims > 0, one of
// another dimension (the dimensions setting changed, or an endpoint once
// answered wrongly).
func (s *store) missingEmbeddings(ctx context.Context, model string, dims, limit int, skip []int64) ([]chunkText, error) {
	var rows []chunkText
	q := `SELECT c.pk, c.id, c.content FROM chunks c
		LEFT JOIN chunk_embeddings e ON e.chunk_pk = c.pk
		WHERE (e.chunk_pk IS NULL OR e.model <> ? OR (? > 0 AND e.dims <> ?))`
	vars := []any{model, dims, dims}
	if len(skip) > 0 {
		q += ` AND c.pk NOT IN ?`
		vars = append(vars, skip)
	}
	err := s.db.WithContext(ctx).Raw(q+` ORDER BY c.pk LIMIT ?`, append(vars, limit)...).Scan(&rows).Error
	if err != nil {
		return nil, fmt.Errorf("find chunks without embeddings: %w", err)
	}
	return rows, nil
}

// saveEmbeddings stores vecs[i] as the embedding of chunks[i] from model,
// replacing any other. A chunk deleted or rewritten since it was read is
// skipped: the row is written only while the pk still holds the same
// chunk id.
func (s *store) saveEmbeddings(ctx context.Context, model string, chunks []chunkText, vecs [][]float32) error {
	if len(chunks) != len(vecs) {
		return fmt.Errorf("save embeddings: %d vectors for %d chunks", len(vecs), len(chunks))
	}
	nowMS := s.now().UnixMilli()
	return s.write(ctx, func(tx *gorm.DB) error {
		for i, c := range chunks {
			err := tx.Exec(`
				INSERT INTO chunk_embeddings (chunk_pk, model, dims, vector, created_ms)
				SELECT ?, ?, ?, ?, ? WHERE EXISTS (SELECT 1 FROM chunks WHERE pk = ? AND id = ?)
				ON CONFLICT (chunk_pk) DO UPDATE SET
					model = excluded.model, dims = excluded.dims, vector = excluded.vector, created_ms = excluded.created_ms`,
				c.PK, model, len(vecs[i]), encodeVector(vecs[i]), nowMS, c.PK, c.ID).Error
			if err != nil {
				return fmt.Errorf("save embedding: %w", err)
			}
		}
		return nil
	})
}

// nearest returns the n chunks whose embeddings from model are most
// similar to q (a unit vector), best first, with the cosine similarity as
// score, among the chunks of ctx's scope. It reads every embedding of the
// model once, streaming, and keeps only the best n in memory.
func (s *store) nearest(ctx context.Context, model string, q []float32, n int) ([]rankedPK, error) {
	query := `SELECT chunk_pk, vector FROM chunk_embeddings WHERE model = ? AND dims = ?`
	vars := []any{model, len(q)}
	if cond, v := scopeOf(ctx).cond("d.namespace"); cond != "" {
		query = `SELECT e.chunk_pk, e.vector FROM chunk_embeddings e
			JOIN chunks c ON c.pk = e.chunk_pk JOIN documents d ON d.id = c.document_id
			WHERE e.model = ? AND e.dims = ? AND ` + cond
		vars = append(vars, v...)
	}
	rows, err := s.db.WithContext(ctx).Raw(query, vars...).Rows()
	if err != nil {
		return nil, fmt.Errorf("read embeddings: %w", err)
	}
	defer rows.Close()
	best := &topHeap{}
	var (
		pk   int64
		blob []byte
	)
	for rows.Next() {
		if err := rows.Scan(&pk, &blob); err != nil {
			return nil, fmt.Errorf("read embedding: %w", err)
		}
		v, err := decodeVector(blob)
		if err != nil || len(v) != len(q) {
			continue // written by a broken client; the backfill does not touch it
		}
		score := float64(embeddings.Dot(q, v))
		if best.Len() < n {
			heap.Push(best, rankedPK{PK: pk, Score: score})
		} else if score > (*best)[0].Score {
			(*best)[0] = rankedPK{PK: pk, Score: score}
			heap.Fix(best, 0)
		}
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read embeddings: %w", err)
	}
	return best.drain(), nil
}

// embeddingStats counts chunks with an embedding from model of dims
// dimensions and chunks without one.
func (s *store) embeddingStats(ctx context.Context, model string, dims int) (with, without int64, err error) {
	err = s.db.WithContext(ctx).Raw(`SELECT
		(SELECT COUNT(*) FROM chunk_embeddings WHERE model = ? AND dims = ?),
		(SELECT COUNT(*) FROM chunks) - (SELECT COUNT(*) FROM chunk_embeddings WHERE model = ? AND dims = ?)`,
		model, dims, model, dims).Row().Scan(&with, &without)
	if err != nil {
		return 0, 0, fmt.Errorf("count embeddings: %w", err)
	}
	return with, without, nil
}

// redactEndpointError keeps an embedder error fit for a tool result: one
// line, at most 300 bytes.
func redactEndpointError(err error) string {
	s := oneLine(err.Error())
	if len(s) > 300 {
		s = strings.ToValidUTF8(s[:300], "") + "…"
	}
	return s
}
