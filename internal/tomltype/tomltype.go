// Package tomltype names the TOML type of a value decoded by
// github.com/pelletier/go-toml/v2 into an interface, for error messages
// such as "must be a string; got an integer".
package tomltype

import "github.com/pelletier/go-toml/v2"

// Describe returns "a string", "a boolean", "an integer", "a float", "an
// array", "a table" or "a date or time" for the values go-toml decodes
// into an any, and "a value" for anything else.
func Describe(v any) string {
	switch v.(type) {
	case string:
		return "a string"
	case bool:
		return "a boolean"
	case int64:
		return "an integer"
	case float64:
		return "a float"
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
