package memory

import (
	"bufio"
	"context"
	"database/sql"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/openhuman/openhuman-host/sdk/storage/sqliteuri"
)

const (
	// JSONLFormat is the "format" field of the header line of every
	// export [Provider.Export] writes.
	JSONLFormat = "openhuman-host-memory"
	// JSONLVersion is the export format version [Provider.Export] writes
	// and the newest [Provider.ImportJSONL] reads. It goes up when a
	// record type or field changes meaning; readers refuse newer versions.
	JSONLVersion = 2
	// DefaultMaxJSONLLine is the longest line, in bytes without the line
	// break, [Provider.ImportJSONL] accepts unless told otherwise: 64 MiB,
	// far above the longest line an export holds (a chunk is at most
	// 2,000 characters, an embedding a few tens of KiB).
	DefaultMaxJSONLLine = 64 << 20
)

// The record types of an export, the "type" field of each line.
const (
	recHeader    = "header"
	recSource    = "source"
	recDocument  = "document"
	recChunk     = "chunk"
	recChunkTag  = "chunk_tag"
	recEmbedding = "embedding"
	recEntity    = "entity"
	recVersion   = "version"
	recEnd       = "end"
)

// ExportOptions configures [Provider.Export]. A nil *ExportOptions exports
// every namespace without embeddings.
type ExportOptions struct {
	// Namespaces limits the export to the documents of these namespaces
	// (exact names), with their sources, chunks, chunk tags, embeddings
	// and entities. Empty (the default) exports every namespace and every
	// source, including sources without documents.
	Namespaces []string
	// Embeddings adds one embedding record per chunk that has a vector.
	// Default false: vectors are large and can be computed again by the
	// backfill once the importing server has an embeddings endpoint.
	Embeddings bool
}

// ExportCounts counts the records of an export by type; its JSON form is
// the "counts" object of the end line.
type ExportCounts struct {
	Sources    int `json:"source"`
	Documents  int `json:"document"`
	Chunks     int `json:"chunk"`
	ChunkTags  int `json:"chunk_tag"`
	Embeddings int `json:"embedding"`
	Entities   int `json:"entity"`
	// Versions counts the previous versions of documents
	// (document_versions) exported.
	Versions int `json:"version"`
}

// ExportSummary says what [Provider.Export] wrote.
type ExportSummary struct {
	// Counts counts the records written by type (header and end lines
	// excluded).
	Counts ExportCounts
	// Bytes is the size of the export in bytes.
	Bytes int64
	// SchemaVersion is the schema version of the database exported.
	SchemaVersion int
	// ExportedMS is the export's time in Unix milliseconds, as in its
	// header.
	ExportedMS int64
}

// headerRecord is the first line of an export.
type headerRecord struct {
	Type          string   `json:"type"`
	Format        string   `json:"format"`
	Version       int      `json:"version"`
	SchemaVersion int      `json:"schema_version"`
	ExportedMS    int64    `json:"exported_ms"`
	Namespaces    []string `json:"namespaces,omitempty"`
	Embeddings    bool     `json:"embeddings"`
}

type sourceRecord struct {
	Type        string `json:"type"`
	ID          string `json:"id"`
	Kind        string `json:"kind"`
	DisplayName string `json:"display_name"`
	CreatedMS   int64  `json:"created_ms"`
	UpdatedMS   int64  `json:"updated_ms"`
}

type documentRecord struct {
	Type          string   `json:"type"`
	ID            string   `json:"id"`
	SourceID      string   `json:"source_id"`
	Namespace     string   `json:"namespace"`
	Key           string   `json:"key"`
	Title         string   `json:"title"`
	Tags          []string `json:"tags"`
	NoteChunkID   *string  `json:"note_chunk_id"`
	ContentSHA256 string   `json:"content_sha256"`
	CreatedMS     int64    `json:"created_ms"`
	UpdatedMS     int64    `json:"updated_ms"`
}

type chunkRecord struct {
	Type       string `json:"type"`
	ID         string `json:"id"`
	DocumentID string `json:"document_id"`
	Seq        int    `json:"seq"`
	Content    string `json:"content"`
	CreatedMS  int64  `json:"created_ms"`
	UpdatedMS  int64  `json:"updated_ms"`
}

type chunkTagRecord struct {
	Type     string `json:"type"`
	ChunkID  string `json:"chunk_id"`
	Tag      string `json:"tag"`
	Position int    `json:"position"`
}

type embeddingRecord struct {
	Type      string `json:"type"`
	ChunkID   string `json:"chunk_id"`
	Model     string `json:"model"`
	Dims      int    `json:"dims"`
	Vector    string `json:"vector"`
	CreatedMS int64  `json:"created_ms"`
}

type entityRecord struct {
	Type        string `json:"type"`
	ID          string `json:"id"`
	Kind        string `json:"kind"`
	Surface     string `json:"surface"`
	FirstSeenMS int64  `json:"first_seen_ms"`
	LastSeenMS  int64  `json:"last_seen_ms"`
}

type versionRecord struct {
	Type          string   `json:"type"`
	DocumentID    string   `json:"document_id"`
	Version       int      `json:"version"`
	Title         string   `json:"title"`
	Tags          []string `json:"tags"`
	Content       string   `json:"content"`
	ContentSHA256 string   `json:"content_sha256"`
	UpdatedMS     int64    `json:"updated_ms"`
	ReplacedMS    int64    `json:"replaced_ms"`
}

type endRecord struct {
	Type   string       `json:"type"`
	Counts ExportCounts `json:"counts"`
}

// configuredStore returns the open store, or an error before Configure
// and after Close.
func (p *Provider) configuredStore() (*store, error) {
	p.mu.Lock()
	st := p.store
	p.mu.Unlock()
	if st == nil {
		return nil, errors.New("memory provider is not configured")
	}
	return st, nil
}

// readSnapshot runs fn in one read transaction on a read-only connection
// of its own to the store's database, so that everything fn reads is one
// consistent snapshot while other connections (a server) go on writing,
// and no writer waits for it: in WAL mode a reader holds no lock writers
// need. The store's pool cannot do this: its connections take the write
// lock at BEGIN.
func readSnapshot(ctx context.Context, st *store, fn func(tx *snapshot) error) error {
	if st.postgres {
		return readSnapshotPostgres(ctx, st, fn)
	}
	db, err := sql.Open("sqlite3", sqliteuri.File(st.path, fmt.Sprintf("mode=ro&_txlock=deferred&_busy_timeout=%d", busyTimeoutMS)))
	if err != nil {
		return fmt.Errorf("open %s for reading: %w", st.path, err)
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	tx, err := db.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return fmt.Errorf("begin a read transaction on %s: %w", st.path, err)
	}
	defer func() { _ = tx.Rollback() }()
	return fn(&snapshot{Tx: tx})
}

// namespaceFilter returns an SQL condition on col restricting it to
// namespaces, with its arguments; no namespaces means no restriction.
func namespaceFilter(col string, namespaces []string) (string, []any) {
	if len(namespaces) == 0 {
		return "1 = 1", nil
	}
	args := make([]any, len(namespaces))
	for i, ns := range namespaces {
		args[i] = ns
	}
	return col + " IN (" + strings.TrimSuffix(strings.Repeat("?, ", len(namespaces)), ", ") + ")", args
}

// eachRow runs query in tx and calls fn on every row, stopping at the
// first error; what names the rows in errors.
func eachRow(ctx context.Context, tx *snapshot, what, query string, args []any, fn func(rows *sql.Rows) error) error {
	rows, err := tx.QueryContext(ctx, query, args...)
	if err != nil {
		return fmt.Errorf("read %s: %w", what, err)
	}
	defer rows.Close()
	for rows.Next() {
		if err := fn(rows); err != nil {
			return err
		}
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("read %s: %w", what, err)
	}
	return nil
}

// countingWriter counts the bytes written through it.
type countingWriter struct {
	w io.Writer
	n int64
}

func (c *countingWriter) Write(b []byte) (int, error) {
	n, err := c.w.Write(b)
	c.n += int64(n)
	return n, err
}

// Export writes what memory holds to w as JSON Lines (UTF-8, one JSON
// object per line, each ending in "\n"), the format docs/memory.md
// describes field by field:
//
//   - a header line {"type":"header","format":"openhuman-host-memory",
//     "version":1,"schema_version":N,"exported_ms":T,...};
//   - every source, then every document (ordered by namespace and key),
//     every chunk (in the same document order, then by seq), every chunk
//     tag, with opts.Embeddings every embedding (vector as base64 of
//     little-endian float32), and every entity mentioned by an exported
//     chunk, each line with its "type": source, document, chunk,
//     chunk_tag, embedding or entity;
//   - an end line {"type":"end","counts":{...}} with the number of
//     records of each type, so a reader detects a file cut short.
//
// Entities are exported without their counters, which are derived from
// the chunks: [Provider.ImportJSONL] extracts every chunk's entities
// again and takes from the entity records what extraction cannot know
// (when an entity was first and last seen, and its first surface form).
//
// Everything is read in one read transaction, a consistent snapshot, so
// Export may run while a server writes; writers do not wait for it. It
// returns an error when the provider is not configured, ctx ends, the
// database cannot be read, or w fails; what was written to w by then is
// incomplete (it lacks its end line).
func (p *Provider) Export(ctx context.Context, w io.Writer, opts *ExportOptions) (ExportSummary, error) {
	var o ExportOptions
	if opts != nil {
		o = *opts
	}
	st, err := p.configuredStore()
	if err != nil {
		return ExportSummary{}, err
	}
	cw := &countingWriter{w: w}
	bw := bufio.NewWriterSize(cw, 64<<10)
	enc := json.NewEncoder(bw)
	enc.SetEscapeHTML(false)
	sum := ExportSummary{ExportedMS: p.now().UnixMilli()}
	err = readSnapshot(ctx, st, func(tx *snapshot) error {
		if st.postgres {
			// The rows are those of memory.db's newest schema.
			sum.SchemaVersion = schemaVersion()
		} else if err := tx.QueryRowContext(ctx, `SELECT COALESCE(MAX(version), 0) FROM schema_migrations`).Scan(&sum.SchemaVersion); err != nil {
			return fmt.Errorf("read the schema version: %w", err)
		}
		put := func(v any) error {
			if err := enc.Encode(v); err != nil {
				return fmt.Errorf("write the export: %w", err)
			}
			return nil
		}
		if err := put(headerRecord{Type: recHeader, Format: JSONLFormat, Version: JSONLVersion, SchemaVersion: sum.SchemaVersion,
			ExportedMS: sum.ExportedMS, Namespaces: o.Namespaces, Embeddings: o.Embeddings}); err != nil {
			return err
		}
		return exportRecords(ctx, tx, o, &sum.Counts, put)
	})
	if err == nil {
		err = enc.Encode(endRecord{Type: recEnd, Counts: sum.Counts})
		if err == nil {
			err = bw.Flush()
		}
		if err != nil {
			err = fmt.Errorf("write the export: %w", err)
		}
	}
	sum.Bytes = cw.n
	if err != nil {
		return sum, fmt.Errorf("memory export: %w", err)
	}
	p.logger.Info("exported memory", "documents", sum.Counts.Documents, "chunks", sum.Counts.Chunks, "bytes", sum.Bytes)
	return sum, nil
}

// exportRecords writes every record of the snapshot tx that opts select
// with put, counting them in counts.
func exportRecords(ctx context.Context, tx *snapshot, o ExportOptions, counts *ExportCounts, put func(any) error) error {
	docFilter, args := namespaceFilter("d.namespace", o.Namespaces)
	srcFilter := "1 = 1"
	if len(o.Namespaces) > 0 {
		srcFilter = `s.id IN (SELECT d.source_id FROM documents d WHERE ` + docFilter + `)`
	}
	err := eachRow(ctx, tx, "sources", `SELECT s.id, s.kind, s.display_name, s.created_ms, s.updated_ms FROM sources s WHERE `+
		srcFilter+` ORDER BY s.id`, args, func(rows *sql.Rows) error {
		r := sourceRecord{Type: recSource}
		if err := rows.Scan(&r.ID, &r.Kind, &r.DisplayName, &r.CreatedMS, &r.UpdatedMS); err != nil {
			return fmt.Errorf("read sources: %w", err)
		}
		counts.Sources++
		return put(r)
	})
	if err != nil {
		return err
	}
	err = eachRow(ctx, tx, "documents", `SELECT d.id, d.source_id, d.namespace, d.key, d.title, d.tags, d.note_chunk_id, d.content_sha256,
		d.created_ms, d.updated_ms FROM documents d WHERE `+docFilter+` ORDER BY d.namespace, d.key`, args, func(rows *sql.Rows) error {
		r := documentRecord{Type: recDocument}
		var tags string
		if err := rows.Scan(&r.ID, &r.SourceID, &r.Namespace, &r.Key, &r.Title, &tags, &r.NoteChunkID, &r.ContentSHA256, &r.CreatedMS, &r.UpdatedMS); err != nil {
			return fmt.Errorf("read documents: %w", err)
		}
		if err := json.Unmarshal([]byte(tags), &r.Tags); err != nil || r.Tags == nil {
			return fmt.Errorf("document %s: its tags %q are not a JSON array of strings", r.ID, tags)
		}
		counts.Documents++
		return put(r)
	})
	if err != nil {
		return err
	}
	order := ` ORDER BY d.namespace, d.key, c.seq`
	err = eachRow(ctx, tx, "chunks", `SELECT c.id, c.document_id, c.seq, c.content, c.created_ms, c.updated_ms
		FROM chunks c JOIN documents d ON d.id = c.document_id WHERE `+docFilter+order, args, func(rows *sql.Rows) error {
		r := chunkRecord{Type: recChunk}
		if err := rows.Scan(&r.ID, &r.DocumentID, &r.Seq, &r.Content, &r.CreatedMS, &r.UpdatedMS); err != nil {
			return fmt.Errorf("read chunks: %w", err)
		}
		counts.Chunks++
		return put(r)
	})
	if err != nil {
		return err
	}
	err = eachRow(ctx, tx, "chunk tags", `SELECT t.chunk_id, t.tag, t.position FROM chunk_tags t
		JOIN chunks c ON c.id = t.chunk_id JOIN documents d ON d.id = c.document_id WHERE `+docFilter+order+`, t.position, t.tag`,
		args, func(rows *sql.Rows) error {
			r := chunkTagRecord{Type: recChunkTag}
			if err := rows.Scan(&r.ChunkID, &r.Tag, &r.Position); err != nil {
				return fmt.Errorf("read chunk tags: %w", err)
			}
			counts.ChunkTags++
			return put(r)
		})
	if err != nil {
		return err
	}
	err = eachRow(ctx, tx, "document versions", `SELECT v.document_id, v.version, v.title, v.tags, v.content, v.content_sha256, v.updated_ms, v.replaced_ms
		FROM document_versions v JOIN documents d ON d.id = v.document_id WHERE `+docFilter+` ORDER BY d.namespace, d.key, v.version`,
		args, func(rows *sql.Rows) error {
			r := versionRecord{Type: recVersion}
			var tags string
			if err := rows.Scan(&r.DocumentID, &r.Version, &r.Title, &tags, &r.Content, &r.ContentSHA256, &r.UpdatedMS, &r.ReplacedMS); err != nil {
				return fmt.Errorf("read document versions: %w", err)
			}
			if err := json.Unmarshal([]byte(tags), &r.Tags); err != nil || r.Tags == nil {
				return fmt.Errorf("version %d of %s: its tags %q are not a JSON array of strings", r.Version, r.DocumentID, tags)
			}
			counts.Versions++
			return put(r)
		})
	if err != nil {
		return err
	}
	if o.Embeddings {
		err = eachRow(ctx, tx, "embeddings", `SELECT c.id, e.model, e.dims, e.vector, e.created_ms FROM chunk_embeddings e
			JOIN chunks c ON c.pk = e.chunk_pk JOIN documents d ON d.id = c.document_id WHERE `+docFilter+order, args, func(rows *sql.Rows) error {
			r := embeddingRecord{Type: recEmbedding}
			var vec []byte
			if err := rows.Scan(&r.ChunkID, &r.Model, &r.Dims, &vec, &r.CreatedMS); err != nil {
				return fmt.Errorf("read embeddings: %w", err)
			}
			r.Vector = base64.StdEncoding.EncodeToString(vec)
			counts.Embeddings++
			return put(r)
		})
		if err != nil {
			return err
		}
	}
	entFilter := "1 = 1"
	if len(o.Namespaces) > 0 {
		entFilter = `e.id IN (SELECT ce.entity_id FROM chunk_entities ce JOIN chunks c ON c.pk = ce.chunk_pk
			JOIN documents d ON d.id = c.document_id WHERE ` + docFilter + `)`
	}
	return eachRow(ctx, tx, "entities", `SELECT e.id, e.kind, e.surface, e.first_seen_ms, e.last_seen_ms FROM entities e
		WHERE e.mention_count > 0 AND `+entFilter+` ORDER BY e.id`, args, func(rows *sql.Rows) error {
		r := entityRecord{Type: recEntity}
		if err := rows.Scan(&r.ID, &r.Kind, &r.Surface, &r.FirstSeenMS, &r.LastSeenMS); err != nil {
			return fmt.Errorf("read entities: %w", err)
		}
		counts.Entities++
		return put(r)
	})
}
