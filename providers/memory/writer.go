package memory

import (
	"encoding/json"
	"fmt"
	"math"
	"slices"

	"gorm.io/gorm"
)

// chunkInsertRows bounds the rows of one chunk INSERT: 7 variables a row
// keeps it well under SQLite's 32,766.
const chunkInsertRows = 1000

// docKey is a document's upsert key.
type docKey struct{ namespace, key string }

// docWriter writes documents inside one write transaction. The chunks of
// every document it is given wait until flush, which inserts them with a
// few multi-row statements and then indexes their entities. Besides
// saving statements, this spares the full-text index a write per
// document: FTS5 keeps the changes of a transaction in memory and writes
// them out as a new index segment whenever a statement of the transaction
// opens a statement journal, as every multi-row or triggering statement
// does, so a chunk INSERT per document, with other statements between,
// would write a small segment per document for FTS5 to merge later.
type docWriter struct {
	s     *store
	tx    *gorm.DB
	nowMS int64
	// sources are the sources created or touched so far.
	sources map[string]bool
	// known holds the documents looked up ahead by lookAhead, nil for
	// those that do not exist; a key not in it is looked up when needed.
	known map[docKey]*documentRow
	// docs are the new documents and chunks the chunks that wait for
	// flush; ends[i] is where the chunks of the document whose result is
	// owners[i] end in chunks.
	docs   []documentRow
	chunks []chunkRow
	owners []*putResult
	ends   []int
	// pending holds the ids of the documents in docs or with chunks in
	// chunks.
	pending map[string]bool
	// deleted is set when a write deleted chunks, whose entities may now
	// be unused.
	deleted bool
}

// newDocWriter returns a writer of documents inside tx, timestamped nowMS.
func (s *store) newDocWriter(tx *gorm.DB, nowMS int64) *docWriter {
	return &docWriter{s: s, tx: tx, nowMS: nowMS, sources: map[string]bool{}, known: map[docKey]*documentRow{}, pending: map[string]bool{}}
}

// lookAhead reads the stored documents with the keys of docs (except those
// whose key comes from their title) with one query per namespace and 500
// keys, instead of one per document.
func (w *docWriter) lookAhead(docs []document) error {
	keys := map[string][]string{}
	for _, d := range docs {
		if !d.KeyFromTitle {
			keys[d.Namespace] = append(keys[d.Namespace], d.Key)
		}
	}
	for ns, list := range keys {
		for start := 0; start < len(list); start += 500 {
			batch := list[start:min(start+500, len(list))]
			var rows []documentRow
			if err := w.tx.Where("namespace = ? AND key IN ?", ns, batch).Find(&rows).Error; err != nil {
				return fmt.Errorf("look up documents: %w", err)
			}
			for _, k := range batch {
				w.known[docKey{ns, k}] = nil
			}
			for i := range rows {
				w.known[docKey{rows[i].Namespace, rows[i].Key}] = &rows[i]
			}
		}
	}
	return nil
}

// find returns the document with namespace and key, or nil.
func (w *docWriter) find(namespace, key string) (*documentRow, error) {
	if d, ok := w.known[docKey{namespace, key}]; ok {
		return d, nil
	}
	return findDocument(w.tx, namespace, key)
}

// put writes doc, except its chunks, which wait for flush; res is filled
// in then. With skipUnchanged, a document whose stored title, source, tags
// and content hash equal doc's is left alone.
func (w *docWriter) put(doc document, skipUnchanged bool, res *putResult) error {
	tx, nowMS := w.tx, w.nowMS
	if !w.sources[doc.SourceID] {
		err := tx.Exec(`INSERT INTO sources (id, kind, display_name, created_ms, updated_ms) VALUES (?, ?, ?, ?, ?)
			ON CONFLICT (id) DO UPDATE SET updated_ms = excluded.updated_ms`,
			doc.SourceID, doc.SourceKind, doc.SourceName, nowMS, nowMS).Error
		if err != nil {
			return fmt.Errorf("upsert source: %w", err)
		}
		w.sources[doc.SourceID] = true
	}

	key := doc.Key
	if doc.KeyFromTitle {
		key = storeKey(doc.Title)
	}
	existing, err := w.find(doc.Namespace, key)
	if err != nil {
		return err
	}
	if doc.KeyFromTitle && existing != nil && existing.Title != doc.Title {
		// The 8-digit suffix first, as documented; 16, 32 and 64 digits
		// only if a title was made to collide with it.
		base := key
		for _, n := range []int{4, 8, 16, 32} {
			key = disambiguatedKeyN(base, doc.Title, n)
			if existing, err = w.find(doc.Namespace, key); err != nil {
				return err
			}
			if existing == nil || existing.Title == doc.Title {
				break
			}
		}
		if existing != nil && existing.Title != doc.Title {
			return errKeyCollision
		}
	}
	*res = putResult{DocumentID: documentID(doc.Namespace, key), Key: key, Created: existing == nil, Tags: doc.Tags}
	if doc.ID != "" {
		res.DocumentID = doc.ID
	}
	if w.pending[res.DocumentID] || (existing != nil && w.pending[existing.ID]) {
		// The same document twice: the second write replaces the chunks
		// of the first, which must be in the database for that.
		if err := w.flush(); err != nil {
			return err
		}
	}
	if doc.ID != "" && len(doc.ChunkIDs) == len(doc.Pieces) {
		res.ChunkIDs = doc.ChunkIDs
	} else {
		res.ChunkIDs = make([]string, len(doc.Pieces))
		for seq, piece := range doc.Pieces {
			res.ChunkIDs[seq] = chunkID(res.DocumentID, seq, piece)
		}
	}
	if res.Tags == nil {
		res.Tags = []string{}
		if existing != nil {
			if err := json.Unmarshal([]byte(existing.Tags), &res.Tags); err != nil {
				return fmt.Errorf("decode tags of document %s: %w", existing.ID, err)
			}
		}
	}
	tagsJSON, err := json.Marshal(res.Tags)
	if err != nil {
		return fmt.Errorf("encode tags: %w", err)
	}
	if skipUnchanged && existing != nil && existing.ContentSHA256 == doc.ContentSHA256 &&
		existing.Title == doc.Title && existing.SourceID == doc.SourceID && existing.Tags == string(tagsJSON) {
		res.Unchanged = true
		return nil
	}
	var noteChunk *string
	if doc.NoteChunkID != "" {
		noteChunk = &doc.NoteChunkID
		if len(w.chunks) > 0 {
			// The chunk a note is linked to may be one this writer
			// holds; it must be in the database first.
			if err := w.flush(); err != nil {
				return err
			}
		}
	}
	if existing == nil {
		// A new document waits for flush too; until then this writer
		// answers for its key.
		row := documentRow{ID: res.DocumentID, SourceID: doc.SourceID, Namespace: doc.Namespace, Key: key,
			Title: doc.Title, Tags: string(tagsJSON), NoteChunkID: noteChunk, ContentSHA256: doc.ContentSHA256, CreatedMS: nowMS, UpdatedMS: nowMS}
		w.docs = append(w.docs, row)
		w.known[docKey{doc.Namespace, key}] = &row
		w.pending[res.DocumentID] = true
	} else {
		err = tx.Exec(`UPDATE documents SET source_id = ?, title = ?, tags = ?, note_chunk_id = ?, content_sha256 = ?, updated_ms = ? WHERE id = ?`,
			doc.SourceID, doc.Title, string(tagsJSON), noteChunk, doc.ContentSHA256, nowMS, existing.ID).Error
		if err != nil {
			return fmt.Errorf("write document: %w", err)
		}
		// What this writer knows of the key is out of date now; the
		// database answers.
		delete(w.known, docKey{doc.Namespace, key})
	}
	if existing != nil && existing.SourceID != doc.SourceID {
		// The document moved (a file imported again from another folder):
		// its old source goes when nothing else is left in it, the new
		// documents this writer holds included.
		if slices.ContainsFunc(w.docs, func(d documentRow) bool { return d.SourceID == existing.SourceID }) {
			if err := w.flush(); err != nil {
				return err
			}
		}
		err := tx.Exec(`DELETE FROM sources WHERE id = ? AND NOT EXISTS (SELECT 1 FROM documents WHERE source_id = ?)`,
			existing.SourceID, existing.SourceID).Error
		if err != nil {
			return fmt.Errorf("delete empty source: %w", err)
		}
		delete(w.sources, existing.SourceID)
	}
	var rep *pendingReplacement
	if existing != nil {
		if rep, err = w.s.keepPrevious(tx, existing, doc, nowMS); err != nil {
			return err
		}
	}
	added, err := w.replaceChunks(res.DocumentID, doc.Pieces, res.ChunkIDs, existing != nil)
	if err != nil {
		return err
	}
	if rep != nil {
		rep.ChunksAdded = added
		rep.ChunksKept = len(doc.Pieces) - added
		rep.ChunksRemoved = rep.previousChunks - rep.ChunksKept
		res.Replaced = &rep.replacement
	}
	w.owners = append(w.owners, res)
	w.ends = append(w.ends, len(w.chunks))
	return nil
}

// replaceChunks makes pieces, whose chunk ids are ids, the chunks of
// document docID: it deletes the chunks the document has (stored says
// whether it may have any) that are not among them, and queues the
// pieces that are not stored yet for flush. It returns how many it
// queued. The FTS index follows through the chunks triggers; the
// entities, tags and embedding of a deleted chunk go with it.
func (w *docWriter) replaceChunks(docID string, pieces, ids []string, stored bool) (int, error) {
	var old []string
	if stored {
		if err := w.tx.Raw(`SELECT id FROM chunks WHERE document_id = ?`, docID).Scan(&old).Error; err != nil {
			return 0, fmt.Errorf("list chunks: %w", err)
		}
	}
	oldSet := make(map[string]bool, len(old))
	for _, id := range old {
		oldSet[id] = true
	}
	keep := make(map[string]bool, len(pieces))
	for _, id := range ids {
		keep[id] = true
	}
	var stale []string
	for _, id := range old {
		if !keep[id] {
			stale = append(stale, id)
		}
	}
	for start := 0; start < len(stale); start += insertBatch {
		if err := w.tx.Exec(`DELETE FROM chunks WHERE id IN ?`, stale[start:min(start+insertBatch, len(stale))]).Error; err != nil {
			return 0, fmt.Errorf("delete chunks: %w", err)
		}
		w.deleted = true
	}
	added := 0
	for seq, content := range pieces {
		if oldSet[ids[seq]] {
			continue
		}
		w.chunks = append(w.chunks, chunkRow{ID: ids[seq], DocumentID: docID, Seq: seq, Content: content, CreatedMS: w.nowMS, UpdatedMS: w.nowMS})
		added++
	}
	if added > 0 {
		w.pending[docID] = true
	}
	return added, nil
}

// flush inserts the documents and chunks put queued, gives each result
// the chunks it inserted, with their pks, and indexes their entities. The
// entities are found while SQLite inserts the chunks.
func (w *docWriter) flush() error {
	if err := insertDocuments(w.tx, w.docs); err != nil {
		return err
	}
	for _, d := range w.docs {
		// The row is in the database now, which answers for its key.
		delete(w.known, docKey{d.Namespace, d.Key})
	}
	w.docs = nil
	chunks := w.chunks
	if len(chunks) == 0 {
		w.owners, w.ends = nil, nil
		clear(w.pending)
		return nil
	}
	texts := chunkTexts(chunks)
	found := make(chan [][]entityCount, 1)
	go func() { found <- extractEntities(w.s.extractors, texts) }()
	err := insertChunks(w.tx, chunks)
	entities := <-found
	if err != nil {
		return err
	}
	start := 0
	for i, res := range w.owners {
		if end := w.ends[i]; end > start {
			res.Fresh = chunks[start:end:end]
			start = end
		}
	}
	w.chunks, w.owners, w.ends = nil, nil, nil
	clear(w.pending)
	return recordEntities(w.tx, chunks, entities)
}

// finish flushes and drops the entities no chunk mentions any more.
func (w *docWriter) finish() error {
	if err := w.flush(); err != nil {
		return err
	}
	if w.deleted {
		return dropUnusedEntities(w.tx)
	}
	return nil
}

// documentInsertRows bounds the rows of one document INSERT (10
// variables a row).
const documentInsertRows = 500

// insertDocuments inserts rows with multi-row statements.
func insertDocuments(tx *gorm.DB, rows []documentRow) error {
	for start := 0; start < len(rows); start += documentInsertRows {
		batch := rows[start:min(start+documentInsertRows, len(rows))]
		vars := make([]any, 0, 10*len(batch))
		for _, d := range batch {
			vars = append(vars, d.ID, d.SourceID, d.Namespace, d.Key, d.Title, d.Tags, d.NoteChunkID, d.ContentSHA256, d.CreatedMS, d.UpdatedMS)
		}
		err := tx.Exec(`INSERT INTO documents (id, source_id, namespace, key, title, tags, note_chunk_id, content_sha256, created_ms, updated_ms)
			VALUES `+valueTuples(len(batch), 10), vars...).Error
		if err != nil {
			return fmt.Errorf("write documents: %w", err)
		}
	}
	return nil
}

// insertChunks inserts rows with multi-row statements and sets their pks.
// It numbers them itself, from the largest pk in use, as SQLite would: the
// write transaction keeps anyone else from inserting meanwhile, and no
// RETURNING rows need reading back.
func insertChunks(tx *gorm.DB, rows []chunkRow) error {
	if len(rows) == 0 {
		return nil
	}
	var last int64
	if err := tx.Raw(`SELECT coalesce(max(pk), 0) FROM chunks`).Scan(&last).Error; err != nil {
		return fmt.Errorf("insert chunks: %w", err)
	}
	if last > math.MaxInt64-int64(len(rows)) {
		// Past the largest rowid SQLite picks free ones at random; so
		// does this insert then.
		return insertChunksReturning(tx, rows)
	}
	for start := 0; start < len(rows); start += chunkInsertRows {
		batch := rows[start:min(start+chunkInsertRows, len(rows))]
		vars := make([]any, 0, 7*len(batch))
		for i := range batch {
			last++
			batch[i].PK = last
			r := &batch[i]
			vars = append(vars, r.PK, r.ID, r.DocumentID, r.Seq, r.Content, r.CreatedMS, r.UpdatedMS)
		}
		err := tx.Exec(`INSERT INTO chunks (pk, id, document_id, seq, content, created_ms, updated_ms) VALUES `+
			valueTuples(len(batch), 7), vars...).Error
		if err != nil {
			return fmt.Errorf("insert chunks: %w", err)
		}
	}
	return nil
}

// insertChunksReturning inserts rows letting SQLite choose their pks, which
// it returns.
func insertChunksReturning(tx *gorm.DB, rows []chunkRow) error {
	for start := 0; start < len(rows); start += chunkInsertRows {
		batch := rows[start:min(start+chunkInsertRows, len(rows))]
		vars := make([]any, 0, 6*len(batch))
		at := make(map[string]int, len(batch))
		for i, r := range batch {
			vars = append(vars, r.ID, r.DocumentID, r.Seq, r.Content, r.CreatedMS, r.UpdatedMS)
			at[r.ID] = i
		}
		// RETURNING gives rows in no promised order: they are matched by
		// id.
		sqlRows, err := tx.Raw(`INSERT INTO chunks (id, document_id, seq, content, created_ms, updated_ms) VALUES `+
			valueTuples(len(batch), 6)+` RETURNING id, pk`, vars...).Rows()
		if err != nil {
			return fmt.Errorf("insert chunks: %w", err)
		}
		n := 0
		for sqlRows.Next() {
			var id string
			var pk int64
			if err := sqlRows.Scan(&id, &pk); err != nil {
				sqlRows.Close()
				return fmt.Errorf("insert chunks: %w", err)
			}
			if i, ok := at[id]; ok {
				batch[i].PK = pk
				n++
			}
		}
		err = sqlRows.Err()
		if cerr := sqlRows.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return fmt.Errorf("insert chunks: %w", err)
		}
		if n != len(batch) {
			return fmt.Errorf("insert chunks: %d of %d rows came back", n, len(batch))
		}
	}
	return nil
}
