package sdk_test

import (
	"encoding/json"
	"testing"

	"github.com/openhuman/openhuman-host/sdk"
)

func TestConfigTable(t *testing.T) {
	t.Parallel()
	keys := []string{"greeting", "color"}
	for raw, want := range map[string]string{
		``:                            "",
		` null `:                      "",
		`{"greeting":"hi","color":1}`: "",
		`[1]`:                         "[providers.hello] must be a table, not an array",
		`"x"`:                         "[providers.hello] must be a table, not a string",
		`true`:                        "[providers.hello] must be a table, not a boolean",
		`7`:                           "[providers.hello] must be a table, not a number",
		`{"greeting":`:                "[providers.hello] is not a valid table: unexpected end of JSON input",
		`{"colour":1}`:                `[providers.hello] has unknown key "colour"; the valid keys are greeting, color`,
		`{"z":1,"a":2,"color":3}`:     `[providers.hello] has unknown keys "a", "z"; the valid keys are greeting, color`,
	} {
		table, err := sdk.ConfigTable("[providers.hello]", json.RawMessage(raw), keys...)
		switch {
		case want == "" && err != nil:
			t.Errorf("ConfigTable(%s) error: %v", raw, err)
		case want == "" && table == nil:
			t.Errorf("ConfigTable(%s) = nil table, want an empty or full one", raw)
		case want != "" && (err == nil || err.Error() != want):
			t.Errorf("ConfigTable(%s) error = %v, want %q", raw, err, want)
		}
	}
	table, err := sdk.ConfigTable("[providers.hello]", json.RawMessage(`{"greeting":"hi"}`), keys...)
	if err != nil || string(table["greeting"]) != `"hi"` || len(table) != 1 {
		t.Errorf("ConfigTable() = %v, %v; want greeting \"hi\" alone", table, err)
	}
}
