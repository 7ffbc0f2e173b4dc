package sdk

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// ConfigTable decodes raw, a table of the host's config as
// [ConfigureRequest.Config] carries it (a JSON object), into its keys with
// their values still encoded, and refuses a key that is not in keys. Empty
// or null raw is an empty table. name is the table as the user writes it,
// such as "[providers.hello]", and starts every error:
//
//	[providers.hello] must be a table, not an array
//	[providers.hello] is not a valid table: <the JSON error>
//	[providers.hello] has unknown key "colour"; the valid keys are greeting, color
//
// Unknown keys are listed sorted and quoted; the valid keys in the order
// given.
func ConfigTable(name string, raw json.RawMessage, keys ...string) (map[string]json.RawMessage, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
		return map[string]json.RawMessage{}, nil
	}
	if kind := JSONKind(raw); kind != "a table" {
		return nil, fmt.Errorf("%s must be a table, not %s", name, kind)
	}
	var table map[string]json.RawMessage
	if err := json.Unmarshal(raw, &table); err != nil {
		return nil, fmt.Errorf("%s is not a valid table: %w", name, err)
	}
	var unknown []string
	for k := range table {
		if !slices.Contains(keys, k) {
			unknown = append(unknown, strconv.Quote(k))
		}
	}
	if len(unknown) > 0 {
		slices.Sort(unknown)
		word := "key"
		if len(unknown) > 1 {
			word = "keys"
		}
		return nil, fmt.Errorf("%s has unknown %s %s; the valid keys are %s",
			name, word, strings.Join(unknown, ", "), strings.Join(keys, ", "))
	}
	return table, nil
}

// JSONKind names the JSON type of raw, a JSON value with or without
// surrounding white space, in the terms of TOML and of a config's user,
// with its article: "a table" (an object), "an array", "a string", "a
// boolean", "a number" or "null"; "nothing" when raw is empty. Only the
// first byte is looked at: raw is not validated. Errors about a value of a
// provider's config use it, such as "timeout_secs must be a number, not a
// string".
func JSONKind(raw json.RawMessage) string {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		return "nothing"
	}
	switch raw[0] {
	case '{':
		return "a table"
	case '[':
		return "an array"
	case '"':
		return "a string"
	case 't', 'f':
		return "a boolean"
	case 'n':
		return "null"
	default:
		return "a number"
	}
}
