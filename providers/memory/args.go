package memory

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"reflect"
	"strconv"
	"strings"
	"unicode/utf8"
)

// argError is an invalid argument, reported to the model as an isError
// result so it can correct the call.
type argError struct {
	msg string
}

func (e *argError) Error() string { return e.msg }

func argErrorf(format string, args ...any) *argError {
	return &argError{msg: fmt.Sprintf(format, args...)}
}

// decodeArgs decodes a tool's arguments object into dst, refusing unknown
// arguments, wrong JSON types and trailing data. The host has validated the
// arguments against the input schema already; this guards direct callers.
func decodeArgs(raw json.RawMessage, dst any) *argError {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
		raw = []byte("{}")
	}
	if raw[0] != '{' {
		return argErrorf("arguments must be a JSON object")
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	err := dec.Decode(dst)
	if err == nil {
		if dec.Decode(&struct{}{}) != io.EOF {
			return argErrorf("arguments must be a single JSON object")
		}
		return nil
	}
	var typeErr *json.UnmarshalTypeError
	var syntaxErr *json.SyntaxError
	switch {
	case errors.As(err, &typeErr):
		return argErrorf("argument %q must be %s, not a JSON %s", typeErr.Field, describeType(typeErr.Type), typeErr.Value)
	case errors.As(err, &syntaxErr):
		return argErrorf("arguments are not valid JSON: %v", err)
	case strings.HasPrefix(err.Error(), "json: unknown field "):
		return argErrorf("unknown argument %s; accepted arguments: %s",
			strings.TrimPrefix(err.Error(), "json: unknown field "), strings.Join(jsonFields(dst), ", "))
	default:
		return argErrorf("invalid arguments: %v", err)
	}
}

// describeType names a Go argument type in JSON terms.
func describeType(t reflect.Type) string {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.String:
		return "a string"
	case reflect.Float64, reflect.Int:
		return "a number"
	case reflect.Slice:
		return "an array of " + strings.TrimPrefix(describeType(t.Elem()), "a ") + "s"
	default:
		return "a " + t.Kind().String()
	}
}

// jsonFields lists the JSON names of the fields of the struct dst points
// to.
func jsonFields(dst any) []string {
	t := reflect.TypeOf(dst).Elem()
	names := make([]string, 0, t.NumField())
	for f := range t.Fields() {
		if name, _, _ := strings.Cut(f.Tag.Get("json"), ","); name != "" && name != "-" {
			names = append(names, name)
		}
	}
	return names
}

// requiredString checks a required string argument: present, not blank
// after trimming spaces, and at most maxRunes characters. It returns the
// trimmed value.
func requiredString(name string, v *string, maxRunes int) (string, *argError) {
	if v == nil {
		return "", argErrorf("argument %q is required", name)
	}
	s := strings.TrimSpace(*v)
	if s == "" {
		return "", argErrorf("argument %q must not be blank", name)
	}
	if n := utf8.RuneCountInString(s); n > maxRunes {
		return "", argErrorf("argument %q must be at most %d characters, got %d", name, maxRunes, n)
	}
	return s, nil
}

// intInRange checks an optional integer argument against [lo, hi] and
// applies def when it is absent. JSON numbers such as 10.0 are integers in
// JSON Schema and are accepted; fractions and out-of-range values are
// refused, never clamped.
func intInRange(name string, v *float64, lo, hi, def int) (int, *argError) {
	if v == nil {
		return def, nil
	}
	f := *v
	if f != math.Trunc(f) || f < float64(lo) || f > float64(hi) {
		return 0, argErrorf("argument %q must be an integer from %d to %d, got %s", name, lo, hi, formatNumber(f))
	}
	return int(f), nil
}

// quoteShort quotes s for an error message, cutting it to 64 characters.
func quoteShort(s string) string {
	const limit = 64
	if utf8.RuneCountInString(s) <= limit {
		return fmt.Sprintf("%q", s)
	}
	r := []rune(s)
	return fmt.Sprintf("%q…", string(r[:limit]))
}

// maxSafeInteger is the largest integer a JSON number holds exactly
// (2^53 - 1); millisecond timestamps are bounded by it.
const maxSafeInteger = 1<<53 - 1

// optionalInt64 checks an optional integer argument against [lo, hi]; nil
// stays nil. Like intInRange it refuses fractions and out-of-range values.
func optionalInt64(name string, v *float64, lo, hi int64) (*int64, *argError) {
	if v == nil {
		return nil, nil
	}
	f := *v
	if f != math.Trunc(f) || f < float64(lo) || f > float64(hi) {
		return nil, argErrorf("argument %q must be an integer from %d to %d, got %s", name, lo, hi, formatNumber(f))
	}
	n := int64(f)
	return &n, nil
}

// stringList checks a list argument of at most maxItems strings, each not
// blank after trimming spaces and at most maxRunes characters; each must
// also pass check when it is not nil. Duplicates are dropped.
func stringList(name string, in []string, maxItems, maxRunes int, check func(string) string) ([]string, *argError) {
	if len(in) > maxItems {
		return nil, argErrorf("argument %q must have at most %d items, got %d", name, maxItems, len(in))
	}
	out := make([]string, 0, len(in))
	seen := make(map[string]bool, len(in))
	for i, s := range in {
		s = strings.TrimSpace(s)
		if s == "" {
			return nil, argErrorf("argument %q item %d must not be blank", name, i+1)
		}
		if n := utf8.RuneCountInString(s); n > maxRunes {
			return nil, argErrorf("argument %q item %d must be at most %d characters, got %d", name, i+1, maxRunes, n)
		}
		if check != nil {
			if msg := check(s); msg != "" {
				return nil, argErrorf("argument %q item %d %s", name, i+1, msg)
			}
		}
		if !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	return out, nil
}

// optionalString checks an optional string argument: when present it must
// not be blank and is at most maxRunes characters. It returns the trimmed
// value, "" when absent.
func optionalString(name string, v *string, maxRunes int) (string, *argError) {
	if v == nil {
		return "", nil
	}
	return requiredString(name, v, maxRunes)
}

// formatNumber writes a JSON number as the user wrote it, without an
// exponent for ordinary values.
func formatNumber(f float64) string {
	return strconv.FormatFloat(f, 'f', -1, 64)
}

// requiredText checks a required body argument (kept verbatim, not
// trimmed): present, not blank, and at most maxBytes bytes of UTF-8; hint,
// when not empty, ends the size error.
func requiredText(name string, v *string, maxBytes int, hint string) (string, *argError) {
	if v == nil {
		return "", argErrorf("argument %q is required", name)
	}
	if strings.TrimSpace(*v) == "" {
		return "", argErrorf("argument %q must not be blank", name)
	}
	if len(*v) > maxBytes {
		return "", argErrorf("argument %q must be at most %d bytes, got %d%s", name, maxBytes, len(*v), hint)
	}
	return *v, nil
}

// noChunk is the error for a chunk id that names no chunk.
func noChunk(id string) *argError {
	return argErrorf("no chunk has id %s; get chunk ids from memory_search, memory_recall or tree_browse", quoteShort(id))
}
