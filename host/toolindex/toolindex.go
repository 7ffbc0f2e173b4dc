// Package toolindex ranks a catalog's tools against a request in plain
// words, for clients that discover tools by searching instead of reading
// the whole list (progressive discovery). It keeps an in-memory SQLite
// FTS5 index, the engine the memory provider searches with, over each
// tool's name, title, description and argument names and descriptions,
// and ranks with FTS5's BM25, the name weighing most. It needs SQLite
// built with FTS5 (the sqlite_fts5 build tag); without it [New] fails.
package toolindex

import (
	"cmp"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"slices"
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
	// Score is its relevance, higher is better: BM25 from [Index.Search];
	// only the order of scores within one search means anything.
	Score float64
}

// Index is an immutable index of one catalog. Its methods are safe for
// concurrent use.
type Index struct {
	db *sql.DB
}

// Column weights of bm25(): name, title, summary, description, arguments.
const weights = "8.0, 4.0, 3.0, 1.0, 2.0"

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
	if _, err := db.ExecContext(ctx, `CREATE VIRTUAL TABLE tools USING fts5(name, title, summary, description, args, tokenize = 'porter unicode61 remove_diacritics 2')`); err != nil {
		return fail(fmt.Errorf("toolindex: create the index (SQLite must be built with FTS5, the sqlite_fts5 tag): %w", err))
	}
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return fail(fmt.Errorf("toolindex: %w", err))
	}
	stmt, err := tx.PrepareContext(ctx, "INSERT INTO tools (name, title, summary, description, args) VALUES (?, ?, ?, ?, ?)")
	if err != nil {
		_ = tx.Rollback()
		return fail(fmt.Errorf("toolindex: %w", err))
	}
	for _, t := range tools {
		if _, err := stmt.ExecContext(ctx, t.Name, t.Title, summaryOf(t.Description), t.Description, argumentText(t.InputSchema)); err != nil {
			_ = tx.Rollback()
			return fail(fmt.Errorf("toolindex: index %s: %w", t.Name, err))
		}
	}
	if err := tx.Commit(); err != nil {
		return fail(fmt.Errorf("toolindex: %w", err))
	}
	return &Index{db: db}, nil
}

// summaryOf is a description's first sentence, which says what the tool
// does: the text up to the first full stop, question or exclamation mark
// followed by a space, or the first line break, whichever comes first.
func summaryOf(description string) string {
	end := len(description)
	if i := strings.IndexAny(description, "\n"); i >= 0 {
		end = i
	}
	for _, stop := range []string{". ", "? ", "! "} {
		if i := strings.Index(description[:end], stop); i >= 0 {
			end = i + 1
		}
	}
	return description[:end]
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

// expansionWeight is how much the verbs a task's words stand for count,
// next to the words themselves.
const expansionWeight = 0.8

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
	// The task's own words rank first; the tool-name verbs they stand
	// for add expansionWeight as much, so "open a bug report" finds
	// create_issue without outranking a tool named by the task's nouns.
	scores := map[string]float64{}
	if err := ix.score(ctx, words, 1, scores); err != nil {
		return nil, err
	}
	if extra := expand(words)[len(words):]; len(extra) > 0 {
		if err := ix.score(ctx, extra, expansionWeight, scores); err != nil {
			return nil, err
		}
	}
	return Best(scores, k, keep), nil
}

// Best returns up to k of the tools in scores (name to score, higher is
// better) that keep accepts (nil keeps all), best first; equal scores go
// by name. A k below 1 returns none.
func Best(scores map[string]float64, k int, keep func(name string) bool) []Hit {
	hits := make([]Hit, 0, len(scores))
	for name, sc := range scores {
		if keep == nil || keep(name) {
			hits = append(hits, Hit{Name: name, Score: sc})
		}
	}
	slices.SortFunc(hits, func(a, b Hit) int {
		return cmp.Or(cmp.Compare(b.Score, a.Score), strings.Compare(a.Name, b.Name))
	})
	return hits[:min(max(k, 0), len(hits))]
}

// score adds weight times the BM25 score of every tool matching any of
// words to scores, for the best maxScan tools.
func (ix *Index) score(ctx context.Context, words []string, weight float64, scores map[string]float64) error {
	quoted := make([]string, len(words))
	for i, w := range words {
		quoted[i] = `"` + w + `"`
	}
	rows, err := ix.db.QueryContext(ctx,
		"SELECT name, -bm25(tools, "+weights+") FROM tools WHERE tools MATCH ? ORDER BY bm25(tools, "+weights+") LIMIT ?",
		strings.Join(quoted, " OR "), maxScan)
	if err != nil {
		return fmt.Errorf("toolindex: search: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var name string
		var sc float64
		if err := rows.Scan(&name, &sc); err != nil {
			return fmt.Errorf("toolindex: search: %w", err)
		}
		scores[name] += weight * sc
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("toolindex: search: %w", err)
	}
	return nil
}

// Words returns the words of query Search looks for, lower-cased, each
// once, in order.
func Words(query string) []string {
	var out []string
	seen := map[string]bool{}
	for _, w := range strings.FieldsFunc(strings.ToLower(query), func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) }) {
		if skip[w] || seen[w] || strings.IndexFunc(w, unicode.IsLetter) < 0 {
			// Numbers (times, amounts) rarely say which tool is wanted.
			continue
		}
		seen[w] = true
		out = append(out, w)
	}
	return out
}

// verbs maps the ways a task says what to do with something to the verbs
// tool names use for it (create, get, list, update, delete, search, send):
// a task says "open a bug report" or "schedule a meeting", a tool is named
// create_issue or create_event.
var verbs = map[string][]string{
	"create": {"add", "new", "make", "open", "start", "schedule", "book", "post", "write", "send", "file", "register", "upload", "submit", "save", "store", "remember", "record", "share"},
	"get":    {"show", "read", "fetch", "download", "view", "display", "check", "see", "retrieve", "inspect"},
	"list":   {"all", "every", "enumerate", "browse"},
	"update": {"edit", "change", "modify", "rename", "move", "reply", "set", "scale", "assign", "close", "resolve"},
	"delete": {"remove", "drop", "cancel", "erase", "destroy", "forget", "purge"},
	"search": {"find", "look", "lookup", "query", "locate", "discover", "which"},
	"send":   {"text", "message", "notify", "email", "mail"},
}

// verbOf inverts verbs: each way of saying it to the verbs it stands for.
var verbOf = func() map[string][]string {
	m := map[string][]string{}
	for verb, ways := range verbs {
		for _, w := range ways {
			m[w] = append(m[w], verb)
		}
	}
	return m
}()

// expand adds to words the tool-name verbs their action words stand for.
func expand(words []string) []string {
	out := slices.Clone(words)
	for _, w := range words {
		for _, v := range verbOf[w] {
			if !slices.Contains(out, v) {
				out = append(out, v)
			}
		}
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
