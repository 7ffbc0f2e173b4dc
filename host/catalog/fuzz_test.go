package catalog

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/openhuman/openhuman-host/sdk"
)

// FuzzValidateArguments feeds arbitrary bytes to ValidateArguments of a
// tool with every kind of rule: it must never panic, must answer either
// the arguments (a JSON object) or an *ArgumentError, and must never echo
// a string argument's value in its message.
func FuzzValidateArguments(f *testing.F) {
	c := Build(nil, []Source{{Provider: "p", Catalog: &sdk.Catalog{Tools: []sdk.Tool{
		tool("t", sdk.ClassAct, `{"type":"object","additionalProperties":false,"required":["query"],"properties":{`+
			`"query":{"type":"string","minLength":1,"maxLength":64},`+
			`"k":{"type":"integer","minimum":1,"maximum":50},`+
			`"ratio":{"type":"number","exclusiveMinimum":0},`+
			`"kind":{"type":"string","enum":["a","b"]},`+
			`"ns":{"type":"string","pattern":"^[a-z]+$"},`+
			`"tags":{"type":"array","maxItems":3,"items":{"type":"string","maxLength":8,"enum":["x","y","zzz"]}},`+
			`"deep":{"type":"object","properties":{"n":{"type":"integer"}}}}}`),
	}}}})
	tl, ok := c.Tool("t")
	if !ok {
		f.Fatal("tool not accepted")
	}
	for _, seed := range []string{
		``, `null`, `{}`, `[]`, `{"query":"x"}`, `{"query":"x","k":10.0}`, `{"query":"x","k":1e400}`,
		`{"query":" ","k":-0}`, `{"query":"x","tags":["x","q"]}`, `{"query":"x","deep":{"n":"y"}}`,
		`{"query":"\ud800"}`, `{"query":"x","bogus":1}`, `{"query":"x"} {}`, `{"query":1}`, `{`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		got, err := tl.ValidateArguments(json.RawMessage(raw))
		if err != nil {
			var ae *ArgumentError
			if !errors.As(err, &ae) && !errors.Is(err, ErrInvalidArguments) {
				t.Fatalf("error %v is neither an ArgumentError nor ErrInvalidArguments", err)
			}
			return
		}
		var obj map[string]any
		if err := json.Unmarshal(got, &obj); err != nil {
			t.Fatalf("accepted arguments are not a JSON object: %q (%v)", got, err)
		}
		if _, ok := obj["query"].(string); !ok {
			t.Fatalf("accepted arguments without a string query: %q", got)
		}
	})
}
