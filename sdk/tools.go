package sdk

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"sync"

	"github.com/google/jsonschema-go/jsonschema"
)

// ToolHandler runs one call of a tool added with [AddTool]: in holds the
// call's arguments, validated and decoded. It returns a result, the
// output, or an error:
//
//   - out becomes the result's StructuredContent (unless Out is any and out
//     is nil), which must be a JSON object; a nil res stands for an empty
//     result, and a result without content gets one text block holding
//     the JSON of out. Out is not checked against the output schema at
//     run time, since for a large result that costs as much as the call:
//     sdktest's harness checks every result of a test against it;
//   - a res with IsError set is returned as it is, and out is ignored:
//     build it with [ErrorResult] for a message the model should see;
//   - a non-nil error becomes a result with IsError set and the error's
//     text, except one that wraps context.Canceled or
//     context.DeadlineExceeded, which is returned as the call's error so
//     that the host reports the cancellation or deadline.
type ToolHandler[In, Out any] func(ctx context.Context, req *CallToolRequest, in In) (res *CallToolResult, out Out, err error)

// Tools is a provider's set of tools added with [AddTool]: [Tools.List]
// gives their specs for Describe, [Tools.Call] runs CallTool. The zero
// value is an empty set, ready to use; it is safe for concurrent use, and
// adding a tool while calls run is allowed.
type Tools struct {
	mu    sync.RWMutex
	order []string
	tools map[string]*typedTool
}

// typedTool is one tool of a [Tools].
type typedTool struct {
	spec Tool
	call func(ctx context.Context, req *CallToolRequest) (*CallToolResult, error)
}

// AddTool adds the tool t, run by h, to ts, replacing a tool of the same
// name. Where t leaves them nil, it derives t's schemas from Go types,
// with github.com/google/jsonschema-go:
//
//   - InputSchema from In, which must be a struct (or a map with string
//     keys, or any for an object schema that allows anything): each
//     exported field is a property named by its json tag, required unless
//     the tag says omitempty or omitzero, described by its jsonschema tag;
//     other properties are refused ("additionalProperties": false);
//   - OutputSchema from Out, likewise, unless Out is any, which declares
//     no output schema.
//
// A field's schema tag adds the JSON Schema keywords the host enforces
// with precise messages, as comma-separated key=value pairs: minLength,
// maxLength, minItems, maxItems (integers), minimum, maximum,
// exclusiveMinimum, exclusiveMaximum (numbers), default (a value of the
// field's type), enum (values separated by "|"), type (a JSON type such
// as object, for a field whose Go type allows any JSON value:
// json.RawMessage or an interface) and pattern (last, as it takes the
// rest of the tag, commas included); "items." before a key applies it to
// the items of a slice. For example:
//
//	Name string `json:"name" jsonschema:"Who to greet." schema:"minLength=1,maxLength=100"`
//	Tags []string `json:"tags,omitempty" schema:"maxItems=5,items.enum=a|b|c"`
//	Params json.RawMessage `json:"params" schema:"type=object"`
//
// A json.RawMessage field stands for any JSON value; its schema tag can
// narrow it with type (below).
//
// Slices and maps that are not pointers are derived as "array" and
// "object", without null: return empty ones, not nil, in Out. A pointer
// field tagged omitempty or omitzero is optional rather than nullable, so
// its schema does not allow null: in Out it is left out when nil, never
// null; in In it tells a missing argument (nil) from one given with the
// zero value, and a caller leaves the argument out instead of sending
// null.
//
// A tool whose input schema follows the provider's settings starts from
// [InputSchemaFor] and sets t.InputSchema itself.
//
// Before h runs, each call's arguments are validated as the host does
// ([ArgumentValidator]), so a call that did not come through the host
// gets the host's messages as an error result; then the defaults of the
// input schema fill in missing arguments, and the arguments are decoded
// into In with encoding/json.
//
// AddTool panics when a schema cannot be derived or the tool breaks a rule
// of [ValidateTool], or when the output schema does not have "type":
// "object": mistakes in the provider's code, found the first time it
// runs (sdktest.Start runs it).
func AddTool[In, Out any](ts *Tools, t Tool, h ToolHandler[In, Out]) {
	tool, err := newTypedTool(t, h)
	if err != nil {
		panic(fmt.Sprintf("sdk.AddTool: tool %q: %v", t.Name, err))
	}
	ts.mu.Lock()
	defer ts.mu.Unlock()
	if ts.tools == nil {
		ts.tools = map[string]*typedTool{}
	}
	if _, ok := ts.tools[t.Name]; !ok {
		ts.order = append(ts.order, t.Name)
	}
	ts.tools[t.Name] = tool
}

// List returns the specs of the tools in the order they were first added,
// with their derived schemas, for [Catalog].Tools.
func (ts *Tools) List() []Tool {
	ts.mu.RLock()
	defer ts.mu.RUnlock()
	out := make([]Tool, 0, len(ts.order))
	for _, name := range ts.order {
		out = append(out, ts.tools[name].spec)
	}
	return out
}

// Call runs the tool req.Name, as [Provider.CallTool] does: see
// [ToolHandler] for what becomes of its result. A name that no tool of ts
// has is an error that lists the tools.
func (ts *Tools) Call(ctx context.Context, req *CallToolRequest) (*CallToolResult, error) {
	ts.mu.RLock()
	tool, ok := ts.tools[req.Name]
	names := strings.Join(ts.order, ", ")
	ts.mu.RUnlock()
	if !ok {
		return nil, fmt.Errorf("no tool %q; the provider serves %s", req.Name, names)
	}
	return tool.call(ctx, req)
}

// newTypedTool derives t's schemas and wraps h.
func newTypedTool[In, Out any](t Tool, h ToolHandler[In, Out]) (*typedTool, error) {
	var input *derivedSchema
	if t.InputSchema == nil {
		d, err := derive(reflect.TypeFor[In]())
		if err != nil {
			return nil, fmt.Errorf("input schema: %w", err)
		}
		t.InputSchema, input = slices.Clone(d.raw), d
	}
	untyped := reflect.TypeFor[Out]() == reflect.TypeFor[any]()
	var output *derivedSchema
	if t.OutputSchema == nil && !untyped {
		d, err := derive(reflect.TypeFor[Out]())
		if err != nil {
			return nil, fmt.Errorf("output schema: %w", err)
		}
		t.OutputSchema, output = slices.Clone(d.raw), d
	}
	args, err := newArgumentValidator(t, input, output)
	if err != nil {
		return nil, err
	}
	if output == nil && len(t.OutputSchema) > 0 {
		var s jsonschema.Schema
		if err := json.Unmarshal(t.OutputSchema, &s); err != nil {
			return nil, fmt.Errorf("output schema: %w", err)
		}
		if _, err = s.Resolve(nil); err != nil {
			return nil, fmt.Errorf("output schema: %w", err)
		}
	}
	inputResolved := args.resolved
	call := func(ctx context.Context, req *CallToolRequest) (*CallToolResult, error) {
		in, errRes := decodeArguments[In](args, inputResolved, req.Arguments)
		if errRes != nil {
			return errRes, nil
		}
		res, out, err := h(ctx, req, in)
		if err != nil {
			if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
				return nil, err
			}
			return ErrorResult("%s", err.Error()), nil
		}
		if res == nil {
			res = &CallToolResult{}
		}
		if res.IsError || len(res.InputRequests) > 0 || (untyped && any(out) == nil) {
			return res, nil
		}
		structured, err := json.Marshal(out)
		if err != nil {
			return nil, fmt.Errorf("%s: marshal output: %w", req.Name, err)
		}
		// json.Marshal's output is valid JSON without leading space: an
		// object starts with '{' (nil maps and pointers are null).
		if len(structured) == 0 || structured[0] != '{' {
			return nil, fmt.Errorf("%s: output must be a JSON object, got %.40s", req.Name, structured)
		}
		res.StructuredContent = structured
		if len(res.Content) == 0 {
			res.Content = []Content{TextContent(string(structured))}
		}
		return res, nil
	}
	return &typedTool{spec: t, call: call}, nil
}

// decodeArguments validates raw as the host does, fills in the input
// schema's defaults and decodes the result into In; a failure is the
// error result to return.
func decodeArguments[In any](args *ArgumentValidator, input *jsonschema.Resolved, raw json.RawMessage) (In, *CallToolResult) {
	var in In
	checked, err := args.Validate(raw)
	if err != nil {
		return in, ErrorResult("%s", err.Error())
	}
	var obj map[string]any
	if err := json.Unmarshal(checked, &obj); err != nil {
		return in, ErrorResult("arguments must be a JSON object: %v", err)
	}
	if err := input.ApplyDefaults(&obj); err != nil {
		return in, ErrorResult("arguments: %v", err)
	}
	filled, err := json.Marshal(obj)
	if err != nil {
		return in, ErrorResult("arguments: %v", err)
	}
	dec := json.NewDecoder(bytes.NewReader(filled))
	dec.UseNumber()
	if err := dec.Decode(&in); err != nil {
		return in, ErrorResult("arguments do not fit the tool: %v", err)
	}
	return in, nil
}

// InputSchemaFor returns the input schema [AddTool] derives from In, for
// a tool whose schema follows the provider's settings (a default taken
// from them, say): change what differs, then set the schema, marshalled,
// as the tool's InputSchema, which AddTool then uses as it is. Like
// AddTool, it panics when the schema cannot be derived.
func InputSchemaFor[In any]() *jsonschema.Schema {
	s, err := deriveSchema(reflect.TypeFor[In]())
	if err != nil {
		panic(fmt.Sprintf("sdk.InputSchemaFor: %v", err))
	}
	return s
}

// derivedSchema is a Go type's schema as [AddTool] derives it: its JSON,
// and that JSON parsed and resolved. It is shared and must not be changed.
type derivedSchema struct {
	raw      json.RawMessage
	schema   *jsonschema.Schema
	resolved *jsonschema.Resolved
}

// derivedTypes holds, by reflect.Type, a func returning that type's
// *derivedSchema, computed on first use: a type's schema never changes,
// and deriving and resolving it was most of what building a provider's
// tools cost (a provider builds them on every New). It holds one entry per
// Go type passed to AddTool, a number fixed by the program.
var derivedTypes sync.Map

// derive returns t's derived schema, computing it once per process.
func derive(t reflect.Type) (*derivedSchema, error) {
	f, ok := derivedTypes.Load(t)
	if !ok {
		f, _ = derivedTypes.LoadOrStore(t, sync.OnceValues(func() (*derivedSchema, error) {
			s, err := deriveSchema(t)
			if err != nil {
				return nil, err
			}
			raw, err := json.Marshal(s)
			if err != nil {
				return nil, err
			}
			// The schema is parsed back from its JSON so that what is
			// resolved is exactly what clients are sent.
			var parsed jsonschema.Schema
			if err := json.Unmarshal(raw, &parsed); err != nil {
				return nil, err
			}
			resolved, err := parsed.Resolve(nil)
			if err != nil {
				return nil, err
			}
			return &derivedSchema{raw: raw, schema: &parsed, resolved: resolved}, nil
		}))
	}
	return f.(func() (*derivedSchema, error))()
}

// deriveSchema returns the JSON Schema of t as [AddTool] describes it.
func deriveSchema(t reflect.Type) (*jsonschema.Schema, error) {
	if t == reflect.TypeFor[any]() {
		return &jsonschema.Schema{Type: "object"}, nil
	}
	s, err := jsonschema.ForType(t, &jsonschema.ForOptions{TypeSchemas: map[reflect.Type]*jsonschema.Schema{
		reflect.TypeFor[json.RawMessage](): {},
	}})
	if err != nil {
		return nil, err
	}
	if err := refine(t, s); err != nil {
		return nil, err
	}
	if s.Type != "object" {
		return nil, fmt.Errorf("%s is not a struct or a map: the schema's type must be object", t)
	}
	return s, nil
}

// refine walks the schema s derived from t: it drops null from the types
// of slices that are not pointers and of pointer fields tagged omitempty
// or omitzero, which encoding/json leaves out rather than write null and
// which stand for optional arguments; and it applies the schema tags of
// struct fields.
func refine(t reflect.Type, s *jsonschema.Schema) error {
	if s == nil {
		return nil
	}
	if t == reflect.TypeFor[*json.RawMessage]() {
		// Any JSON value, null included, rather than only null.
		s.Types = nil
	}
	if t.Kind() == reflect.Pointer {
		t = t.Elem()
	} else if t.Kind() == reflect.Slice && slices.Equal(s.Types, []string{"null", "array"}) {
		s.Type, s.Types = "array", nil
	}
	switch t.Kind() {
	case reflect.Slice, reflect.Array:
		return refine(t.Elem(), s.Items)
	case reflect.Map:
		return refine(t.Elem(), s.AdditionalProperties)
	case reflect.Struct:
		for _, f := range reflect.VisibleFields(t) {
			if !f.IsExported() || f.Anonymous {
				continue
			}
			name, opts, _ := strings.Cut(f.Tag.Get("json"), ",")
			if name == "-" {
				continue
			}
			if name == "" {
				name = f.Name
			}
			prop := s.Properties[name]
			if prop == nil {
				continue
			}
			if err := refine(f.Type, prop); err != nil {
				return err
			}
			omitted := slices.ContainsFunc(strings.Split(opts, ","), func(o string) bool { return o == "omitempty" || o == "omitzero" })
			if omitted && f.Type.Kind() == reflect.Pointer && len(prop.Types) == 2 && prop.Types[0] == "null" {
				prop.Type, prop.Types = prop.Types[1], nil
			}
			if tag, ok := f.Tag.Lookup("schema"); ok {
				if err := applySchemaTag(prop, tag); err != nil {
					return fmt.Errorf("%s.%s: schema tag: %w", t, f.Name, err)
				}
			}
		}
	}
	return nil
}
