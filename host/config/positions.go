package config

import (
	"bytes"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/pelletier/go-toml/v2/unstable"
)

// positions maps the key paths of a TOML document to where they appear, so
// that errors found after decoding can name a line. Paths are built by
// joinKey and index: "providers.example.args[1]", "upstream.servers[0]".
type positions struct {
	// paths holds the first appearance of every key path, including tables
	// that are only implied by a dotted key or a sub-table header.
	paths map[string]position
	// lines holds the key path defined on each line.
	lines map[int]string
	// tables lists the table headers in document order.
	tables []header
	// newlines holds the offset of every '\n' in the document.
	newlines []int
}

type position struct {
	line  int
	kind  unstable.Kind
	parts []string // the unquoted key parts; array indexes are left out
}

type header struct {
	line int
	path string
}

// indexPositions parses data with go-toml's AST parser. A syntax error ends
// the index early; the decoder reports it.
func indexPositions(data []byte) *positions {
	ix := &positions{paths: map[string]position{}, lines: map[int]string{}}
	for i, b := range data {
		if b == '\n' {
			ix.newlines = append(ix.newlines, i)
		}
	}
	var p unstable.Parser
	p.Reset(data)
	arrays := map[string]int{} // array-of-tables path → entries seen so far
	table, tableParts := "", []string(nil)
	for p.NextExpression() {
		e := p.Expression()
		switch e.Kind {
		case unstable.Table, unstable.ArrayTable:
			parts, line := ix.key(e.Key())
			path := ""
			for i, part := range parts {
				path = joinKey(path, part)
				if i == len(parts)-1 && e.Kind == unstable.ArrayTable {
					ix.add(path, parts, line, unstable.Array)
					n := arrays[path]
					arrays[path] = n + 1
					path = index(path, n)
				} else if n, ok := arrays[path]; ok {
					// [a.b] after [[a]] extends the last entry of a.
					path = index(path, n-1)
				}
				ix.add(path, parts[:i+1], line, unstable.Table)
			}
			ix.setLine(line, path)
			ix.tables = append(ix.tables, header{line: line, path: path})
			table, tableParts = path, parts
		case unstable.KeyValue:
			ix.keyValue(table, tableParts, e)
		}
	}
	return ix
}

func (ix *positions) keyValue(prefix string, prefixParts []string, kv *unstable.Node) {
	parts, line := ix.key(kv.Key())
	path := prefix
	full := slices.Clip(prefixParts)
	for i, part := range parts {
		path = joinKey(path, part)
		full = append(slices.Clip(full), part)
		kind := unstable.Table
		if i == len(parts)-1 {
			kind = kv.Value().Kind
		}
		ix.add(path, full, line, kind)
	}
	ix.setLine(line, path)
	ix.value(path, full, kv.Value(), line)
}

// value indexes the entries of inline tables and arrays; line is where the
// value's key is, used for elements that carry no position of their own.
func (ix *positions) value(path string, parts []string, v *unstable.Node, line int) {
	switch v.Kind {
	case unstable.InlineTable:
		it := v.Children()
		for it.Next() {
			if n := it.Node(); n.Kind == unstable.KeyValue {
				ix.keyValue(path, parts, n)
			}
		}
	case unstable.Array:
		i := 0
		it := v.Children()
		for it.Next() {
			n := it.Node()
			if n.Kind == unstable.Comment {
				continue
			}
			l := line
			if n.Raw.Length > 0 {
				l = ix.lineAt(int(n.Raw.Offset))
			}
			p := index(path, i)
			ix.add(p, parts, l, n.Kind)
			ix.value(p, parts, n, l)
			i++
		}
	}
}

// key returns the parts of a (possibly dotted) key and the line it starts on.
func (ix *positions) key(it unstable.Iterator) ([]string, int) {
	var parts []string
	line := 0
	for it.Next() {
		n := it.Node()
		if line == 0 {
			line = ix.lineAt(int(n.Raw.Offset))
		}
		parts = append(parts, string(n.Data))
	}
	return parts, line
}

func (ix *positions) add(path string, parts []string, line int, kind unstable.Kind) {
	if _, ok := ix.paths[path]; !ok {
		ix.paths[path] = position{line: line, kind: kind, parts: slices.Clone(parts)}
	}
}

func (ix *positions) setLine(line int, path string) {
	if _, ok := ix.lines[line]; !ok {
		ix.lines[line] = path
	}
}

// lineAt returns the 1-based line of a byte offset.
func (ix *positions) lineAt(offset int) int {
	return sort.SearchInts(ix.newlines, offset) + 1
}

// line returns the line of path, or of its nearest ancestor present in the
// document (a missing key is reported at its table's header), or 0.
func (ix *positions) line(path string) int {
	for path != "" {
		if p, ok := ix.paths[path]; ok {
			return p.line
		}
		path = parentKey(path)
	}
	return 0
}

// fullKey completes a key go-toml reported on line: inside inline tables it
// reports the last part only. It returns the parts of the shortest indexed
// path on that line ending in key, or key itself.
func (ix *positions) fullKey(key []string, line int) []string {
	if p, ok := ix.paths[joinKeys(key)]; ok && p.line == line {
		return key
	}
	var best []string
	for _, p := range ix.paths {
		if p.line == line && len(p.parts) > len(key) && slices.Equal(p.parts[len(p.parts)-len(key):], key) &&
			(best == nil || len(p.parts) < len(best)) {
			best = p.parts
		}
	}
	if best == nil {
		return key
	}
	return best
}

// kind returns the TOML kind of the value at path, or Invalid.
func (ix *positions) kind(path string) unstable.Kind {
	return ix.paths[path].kind
}

// keyOnLine names the key a decode error on line is about: the key defined on
// that line, or for a line the AST parser could not read, the text before its
// '=' within the enclosing table.
func (ix *positions) keyOnLine(data []byte, line int) string {
	if k, ok := ix.lines[line]; ok {
		return k
	}
	lines := bytes.Split(data, []byte("\n"))
	if line < 1 || line > len(lines) {
		return ""
	}
	text := string(lines[line-1])
	eq := strings.IndexByte(text, '=')
	if eq < 0 {
		return ""
	}
	k := strings.TrimSpace(text[:eq])
	if !bareDottedKey.MatchString(k) {
		return ""
	}
	table := ""
	for _, h := range ix.tables {
		if h.line < line {
			table = h.path
		}
	}
	for _, part := range strings.Split(k, ".") {
		table = joinKey(table, strings.TrimSpace(part))
	}
	return table
}

var (
	bareKey       = regexp.MustCompile(`^[A-Za-z0-9_-]+$`)
	bareDottedKey = regexp.MustCompile(`^[A-Za-z0-9_-]+(\s*\.\s*[A-Za-z0-9_-]+)*$`)
)

// joinKey appends one key part to a dotted path, quoting it when TOML would.
func joinKey(path, part string) string {
	if !bareKey.MatchString(part) {
		part = strconv.Quote(part)
	}
	if path == "" {
		return part
	}
	return path + "." + part
}

// joinKeys joins key parts as joinKey does.
func joinKeys(parts []string) string {
	path := ""
	for _, p := range parts {
		path = joinKey(path, p)
	}
	return path
}

// index names element i of the array at path.
func index(path string, i int) string {
	return path + "[" + strconv.Itoa(i) + "]"
}

// parentKey drops the last part ("a.b" → "a", "a[2]" → "a") of a path built
// by joinKey and index. Quoted parts containing dots or brackets may be cut
// short; the result is then only used to find a nearby line.
func parentKey(path string) string {
	if strings.HasSuffix(path, "]") {
		if i := strings.LastIndexByte(path, '['); i > 0 {
			return path[:i]
		}
	}
	if i := strings.LastIndexByte(path, '.'); i >= 0 {
		return path[:i]
	}
	return ""
}
