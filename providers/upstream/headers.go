package upstream

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strings"
)

// headerBinding is a tool argument (a path of property names, for
// arguments nested in objects) whose schema property carries
// "x-mcp-header": Header. On Streamable HTTP sessions of protocol
// 2026-07-28 and later the go-sdk client sends its value as the HTTP
// header Mcp-Param-<Header> too (SEP-2243), and the server rejects a call
// whose header does not match the argument.
type headerBinding struct {
	path   []string
	header string
}

// headerSchema holds what x-mcp-header bindings are read from: a schema
// property's annotation and its nested properties.
type headerSchema struct {
	XMCPHeader json.RawMessage          `json:"x-mcp-header"`
	Properties map[string]*headerSchema `json:"properties"`
}

// headerBindings returns the x-mcp-header bindings of an input schema, in
// path order; nil when it has none.
func headerBindings(schema any) []headerBinding {
	raw, err := json.Marshal(schema)
	if err != nil {
		return nil
	}
	var root headerSchema
	if json.Unmarshal(raw, &root) != nil {
		return nil
	}
	var out []headerBinding
	var walk func(props map[string]*headerSchema, prefix []string)
	walk = func(props map[string]*headerSchema, prefix []string) {
		for name, prop := range props {
			if prop == nil {
				continue
			}
			path := append(slices.Clone(prefix), name)
			var header string
			if json.Unmarshal(prop.XMCPHeader, &header) == nil && header != "" {
				out = append(out, headerBinding{path: path, header: header})
			}
			walk(prop.Properties, path)
		}
	}
	walk(root.Properties, nil)
	slices.SortFunc(out, func(a, b headerBinding) int { return slices.Compare(a.path, b.path) })
	return out
}

// maxHeaderInteger bounds the integers a header may carry: those a
// double represents exactly (SEP-2243).
const maxHeaderInteger = 1<<53 - 1

// headerArgProblem says why args cannot be sent for tool (its exposed
// name) with bindings: an argument sent as a header that is not a string,
// an integer or a boolean. "" when they can; absent and null arguments
// send no header.
func headerArgProblem(tool string, bindings []headerBinding, args json.RawMessage) string {
	if len(bindings) == 0 {
		return ""
	}
	var obj map[string]json.RawMessage
	if json.Unmarshal(args, &obj) != nil {
		return ""
	}
	for _, b := range bindings {
		v, ok := lookupPath(obj, b.path)
		if !ok || bytes.Equal(bytes.TrimSpace(v), []byte("null")) {
			continue
		}
		name := strings.Join(b.path, ".")
		var val any
		if json.Unmarshal(v, &val) != nil {
			continue
		}
		switch val := val.(type) {
		case string, bool:
			continue
		case float64:
			if val == math.Trunc(val) {
				if math.Abs(val) <= maxHeaderInteger {
					continue
				}
				return fmt.Sprintf("%s: argument %q is sent as the header Mcp-Param-%s and must be an integer from -%d to %d",
					tool, name, b.header, maxHeaderInteger, maxHeaderInteger)
			}
		}
		return fmt.Sprintf("%s: argument %q is sent as the header Mcp-Param-%s and must be a string, integer or boolean", tool, name, b.header)
	}
	return ""
}

// lookupPath returns the value at path in obj, descending into nested
// objects; false when a step is missing or not an object.
func lookupPath(obj map[string]json.RawMessage, path []string) (json.RawMessage, bool) {
	cur, ok := obj[path[0]]
	if !ok {
		return nil, false
	}
	for _, name := range path[1:] {
		var next map[string]json.RawMessage
		if json.Unmarshal(cur, &next) != nil || next == nil {
			return nil, false
		}
		if cur, ok = next[name]; !ok {
			return nil, false
		}
	}
	return cur, true
}
