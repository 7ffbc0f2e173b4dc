package memory

import (
	"bytes"
	"encoding/json"
	"regexp"
	"strconv"
	"strings"

	"github.com/openhuman/openhuman-host/sdk"
)

// The memory tools write their results twice: as structured content and
// as text that lists the same hits, ids and counts for clients that show
// their model only text. When the host says the client reads
// structuredContent (sdk.Caller.ReadsStructuredContent, set from [server]
// structured_content_clients), the text is cut to the one line briefText
// builds from the structured content alone, so no tool needs to know.

// briefTail ends every brief text: where the rest of the result is.
const briefTail = "full results in structuredContent"

// maxBriefBytes bounds a brief text before its tail. The parts come from
// the top-level fields of an output schema, so they stay well under it;
// the bound keeps a line a line whatever a result holds.
const maxBriefBytes = 300

// briefValue is what a top-level string field must look like to be
// shown: an id, a namespace, a mode. Titles, snippets and other text
// with spaces stay in the structured content.
var briefValue = regexp.MustCompile(`^[A-Za-z0-9_.:/@-]{1,80}$`)

// briefResult returns res with its text blocks replaced by one line that
// summarises its structured content (see briefText); every memory tool
// has an output schema. Error results, results without structured
// content, and results whose text is already no longer than the summary
// come back unchanged; res itself never changes.
func briefResult(args json.RawMessage, res *sdk.CallToolResult) *sdk.CallToolResult {
	if res == nil || res.IsError || len(res.StructuredContent) == 0 {
		return res
	}
	line, ok := briefText(args, res.StructuredContent)
	if !ok {
		return res
	}
	textBytes, first := 0, -1
	for i, c := range res.Content {
		if c.Type == "text" {
			textBytes += len(c.Text)
			if first < 0 {
				first = i
			}
		}
	}
	if first < 0 || textBytes <= len(line) {
		return res
	}
	out := *res
	out.Content = make([]sdk.Content, 0, len(res.Content))
	for i, c := range res.Content {
		switch {
		case i == first:
			out.Content = append(out.Content, sdk.TextContent(line))
		case c.Type != "text":
			out.Content = append(out.Content, c)
		}
	}
	return &out
}

// briefText summarises structured, a JSON object, in one line from its
// top-level fields, in their order:
//
//   - an array is counted, by its name: "3 chunks", "1 tag"; when the
//     call's arguments hold a query, the chunks are its hits: 5 hits for
//     "reef";
//   - true booleans are named ("truncated", "dry run"), false ones left
//     out; null is "no <name>" ("no chunk");
//   - numbers other than 0 are given with their name ("total 37");
//   - strings that look like an id, a namespace or a mode are given with
//     their name ("document id mcp/notes"); other text is left out;
//   - an object is named, with its own <name>_id when it has one ("chunk
//     chk_…");
//   - with a total and an offset, a page that does not reach the total
//     says where the next one starts ("next offset 20").
//
// It ends with briefTail, and reports false when structured is not a
// JSON object.
func briefText(args, structured json.RawMessage) (string, bool) {
	fields, ok := objectFields(structured)
	if !ok {
		return "", false
	}
	var query string
	var a struct {
		Query *string `json:"query"`
	}
	if json.Unmarshal(args, &a) == nil && a.Query != nil && strings.TrimSpace(*a.Query) != "" {
		query = *a.Query
	}
	var counts, rest []string
	var total, offset, shown int64 = -1, -1, -1
	arrays := 0
	for _, f := range fields {
		name := strings.ReplaceAll(f.key, "_", " ")
		v := bytes.TrimSpace(f.value)
		switch {
		case len(v) == 0:
		case v[0] == 'n': // null: a chunk that does not exist
			rest = append(rest, "no "+name)
		case v[0] == '[':
			var items []json.RawMessage
			if json.Unmarshal(v, &items) != nil {
				continue
			}
			arrays++
			shown = int64(len(items))
			part := itoa(int64(len(items))) + " " + countOf(name, len(items))
			if f.key == "chunks" && query != "" {
				part = itoa(int64(len(items))) + " " + countOf("hits", len(items)) + " for " + quoteShort(oneLine(query))
			}
			counts = append(counts, part)
		case v[0] == '{':
			var obj map[string]json.RawMessage
			if json.Unmarshal(v, &obj) != nil {
				continue
			}
			part := name
			var id string
			if json.Unmarshal(obj[f.key+"_id"], &id) == nil && briefValue.MatchString(id) {
				part += " " + id
			}
			rest = append(rest, part)
		case v[0] == '"':
			var s string
			if json.Unmarshal(v, &s) == nil && briefValue.MatchString(s) {
				rest = append(rest, name+" "+s)
			}
		case string(v) == "true":
			rest = append(rest, name)
		case string(v) == "false":
		default:
			var n json.Number
			if json.Unmarshal(v, &n) != nil {
				continue
			}
			if i, err := n.Int64(); err == nil {
				switch f.key {
				case "total":
					total = i
				case "offset":
					offset = i
				}
				if i == 0 {
					continue
				}
			}
			rest = append(rest, name+" "+n.String())
		}
	}
	parts := append(counts, rest...)
	if arrays == 1 && total >= 0 && offset >= 0 && offset+shown < total {
		parts = append(parts, "next offset "+itoa(offset+shown))
	}
	line := strings.Join(parts, ", ")
	if len(line) > maxBriefBytes {
		line = cutUTF8(line, maxBriefBytes) + "…"
	}
	if line == "" {
		return "Full results in structuredContent", true
	}
	return line + "; " + briefTail, true
}

// field is one member of a JSON object, in the order it appeared.
type field struct {
	key   string
	value json.RawMessage
}

// objectFields returns the members of the JSON object raw in their
// order, or false when raw is not one.
func objectFields(raw json.RawMessage) ([]field, bool) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return nil, false
	}
	var out []field
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, false
		}
		key, ok := tok.(string)
		if !ok {
			return nil, false
		}
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, false
		}
		out = append(out, field{key: key, value: v})
	}
	return out, true
}

// countOf returns noun (a plural such as "chunks" or "entities") for n
// things: singular for one.
func countOf(noun string, n int) string {
	if n != 1 {
		return noun
	}
	switch {
	case strings.HasSuffix(noun, "ies"):
		return strings.TrimSuffix(noun, "ies") + "y"
	case strings.HasSuffix(noun, "s"):
		return strings.TrimSuffix(noun, "s")
	}
	return noun
}

// itoa formats n in decimal.
func itoa(n int64) string { return strconv.FormatInt(n, 10) }
