package sdk

import (
	"encoding/json"

	"github.com/pelletier/go-toml/v2"
)

// DescribeValue names the type of a configuration value decoded into an
// any, for error messages such as "timeout must be an integer; got a
// string". It knows the values github.com/pelletier/go-toml/v2 decodes a
// TOML document into, and so also those encoding/json decodes
// [ConfigureRequest.Config] into (where every number is a float64):
// "a string" (string), "a boolean" (bool), "an integer" (int64), "a
// float" (float64), "an array" ([]any), "a table" (map[string]any) and
// "a date or time" (go-toml's LocalDate, LocalTime and LocalDateTime, or
// any value with a Unix() int64 method, such as a time.Time), and "a
// number" for a json.Number (json.Decoder.UseNumber). Anything else, nil
// included, is "a value".
func DescribeValue(v any) string {
	switch v.(type) {
	case string:
		return "a string"
	case bool:
		return "a boolean"
	case int64:
		return "an integer"
	case float64:
		return "a float"
	case json.Number:
		return "a number"
	case []any:
		return "an array"
	case map[string]any:
		return "a table"
	case toml.LocalDate, toml.LocalTime, toml.LocalDateTime:
		return "a date or time"
	}
	if _, ok := v.(interface{ Unix() int64 }); ok {
		return "a date or time"
	}
	return "a value"
}
