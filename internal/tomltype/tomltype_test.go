package tomltype

import (
	"testing"
	"time"

	"github.com/pelletier/go-toml/v2"
)

func TestDescribe(t *testing.T) {
	t.Parallel()
	for v, want := range map[any]string{
		"s": "a string", true: "a boolean", int64(1): "an integer", 1.5: "a float",
		toml.LocalDate{Year: 2026}: "a date or time", time.Unix(0, 0): "a date or time", struct{}{}: "a value",
	} {
		if got := Describe(v); got != want {
			t.Errorf("Describe(%#v) = %q, want %q", v, got, want)
		}
	}
	if Describe([]any{}) != "an array" || Describe(map[string]any{}) != "a table" {
		t.Error("array or table")
	}
}
