package memory

import (
	"cmp"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"gorm.io/gorm"

	"github.com/openhuman/openhuman-host/sdk/storage/filelock"
	"github.com/openhuman/openhuman-host/sdk/storage/sqliteerr"
	"github.com/openhuman/openhuman-host/sdk/storage/sqlitefile"
	"github.com/openhuman/openhuman-host/sdk/storage/sqliteuri"
)

// recoverBatch is how many documents one write transaction of a recovery
// holds.
const recoverBatch = 200

// RecoverOptions tunes [Provider.Recover].
type RecoverOptions struct {
	// Force rebuilds a database that passes SQLite's integrity check too,
	// for damage the check does not see. Default false: such a database
	// is left alone and Recover returns [ErrNotDamaged].
	Force bool
}

// ErrNotDamaged is returned by [Provider.Recover] for a database that
// passes SQLite's integrity check, without Force.
var ErrNotDamaged = errors.New("memory.db passed SQLite's integrity check")

// RecoverSummary is what [Provider.Recover] did.
type RecoverSummary struct {
	// MovedTo is where the damaged database now is, with its -wal and
	// -shm files beside it: "memory.db.damaged-<UTC time>". It is kept
	// for inspection and never written to.
	MovedTo string
	// Sources, Documents, Chunks, ChunkTags and Embeddings count what the
	// new database holds. Entities are found again from the chunks.
	Sources, Documents, Chunks, ChunkTags, Embeddings int
	// Incomplete are the documents (as "<namespace>/<key>: <title>") of
	// which only some chunks could be read: the new database has those,
	// in order, and no content hash, so that importing the file again
	// replaces them.
	Incomplete []string
	// Lost are the documents whose row was read but none of whose chunks
	// could be; they are not in the new database.
	Lost []string
	// NotesUnlinked counts memory_note documents whose chunk was lost:
	// they are kept, no longer attached to a chunk.
	NotesUnlinked int
	// Unreadable counts the regions of the damaged file, per table, that
	// could not be read at all: what was in them is gone, rows and all.
	// Empty when every row could be read.
	Unreadable map[string]int
	// SchemaUnreadable is set when SQLite could not read the database's
	// schema (its header or first pages are damaged, or it is not a
	// SQLite file): nothing could be read.
	SchemaUnreadable bool
}

// Recover rebuilds the memory database in dataDir from what can still be
// read of it. It is the way out of [ErrDamaged], and must run while no
// other process uses the database (the command-line tool checks that no
// server runs on the data directory).
//
// Every source, document, chunk, chunk tag and embedding whose row SQLite
// can still read is copied, with its timestamps, into a new database built
// beside the old one as "memory.db.recovering"; the entity index and the
// full-text index are built again. Only once that is complete is the old
// database moved aside (see [RecoverSummary.MovedTo]) and the new one
// moved into its place, so an interrupted recovery leaves memory.db as it
// was. Reading skips the parts of the file SQLite reports as damaged.
//
// p must not be configured. Recover returns [ErrNotDamaged] for a healthy
// database unless opts.Force, an error when dataDir has no memory.db, and
// an error wrapping ctx.Err() when ctx ends first.
func (p *Provider) Recover(ctx context.Context, dataDir string, opts *RecoverOptions) (RecoverSummary, error) {
	var sum RecoverSummary
	p.mu.Lock()
	configured := p.store != nil
	p.mu.Unlock()
	if configured {
		return sum, errors.New("memory provider: recover: the provider has the database open")
	}
	if opts == nil {
		opts = &RecoverOptions{}
	}
	path := filepath.Join(dataDir, dbFileName)
	if _, err := os.Stat(path); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return sum, fmt.Errorf("memory provider: recover: there is no %s to recover", path)
		}
		return sum, fmt.Errorf("memory provider: recover: %w", err)
	}
	// Alone with the database: no server, import or other recovery has it
	// open (they hold its lock shared), and none can open it until the
	// new one is in place.
	unlock, err := filelock.Exclusive(lockPath(path))
	if errors.Is(err, filelock.ErrLocked) {
		return sum, fmt.Errorf("memory provider: recover: %s is in use by another openhuman-host process (a server, a memory import, "+
			"or another recover); stop it, then run memory recover again", path)
	}
	if err != nil {
		return sum, fmt.Errorf("memory provider: recover: lock %s: %w", path, err)
	}
	defer unlock()
	// A file that cannot be read at all is not damage to rebuild from.
	f, err := os.Open(path)
	if err == nil {
		_, err = f.Read(make([]byte, 1))
		if errors.Is(err, io.EOF) {
			err = nil
		}
		f.Close()
	}
	if err != nil {
		return sum, fmt.Errorf("memory provider: recover: cannot read %s: %w; nothing was changed", path, err)
	}
	old, err := sql.Open("sqlite3", sqliteuri.File(path, "mode=ro&_busy_timeout=5000"))
	if err != nil {
		return sum, fmt.Errorf("memory provider: recover: open %s: %w", path, err)
	}
	defer old.Close()
	var tables int
	switch err := old.QueryRowContext(ctx, "SELECT count(*) FROM sqlite_master").Scan(&tables); {
	case ctx.Err() != nil:
		return sum, ctx.Err()
	case sqliteerr.Corrupt(err):
		sum.SchemaUnreadable = true
	case err != nil:
		return sum, fmt.Errorf("memory provider: recover: cannot read %s: %w; nothing was changed", path, err)
	}
	if !opts.Force {
		var res string
		err := old.QueryRowContext(ctx, "PRAGMA quick_check(1)").Scan(&res)
		if err == nil && res == "ok" {
			return sum, fmt.Errorf("memory provider: recover %s: %w; nothing to do (force a rebuild if it still misbehaves)", path, ErrNotDamaged)
		}
		if err != nil && !sqliteerr.Corrupt(err) {
			return sum, fmt.Errorf("memory provider: recover: check %s: %w", path, err)
		}
	}

	newPath := path + ".recovering"
	for _, suffix := range []string{"", "-wal", "-shm", ".lock"} {
		if err := os.Remove(newPath + suffix); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return sum, fmt.Errorf("memory provider: recover: remove what an earlier recovery left: %w", err)
		}
	}
	st, err := openStore(ctx, newPath, p.now, p.extractors, p.logger)
	if err != nil {
		return sum, fmt.Errorf("memory provider: recover: %w", err)
	}
	r := &salvage{ctx: ctx, old: old, st: st, sum: &sum}
	err = r.run()
	if cerr := st.close(); err == nil && cerr != nil {
		err = fmt.Errorf("close %s: %w", newPath, cerr)
	}
	if err == nil {
		err = old.Close()
	}
	_ = os.Remove(lockPath(newPath))
	if err != nil {
		for _, suffix := range []string{"", "-wal", "-shm"} {
			_ = os.Remove(newPath + suffix)
		}
		return sum, fmt.Errorf("memory provider: recover (%s is unchanged): %w", path, err)
	}
	if sum.MovedTo, err = sqlitefile.MoveAside(path, p.now()); err != nil {
		return sum, fmt.Errorf("memory provider: recover: %w", err)
	}
	for _, suffix := range []string{"-wal", "-shm", ""} {
		if err := os.Rename(newPath+suffix, path+suffix); err != nil && (suffix == "" || !errors.Is(err, fs.ErrNotExist)) {
			return sum, fmt.Errorf("memory provider: recover: the damaged database is at %s; move %s to %s to finish: %w",
				sum.MovedTo, newPath, path, err)
		}
	}
	p.logger.Warn("rebuilt memory database from what could be read", "path", path, "moved_to", sum.MovedTo,
		"documents", sum.Documents, "incomplete", len(sum.Incomplete), "lost", len(sum.Lost))
	return sum, nil
}

// salvage copies what can be read of a damaged database into a new store.
type salvage struct {
	ctx context.Context
	old *sql.DB
	st  *store
	sum *RecoverSummary
	// chunkIDs holds the ids of the chunks written to the new database.
	chunkIDs map[string]bool
}

// oldChunk is where a chunk of the damaged database belongs.
type oldChunk struct {
	pk, createdMS, updatedMS int64
	id                       string
	seq                      int
}

func (r *salvage) run() error {
	sources := map[string]sourceRow{}
	err := r.scan("sources", "id, kind, display_name, created_ms, updated_ms", func(scan func(...any) (int64, error)) error {
		var s sourceRow
		if _, err := scan(&s.ID, &s.Kind, &s.DisplayName, &s.CreatedMS, &s.UpdatedMS); err != nil {
			return err
		}
		sources[s.ID] = s
		return nil
	})
	if err != nil {
		return err
	}
	var docs []documentRow
	err = r.scan("documents", "id, source_id, namespace, key, title, tags, note_chunk_id, content_sha256, created_ms, updated_ms", func(scan func(...any) (int64, error)) error {
		var d documentRow
		if _, err := scan(&d.ID, &d.SourceID, &d.Namespace, &d.Key, &d.Title, &d.Tags, &d.NoteChunkID, &d.ContentSHA256, &d.CreatedMS, &d.UpdatedMS); err != nil {
			return err
		}
		docs = append(docs, d)
		return nil
	})
	if err != nil {
		return err
	}
	// Only where each chunk belongs is kept for the whole table; contents
	// are read one batch of documents at a time.
	chunks := map[string][]oldChunk{}
	err = r.scan("chunks", "id, document_id, seq, created_ms, updated_ms", func(scan func(...any) (int64, error)) error {
		var c oldChunk
		var docID string
		pk, err := scan(&c.id, &docID, &c.seq, &c.createdMS, &c.updatedMS)
		if err != nil {
			return err
		}
		c.pk = pk
		chunks[docID] = append(chunks[docID], c)
		return nil
	}, "pk")
	if err != nil {
		return err
	}

	// Notes last: whether the chunk a note annotates is there is known
	// only once every other document is written.
	r.chunkIDs = map[string]bool{}
	for _, notes := range []bool{false, true} {
		for batch := range slices.Chunk(slices.DeleteFunc(slices.Clone(docs), func(d documentRow) bool { return (d.NoteChunkID != nil) != notes }), recoverBatch) {
			if err := r.copyDocuments(batch, sources, chunks); err != nil {
				return err
			}
		}
	}
	if err := r.copyChunkTags(); err != nil {
		return err
	}
	if err := r.copyVersions(); err != nil {
		return err
	}
	return r.copyEmbeddings()
}

// copyVersions copies the previous versions of the documents written. A
// database older than schema 3 has none.
func (r *salvage) copyVersions() error {
	type version struct {
		docID, title, tags, content, sha string
		version                          int
		updatedMS, replacedMS            int64
	}
	_, err := copyUntilDamage(r, "document_versions",
		`SELECT document_id, version, title, tags, content, content_sha256, updated_ms, replaced_ms FROM document_versions`,
		func(rows *sql.Rows) (version, bool, error) {
			var v version
			err := rows.Scan(&v.docID, &v.version, &v.title, &v.tags, &v.content, &v.sha, &v.updatedMS, &v.replacedMS)
			return v, true, err
		},
		func(tx *gorm.DB, v version) error {
			// A version of a document that could not be copied is dropped.
			return tx.Exec(`INSERT OR IGNORE INTO document_versions (document_id, version, title, tags, content, content_sha256, updated_ms, replaced_ms)
				SELECT ?, ?, ?, ?, ?, ?, ?, ? WHERE EXISTS (SELECT 1 FROM documents WHERE id = ?)`,
				v.docID, v.version, v.title, v.tags, v.content, v.sha, v.updatedMS, v.replacedMS, v.docID).Error
		})
	return err
}

// copyDocuments writes docs with the chunks of theirs that can be read.
func (r *salvage) copyDocuments(docs []documentRow, sources map[string]sourceRow, chunks map[string][]oldChunk) error {
	var out []document
	var kept []documentRow
	var keptChunks [][]oldChunk
	for _, d := range docs {
		cs := chunks[d.ID]
		slices.SortFunc(cs, func(a, b oldChunk) int { return cmp.Compare(a.seq, b.seq) })
		pieces, read, err := r.chunkContents(cs)
		if err != nil {
			return err
		}
		name := d.Namespace + "/" + d.Key + ": " + d.Title
		if len(read) == 0 {
			r.sum.Lost = append(r.sum.Lost, name)
			continue
		}
		complete := len(read) == len(cs)
		for i, c := range read {
			complete = complete && c.seq == i
		}
		if !complete {
			// Another chunk count or order means other chunk ids: those
			// written are numbered afresh.
			d.ContentSHA256 = ""
			r.sum.Incomplete = append(r.sum.Incomplete, name)
		}
		src, ok := sources[d.SourceID]
		if !ok {
			src = sourceRow{ID: d.SourceID, Kind: SourceKindDocument, DisplayName: d.SourceID, CreatedMS: d.CreatedMS, UpdatedMS: d.UpdatedMS}
			if strings.HasPrefix(d.SourceID, "mcp:") {
				src.Kind = SourceKindNote
			}
			sources[d.SourceID] = src
		}
		var tags []string
		if err := json.Unmarshal([]byte(d.Tags), &tags); err != nil || tags == nil {
			tags = []string{}
		}
		doc := document{
			ID: d.ID, SourceID: src.ID, SourceKind: src.Kind, SourceName: src.DisplayName,
			Namespace: d.Namespace, Key: d.Key, Title: d.Title, Tags: tags,
			Pieces: pieces, ContentSHA256: d.ContentSHA256,
		}
		if d.NoteChunkID != nil {
			if r.chunkIDs[*d.NoteChunkID] {
				doc.NoteChunkID = *d.NoteChunkID
			} else {
				r.sum.NotesUnlinked++
			}
		}
		out = append(out, doc)
		kept = append(kept, d)
		if complete {
			keptChunks = append(keptChunks, read)
		} else {
			keptChunks = append(keptChunks, nil)
		}
	}
	if len(out) == 0 {
		return nil
	}
	res, err := r.st.putDocuments(r.ctx, out, false)
	if err != nil {
		return fmt.Errorf("write recovered documents: %w", err)
	}
	// The documents, their sources and their chunks get back the times
	// they had.
	return r.st.write(r.ctx, func(tx *gorm.DB) error {
		for i, d := range kept {
			for _, id := range res[i].ChunkIDs {
				r.chunkIDs[id] = true
			}
			r.sum.Documents++
			r.sum.Chunks += len(res[i].ChunkIDs)
			if err := tx.Exec(`UPDATE documents SET created_ms = ?, updated_ms = ? WHERE id = ?`, d.CreatedMS, d.UpdatedMS, d.ID).Error; err != nil {
				return fmt.Errorf("restore document times: %w", err)
			}
			src := sources[d.SourceID]
			if err := tx.Exec(`UPDATE sources SET created_ms = ?, updated_ms = ? WHERE id = ?`, src.CreatedMS, src.UpdatedMS, src.ID).Error; err != nil {
				return fmt.Errorf("restore source times: %w", err)
			}
			for _, c := range keptChunks[i] {
				if err := tx.Exec(`UPDATE chunks SET created_ms = ?, updated_ms = ? WHERE id = ?`, c.createdMS, c.updatedMS, c.id).Error; err != nil {
					return fmt.Errorf("restore chunk times: %w", err)
				}
			}
		}
		return tx.Raw(`SELECT COUNT(*) FROM sources`).Scan(&r.sum.Sources).Error
	})
}

// chunkContents reads the contents of cs by rowid, skipping chunks that
// cannot be read; read are the chunks whose pieces were read, in order.
func (r *salvage) chunkContents(cs []oldChunk) (pieces []string, read []oldChunk, err error) {
	for _, c := range cs {
		var content string
		err := r.old.QueryRowContext(r.ctx, `SELECT content FROM chunks WHERE pk = ?`, c.pk).Scan(&content)
		switch {
		case r.ctx.Err() != nil:
			return nil, nil, r.ctx.Err()
		case err != nil:
			r.sum.unreadable("chunks")
			continue
		}
		pieces = append(pieces, content)
		read = append(read, c)
	}
	return pieces, read, nil
}

// copyChunkTags copies the tags of the chunks written.
func (r *salvage) copyChunkTags() error {
	type tag struct {
		chunkID, tag string
		position     int
	}
	n, err := copyUntilDamage(r, "chunk_tags", `SELECT chunk_id, tag, position FROM chunk_tags`,
		func(rows *sql.Rows) (tag, bool, error) {
			var t tag
			err := rows.Scan(&t.chunkID, &t.tag, &t.position)
			return t, r.chunkIDs[t.chunkID], err
		},
		func(tx *gorm.DB, t tag) error {
			return tx.Exec(`INSERT OR IGNORE INTO chunk_tags (chunk_id, tag, position) VALUES (?, ?, ?)`, t.chunkID, t.tag, t.position).Error
		})
	r.sum.ChunkTags += n
	return err
}

// copyUntilDamage copies the rows query reads from table of the old
// database, for tables without a rowid to resume by after a damaged
// region: it reads up to the first one (and marks the table unreadable),
// keeps the rows scan accepts, and writes them with insert in batches. A
// table the old database does not have (an older schema) copies nothing.
// It returns how many rows it wrote.
func copyUntilDamage[T any](r *salvage, table, query string, scan func(*sql.Rows) (T, bool, error), insert func(*gorm.DB, T) error) (int, error) {
	var kept []T
	rows, err := r.old.QueryContext(r.ctx, query)
	if err != nil && strings.Contains(err.Error(), "no such table") {
		return 0, nil
	}
	if err == nil {
		for rows.Next() {
			v, keep, serr := scan(rows)
			if serr != nil {
				err = serr
				break
			}
			if keep {
				kept = append(kept, v)
			}
		}
		if err == nil {
			err = rows.Err()
		}
		rows.Close()
	}
	if r.ctx.Err() != nil {
		return 0, r.ctx.Err()
	}
	if err != nil {
		r.sum.unreadable(table)
	}
	written := 0
	for batch := range slices.Chunk(kept, insertBatch) {
		err := r.st.write(r.ctx, func(tx *gorm.DB) error {
			for _, v := range batch {
				if err := insert(tx, v); err != nil {
					return fmt.Errorf("write recovered %s: %w", strings.ReplaceAll(table, "_", " "), err)
				}
			}
			return nil
		})
		if err != nil {
			return written, err
		}
		written += len(batch)
	}
	return written, nil
}

// copyEmbeddings copies the embeddings of the chunks written, so that they
// need not be computed again.
func (r *salvage) copyEmbeddings() error {
	type embedding struct {
		chunkID   string
		model     string
		dims      int
		vector    []byte
		createdMS int64
	}
	var batch []embedding
	flush := func() error {
		err := r.st.write(r.ctx, func(tx *gorm.DB) error {
			for _, e := range batch {
				res := tx.Exec(`INSERT OR IGNORE INTO chunk_embeddings (chunk_pk, model, dims, vector, created_ms)
					SELECT pk, ?, ?, ?, ? FROM chunks WHERE id = ?`, e.model, e.dims, e.vector, e.createdMS, e.chunkID)
				if res.Error != nil {
					return fmt.Errorf("write recovered embeddings: %w", res.Error)
				}
				r.sum.Embeddings += int(res.RowsAffected)
			}
			return nil
		})
		batch = batch[:0]
		return err
	}
	err := r.scan("chunk_embeddings", "(SELECT id FROM chunks WHERE pk = chunk_embeddings.chunk_pk), model, dims, vector, created_ms", func(scan func(...any) (int64, error)) error {
		var e embedding
		var chunkID sql.NullString
		if _, err := scan(&chunkID, &e.model, &e.dims, &e.vector, &e.createdMS); err != nil {
			return err
		}
		if !chunkID.Valid || !r.chunkIDs[chunkID.String] {
			return nil
		}
		e.chunkID = chunkID.String
		if batch = append(batch, e); len(batch) == insertBatch {
			return flush()
		}
		return nil
	}, "chunk_pk")
	if err != nil || len(batch) == 0 {
		return err
	}
	return flush()
}

// unreadable counts a damaged region of table.
func (s *RecoverSummary) unreadable(table string) {
	if s.Unreadable == nil {
		s.Unreadable = map[string]int{}
	}
	s.Unreadable[table]++
}

// scan reads every row of table that SQLite can, in the order of key
// ("rowid" unless given: the column that is the table's rowid), and calls
// fn on each; fn reads the row's cols with the scan it is given, which
// returns the row's key. A row that cannot be decoded, and a region of
// the file that cannot be read at all, are counted in Unreadable and
// skipped: after a region the scan goes on one key further, then twice as
// far and so on, so a damaged page costs a few dozen queries. Keys start
// at 1: SQLite gives rows positive rowids, and nothing here sets others.
// An error of fn's own (writing the new database), or ctx ending, ends the
// scan and is returned.
func (r *salvage) scan(table, cols string, fn func(scan func(dest ...any) (int64, error)) error, key ...string) error {
	k := "rowid"
	if len(key) > 0 {
		k = key[0]
	}
	query := `SELECT ` + k + `, ` + cols + ` FROM ` + table + ` WHERE ` + k + ` > ? ORDER BY ` + k + ` LIMIT 500`
	after := int64(0)
	for {
		n, last, badRow, err := r.scanFrom(query, after, fn)
		if r.ctx.Err() != nil {
			return r.ctx.Err()
		}
		if n > 0 || badRow {
			after = last
		}
		switch {
		case err == nil && n == 0 && !badRow:
			return nil
		case err == nil && !badRow:
			continue
		}
		if pageErr := (errPage{}); err != nil && !errors.As(err, &pageErr) {
			return err
		}
		r.sum.unreadable(table)
		if badRow {
			continue
		}
		next, ok := r.skipDamage(table, k, after)
		if !ok {
			return r.ctx.Err()
		}
		after = next
	}
}

// errPage marks an error of SQLite reading the damaged file, as opposed
// to one of fn.
type errPage struct{ error }

func (e errPage) Unwrap() error { return e.error }

// scanFrom reads up to one page of query's rows after after. n counts the
// rows fn took and last is the key of the last row seen; badRow says the
// last row seen could not be decoded. A failure of SQLite is returned as
// errPage.
func (r *salvage) scanFrom(query string, after int64, fn func(scan func(dest ...any) (int64, error)) error) (n int, last int64, badRow bool, err error) {
	rows, err := r.old.QueryContext(r.ctx, query, after)
	if err != nil {
		return 0, after, false, errPage{err}
	}
	defer rows.Close()
	for rows.Next() {
		var scanErr error
		err := fn(func(dest ...any) (int64, error) {
			// The key is the first column: it is set even when a later
			// one cannot be decoded, so the row is skipped past.
			scanErr = rows.Scan(append([]any{&last}, dest...)...)
			return last, scanErr
		})
		switch {
		case err != nil && scanErr != nil && errors.Is(err, scanErr):
			return n, last, true, nil
		case err != nil:
			return n, last, false, err
		}
		n++
	}
	if err := rows.Err(); err != nil {
		return n, last, false, errPage{err}
	}
	return n, last, false, nil
}

// skipDamage finds where to go on reading table after a region that could
// not be read following key after: ok is false when no row past it can be
// read.
func (r *salvage) skipDamage(table, key string, after int64) (next int64, ok bool) {
	for k := range 63 {
		step := int64(1) << k
		if after > math.MaxInt64-step {
			return 0, false
		}
		probe := after + step
		var found int64
		err := r.old.QueryRowContext(r.ctx, `SELECT `+key+` FROM `+table+` WHERE `+key+` > ? ORDER BY `+key+` LIMIT 1`, probe).Scan(&found)
		switch {
		case r.ctx.Err() != nil, errors.Is(err, sql.ErrNoRows):
			return 0, false
		case err == nil:
			return probe, true
		}
	}
	return 0, false
}
