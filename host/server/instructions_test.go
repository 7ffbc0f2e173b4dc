package server

import (
	"encoding/json"
	"testing"

	"github.com/openhuman/openhuman-host/sdk"
)

func TestInstructions(t *testing.T) {
	t.Parallel()
	const policy = " Read tools never change anything; act tools may be refused by the user's security policy, " +
		"and the refusal says which setting allows them."
	tests := map[string]struct {
		summaries, guidance []string
		want                string
	}{
		"no built-ins": {want: "openhuman-host gives you tools from its providers." + policy},
		"one summary and guidance": {
			summaries: []string{"a notebook", ""},
			guidance:  []string{"Use notes_find to find a note.", "", "Use clock_now for the time."},
			want: "openhuman-host gives you a notebook and other tools from its providers. " +
				"Use notes_find to find a note. Use clock_now for the time." + policy,
		},
		"two summaries": {
			summaries: []string{"a notebook", "a clock"},
			want:      "openhuman-host gives you a notebook, a clock and other tools from its providers." + policy,
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			if got := Instructions(tc.summaries, tc.guidance); got != tc.want {
				t.Errorf("Instructions() =\n%q\nwant\n%q", got, tc.want)
			}
		})
	}
}

func TestResultRefKeys(t *testing.T) {
	t.Parallel()
	keys := []string{"note_id", "page_id"}
	tests := map[string]struct {
		res  sdk.CallToolResult
		keys []string
		want string
	}{
		"the result's own reference wins":    {sdk.CallToolResult{AuditRef: "a\nb", StructuredContent: json.RawMessage(`{"note_id":"n"}`)}, keys, "a b"},
		"first key":                          {sdk.CallToolResult{StructuredContent: json.RawMessage(`{"page_id":"p","note_id":"n"}`)}, keys, "n"},
		"second key when the first is empty": {sdk.CallToolResult{StructuredContent: json.RawMessage(`{"note_id":"","page_id":"p"}`)}, keys, "p"},
		"null counts as empty":               {sdk.CallToolResult{StructuredContent: json.RawMessage(`{"note_id":null,"page_id":"p"}`)}, keys, "p"},
		"another type under a key":           {sdk.CallToolResult{StructuredContent: json.RawMessage(`{"note_id":"n","page_id":7}`)}, keys, ""},
		"not an object":                      {sdk.CallToolResult{StructuredContent: json.RawMessage(`["n"]`)}, keys, ""},
		"no keys":                            {sdk.CallToolResult{StructuredContent: json.RawMessage(`{"note_id":"n"}`)}, nil, ""},
		"other keys":                         {sdk.CallToolResult{StructuredContent: json.RawMessage(`{"id":"n"}`)}, keys, ""},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			if got := resultRef(&tc.res, tc.keys); got != tc.want {
				t.Errorf("resultRef() = %q, want %q", got, tc.want)
			}
		})
	}
}
