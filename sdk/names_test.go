package sdk_test

import (
	"strings"
	"testing"

	"github.com/openhuman/openhuman-host/sdk"
)

func TestClientName(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("a", 60) + ".tool"
	tests := map[string]struct {
		name, want string
	}{
		"client-safe unchanged":   {name: "notes_store", want: "notes_store"},
		"hyphen kept":             {name: "get-env", want: "get-env"},
		"dots become underscores": {name: "pages.read_chunk", want: "pages_read_chunk"},
		"upstream dotted name":    {name: "gh__repos.list", want: "gh__repos_list"},
		"slash and space":         {name: "a/b c", want: "a_b_c"},
		"one rune, one byte":      {name: "café.menu", want: "caf__menu"},
		"64 bytes kept":           {name: strings.Repeat("x", 64), want: strings.Repeat("x", 64)},
		// 55 bytes of the mapped name, "_" and the first 8 hex digits of the SHA-256 of the declared
		// name: the mapping must not change between versions, since configs name the result.
		"long name shortened": {name: long, want: strings.Repeat("a", 55) + "_d7bdac7e"},
		"empty stays empty":   {name: "", want: ""},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			got := sdk.ClientName(tc.name)
			if got != tc.want {
				t.Fatalf("ClientName(%q) = %q, want %q", tc.name, got, tc.want)
			}
			if tc.name != "" && !sdk.IsClientName(got) {
				t.Fatalf("ClientName(%q) = %q, which IsClientName refuses", tc.name, got)
			}
			if again := sdk.ClientName(got); again != got {
				t.Fatalf("ClientName is not idempotent: %q then %q", got, again)
			}
		})
	}
}

func TestClientNameKeepsLongNamesApart(t *testing.T) {
	t.Parallel()
	a := sdk.ClientName(strings.Repeat("p", 70) + "_one")
	b := sdk.ClientName(strings.Repeat("p", 70) + "_two")
	if a == b {
		t.Fatalf("two long names share the client name %q", a)
	}
}

func TestIsClientName(t *testing.T) {
	t.Parallel()
	for name, want := range map[string]bool{
		"notes_store":           true,
		"A-z_09":                true,
		strings.Repeat("x", 64): true,
		strings.Repeat("x", 65): false,
		"":                      false,
		"notes.store":           false,
		"a b":                   false,
		"é":                     false,
	} {
		if got := sdk.IsClientName(name); got != want {
			t.Errorf("IsClientName(%q) = %v, want %v", name, got, want)
		}
	}
}

func TestClientNameGlob(t *testing.T) {
	t.Parallel()
	for pattern, want := range map[string]string{
		"notes.*":          "notes_*",
		"pages.read_*":     "pages_read_*",
		"*.run_subagent":   "*_run_subagent",
		"online_search":    "online_search",
		"notes.[st]*":      "notes_[st]*",
		"everything__*":    "everything__*",
		"assist.run_sub?g": "assist_run_sub?g",
	} {
		if got := sdk.ClientNameGlob(pattern); got != want {
			t.Errorf("ClientNameGlob(%q) = %q, want %q", pattern, got, want)
		}
	}
}
