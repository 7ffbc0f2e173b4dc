package sdk

import (
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/google/jsonschema-go/jsonschema"
)

// applySchemaTag sets the keywords of a schema tag (see [AddTool]) on s.
func applySchemaTag(s *jsonschema.Schema, tag string) error {
	for tag != "" {
		var pair string
		if strings.HasPrefix(tag, "pattern=") || strings.HasPrefix(tag, "items.pattern=") {
			pair, tag = tag, ""
		} else {
			pair, tag, _ = strings.Cut(tag, ",")
		}
		key, value, ok := strings.Cut(pair, "=")
		if !ok {
			return fmt.Errorf("%q is not key=value", pair)
		}
		target := s
		if rest, ok := strings.CutPrefix(key, "items."); ok {
			if s.Items == nil {
				return fmt.Errorf("%s: the field is not a slice", key)
			}
			target, key = s.Items, rest
		}
		if err := setKeyword(target, key, value); err != nil {
			return fmt.Errorf("%s: %w", key, err)
		}
	}
	return nil
}

// setKeyword sets one keyword of s from its text.
func setKeyword(s *jsonschema.Schema, key, value string) error {
	integers := map[string]**int{
		"minLength": &s.MinLength, "maxLength": &s.MaxLength,
		"minItems": &s.MinItems, "maxItems": &s.MaxItems,
	}
	if p, ok := integers[key]; ok {
		n, err := strconv.Atoi(value)
		*p = &n
		return err
	}
	numbers := map[string]**float64{
		"minimum": &s.Minimum, "maximum": &s.Maximum,
		"exclusiveMinimum": &s.ExclusiveMinimum, "exclusiveMaximum": &s.ExclusiveMaximum,
	}
	if p, ok := numbers[key]; ok {
		f, err := strconv.ParseFloat(value, 64)
		*p = &f
		return err
	}
	switch key {
	case "pattern":
		s.Pattern = value
		return nil
	case "type":
		if s.Type != "" || len(s.Types) > 0 {
			return fmt.Errorf("the field's type already gives the schema's type; type narrows only a field that allows any JSON value (json.RawMessage, an interface)")
		}
		if !slices.Contains([]string{"null", "boolean", "object", "array", "number", "string", "integer"}, value) {
			return fmt.Errorf("%q is not a JSON type: null, boolean, object, array, number, string or integer", value)
		}
		s.Type = value
		return nil
	case "default":
		v, err := typedValue(s, value)
		if err != nil {
			return err
		}
		raw, err := json.Marshal(v)
		s.Default = raw
		return err
	case "enum":
		s.Enum = nil
		for _, item := range strings.Split(value, "|") {
			v, err := typedValue(s, item)
			if err != nil {
				return err
			}
			s.Enum = append(s.Enum, v)
		}
		return nil
	}
	return fmt.Errorf("unknown keyword; the schema tag takes minLength, maxLength, minItems, maxItems, minimum, maximum, exclusiveMinimum, exclusiveMaximum, default, enum, type and pattern")
}

// typedValue parses text as a value of s's type: a string, an integer, a
// number or a boolean.
func typedValue(s *jsonschema.Schema, text string) (any, error) {
	typ := s.Type
	for _, t := range s.Types {
		if t != "null" {
			typ = t
		}
	}
	switch typ {
	case "string":
		return text, nil
	case "integer":
		return strconv.ParseInt(text, 10, 64)
	case "number":
		return strconv.ParseFloat(text, 64)
	case "boolean":
		return strconv.ParseBool(text)
	}
	return nil, fmt.Errorf("values of type %q cannot be given in a tag", typ)
}
