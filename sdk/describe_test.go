package sdk_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/pelletier/go-toml/v2"

	"github.com/openhuman/openhuman-host/sdk"
)

func TestDescribeValue(t *testing.T) {
	t.Parallel()
	for v, want := range map[any]string{
		"s": "a string", true: "a boolean", int64(1): "an integer", 1.5: "a float",
		toml.LocalDate{Year: 2026}: "a date or time", toml.LocalTime{Hour: 1}: "a date or time",
		toml.LocalDateTime{}: "a date or time", time.Unix(0, 0): "a date or time",
		json.Number("5"): "a number", struct{}{}: "a value", nil: "a value", 1: "a value",
	} {
		if got := sdk.DescribeValue(v); got != want {
			t.Errorf("DescribeValue(%#v) = %q, want %q", v, got, want)
		}
	}
	if got := sdk.DescribeValue([]any{}); got != "an array" {
		t.Errorf("DescribeValue([]any{}) = %q, want %q", got, "an array")
	}
	if got := sdk.DescribeValue(map[string]any{}); got != "a table" {
		t.Errorf("DescribeValue(map[string]any{}) = %q, want %q", got, "a table")
	}
}
