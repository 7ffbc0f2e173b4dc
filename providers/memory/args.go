package memory

import (
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"
)

// The host checks every call's arguments against the tool's input schema
// (and sdk.AddTool checks them again for calls that did not come through
// the host): types, required arguments, bounds, patterns and enums never
// reach a handler. What follows checks what a schema cannot say.

// argError is an invalid argument, reported to the model as an isError
// result so it can correct the call.
type argError struct {
	msg string
}

func (e *argError) Error() string { return e.msg }

func argErrorf(format string, args ...any) *argError {
	return &argError{msg: fmt.Sprintf(format, args...)}
}

// errNotConfigured is the failure of a call before Configure or after
// Close.
var errNotConfigured = errors.New("memory provider is not configured")

// chunkIDArg is the chunk_id argument of the tools that work on one
// chunk, which embed it.
type chunkIDArg struct {
	ChunkID string `json:"chunk_id" jsonschema:"A chunk id such as chk_0123456789abcdef01234567, from memory_search, memory_recall or tree_browse." schema:"minLength=1,maxLength=256"`
}

// optionalString trims an optional string argument, which must not be
// blank when it is given; "" stands for a missing one. The host refuses
// blank required arguments itself.
func optionalString(name, v string) (string, *argError) {
	s := strings.TrimSpace(v)
	if v != "" && s == "" {
		return "", argErrorf("argument %q must not be blank", name)
	}
	return s, nil
}

// maxBytes checks that a text argument, whose schema bounds its length in
// characters, is at most limit bytes of UTF-8; hint, when not empty, ends
// the error.
func maxBytes(name, v string, limit int, hint string) *argError {
	if len(v) > limit {
		return argErrorf("argument %q must be at most %d bytes, got %d%s", name, limit, len(v), hint)
	}
	return nil
}

// stringList trims the items of a list argument, each of which must not be
// blank and must pass check when it is not nil, and drops duplicates.
func stringList(name string, in []string, check func(string) string) ([]string, *argError) {
	return uniqueList(name, in, check, nil)
}

// uniqueList trims the items of a list argument, each of which must not be
// blank and must pass check when it is not nil (check returns what is
// wrong, such as "must be ...", or ""), and drops the items whose key
// (the item itself when key is nil) an earlier item had; the order is kept.
func uniqueList(name string, in []string, check, key func(string) string) ([]string, *argError) {
	out := make([]string, 0, len(in))
	seen := make(map[string]bool, len(in))
	for i, s := range in {
		s = strings.TrimSpace(s)
		if s == "" {
			return nil, argErrorf("argument %q item %d must not be blank", name, i+1)
		}
		if check != nil {
			if msg := check(s); msg != "" {
				return nil, argErrorf("argument %q item %d %s", name, i+1, msg)
			}
		}
		k := s
		if key != nil {
			k = key(s)
		}
		if !seen[k] {
			seen[k] = true
			out = append(out, s)
		}
	}
	return out, nil
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

// noChunk is the error for a chunk id that names no chunk.
func noChunk(id string) *argError {
	return argErrorf("no chunk has id %s; get chunk ids from memory_search, memory_recall or tree_browse", quoteShort(id))
}
