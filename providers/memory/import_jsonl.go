package memory

import (
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"reflect"
	"slices"
	"strings"
	"time"

	"gorm.io/gorm"
)

// JSONLImportOptions configures [Provider.ImportJSONL]. A nil
// *JSONLImportOptions means the defaults.
type JSONLImportOptions struct {
	// MaxLineBytes bounds one line of the file, in bytes without the line
	// break; a longer line fails the import. 0 means DefaultMaxJSONLLine
	// (64 MiB).
	MaxLineBytes int
}

// JSONLImportSummary says what [Provider.ImportJSONL] restored.
type JSONLImportSummary struct {
	// Version, SchemaVersion and ExportedMS are the export's format
	// version, the schema version of the database it was taken from and
	// its time in Unix milliseconds, from its header; Namespaces is the
	// header's namespace filter (nil for an export of everything).
	Version       int
	SchemaVersion int
	ExportedMS    int64
	Namespaces    []string
	// Counts counts the records restored by type.
	Counts ExportCounts
	// New counts the documents that were not in memory; Replaced those
	// that replaced a document with the same id, or the same namespace
	// and key (New + Replaced = Counts.Documents).
	New, Replaced int
	// NotesUnlinked counts notes already in memory, not in the file, that
	// annotated a chunk of a replaced document which the file does not
	// bring back: they are kept without their link, as when a document
	// is rewritten.
	NotesUnlinked int
	// Lines counts the lines read.
	Lines int
	// Elapsed is the wall-clock time of the import.
	Elapsed time.Duration
}

// IsJSONLExport reports whether line, the first line of a file (with or
// without its line break), is the header line of an export
// [Provider.Export] writes, of any version.
func IsJSONLExport(line []byte) bool {
	var h struct {
		Type   string `json:"type"`
		Format string `json:"format"`
	}
	return json.Unmarshal(bytes.TrimSpace(line), &h) == nil && h.Type == recHeader && h.Format == JSONLFormat
}

// ImportJSONL restores an export written by [Provider.Export], read from r
// as a stream (one line in memory at a time): sources, documents, chunks,
// chunk tags, embeddings and note links come back exactly as exported,
// with the same ids, keys, titles, tags, contents and timestamps. Entities
// are extracted again from the chunks by this provider's extractors, and
// take their first and last sighting and first surface form from the
// export's entity records.
//
// A document of the file replaces any document in memory with the same id
// or the same namespace and key (its chunks, their tags, entities and
// embeddings go with it); the summary counts New and Replaced documents.
// A source of the file replaces the source with its id. Nothing else in
// memory changes, except that notes outside the file whose chunk was
// replaced are linked again when the file brings the same chunk id back
// (else counted in NotesUnlinked).
//
// Every line is checked before anything is committed: the first must be
// the header (format "openhuman-host-memory", version at most
// JSONLVersion) and the last the end record, whose counts must match the
// records read; a record must come after the source, document or chunk it
// refers to; chunk ids must be the content hash of their document, seq
// and content; unknown record types and unknown or missing fields are
// errors. Errors name the line (counted from 1). The whole file is written
// in one transaction, so a file that fails anywhere (or ctx ending)
// changes nothing; meanwhile other writers wait, those of other processes
// up to the 30 s busy timeout.
func (p *Provider) ImportJSONL(ctx context.Context, r io.Reader, opts *JSONLImportOptions) (JSONLImportSummary, error) {
	start := time.Now()
	maxLine := DefaultMaxJSONLLine
	if opts != nil && opts.MaxLineBytes > 0 {
		maxLine = opts.MaxLineBytes
	}
	st, err := p.configuredStore()
	if err != nil {
		return JSONLImportSummary{}, err
	}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), maxLine+1) // +1: room for a trailing \r
	imp := &jsonlImport{ctx: ctx, st: st, sc: sc, maxLine: maxLine,
		sources: map[string]bool{}, docs: map[string]bool{}}
	// The header is checked before the write lock is taken: a file that
	// is not an export keeps nobody waiting.
	if err := imp.readHeader(); err != nil {
		return imp.sum, fmt.Errorf("memory import: %w; nothing was changed", err)
	}
	err = st.write(ctx, imp.run)
	imp.sum.Elapsed = time.Since(start)
	if err != nil {
		if ctx.Err() != nil {
			return imp.sum, fmt.Errorf("memory import interrupted at line %d: %w; nothing was changed", imp.line, ctx.Err())
		}
		return imp.sum, fmt.Errorf("memory import: %w; nothing was changed", err)
	}
	if p.embedder != nil {
		p.kickBackfill()
	}
	p.logger.Info("restored memory export", "documents", imp.sum.Counts.Documents, "new", imp.sum.New,
		"replaced", imp.sum.Replaced, "chunks", imp.sum.Counts.Chunks, "elapsed", imp.sum.Elapsed)
	return imp.sum, nil
}

// jsonlImport is the state of one ImportJSONL.
type jsonlImport struct {
	ctx     context.Context
	st      *store
	sc      *bufio.Scanner
	maxLine int
	tx      *gorm.DB
	sum     JSONLImportSummary
	line    int
	// sources and docs hold the ids of the sources and documents read so
	// far.
	sources, docs map[string]bool
	// notes are the file's documents that annotate a chunk, checked once
	// every chunk is written.
	notes []noteLink
	// relink are notes outside the file whose chunk a replaced document
	// took away.
	relink []noteLink
	// pending are chunks written whose entities are not indexed yet.
	pending []chunkRow
}

// recordReaders reads each type of record that may follow the header
// into the import.
var recordReaders = map[string]func(*jsonlImport, *record) error{
	recSource:    (*jsonlImport).source,
	recDocument:  (*jsonlImport).document,
	recChunk:     (*jsonlImport).chunk,
	recChunkTag:  (*jsonlImport).chunkTag,
	recEmbedding: (*jsonlImport).embedding,
	recEntity:    (*jsonlImport).entity,
	recVersion:   (*jsonlImport).version,
	recEnd:       (*jsonlImport).end,
}

// noteLink is a note document and the chunk it annotates; line is the
// line of the note's record, 0 for a note already in memory.
type noteLink struct {
	docID, chunkID string
	line           int
}

// next reads the next line into a record; ok is false at the end of the
// input.
func (imp *jsonlImport) next() (rec *record, ok bool, err error) {
	if !imp.sc.Scan() {
		if err := imp.sc.Err(); errors.Is(err, bufio.ErrTooLong) {
			return nil, false, fmt.Errorf("line %d is longer than %d bytes", imp.line+1, imp.maxLine)
		} else if err != nil {
			return nil, false, fmt.Errorf("read line %d: %w", imp.line+1, err)
		}
		return nil, false, nil
	}
	imp.line++
	imp.sum.Lines = imp.line
	b := bytes.TrimSuffix(imp.sc.Bytes(), []byte("\r"))
	if len(b) > imp.maxLine {
		return nil, false, fmt.Errorf("line %d is longer than %d bytes", imp.line, imp.maxLine)
	}
	if len(bytes.TrimSpace(b)) == 0 {
		return nil, false, fmt.Errorf("line %d is empty", imp.line)
	}
	rec, err = parseRecord(imp.line, b)
	return rec, err == nil, err
}

// readHeader reads and checks the first line.
func (imp *jsonlImport) readHeader() error {
	rec, ok, err := imp.next()
	switch {
	case err != nil && imp.line <= 1:
		return fmt.Errorf("not an openhuman-host memory export: %w", err)
	case err != nil:
		return err
	case !ok:
		return errors.New("the file is empty")
	case rec.typ != recHeader:
		return fmt.Errorf("line 1: not an openhuman-host memory export: the first line must be the header record, not a %q record", rec.typ)
	}
	format := rec.str("format")
	version := rec.integer("version")
	if rec.err == nil && format != JSONLFormat {
		return fmt.Errorf("line 1: not an openhuman-host memory export: format %q, want %q", format, JSONLFormat)
	}
	if rec.err == nil && version > JSONLVersion {
		return fmt.Errorf("line 1: the export is of format version %d, and this openhuman-host reads versions up to %d; upgrade openhuman-host", version, JSONLVersion)
	}
	if rec.err == nil && version < 1 {
		return fmt.Errorf("line 1: invalid format version %d", version)
	}
	imp.sum.Version = version
	imp.sum.SchemaVersion = rec.integer("schema_version")
	imp.sum.ExportedMS = rec.int64("exported_ms")
	if rec.has("namespaces") {
		imp.sum.Namespaces = rec.strs("namespaces")
	}
	if rec.has("embeddings") {
		var b bool
		rec.get("embeddings", &b, false)
	}
	return rec.done()
}

// run reads every line after the header and writes its records in tx.
func (imp *jsonlImport) run(tx *gorm.DB) error {
	imp.tx = tx
	// Notes may annotate chunks further down the file: references are
	// checked at commit, and note links with a line number before that.
	deferFKs := `PRAGMA defer_foreign_keys = ON`
	if onPostgres(tx) {
		deferFKs = `SET CONSTRAINTS ALL DEFERRED`
	}
	if err := tx.Exec(deferFKs).Error; err != nil {
		return fmt.Errorf("defer foreign keys: %w", err)
	}
	ended := false
	for {
		if err := imp.ctx.Err(); err != nil {
			return err
		}
		rec, ok, err := imp.next()
		if err != nil {
			return err
		}
		if !ok {
			break
		}
		if ended {
			return fmt.Errorf("line %d: a %q record after the end record", imp.line, rec.typ)
		}
		if rec.typ != recChunk {
			if err := imp.indexPending(); err != nil {
				return err
			}
		}
		read, known := recordReaders[rec.typ]
		switch {
		case known:
			err = read(imp, rec)
			ended = rec.typ == recEnd
		case rec.typ == recHeader:
			err = fmt.Errorf("line %d: a second header record", imp.line)
		default:
			err = fmt.Errorf("line %d: unknown record type %q (this openhuman-host reads export format version %d: %s)",
				imp.line, rec.typ, JSONLVersion, strings.Join([]string{recHeader, recSource, recDocument, recChunk, recChunkTag, recEmbedding, recEntity, recVersion, recEnd}, ", "))
		}
		if err != nil {
			return err
		}
	}
	if !ended {
		return fmt.Errorf("the file ends after line %d without its end record: it was cut short", imp.line)
	}
	return imp.finish()
}

func (imp *jsonlImport) source(rec *record) error {
	s := sourceRow{ID: rec.nonEmpty("id"), Kind: rec.str("kind"), DisplayName: rec.str("display_name"),
		CreatedMS: rec.int64("created_ms"), UpdatedMS: rec.int64("updated_ms")}
	if err := rec.done(); err != nil {
		return err
	}
	if !slices.Contains(sourceKinds, s.Kind) {
		return rec.errorf("kind %q is not one of %s", s.Kind, strings.Join(sourceKinds, ", "))
	}
	if imp.sources[s.ID] {
		return rec.errorf("source %s is in the file twice", s.ID)
	}
	err := imp.tx.Exec(`INSERT INTO sources (id, kind, display_name, created_ms, updated_ms) VALUES (?, ?, ?, ?, ?)
		ON CONFLICT (id) DO UPDATE SET kind = excluded.kind, display_name = excluded.display_name,
		created_ms = excluded.created_ms, updated_ms = excluded.updated_ms`,
		s.ID, s.Kind, s.DisplayName, s.CreatedMS, s.UpdatedMS).Error
	if err != nil {
		return rec.errorf("write source %s: %w", s.ID, err)
	}
	imp.sources[s.ID] = true
	imp.sum.Counts.Sources++
	return nil
}

func (imp *jsonlImport) document(rec *record) error {
	d := documentRow{ID: rec.nonEmpty("id"), SourceID: rec.nonEmpty("source_id"), Namespace: rec.nonEmpty("namespace"),
		Key: rec.nonEmpty("key"), Title: rec.str("title")}
	tags := rec.strs("tags")
	d.NoteChunkID = rec.nullableStr("note_chunk_id")
	d.ContentSHA256 = rec.str("content_sha256")
	d.CreatedMS, d.UpdatedMS = rec.int64("created_ms"), rec.int64("updated_ms")
	if err := rec.done(); err != nil {
		return err
	}
	if !imp.sources[d.SourceID] {
		return rec.errorf("document %s belongs to source %s, which no earlier line of the file holds", d.ID, d.SourceID)
	}
	if imp.docs[d.ID] {
		return rec.errorf("document %s is in the file twice", d.ID)
	}
	tagsJSON, err := json.Marshal(tags)
	if err != nil {
		return rec.errorf("encode tags: %w", err)
	}
	d.Tags = string(tagsJSON)
	var old []documentRow
	if err := imp.tx.Where("id = ? OR (namespace = ? AND key = ?)", d.ID, d.Namespace, d.Key).Find(&old).Error; err != nil {
		return rec.errorf("look up document %s: %w", d.ID, err)
	}
	for _, o := range old {
		if imp.docs[o.ID] {
			return rec.errorf("document %s has the namespace and key of document %s, earlier in the file", d.ID, o.ID)
		}
		if err := imp.remove(o); err != nil {
			return rec.errorf("replace document %s: %w", o.ID, err)
		}
	}
	if len(old) > 0 {
		imp.sum.Replaced++
	} else {
		imp.sum.New++
	}
	err = imp.tx.Exec(`INSERT INTO documents (id, source_id, namespace, key, title, tags, note_chunk_id, content_sha256, created_ms, updated_ms)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`, d.ID, d.SourceID, d.Namespace, d.Key, d.Title, d.Tags, d.NoteChunkID,
		d.ContentSHA256, d.CreatedMS, d.UpdatedMS).Error
	if err != nil {
		return rec.errorf("write document %s: %w", d.ID, err)
	}
	if d.NoteChunkID != nil {
		imp.notes = append(imp.notes, noteLink{docID: d.ID, chunkID: *d.NoteChunkID, line: imp.line})
	}
	imp.docs[d.ID] = true
	imp.sum.Counts.Documents++
	return nil
}

// remove deletes the document o that a document of the file replaces,
// with its chunks and what hangs off them, and its source when that is
// left empty and not in the file. Notes elsewhere on its chunks are
// remembered to be linked again.
func (imp *jsonlImport) remove(o documentRow) error {
	var notes []struct {
		ID          string `gorm:"column:id"`
		NoteChunkID string `gorm:"column:note_chunk_id"`
	}
	err := imp.tx.Raw(`SELECT id, note_chunk_id FROM documents WHERE id <> ? AND note_chunk_id IN (SELECT id FROM chunks WHERE document_id = ?)`,
		o.ID, o.ID).Scan(&notes).Error
	if err != nil {
		return fmt.Errorf("find its notes: %w", err)
	}
	for _, n := range notes {
		imp.relink = append(imp.relink, noteLink{docID: n.ID, chunkID: n.NoteChunkID})
	}
	if err := imp.tx.Exec(`DELETE FROM documents WHERE id = ?`, o.ID).Error; err != nil {
		return fmt.Errorf("delete it: %w", err)
	}
	if !imp.sources[o.SourceID] {
		err := imp.tx.Exec(`DELETE FROM sources WHERE id = ? AND NOT EXISTS (SELECT 1 FROM documents WHERE source_id = ?)`, o.SourceID, o.SourceID).Error
		if err != nil {
			return fmt.Errorf("delete its empty source: %w", err)
		}
	}
	return nil
}

func (imp *jsonlImport) chunk(rec *record) error {
	c := chunkRow{ID: rec.nonEmpty("id"), DocumentID: rec.nonEmpty("document_id"), Seq: rec.integer("seq"),
		Content: rec.str("content"), CreatedMS: rec.int64("created_ms"), UpdatedMS: rec.int64("updated_ms")}
	if err := rec.done(); err != nil {
		return err
	}
	if !imp.docs[c.DocumentID] {
		return rec.errorf("chunk %s belongs to document %s, which no earlier line of the file holds", c.ID, c.DocumentID)
	}
	if c.Seq < 0 {
		return rec.errorf("chunk %s has seq %d; seq counts from 0", c.ID, c.Seq)
	}
	if want := chunkID(c.DocumentID, c.Seq, c.Content); c.ID != want {
		return rec.errorf("chunk id %s does not match its document, seq and content (their id is %s): the content was changed", c.ID, want)
	}
	insert := `INSERT INTO chunks (id, document_id, seq, content, created_ms, updated_ms) VALUES (?, ?, ?, ?, ?, ?) RETURNING pk`
	if onPostgres(imp.tx) {
		// The writer numbers chunks on PostgreSQL (see insertChunks).
		insert = `INSERT INTO chunks (pk, id, document_id, seq, content, created_ms, updated_ms)
			VALUES ((SELECT coalesce(max(pk), 0) + 1 FROM chunks), ?, ?, ?, ?, ?, ?) RETURNING pk`
	}
	err := imp.tx.Raw(insert, c.ID, c.DocumentID, c.Seq, c.Content, c.CreatedMS, c.UpdatedMS).Scan(&c.PK).Error
	if err != nil {
		return rec.errorf("write chunk %s: %w", c.ID, err)
	}
	imp.pending = append(imp.pending, c)
	imp.sum.Counts.Chunks++
	if len(imp.pending) >= entityBatch {
		return imp.indexPending()
	}
	return nil
}

// indexPending extracts the entities of the chunks written since the last
// call.
func (imp *jsonlImport) indexPending() error {
	if len(imp.pending) == 0 {
		return nil
	}
	if err := indexEntities(imp.tx, imp.st.extractors, imp.pending); err != nil {
		return fmt.Errorf("line %d: %w", imp.line, err)
	}
	imp.pending = imp.pending[:0]
	return nil
}

// chunkOfFile returns the pk of chunk id, which must belong to a document
// of the file.
func (imp *jsonlImport) chunkOfFile(rec *record, id string) (int64, error) {
	var rows []chunkRow
	if err := imp.tx.Where("id = ?", id).Limit(1).Find(&rows).Error; err != nil {
		return 0, rec.errorf("look up chunk %s: %w", id, err)
	}
	if len(rows) == 0 || !imp.docs[rows[0].DocumentID] {
		return 0, rec.errorf("chunk %s is not on an earlier line of the file", id)
	}
	return rows[0].PK, nil
}

func (imp *jsonlImport) chunkTag(rec *record) error {
	id, tag, pos := rec.nonEmpty("chunk_id"), rec.nonEmpty("tag"), rec.integer("position")
	if err := rec.done(); err != nil {
		return err
	}
	if _, err := imp.chunkOfFile(rec, id); err != nil {
		return err
	}
	if err := imp.tx.Exec(`INSERT INTO chunk_tags (chunk_id, tag, position) VALUES (?, ?, ?)`, id, tag, pos).Error; err != nil {
		return rec.errorf("write tag %q of chunk %s: %w", tag, id, err)
	}
	imp.sum.Counts.ChunkTags++
	return nil
}

func (imp *jsonlImport) version(rec *record) error {
	docID, version, title, tags := rec.nonEmpty("document_id"), rec.integer("version"), rec.str("title"), rec.strs("tags")
	content, sha, updated, replaced := rec.str("content"), rec.nonEmpty("content_sha256"), rec.int64("updated_ms"), rec.int64("replaced_ms")
	if err := rec.done(); err != nil {
		return err
	}
	if !imp.docs[docID] {
		return rec.errorf("document %s is not on an earlier line of the file", docID)
	}
	if version < 1 {
		return rec.errorf("field %q must be at least 1, got %d", "version", version)
	}
	if tags == nil {
		tags = []string{}
	}
	tagsJSON, err := json.Marshal(tags)
	if err != nil {
		return rec.errorf("encode tags: %w", err)
	}
	err = imp.tx.Exec(`INSERT INTO document_versions (document_id, version, title, tags, content, content_sha256, updated_ms, replaced_ms)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?)`, docID, version, title, string(tagsJSON), content, sha, updated, replaced).Error
	if err != nil {
		return rec.errorf("write version %d of %s: %w", version, docID, err)
	}
	imp.sum.Counts.Versions++
	return nil
}

func (imp *jsonlImport) embedding(rec *record) error {
	id, model, dims, vec64, created := rec.nonEmpty("chunk_id"), rec.nonEmpty("model"), rec.integer("dims"), rec.str("vector"), rec.int64("created_ms")
	if err := rec.done(); err != nil {
		return err
	}
	vec, err := base64.StdEncoding.DecodeString(vec64)
	switch {
	case err != nil:
		return rec.errorf("vector of chunk %s is not base64: %w", id, err)
	case dims <= 0:
		return rec.errorf("dims of chunk %s is %d; it must be positive", id, dims)
	case len(vec) != 4*dims:
		return rec.errorf("vector of chunk %s holds %d bytes, not 4 × dims = %d", id, len(vec), 4*dims)
	}
	for i := 0; i < len(vec); i += 4 {
		if f := math.Float32frombits(binary.LittleEndian.Uint32(vec[i:])); math.IsNaN(float64(f)) || math.IsInf(float64(f), 0) {
			return rec.errorf("vector of chunk %s holds %v at index %d", id, f, i/4)
		}
	}
	pk, err := imp.chunkOfFile(rec, id)
	if err != nil {
		return err
	}
	err = imp.tx.Exec(`INSERT INTO chunk_embeddings (chunk_pk, model, dims, vector, created_ms) VALUES (?, ?, ?, ?, ?)`,
		pk, model, dims, vec, created).Error
	if err != nil {
		return rec.errorf("write the embedding of chunk %s: %w", id, err)
	}
	imp.sum.Counts.Embeddings++
	return nil
}

func (imp *jsonlImport) entity(rec *record) error {
	id, kind, surface := rec.nonEmpty("id"), rec.nonEmpty("kind"), rec.str("surface")
	first, last := rec.int64("first_seen_ms"), rec.int64("last_seen_ms")
	if err := rec.done(); err != nil {
		return err
	}
	if !strings.HasPrefix(id, kind+":") {
		return rec.errorf("entity id %s does not start with its kind %q and a colon", id, kind)
	}
	// An entity the chunks do not mention (this provider's extractors
	// differ) has no mentions and goes at the end; the earliest sighting
	// decides the surface form, as when chunks are written.
	greatest, least := "max", "min"
	if onPostgres(imp.tx) {
		greatest, least = "GREATEST", "LEAST"
	}
	err := imp.tx.Exec(`INSERT INTO entities (id, kind, surface, first_seen_ms, last_seen_ms) VALUES (?, ?, ?, ?, ?)
		ON CONFLICT (id) DO UPDATE SET
		surface = CASE WHEN excluded.first_seen_ms <= entities.first_seen_ms THEN excluded.surface ELSE entities.surface END,
		first_seen_ms = `+least+`(entities.first_seen_ms, excluded.first_seen_ms),
		last_seen_ms = `+greatest+`(entities.last_seen_ms, excluded.last_seen_ms)`, id, kind, surface, first, last).Error
	if err != nil {
		return rec.errorf("write entity %s: %w", id, err)
	}
	imp.sum.Counts.Entities++
	return nil
}

func (imp *jsonlImport) end(rec *record) error {
	var counts ExportCounts
	raw, ok := rec.fields["counts"]
	if !ok {
		return rec.errorf("missing field %q", "counts")
	}
	delete(rec.fields, "counts")
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&counts); err != nil {
		return rec.errorf("field %q: %w", "counts", err)
	}
	if err := rec.done(); err != nil {
		return err
	}
	got := imp.sum.Counts
	for _, c := range []struct {
		name      string
		want, got int
	}{
		{recSource, counts.Sources, got.Sources}, {recDocument, counts.Documents, got.Documents},
		{recChunk, counts.Chunks, got.Chunks}, {recChunkTag, counts.ChunkTags, got.ChunkTags},
		{recEmbedding, counts.Embeddings, got.Embeddings}, {recEntity, counts.Entities, got.Entities},
		{recVersion, counts.Versions, got.Versions},
	} {
		if c.want != c.got {
			return rec.errorf("the end record counts %d %s records, but the file holds %d: lines are missing or were added", c.want, c.name, c.got)
		}
	}
	return nil
}

// finish checks the note links, links notes outside the file again and
// drops entities nothing mentions.
func (imp *jsonlImport) finish() error {
	tx := imp.tx
	for _, n := range imp.notes {
		var found int64
		if err := tx.Raw(`SELECT COUNT(*) FROM chunks WHERE id = ?`, n.chunkID).Scan(&found).Error; err != nil {
			return fmt.Errorf("check note links: %w", err)
		}
		if found == 0 {
			return fmt.Errorf("line %d: document %s annotates chunk %s, which is neither in the file nor in memory", n.line, n.docID, n.chunkID)
		}
		// Replacing a document later in the file may have unlinked the
		// note (ON DELETE SET NULL) before its chunk came back.
		if err := tx.Exec(`UPDATE documents SET note_chunk_id = ? WHERE id = ?`, n.chunkID, n.docID).Error; err != nil {
			return fmt.Errorf("line %d: link note %s: %w", n.line, n.docID, err)
		}
	}
	for _, n := range imp.relink {
		if imp.docs[n.docID] {
			continue
		}
		res := tx.Exec(`UPDATE documents SET note_chunk_id = ? WHERE id = ? AND note_chunk_id IS NULL AND EXISTS (SELECT 1 FROM chunks WHERE id = ?)`,
			n.chunkID, n.docID, n.chunkID)
		if res.Error != nil {
			return fmt.Errorf("link note %s again: %w", n.docID, res.Error)
		}
		if res.RowsAffected == 0 {
			imp.sum.NotesUnlinked++
		}
	}
	if err := dropUnusedEntities(tx); err != nil {
		return err
	}
	if onPostgres(tx) {
		// PostgreSQL checks the deferred references now.
		if err := tx.Exec(`SET CONSTRAINTS ALL IMMEDIATE`).Error; err != nil {
			return fmt.Errorf("rows refer to rows that neither the file nor memory holds: %w", err)
		}
		return nil
	}
	var violations int64
	if err := tx.Raw(`SELECT COUNT(*) FROM pragma_foreign_key_check`).Scan(&violations).Error; err != nil {
		return fmt.Errorf("check references: %w", err)
	}
	if violations > 0 {
		return fmt.Errorf("%d rows refer to rows that neither the file nor memory holds", violations)
	}
	return nil
}

// record is one decoded line: its type and its other fields, which the
// typed getters take out one by one so that done can name those left
// over.
type record struct {
	line   int
	typ    string
	fields map[string]json.RawMessage
	err    error
}

// parseRecord decodes line number n as a JSON object with a string "type".
func parseRecord(n int, b []byte) (*record, error) {
	rec := &record{line: n}
	if err := json.Unmarshal(b, &rec.fields); err != nil || rec.fields == nil {
		if err == nil {
			err = errors.New("null")
		}
		return nil, fmt.Errorf("line %d is not a JSON object: %w", n, err)
	}
	raw, ok := rec.fields["type"]
	if !ok {
		return nil, fmt.Errorf("line %d has no \"type\" field", n)
	}
	if err := json.Unmarshal(raw, &rec.typ); err != nil || rec.typ == "" {
		return nil, fmt.Errorf("line %d: \"type\" must be a non-empty string, not %s", n, raw)
	}
	delete(rec.fields, "type")
	return rec, nil
}

// errorf returns an error naming the record's line and type.
func (r *record) errorf(format string, a ...any) error {
	return fmt.Errorf("line %d: %s record: "+format, append([]any{r.line, r.typ}, a...)...)
}

func (r *record) has(name string) bool { _, ok := r.fields[name]; return ok }

// get decodes the field name into dst, noting the first problem in r.err:
// a missing field, a null one unless nullable, or one of another type. It
// reports whether dst was set.
func (r *record) get(name string, dst any, nullable bool) bool {
	raw, ok := r.fields[name]
	if !ok {
		if r.err == nil {
			r.err = r.errorf("missing field %q", name)
		}
		return false
	}
	delete(r.fields, name)
	if string(bytes.TrimSpace(raw)) == "null" {
		if !nullable && r.err == nil {
			r.err = r.errorf("field %q is null", name)
		}
		return false
	}
	if err := json.Unmarshal(raw, dst); err != nil {
		if r.err == nil {
			var te *json.UnmarshalTypeError
			if errors.As(err, &te) {
				err = fmt.Errorf("must be %s, not %s", jsonTypeName(te.Type), te.Value)
			}
			r.err = r.errorf("field %q: %w", name, err)
		}
		return false
	}
	return true
}

// jsonTypeName names the JSON value a field of Go type t takes.
func jsonTypeName(t reflect.Type) string {
	switch t.Kind() {
	case reflect.String:
		return "a string"
	case reflect.Int, reflect.Int64:
		return "an integer"
	case reflect.Bool:
		return "true or false"
	case reflect.Slice:
		return "an array of strings"
	}
	return "a " + t.Kind().String()
}

func (r *record) str(name string) string {
	var s string
	r.get(name, &s, false)
	return s
}

func (r *record) nonEmpty(name string) string {
	s := r.str(name)
	if s == "" && r.err == nil {
		r.err = r.errorf("field %q is empty", name)
	}
	return s
}

func (r *record) nullableStr(name string) *string {
	var s string
	if r.get(name, &s, true) {
		return &s
	}
	return nil
}

func (r *record) int64(name string) int64 {
	var n int64
	r.get(name, &n, false)
	return n
}

func (r *record) integer(name string) int {
	var n int
	r.get(name, &n, false)
	return n
}

func (r *record) strs(name string) []string {
	s := []string{}
	r.get(name, &s, false)
	return s
}

// done returns the first problem found, or names the fields no getter
// took.
func (r *record) done() error {
	if r.err != nil {
		return r.err
	}
	if len(r.fields) > 0 {
		var names []string
		for k := range r.fields {
			names = append(names, fmt.Sprintf("%q", k))
		}
		slices.Sort(names)
		return r.errorf("unknown field %s", strings.Join(names, ", "))
	}
	return nil
}
