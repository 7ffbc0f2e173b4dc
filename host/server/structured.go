package server

import (
	"bytes"
	"encoding/json"
	"errors"
	"math/big"
	"slices"
	"strconv"
	"strings"

	"github.com/openhuman/openhuman-host/internal/treeequal"
	"github.com/openhuman/openhuman-host/sdk"
)

// A tool with an output schema returns its result as structuredContent
// and, for clients that show their model only text, serialized as JSON in
// a text block (MCP 2025-06-18 and later, server/tools "Structured
// Content": "SHOULD also return the serialized JSON in a TextContent
// block"). For a client that hands structuredContent to its model that
// text repeats the result and doubles what it costs in tokens. Nothing in
// the protocol says which kind a client is, so [Options.StructuredContentClients]
// (the config's [server] structured_content_clients) names the clients
// that read structuredContent; this file decides for a client and drops
// the repeated text from its results.

// AnyClient, in [Options.StructuredContentClients], names every client.
const AnyClient = "*"

// StructuredContentNote is the text that replaces a text block that only
// repeated a result's structuredContent as JSON, for a client that reads
// structuredContent. It names no value of the result.
const StructuredContentNote = "Result in structuredContent (not repeated here)."

// readsStructured reports whether the client named clientName (as
// cleanClientText keeps it), speaking MCP protocolVersion, reads
// structuredContent by the settings: it is listed in StructuredContentClients,
// or "*" is, and its protocol version has structuredContent at all (an
// unknown version counts as having it, as in structuredOutput). A client
// of 2025-03-26 or earlier gets no structuredContent, so it must keep the
// full text whatever the config says.
func (set *Options) readsStructured(clientName, protocolVersion string) bool {
	if len(set.StructuredContentClients) == 0 || (protocolVersion != "" && protocolVersion < structuredVersion) {
		return false
	}
	return slices.Contains(set.StructuredContentClients, AnyClient) || slices.Contains(set.StructuredContentClients, clientName)
}

// withoutRepeatedText returns r with every text block whose text is JSON
// equal to r's structured content replaced by [StructuredContentNote];
// r itself is not changed. An error result, a result without structured
// content, and text that is not the same JSON (a summary, a table, JSON
// of something else) come back as they are: the text then says something
// the structured content does not, or is what a failure reports.
func withoutRepeatedText(r *sdk.CallToolResult) *sdk.CallToolResult {
	if r == nil || r.IsError || len(r.StructuredContent) == 0 {
		return r
	}
	var structured any
	var out *sdk.CallToolResult
	for i, c := range r.Content {
		if c.Type != "text" || !looksLikeObject(c.Text) {
			continue
		}
		if structured == nil {
			var err error
			if structured, err = decodeJSON(r.StructuredContent); err != nil {
				return r
			}
		}
		text, err := decodeJSON([]byte(c.Text))
		if err != nil || !jsonEqual(structured, text) {
			continue
		}
		if out == nil {
			cp := *r
			cp.Content = slices.Clone(r.Content)
			out = &cp
		}
		out.Content[i].Text = StructuredContentNote
	}
	if out == nil {
		return r
	}
	return out
}

// looksLikeObject reports whether s, spaces aside, starts like a JSON
// object: structured content is always one (MCP: "structuredContent" is
// an object), so no other text needs decoding.
func looksLikeObject(s string) bool {
	b := bytes.TrimLeft([]byte(s), " \t\r\n")
	return len(b) > 0 && b[0] == '{'
}

// decodeJSON decodes exactly one JSON value, keeping numbers as written
// (json.Number) so that jsonEqual compares them exactly.
func decodeJSON(b []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	if _, err := dec.Token(); err == nil {
		return nil, errTrailingData
	}
	return v, nil
}

// errTrailingData is decodeJSON's error for text that holds more than
// one JSON value.
var errTrailingData = errors.New("more than one JSON value")

// jsonEqual reports whether a and b, as decodeJSON returns them, are the
// same JSON value: objects with the same members in any order, arrays
// with equal elements in order, and numbers of the same value however
// they are written (1, 1.0 and 1e0 are equal; two integers that a float64
// cannot tell apart are not).
func jsonEqual(a, b any) bool { return treeequal.Equal(a, b, jsonLeafEqual) }

// jsonLeafEqual compares two JSON scalars as jsonEqual does.
func jsonLeafEqual(a, b any) bool {
	switch a := a.(type) {
	case json.Number:
		b, ok := b.(json.Number)
		if !ok {
			return false
		}
		if a == b {
			return true
		}
		x, okA := exactNumber(a)
		y, okB := exactNumber(b)
		return okA && okB && x.Cmp(y) == 0
	case string, bool, nil:
		return a == b
	}
	return false
}

// exactNumber returns n's exact value, or false for a number too long or
// of too large an exponent to be worth computing (a result could send
// 1e999999999, whose value takes megabytes): such numbers are equal only
// as written.
func exactNumber(n json.Number) (*big.Rat, bool) {
	s := string(n)
	if len(s) > 64 {
		return nil, false
	}
	if i := strings.IndexAny(s, "eE"); i >= 0 {
		exp, err := strconv.Atoi(s[i+1:])
		if err != nil || exp < -400 || exp > 400 {
			return nil, false
		}
	}
	return new(big.Rat).SetString(s)
}
