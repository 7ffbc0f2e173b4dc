package sdk

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/google/jsonschema-go/jsonschema"
)

// ArgumentError is a tool argument the host rejects before dispatch
// ([ArgumentValidator.Validate]). Message names the argument and the bound
// it broke, in words a model can act on; the host returns it to the client
// as the text of an isError result.
type ArgumentError struct {
	// Argument is the top-level argument's name; empty when the arguments
	// as a whole are wrong (not an object, for example).
	Argument string
	// Message is the full, actionable message.
	Message string
}

// Error returns Message.
func (e *ArgumentError) Error() string { return e.Message }

// maxFallbackMessage caps the JSON Schema validator's message, in bytes.
const maxFallbackMessage = 200

// ErrInvalidArguments is matched by every [ArgumentError] with errors.Is.
var ErrInvalidArguments = errors.New("invalid arguments")

// Is reports whether target is [ErrInvalidArguments].
func (e *ArgumentError) Is(target error) bool { return target == ErrInvalidArguments }

// Validate checks raw (a JSON object; empty or null means {}) against the
// tool's input schema and the host's rules, and returns the arguments to
// forward: raw without surrounding white space, "{}" for empty or null. Host rules, checked first with precise messages:
// no argument the schema does not list when it sets
// "additionalProperties": false; types of top-level arguments; required
// arguments present and, for strings, not blank after trimming; numeric
// minimum/maximum; string and array length bounds, including the length of
// each string item of an array. Everything else in the schema (patterns,
// enums, nested objects) is then checked by the JSON Schema validator the
// go-sdk uses. Values are never clamped or rewritten. The error is an
// *[ArgumentError]; messages name the tool as clients see it
// ([ClientName] of its declared name).
func (v *ArgumentValidator) Validate(raw json.RawMessage) (json.RawMessage, error) {
	trimmed := bytes.TrimSpace(raw)
	if len(trimmed) == 0 || bytes.Equal(trimmed, []byte("null")) {
		trimmed = []byte("{}")
	}
	var args map[string]any
	dec := json.NewDecoder(bytes.NewReader(trimmed))
	dec.UseNumber()
	if err := dec.Decode(&args); err != nil || args == nil {
		return nil, &ArgumentError{Message: fmt.Sprintf("arguments must be a JSON object; %s takes: %s", v.name, v.argumentList())}
	}
	if err := v.checkHostRules(args); err != nil {
		return nil, err
	}
	// The validator wants plain JSON values, not json.Number.
	var plain map[string]any
	if err := json.Unmarshal(trimmed, &plain); err != nil {
		return nil, &ArgumentError{Message: fmt.Sprintf("arguments must be a JSON object: %v", err)}
	}
	if err := v.resolved.Validate(plain); err != nil {
		msg := strings.TrimPrefix(err.Error(), "validating root: ")
		// The validator quotes values; keep the message short so little of
		// them reaches the model and the audit log.
		if len(msg) > maxFallbackMessage {
			cut := maxFallbackMessage
			for cut > 0 && !utf8.RuneStart(msg[cut]) {
				cut--
			}
			msg = msg[:cut] + "..."
		}
		return nil, &ArgumentError{Message: fmt.Sprintf("invalid arguments for %s: %s", v.name, msg)}
	}
	return trimmed, nil
}

func (v *ArgumentValidator) argumentList() string {
	if len(v.schema.Properties) == 0 {
		return "no arguments"
	}
	names := make([]string, 0, len(v.schema.Properties))
	for name := range v.schema.Properties {
		names = append(names, name)
	}
	slices.Sort(names)
	return strings.Join(names, ", ")
}

func isFalseSchema(s *jsonschema.Schema) bool {
	return s != nil && s.Not != nil && isEmptySchema(s.Not)
}

func isEmptySchema(s *jsonschema.Schema) bool {
	b, err := json.Marshal(s)
	return err == nil && (string(b) == "{}" || string(b) == "true")
}

func (v *ArgumentValidator) checkHostRules(args map[string]any) error {
	names := make([]string, 0, len(args))
	for name := range args {
		names = append(names, name)
	}
	slices.Sort(names)
	if v.closed {
		for _, name := range names {
			if _, ok := v.schema.Properties[name]; !ok {
				return &ArgumentError{Argument: name, Message: fmt.Sprintf("unknown argument %q; %s takes: %s", name, v.name, v.argumentList())}
			}
		}
	}
	for _, name := range v.schema.Required {
		if _, ok := args[name]; !ok {
			return &ArgumentError{Argument: name, Message: fmt.Sprintf("missing required argument %q", name)}
		}
	}
	for _, name := range names {
		prop := v.schema.Properties[name]
		if prop == nil {
			continue
		}
		if err := checkValue(name, prop, args[name], v.required[name]); err != nil {
			return err
		}
	}
	return nil
}

func schemaTypes(s *jsonschema.Schema) []string {
	if s.Type != "" {
		return []string{s.Type}
	}
	return s.Types
}

func jsonType(v any) string {
	switch x := v.(type) {
	case nil:
		return "null"
	case bool:
		return "boolean"
	case string:
		return "string"
	case json.Number:
		// JSON Schema counts any number with a zero fractional part as an
		// integer: 10, 10.0 and 1e1 alike.
		if _, err := strconv.ParseInt(x.String(), 10, 64); err == nil {
			return "integer"
		}
		if f, err := strconv.ParseFloat(x.String(), 64); err == nil && f == math.Trunc(f) && !math.IsInf(f, 0) {
			return "integer"
		}
		return "number"
	case []any:
		return "array"
	case map[string]any:
		return "object"
	}
	return fmt.Sprintf("%T", v)
}

// describeValue shows a rejected value only when it is a number, boolean
// or null: strings, arrays and objects may carry the user's content, which
// must not reach error messages and audit rows.
func describeValue(v any) string {
	switch x := v.(type) {
	case json.Number:
		s := x.String()
		if len(s) > 40 {
			s = s[:37] + "..."
		}
		return s
	case bool, nil:
		b, _ := json.Marshal(x)
		return string(b)
	case string:
		return fmt.Sprintf("(%d characters)", utf8.RuneCountInString(x))
	case []any:
		return fmt.Sprintf("(%d items)", len(x))
	case map[string]any:
		return fmt.Sprintf("(%d keys)", len(x))
	}
	return ""
}

func checkValue(name string, s *jsonschema.Schema, v any, required bool) error {
	got := jsonType(v)
	if types := schemaTypes(s); len(types) > 0 {
		ok := slices.Contains(types, got) || (got == "integer" && slices.Contains(types, "number"))
		if !ok {
			msg := fmt.Sprintf("argument %q must be of type %s; got %s", name, strings.Join(types, " or "), got)
			if d := describeValue(v); d != "" && got != "null" {
				msg += " " + d
			}
			return &ArgumentError{Argument: name, Message: msg}
		}
	}
	if len(s.Enum) > 0 && !slices.ContainsFunc(s.Enum, func(e any) bool { return sameJSON(e, v) }) {
		allowed := make([]string, 0, len(s.Enum))
		for _, e := range s.Enum {
			b, _ := json.Marshal(e)
			allowed = append(allowed, string(b))
		}
		return &ArgumentError{Argument: name, Message: fmt.Sprintf("argument %q must be one of %s", name, strings.Join(allowed, ", "))}
	}
	switch x := v.(type) {
	case string:
		if required && strings.TrimSpace(x) == "" {
			return &ArgumentError{Argument: name, Message: fmt.Sprintf("argument %q must not be blank", name)}
		}
		if err := checkStringLength(name, "", s, x); err != nil {
			return err
		}
		if s.Pattern != "" {
			re, err := regexp.Compile(s.Pattern)
			if err == nil && !re.MatchString(x) {
				return &ArgumentError{Argument: name, Message: fmt.Sprintf("argument %q must match the pattern %s", name, s.Pattern)}
			}
		}
		return nil
	case json.Number:
		f, err := x.Float64()
		if err != nil {
			return &ArgumentError{Argument: name, Message: fmt.Sprintf("argument %q is not a valid number: %s", name, x)}
		}
		return checkBounds(name, s, f, x.String())
	case []any:
		if s.MinItems != nil && len(x) < *s.MinItems {
			return &ArgumentError{Argument: name, Message: fmt.Sprintf("argument %q has %d items; at least %d required", name, len(x), *s.MinItems)}
		}
		if s.MaxItems != nil && len(x) > *s.MaxItems {
			return &ArgumentError{Argument: name, Message: fmt.Sprintf("argument %q has %d items; at most %d allowed", name, len(x), *s.MaxItems)}
		}
		if s.Items != nil {
			for i, item := range x {
				if types := schemaTypes(s.Items); len(types) > 0 {
					got := jsonType(item)
					if !slices.Contains(types, got) && (got != "integer" || !slices.Contains(types, "number")) {
						return &ArgumentError{Argument: name, Message: fmt.Sprintf("argument %q item %d must be of type %s; got %s",
							name, i+1, strings.Join(types, " or "), got)}
					}
				}
				if len(s.Items.Enum) > 0 && !slices.ContainsFunc(s.Items.Enum, func(e any) bool { return sameJSON(e, item) }) {
					allowed := make([]string, 0, len(s.Items.Enum))
					for _, e := range s.Items.Enum {
						b, _ := json.Marshal(e)
						allowed = append(allowed, string(b))
					}
					return &ArgumentError{Argument: name, Message: fmt.Sprintf("argument %q item %d must be one of %s",
						name, i+1, strings.Join(allowed, ", "))}
				}
				str, ok := item.(string)
				if !ok {
					continue
				}
				if err := checkStringLength(name, fmt.Sprintf(" item %d", i+1), s.Items, str); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// sameJSON compares a schema enum value with a decoded argument value.
func sameJSON(a, b any) bool {
	x, err1 := json.Marshal(a)
	y, err2 := json.Marshal(b)
	if err1 != nil || err2 != nil {
		return false
	}
	var xa, ya any
	return json.Unmarshal(x, &xa) == nil && json.Unmarshal(y, &ya) == nil && fmt.Sprint(xa) == fmt.Sprint(ya)
}

func checkStringLength(name, which string, s *jsonschema.Schema, v string) error {
	n := utf8.RuneCountInString(v)
	if s.MinLength != nil && n < *s.MinLength {
		return &ArgumentError{Argument: name, Message: fmt.Sprintf("argument %q%s is %d characters long; at least %d required", name, which, n, *s.MinLength)}
	}
	if s.MaxLength != nil && n > *s.MaxLength {
		return &ArgumentError{Argument: name, Message: fmt.Sprintf("argument %q%s is %d characters long; at most %d allowed", name, which, n, *s.MaxLength)}
	}
	return nil
}

func checkBounds(name string, s *jsonschema.Schema, f float64, text string) error {
	lo, hi := s.Minimum, s.Maximum
	outside := (lo != nil && f < *lo) || (hi != nil && f > *hi) ||
		(s.ExclusiveMinimum != nil && f <= *s.ExclusiveMinimum) || (s.ExclusiveMaximum != nil && f >= *s.ExclusiveMaximum)
	if !outside {
		return nil
	}
	num := func(p *float64) string { return strconv.FormatFloat(*p, 'f', -1, 64) }
	var bound string
	switch {
	case lo != nil && hi != nil:
		bound = fmt.Sprintf("between %s and %s", num(lo), num(hi))
	case lo != nil:
		bound = fmt.Sprintf("at least %s", num(lo))
	case hi != nil:
		bound = fmt.Sprintf("at most %s", num(hi))
	case s.ExclusiveMinimum != nil:
		bound = fmt.Sprintf("greater than %s", num(s.ExclusiveMinimum))
	default:
		bound = fmt.Sprintf("less than %s", num(s.ExclusiveMaximum))
	}
	return &ArgumentError{Argument: name, Message: fmt.Sprintf("argument %q must be %s; got %s", name, bound, text)}
}
