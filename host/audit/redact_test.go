package audit

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"

	"github.com/openhuman/openhuman-host/sdk"
)

// jsonList renders strs as a JSON array.
func jsonList(strs ...string) string {
	b, err := json.Marshal(strs)
	if err != nil {
		panic(err)
	}
	return string(b)
}

// testRules are the audit rules of the tests: the identifier and list
// keys a host's built-ins might declare.
var testRules = sdk.AuditRules{
	Identifiers: []string{"namespace", "chunk_id", "document_id", "assist_id", "kind", "language", "k", "offset", "max_results", "since_ms", "until_ms"},
	Lists:       []string{"tags", "categories", "source_kinds", "source_ids", "entity_ids"},
}

func TestSummarizeArgs(t *testing.T) {
	t.Parallel()
	e200 := strings.Repeat("é", 200)
	e128 := strings.Repeat("é", 128)
	u130 := strings.Repeat("ü", 130)
	u128 := strings.Repeat("ü", 128)
	manyTags := make([]string, 60)
	wantTags := make([]string, 50)
	for i := range manyTags {
		manyTags[i] = u130
	}
	for i := range wantTags {
		wantTags[i] = u128
	}
	tests := map[string]struct {
		args string
		want string
	}{
		"identifiers and small values kept": {
			args: `{"namespace":"mcp","chunk_id":"c-1","document_id":"mcp-store-notes","assist_id":"coder",
				"kind":"email","language":"en","k":10,"offset":0,"max_results":5,"since_ms":1700000000000,"until_ms":1800000000000}`,
			want: `{"assist_id":"coder","chunk_id":"c-1","document_id":"mcp-store-notes","k":10,"kind":"email",` +
				`"language":"en","max_results":5,"namespace":"mcp","offset":0,"since_ms":1700000000000,"until_ms":1800000000000}`,
		},
		"long and odd argument names are counted, not stored": {
			args: `{"` + strings.Repeat("K", 65) + `":1,"has space":"x","ok_name":2}`,
			want: `{"_other_keys":2,"ok_name":2}`,
		},
		"at most 32 names kept": {
			args: manyKeys(40),
			want: wantManyKeys(32, 8),
		},
		"numbers, booleans and null kept under any key": {
			args: `{"depth":3.5,"flag":true,"off":false,"none":null,"big":12345678901234567890,"exp":1e3}`,
			want: `{"big":12345678901234567890,"depth":3.5,"exp":1e3,"flag":true,"none":null,"off":false}`,
		},
		"other strings become byte lengths": {
			args: `{"content":"héllo","query":"secret words","prompt":"","note_text":"😀"}`,
			want: `{"content":{"len":6},"note_text":{"len":4},"prompt":{"len":0},"query":{"len":12}}`,
		},
		"title kept": {
			args: `{"title":"Meeting notes <b>&</b>"}`,
			want: `{"title":"Meeting notes <b>&</b>"}`,
		},
		"multi-byte title cut to 128 runes": {
			args: `{"title":"` + e200 + `"}`,
			want: `{"title":"` + e128 + `"}`,
		},
		"title of exactly 128 runes kept": {
			args: `{"title":"` + e128 + `"}`,
			want: `{"title":"` + e128 + `"}`,
		},
		"long identifier cut to 128 runes": {
			args: `{"assist_id":"` + e200 + `"}`,
			want: `{"assist_id":"` + e128 + `"}`,
		},
		"title that is not a string counted": {
			args: `{"title":{"a":1,"b":2}}`,
			want: `{"title":{"count":2}}`,
		},
		"identifier that is an object counted": {
			args: `{"chunk_id":{"x":"secret"},"namespace":["a","b","c"]}`,
			want: `{"chunk_id":{"count":1},"namespace":{"count":3}}`,
		},
		"tag-like lists kept": {
			args: `{"tags":["work","ideas"],"categories":["news"],"source_kinds":[],"source_ids":["file:/x.md"],"entity_ids":["e1","e2"]}`,
			want: `{"categories":["news"],"entity_ids":["e1","e2"],"source_ids":["file:/x.md"],"source_kinds":[],"tags":["work","ideas"]}`,
		},
		"tag list capped at 50 entries of 128 runes": {
			args: `{"tags":` + jsonList(manyTags...) + `}`,
			want: `{"tags":` + jsonList(wantTags...) + `}`,
		},
		"tag list with a non-string counted": {
			args: `{"tags":["a",1,{"b":2}]}`,
			want: `{"tags":{"count":3}}`,
		},
		"other arrays and objects counted": {
			args: `{"messages":[{"role":"user","content":"secret"},{"role":"assistant"}],"meta":{"a":1,"b":2,"c":3},"ids":["x"]}`,
			want: `{"ids":{"count":1},"messages":{"count":2},"meta":{"count":3}}`,
		},
		"empty object": {args: `{}`, want: `{}`},
		"no arguments": {args: ``, want: `{}`},
		"null":         {args: ` null `, want: `{}`},
		"invalid JSON": {
			args: `{"title":`,
			want: `{"invalid_json":true,"len":9}`,
		},
		"trailing garbage": {
			args: `{} x`,
			want: `{"invalid_json":true,"len":4}`,
		},
		"array instead of object": {
			args: `[1, 2]`,
			want: `{"not_object":true,"len":6}`,
		},
		"string instead of object": {
			args: `"secret"`,
			want: `{"not_object":true,"len":8}`,
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			got := SummarizeArgs(json.RawMessage(tc.args), testRules)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("SummarizeArgs(%.80s) (-want +got):\n%s", tc.args, diff)
			}
			if !json.Valid([]byte(got)) {
				t.Errorf("SummarizeArgs() = %s, not valid JSON", got)
			}
		})
	}
}

func TestTruncateError(t *testing.T) {
	t.Parallel()
	a := func(n int) string { return strings.Repeat("a", n) }
	tests := map[string]struct {
		in   string
		want string
	}{
		"empty":                               {in: "", want: ""},
		"short":                               {in: "provider memory: boom", want: "provider memory: boom"},
		"exactly 1024 bytes":                  {in: a(1024), want: a(1024)},
		"1025 ASCII bytes":                    {in: a(1025), want: a(1024)},
		"two-byte character across the cut":   {in: a(1023) + "é" + "tail", want: a(1023)},
		"three-byte character across the cut": {in: a(1022) + "€" + "tail", want: a(1022)},
		"four-byte character across the cut":  {in: a(1021) + "😀" + "tail", want: a(1021)},
		"four-byte character ending at the cut": {
			in:   a(1020) + "😀" + "tail",
			want: a(1020) + "😀",
		},
		"invalid UTF-8 is cut at 1024": {
			in:   strings.Repeat("\x80", 2000),
			want: strings.Repeat("\x80", 1024),
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			got := TruncateError(tc.in)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("TruncateError() (-want +got):\n%s", diff)
			}
			if len(got) > MaxErrorBytes {
				t.Errorf("len(TruncateError()) = %d, want <= %d", len(got), MaxErrorBytes)
			}
			if utf8.ValidString(tc.in) && !utf8.ValidString(got) {
				t.Errorf("TruncateError() of valid UTF-8 is not valid UTF-8")
			}
		})
	}
}

func TestSessionHash(t *testing.T) {
	t.Parallel()
	tests := map[string]struct {
		id   string
		want string
	}{
		"empty id":  {id: "", want: ""},
		"abc":       {id: "abc", want: "sha256:ba7816bf"},
		"hello":     {id: "hello", want: "sha256:2cf24dba"},
		"uuid-like": {id: "6f1c2a1e-6d2b-4b5e-9a55-0d5b9d7c3e21", want: "sha256:6501f2d8"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			got := SessionHash(tc.id)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("SessionHash(%q) (-want +got):\n%s", tc.id, diff)
			}
			if tc.id != "" && len(got) != len("sha256:")+8 {
				t.Errorf("SessionHash(%q) = %q, want sha256: and 8 hex digits", tc.id, got)
			}
		})
	}
}

func manyKeys(n int) string {
	parts := make([]string, n)
	for i := range parts {
		parts[i] = fmt.Sprintf(`"a%02d":%d`, i, i)
	}
	return "{" + strings.Join(parts, ",") + "}"
}

func wantManyKeys(kept, other int) string {
	parts := []string{fmt.Sprintf(`"_other_keys":%d`, other)}
	for i := range kept {
		parts = append(parts, fmt.Sprintf(`"a%02d":%d`, i, i))
	}
	return "{" + strings.Join(parts, ",") + "}"
}
