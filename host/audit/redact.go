package audit

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/openhuman/openhuman-host/sdk"
)

// MaxErrorBytes is the longest Record.Error stored, in bytes.
const MaxErrorBytes = 1024

const (
	// maxTextRunes caps kept strings: titles, identifiers and each tag.
	maxTextRunes = 128
	// maxListItems caps the entries kept of a tag-like list.
	maxListItems = 50
	// maxKeys caps the argument keys summarised one by one; argument names
	// come from the caller, so neither their number nor their length is
	// trusted.
	maxKeys = 32
	// maxKeyBytes is the longest argument name kept.
	maxKeyBytes = 64
	// otherKeys counts the keys not summarised one by one.
	otherKeys = "_other_keys"
)

// plainKey reports whether an argument name is short and made of
// [A-Za-z0-9_.-], the only names kept in a summary.
func plainKey(k string) bool {
	if k == "" || len(k) > maxKeyBytes || k == otherKeys {
		return false
	}
	for _, r := range k {
		if !(r == '_' || r == '.' || r == '-' || (r >= '0' && r <= '9') || (r >= 'a' && r <= 'z') || (r >= 'A' && r <= 'Z')) {
			return false
		}
	}
	return true
}

// lenSummary stands for a string that is not stored.
type lenSummary struct {
	Len int `json:"len"`
}

// countSummary stands for an array or object that is not stored.
type countSummary struct {
	Count int `json:"count"`
}

// SummarizeArgs returns a compact JSON object that describes a tool call's arguments without storing
// their bodies, for Record.ArgsSummary. The host passes the rules of its built-in providers together
// (the zero value keeps no strings but titles). For each top-level key:
//   - numbers, booleans and null are kept;
//   - strings under one of keep.Identifiers and "title" are kept, cut to 128 characters (runes);
//   - string arrays under one of keep.Lists are kept, at most 50 entries, each cut to 128
//     characters;
//   - any other string becomes {"len":N} (N in bytes), any other array or object {"count":N}.
//
// Only the first 32 keys (in byte order) of at most 64 bytes of [A-Za-z0-9_.-] are summarised
// one by one; the number of the others is stored under "_other_keys".
//
// Empty args or null give {}; invalid JSON gives {"invalid_json":true,"len":N} and valid JSON that is
// not an object {"not_object":true,"len":N}, N being the size of args in bytes.
func SummarizeArgs(args json.RawMessage, keep sdk.AuditRules) string {
	trimmed := bytes.TrimSpace(args)
	if len(trimmed) == 0 || string(trimmed) == "null" {
		return "{}"
	}
	if !json.Valid(trimmed) {
		return fmt.Sprintf(`{"invalid_json":true,"len":%d}`, len(args))
	}
	var obj map[string]any
	dec := json.NewDecoder(bytes.NewReader(trimmed))
	dec.UseNumber()
	if err := dec.Decode(&obj); err != nil || obj == nil {
		return fmt.Sprintf(`{"not_object":true,"len":%d}`, len(args))
	}
	out := make(map[string]any, min(len(obj), maxKeys+1))
	other := 0
	for _, k := range slices.Sorted(maps.Keys(obj)) {
		if len(out) >= maxKeys || !plainKey(k) {
			other++
			continue
		}
		out[k] = summarizeValue(k, obj[k], keep)
	}
	if other > 0 {
		out[otherKeys] = other
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(out); err != nil {
		// Only decoded JSON values are encoded, so this cannot happen; fail closed regardless.
		return fmt.Sprintf(`{"invalid_json":true,"len":%d}`, len(args))
	}
	return strings.TrimSuffix(buf.String(), "\n")
}

func summarizeValue(key string, v any, keep sdk.AuditRules) any {
	switch x := v.(type) {
	case nil, bool, json.Number:
		return x
	case string:
		if key == "title" || slices.Contains(keep.Identifiers, key) {
			return cutRunes(x, maxTextRunes)
		}
		return lenSummary{Len: len(x)}
	case []any:
		if slices.Contains(keep.Lists, key) {
			if list, ok := stringList(x); ok {
				return list
			}
		}
		return countSummary{Count: len(x)}
	case map[string]any:
		return countSummary{Count: len(x)}
	default:
		return countSummary{}
	}
}

// stringList returns the first maxListItems entries of items, each cut to maxTextRunes, if all
// entries are strings.
func stringList(items []any) ([]string, bool) {
	out := make([]string, 0, min(len(items), maxListItems))
	for _, it := range items {
		s, ok := it.(string)
		if !ok {
			return nil, false
		}
		if len(out) < maxListItems {
			out = append(out, cutRunes(s, maxTextRunes))
		}
	}
	return out, true
}

// cutRunes returns the first n runes of s.
func cutRunes(s string, n int) string {
	i := 0
	for j := range s {
		if i == n {
			return s[:j]
		}
		i++
	}
	return s
}

// TruncateError cuts s to at most [MaxErrorBytes] bytes, at a UTF-8 character boundary, for
// Record.Error.
func TruncateError(s string) string {
	if len(s) <= MaxErrorBytes {
		return s
	}
	cut := MaxErrorBytes
	// s[cut] is the first byte dropped; back up to the start of its character (at most UTFMax-1 bytes;
	// further back the bytes are not valid UTF-8, so any cut will do).
	for back := 0; back < utf8.UTFMax-1 && !utf8.RuneStart(s[cut]); back++ {
		cut--
	}
	if !utf8.RuneStart(s[cut]) {
		cut = MaxErrorBytes
	}
	return s[:cut]
}

// SessionHash returns a short, stable, non-reversible label for an MCP session id, for
// Record.SessionHash and log lines: "sha256:" followed by the first 8 hex digits of SHA-256(id). An
// empty id gives "".
func SessionHash(sessionID string) string {
	if sessionID == "" {
		return ""
	}
	sum := sha256.Sum256([]byte(sessionID))
	return "sha256:" + hex.EncodeToString(sum[:4])
}
