package memory

import (
	"fmt"
	"strings"

	"gorm.io/gorm"
)

// entityBatch bounds the rows of one entity INSERT: 5 variables a row keeps
// it far under SQLite's variable limit.
const entityBatch = 200

// indexEntities extracts the entities of chunks, which were just inserted
// and carry their pks, and records them (see recordEntities).
func indexEntities(tx *gorm.DB, extractors []Extractor, chunks []chunkRow) error {
	return recordEntities(tx, chunks, extractEntities(extractors, chunkTexts(chunks)))
}

// chunkTexts returns the contents of chunks, in order.
func chunkTexts(chunks []chunkRow) []string {
	out := make([]string, len(chunks))
	for i, c := range chunks {
		out[i] = c.Content
	}
	return out
}

// extractEntities returns the entities of each of texts, in order.
func extractEntities(extractors []Extractor, texts []string) [][]entityCount {
	out := make([][]entityCount, len(texts))
	for i, t := range texts {
		out[i] = countEntities(extractors, t)
	}
	return out
}

// recordEntities records found, the entities of each of chunks, which were
// just inserted and carry their pks: each entity is created or has its
// last_seen_ms moved forward, and each (chunk, entity) pair is linked with
// its count. The entities table's counters follow through triggers.
func recordEntities(tx *gorm.DB, chunks []chunkRow, found [][]entityCount) error {
	type link struct {
		pk    int64
		id    string
		count int
	}
	type seen struct {
		e       entityCount
		firstMS int64
		lastMS  int64
	}
	var (
		links []link
		order []string
		byID  = map[string]*seen{}
	)
	for i, c := range chunks {
		if c.PK == 0 {
			return fmt.Errorf("index entities: chunk %s has no pk", c.ID)
		}
		for _, e := range found[i] {
			links = append(links, link{pk: c.PK, id: e.ID, count: e.Count})
			if s, ok := byID[e.ID]; ok {
				s.firstMS = min(s.firstMS, c.UpdatedMS)
				s.lastMS = max(s.lastMS, c.UpdatedMS)
				continue
			}
			byID[e.ID] = &seen{e: e, firstMS: c.UpdatedMS, lastMS: c.UpdatedMS}
			order = append(order, e.ID)
		}
	}
	for start := 0; start < len(order); start += entityBatch {
		ids := order[start:min(start+entityBatch, len(order))]
		vars := make([]any, 0, 5*len(ids))
		for _, id := range ids {
			s := byID[id]
			vars = append(vars, id, s.e.Kind, s.e.Surface, s.firstMS, s.lastMS)
		}
		greatest, least := "max", "min"
		if onPostgres(tx) {
			greatest, least = "GREATEST", "LEAST"
		}
		err := tx.Exec(`INSERT INTO entities (id, kind, surface, first_seen_ms, last_seen_ms) VALUES `+valueTuples(len(ids), 5)+`
			ON CONFLICT (id) DO UPDATE SET
			last_seen_ms = `+greatest+`(entities.last_seen_ms, excluded.last_seen_ms),
			first_seen_ms = `+least+`(entities.first_seen_ms, excluded.first_seen_ms)`, vars...).Error
		if err != nil {
			return fmt.Errorf("upsert entities: %w", err)
		}
	}
	for start := 0; start < len(links); start += entityBatch {
		batch := links[start:min(start+entityBatch, len(links))]
		vars := make([]any, 0, 3*len(batch))
		for _, l := range batch {
			vars = append(vars, l.pk, l.id, l.count)
		}
		if err := tx.Exec(`INSERT INTO chunk_entities (chunk_pk, entity_id, count) VALUES `+valueTuples(len(batch), 3), vars...).Error; err != nil {
			return fmt.Errorf("link entities: %w", err)
		}
	}
	return nil
}

// valueTuples returns the VALUES list of a multi-row INSERT: rows
// parenthesised groups of cols placeholders, comma-separated.
func valueTuples(rows, cols int) string {
	tuple := "(" + strings.Repeat("?, ", cols-1) + "?)"
	return strings.Repeat(tuple+", ", rows-1) + tuple
}

// dropUnusedEntities deletes entities that no chunk mentions any more, as
// after chunks were deleted.
func dropUnusedEntities(tx *gorm.DB) error {
	if err := tx.Exec(`DELETE FROM entities WHERE mention_count <= 0`).Error; err != nil {
		return fmt.Errorf("delete unused entities: %w", err)
	}
	return nil
}

// backfillEntities indexes the entities of every existing chunk; migration
// 2 runs it for chunks stored before entities existed.
func backfillEntities(tx *gorm.DB, env migrationEnv) error {
	var last int64
	for {
		var rows []chunkRow
		err := tx.Where("pk > ?", last).Order("pk").Limit(500).Find(&rows).Error
		if err != nil {
			return fmt.Errorf("read chunks: %w", err)
		}
		if len(rows) == 0 {
			return nil
		}
		if err := indexEntities(tx, env.extractors, rows); err != nil {
			return err
		}
		last = rows[len(rows)-1].PK
	}
}
