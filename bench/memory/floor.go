package main

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	// The driver the provider uses, through gorm; here through
	// database/sql, registered as "sqlite3".
	_ "github.com/mattn/go-sqlite3"
)

// floorBatch is the chunks one floor transaction writes, as many as an
// import batch of the provider at most.
const floorBatch = 512

// floorChunk is one chunk's text with its document's title.
type floorChunk struct {
	Title string
	Text  string
}

// floorResult is what the floor insert measured.
type floorResult struct {
	Chunks  int
	Elapsed time.Duration
	DBBytes int64
}

// floorLayout is how a floor database keeps the text.
type floorLayout int

const (
	// floorTextOnce keeps each chunk's text once, in the table, and
	// indexes it with an external-content FTS5 index over the table, as
	// the provider does since its schema version 4.
	floorTextOnce floorLayout = iota
	// floorTextTwice gives the FTS5 index its own copy of the text, as
	// the provider did before: the floor its import was measured against
	// until then.
	floorTextTwice
)

// floorInsert writes chunks into a new database at path with the least an
// FTS5-searchable store needs: one table of chunk texts and an FTS5 index
// (porter over unicode61, title and text) over them, laid out as layout
// says, in WAL mode, in transactions of floorBatch chunks. It is what an
// import cannot go below on the same driver: no hashing, no entities, no
// documents or sources, no snippets.
func floorInsert(ctx context.Context, path string, chunks []floorChunk, layout floorLayout) (floorResult, error) {
	db, err := sql.Open("sqlite3", "file:"+path+"?_journal_mode=WAL&_synchronous=NORMAL&_busy_timeout=5000")
	if err != nil {
		return floorResult{}, err
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	index := `CREATE VIRTUAL TABLE chunks_fts USING fts5 (title, content, content = 'chunks', content_rowid = 'pk',
		tokenize = 'porter unicode61 remove_diacritics 2')`
	if layout == floorTextTwice {
		index = `CREATE VIRTUAL TABLE chunks_fts USING fts5 (title, content, tokenize = 'porter unicode61 remove_diacritics 2')`
	}
	for _, stmt := range []string{`CREATE TABLE chunks (pk INTEGER PRIMARY KEY, title TEXT NOT NULL, content TEXT NOT NULL)`, index} {
		if _, err := db.ExecContext(ctx, stmt); err != nil {
			return floorResult{}, fmt.Errorf("floor: %w", err)
		}
	}
	start := time.Now()
	for i := 0; i < len(chunks); i += floorBatch {
		if err := floorTx(ctx, db, chunks[i:min(i+floorBatch, len(chunks))]); err != nil {
			return floorResult{}, err
		}
	}
	res := floorResult{Chunks: len(chunks), Elapsed: time.Since(start)}
	for _, suffix := range []string{"", "-wal"} {
		if info, err := os.Stat(path + suffix); err == nil {
			res.DBBytes += info.Size()
		}
	}
	return res, nil
}

// floorTx writes one batch in one transaction: each chunk into the table,
// then into the index (which, external or not, is given the values).
func floorTx(ctx context.Context, db *sql.DB, batch []floorChunk) error {
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	ins, err := tx.PrepareContext(ctx, `INSERT INTO chunks (title, content) VALUES (?, ?)`)
	if err != nil {
		return err
	}
	fts, err := tx.PrepareContext(ctx, `INSERT INTO chunks_fts (rowid, title, content) VALUES (?, ?, ?)`)
	if err != nil {
		return err
	}
	for _, c := range batch {
		r, err := ins.ExecContext(ctx, c.Title, c.Text)
		if err != nil {
			return fmt.Errorf("floor: %w", err)
		}
		pk, err := r.LastInsertId()
		if err != nil {
			return err
		}
		if _, err := fts.ExecContext(ctx, pk, c.Title, c.Text); err != nil {
			return fmt.Errorf("floor: %w", err)
		}
	}
	return tx.Commit()
}

// storedChunks reads back the title and text of every chunk of the
// documents under root that the provider stored in its database at dbPath
// (read-only): the floor inserts exactly the provider's chunks. It reads
// the provider's tables directly; if their shape changed, fallback gives
// the chunks instead.
func storedChunks(ctx context.Context, dbPath, root string, fallback func() []floorChunk) ([]floorChunk, error) {
	db, err := sql.Open("sqlite3", "file:"+dbPath+"?mode=ro&_busy_timeout=5000")
	if err != nil {
		return fallback(), nil
	}
	defer db.Close()
	prefix := "file:" + strings.TrimSuffix(root, string(filepath.Separator)) + string(filepath.Separator)
	rows, err := db.QueryContext(ctx, `SELECT d.title, c.content FROM chunks c JOIN documents d ON d.id = c.document_id
		WHERE substr(c.document_id, 1, ?) = ? ORDER BY c.document_id, c.seq`, len(prefix), prefix)
	if err != nil {
		return fallback(), nil
	}
	defer rows.Close()
	var out []floorChunk
	for rows.Next() {
		var c floorChunk
		if err := rows.Scan(&c.Title, &c.Text); err != nil {
			return fallback(), nil
		}
		out = append(out, c)
	}
	if rows.Err() != nil || len(out) == 0 {
		return fallback(), nil
	}
	return out, nil
}

// splitChunks cuts text at paragraph breaks into pieces of at most limit
// bytes (a paragraph longer than that is cut at limit): an approximation
// of the provider's chunker, used only when its chunks cannot be read.
func splitChunks(text string, limit int) []string {
	var out []string
	var cur strings.Builder
	for _, p := range strings.SplitAfter(text, "\n\n") {
		for len(p) > limit {
			if cur.Len() > 0 {
				out = append(out, cur.String())
				cur.Reset()
			}
			out = append(out, p[:limit])
			p = p[limit:]
		}
		if cur.Len() > 0 && cur.Len()+len(p) > limit {
			out = append(out, cur.String())
			cur.Reset()
		}
		cur.WriteString(p)
	}
	if strings.TrimSpace(cur.String()) != "" {
		out = append(out, cur.String())
	}
	return out
}
