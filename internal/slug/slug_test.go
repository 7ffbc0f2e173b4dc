package slug

import "testing"

func TestMake(t *testing.T) {
	t.Parallel()
	tests := map[string]string{
		"Claude Desktop":       "claude-desktop",
		" claude--desktop! ":   "claude-desktop",
		"Ünïcode Ñame 2":       "n-code-ame-2",
		"日本語":                  "",
		"":                     "",
		"a.b_c":                "a-b-c",
		"Trip to Lisbon, 2026": "trip-to-lisbon-2026",
	}
	for in, want := range tests {
		if got := Make(in); got != want {
			t.Errorf("Make(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestCut(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in   string
		n    int
		want string
	}{
		{"abc-def", 4, "abc"},
		{"abc-def", 7, "abc-def"},
		{"abc-def", 3, "abc"},
		{"abcdef", 2, "ab"},
	}
	for _, tc := range tests {
		if got := Cut(tc.in, tc.n); got != tc.want {
			t.Errorf("Cut(%q, %d) = %q, want %q", tc.in, tc.n, got, tc.want)
		}
	}
}
