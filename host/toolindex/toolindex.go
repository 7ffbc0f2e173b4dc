// Package toolindex ranks a catalog's tools against a request in plain
// words, for clients that discover tools by searching instead of reading
// the whole list (progressive discovery). It keeps an in-memory SQLite
// FTS5 index, the engine the memory provider searches with, over each
// tool's name, title, description and argument names and descriptions,
// and ranks with FTS5's BM25, the name weighing most. It needs SQLite
// built with FTS5 (the sqlite_fts5 build tag); without it [New] fails.
package toolindex

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"strings"
	"unicode"

	// The SQLite driver ("sqlite3").
	_ "github.com/mattn/go-sqlite3"
)

// Tool is what the index knows of one tool.
type Tool struct {
	// Name is the tool's advertised name.
	Name string
	// Title and Description are what clients are told about it.
	Title, Description string
	// InputSchema is its JSON Schema; the names and descriptions of its
	// top-level properties are indexed.
	InputSchema json.RawMessage
}

// Hit is one ranked tool.
type Hit struct {
	// Name is the tool's name.
	Name string
	// Score is its BM25 relevance, higher is better; only the order of
	// scores within one search means anything.
	Score float64
}

// Index is an immutable index of one catalog. Its methods are safe for
// concurrent use.
type Index struct {
	db *sql.DB
}

// Column weights of bm25(): name, title, description, arguments.
const weights = "8.0, 4.0, 1.0, 2.0"

// New indexes tools. It fails when SQLite lacks FTS5.
func New(ctx context.Context, tools []Tool) (*Index, error) {
	db, err := sql.Open("sqlite3", ":memory:")
	if err != nil {
		return nil, fmt.Errorf("toolindex: open: %w", err)
	}
	// One connection holds the in-memory database.
	db.SetMaxOpenConns(1)
	db.SetConnMaxLifetime(0)
	db.SetConnMaxIdleTime(0)
	fail := func(err error) (*Index, error) {
		_ = db.Close()
		return nil, err
	}
	if _, err := db.ExecContext(ctx, `CREATE VIRTUAL TABLE tools USING fts5(name, title, description, args, tokenize = 'unicode61 remove_diacritics 2')`); err != nil {
		return fail(fmt.Errorf("toolindex: create the index (SQLite must be built with FTS5, the sqlite_fts5 tag): %w", err))
	}
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return fail(fmt.Errorf("toolindex: %w", err))
	}
	stmt, err := tx.PrepareContext(ctx, "INSERT INTO tools (name, title, description, args) VALUES (?, ?, ?, ?)")
	if err != nil {
		_ = tx.Rollback()
		return fail(fmt.Errorf("toolindex: %w", err))
	}
	for _, t := range tools {
		if _, err := stmt.ExecContext(ctx, t.Name, t.Title, t.Description, argumentText(t.InputSchema)); err != nil {
			_ = tx.Rollback()
			return fail(fmt.Errorf("toolindex: index %s: %w", t.Name, err))
		}
	}
	if err := tx.Commit(); err != nil {
		return fail(fmt.Errorf("toolindex: %w", err))
	}
	return &Index{db: db}, nil
}

// argumentText is the names and descriptions of a schema's top-level
// properties, one per line.
func argumentText(schema json.RawMessage) string {
	var s struct {
		Properties map[string]struct {
			Description string `json:"description"`
		} `json:"properties"`
	}
	if json.Unmarshal(schema, &s) != nil {
		return ""
	}
	var b strings.Builder
	for name, p := range s.Properties {
		fmt.Fprintf(&b, "%s %s\n", name, p.Description)
	}
	return b.String()
}

// Close releases the index.
func (ix *Index) Close() error { return ix.db.Close() }

// maxScan bounds the ranked rows Search reads before keep filters them.
const maxScan = 500

// Search returns up to k tools that match any word of query, best first,
// among those keep accepts (nil keeps all). Words are runs of letters and
// digits; common English function words and words such as "tool" are
// left out. A query with no word left matches nothing.
func (ix *Index) Search(ctx context.Context, query string, k int, keep func(name string) bool) ([]Hit, error) {
	words := Words(query)
	if len(words) == 0 || k <= 0 {
		return nil, nil
	}
	quoted := make([]string, len(words))
	for i, w := range words {
		quoted[i] = `"` + w + `"`
	}
	rows, err := ix.db.QueryContext(ctx,
		"SELECT name, -bm25(tools, "+weights+") FROM tools WHERE tools MATCH ? ORDER BY bm25(tools, "+weights+") LIMIT ?",
		strings.Join(quoted, " OR "), maxScan)
	if err != nil {
		return nil, fmt.Errorf("toolindex: search: %w", err)
	}
	defer rows.Close()
	var hits []Hit
	for rows.Next() && len(hits) < k {
		var h Hit
		if err := rows.Scan(&h.Name, &h.Score); err != nil {
			return nil, fmt.Errorf("toolindex: search: %w", err)
		}
		if keep == nil || keep(h.Name) {
			hits = append(hits, h)
		}
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("toolindex: search: %w", err)
	}
	return hits, nil
}

// Words returns the words of query Search looks for, lower-cased, each
// once, in order.
func Words(query string) []string {
	var out []string
	seen := map[string]bool{}
	for _, w := range strings.FieldsFunc(strings.ToLower(query), func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) }) {
		if skip[w] || seen[w] {
			continue
		}
		seen[w] = true
		out = append(out, w)
	}
	return out
}

// skip are words that say nothing about which tool is wanted.
var skip = func() map[string]bool {
	m := map[string]bool{}
	for _, w := range strings.Fields(`a an the and or of to in on at for from with by about into as is are was were be
		it its this that these those i me my we our you your he she they them please can could would should will
		do does did how what which who whom when where why some any all there here want need like
		tool tools use using call`) {
		m[w] = true
	}
	return m
}()
