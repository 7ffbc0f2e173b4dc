// Package tomledit adds or replaces a [providers.NAME] table in the text of
// a TOML config file, keeping every other byte: comments, order, layout,
// line endings and a byte order mark. An edit whose result would decode to
// different values anywhere else is refused, so the file is never changed
// in a way it was not asked to be.
package tomledit

import (
	"bytes"
	"fmt"
	"math"
	"reflect"
	"slices"
	"strings"
	"time"

	"github.com/pelletier/go-toml/v2"
	"github.com/pelletier/go-toml/v2/unstable"

	"github.com/openhuman/openhuman-host/internal/treeequal"
)

// utf8BOM is the byte order mark some editors start UTF-8 files with.
var utf8BOM = []byte("\xef\xbb\xbf")

// SetProviderEntry returns doc with [providers.name] holding command, sha256
// and args: a new table appended, or with force, the existing table's
// command and sha256 replaced, and its args too unless args is nil (other
// keys and comments kept). A byte order mark at the start of doc is kept,
// and new lines end as doc's lines do. It refuses an edit whose result
// would not decode to the same values as doc everywhere else (see
// checkEdit).
func SetProviderEntry(doc []byte, name, command, sum string, args []string, force bool) ([]byte, error) {
	body, hasBOM := bytes.CutPrefix(doc, utf8BOM)
	var before map[string]any
	if err := toml.Unmarshal(body, &before); err != nil {
		return nil, fmt.Errorf("not valid TOML, fix it first: %w", err)
	}
	eol := lineEnding(body)
	entry := "command = " + String(command) + eol + "sha256 = " + String(sum) + eol
	if len(args) > 0 {
		entry += "args = " + Strings(args) + eol
	}
	provs, _ := before["providers"].(map[string]any)
	_, present := provs[name]
	var out []byte
	switch {
	case !present:
		var b bytes.Buffer
		b.Write(body)
		if len(body) > 0 && !bytes.HasSuffix(body, []byte("\n")) {
			b.WriteString(eol)
		}
		if len(body) > 0 {
			b.WriteString(eol)
		}
		b.WriteString("[providers." + name + "]" + eol + entry)
		out = b.Bytes()
	case !force:
		return nil, fmt.Errorf("[providers.%s] already exists; pass --force to replace its command, sha256 and args, or --name to add it under another name", name)
	default:
		var err error
		if out, err = replaceProviderKeys(body, name, entry, args != nil, eol); err != nil {
			return nil, err
		}
	}
	if err := checkEdit(before, out, name, command, sum, args); err != nil {
		return nil, err
	}
	if hasBOM {
		out = append(slices.Clip(utf8BOM), out...)
	}
	return out, nil
}

// lineEnding returns the line ending of doc's first line: "\r\n" or "\n".
func lineEnding(doc []byte) string {
	if i := bytes.IndexByte(doc, '\n'); i > 0 && doc[i-1] == '\r' {
		return "\r\n"
	}
	return "\n"
}

// replaceProviderKeys returns body with entry put right under its
// [providers.name] header, and the table's command and sha256 keys
// removed, with its args key too when replaceArgs is set. The keys are
// found with a TOML parser, so a value spanning lines (a multi-line string
// or array) goes whole, and text inside another value is never taken for a
// key or a header. A removed key takes the rest of its line (a comment)
// with it.
func replaceProviderKeys(body []byte, name, entry string, replaceArgs bool, eol string) ([]byte, error) {
	var p unstable.Parser
	p.Reset(body)
	headerEnd := -1
	inTable := false
	var cuts [][2]int // [start, end) of the lines to remove, in order
	for p.NextExpression() {
		e := p.Expression()
		switch e.Kind {
		case unstable.Table, unstable.ArrayTable:
			parts, end := keyParts(e)
			inTable = e.Kind == unstable.Table && slices.Equal(parts, []string{"providers", name})
			if inTable {
				headerEnd = lineEnd(body, end)
			}
		case unstable.KeyValue:
			if !inTable {
				continue
			}
			parts, _ := keyParts(e)
			if len(parts) != 1 || parts[0] != "command" && parts[0] != "sha256" && (parts[0] != "args" || !replaceArgs) {
				continue
			}
			start := int(e.Raw.Offset)
			cuts = append(cuts, [2]int{lineStart(body, start), lineEnd(body, start+int(e.Raw.Length))})
		}
	}
	if err := p.Error(); err != nil {
		return nil, fmt.Errorf("not valid TOML, fix it first: %w", err)
	}
	if headerEnd < 0 {
		return nil, fmt.Errorf("[providers.%s] has no [providers.%s] header of its own (it is made of dotted keys, an inline table or sub-tables only); edit it by hand", name, name)
	}
	var b bytes.Buffer
	b.Write(body[:headerEnd])
	if !bytes.HasSuffix(body[:headerEnd], []byte("\n")) {
		b.WriteString(eol)
	}
	b.WriteString(entry)
	pos := headerEnd
	for _, c := range cuts {
		b.Write(body[pos:c[0]])
		pos = c[1]
	}
	b.Write(body[pos:])
	return b.Bytes(), nil
}

// keyParts returns the unquoted parts of the key of a table header or a
// key/value expression, and the offset just after the key.
func keyParts(e *unstable.Node) (parts []string, end int) {
	it := e.Key()
	for it.Next() {
		n := it.Node()
		parts = append(parts, string(n.Data))
		end = int(n.Raw.Offset + n.Raw.Length)
	}
	return parts, end
}

// lineStart returns the offset of the start of the line holding offset i.
func lineStart(doc []byte, i int) int {
	return bytes.LastIndexByte(doc[:i], '\n') + 1
}

// lineEnd returns the offset just after the end of the line holding offset
// i, its line break included.
func lineEnd(doc []byte, i int) int {
	if j := bytes.IndexByte(doc[i:], '\n'); j >= 0 {
		return i + j + 1
	}
	return len(doc)
}

// checkEdit verifies an edited document against before, the original
// decoded: it must be valid TOML, [providers.name] must hold command, sum
// and (unless args is nil) args, and every other value must decode as it
// did before, so that an edit never changes or drops a value it was not
// asked to.
func checkEdit(before map[string]any, edited []byte, name, command, sum string, args []string) error {
	var after map[string]any
	if err := toml.Unmarshal(edited, &after); err != nil {
		return fmt.Errorf("the file would not be valid TOML after adding [providers.%s] (%v), so it was left unchanged; edit the file by hand", name, err)
	}
	provs, _ := after["providers"].(map[string]any)
	table, _ := provs[name].(map[string]any)
	var wantArgs any
	if len(args) > 0 {
		list := make([]any, len(args))
		for i, a := range args {
			list[i] = a
		}
		wantArgs = list
	}
	if table == nil || table["command"] != command || table["sha256"] != sum || args != nil && !valuesEqual(table["args"], wantArgs) {
		return fmt.Errorf("[providers.%s] is written in a form this command cannot edit; edit the file by hand", name)
	}
	strip := func(doc map[string]any) {
		provs, ok := doc["providers"].(map[string]any)
		if !ok {
			return
		}
		if t, ok := provs[name].(map[string]any); ok {
			delete(t, "command")
			delete(t, "sha256")
			if args != nil {
				delete(t, "args")
			}
			if len(t) == 0 {
				delete(provs, name)
			}
		}
		if len(provs) == 0 {
			delete(doc, "providers")
		}
	}
	strip(before)
	strip(after)
	if !valuesEqual(before, after) {
		return fmt.Errorf("editing [providers.%s] would change other values in the file, so it was left unchanged; edit the file by hand", name)
	}
	return nil
}

// valuesEqual reports whether two decoded TOML values are equal: tables
// and arrays element by element, NaN equal to NaN, date-times as instants.
func valuesEqual(a, b any) bool { return treeequal.Equal(a, b, tomlLeafEqual) }

// tomlLeafEqual compares two TOML scalars as valuesEqual does.
func tomlLeafEqual(a, b any) bool {
	switch a := a.(type) {
	case float64:
		b, ok := b.(float64)
		return ok && (a == b || math.IsNaN(a) && math.IsNaN(b))
	case time.Time:
		b, ok := b.(time.Time)
		return ok && a.Equal(b)
	default:
		return reflect.DeepEqual(a, b)
	}
}

// String quotes s as a TOML basic string with only the escapes it
// needs: backslash, double quote, and control characters (the short forms
// \b \t \n \f \r where TOML has them, \uXXXX for the others, C1 and DEL
// included). s must be valid UTF-8.
func String(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range s {
		switch r {
		case '"':
			b.WriteString(`\"`)
		case '\\':
			b.WriteString(`\\`)
		case '\b':
			b.WriteString(`\b`)
		case '\t':
			b.WriteString(`\t`)
		case '\n':
			b.WriteString(`\n`)
		case '\f':
			b.WriteString(`\f`)
		case '\r':
			b.WriteString(`\r`)
		default:
			if r < 0x20 || r >= 0x7f && r <= 0x9f {
				fmt.Fprintf(&b, `\u%04X`, r)
			} else {
				b.WriteRune(r)
			}
		}
	}
	b.WriteByte('"')
	return b.String()
}

// Strings writes ss as a TOML array of basic strings.
func Strings(ss []string) string {
	q := make([]string, len(ss))
	for i, s := range ss {
		q[i] = String(s)
	}
	return "[" + strings.Join(q, ", ") + "]"
}
