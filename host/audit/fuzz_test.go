package audit

import (
	"encoding/json"
	"strings"
	"testing"
)

// FuzzSummarizeArgs feeds arbitrary bytes to SummarizeArgs: the summary is
// always a JSON object with at most 33 keys (32 plus _other_keys), and a
// long string under a key that is not kept never appears in it.
func FuzzSummarizeArgs(f *testing.F) {
	for _, seed := range []string{
		``, `null`, `[]`, `"x"`, `{`, `{"title":"t","content":"secret body","tags":["a"]}`,
		`{"query":"` + strings.Repeat("q", 300) + `","k":5}`, `{"a":{"b":[1,2]},"title":"` + strings.Repeat("é", 200) + `"}`,
		`{"tags":[1,"x",null]}`, `{"\u0000":"\ud800"}`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		sum := SummarizeArgs(json.RawMessage(raw), testRules)
		var obj map[string]any
		if err := json.Unmarshal([]byte(sum), &obj); err != nil {
			t.Fatalf("summary %q is not a JSON object: %v", sum, err)
		}
		if len(obj) > 33 {
			t.Fatalf("summary has %d keys", len(obj))
		}
		var in map[string]any
		if json.Unmarshal(raw, &in) != nil {
			return
		}
		for k, v := range in {
			s, ok := v.(string)
			if !ok || len(s) < 16 || k == "title" || strings.HasSuffix(k, "_id") || k == "id" {
				continue
			}
			if strings.Contains(sum, s) {
				t.Fatalf("value of %q appears in the summary %s", k, sum)
			}
		}
	})
}
