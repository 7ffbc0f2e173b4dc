package sdk

import "testing"

func TestNamePart(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in     string
		maxLen int
		want   string
	}{
		{"Claude Desktop", 0, "claude-desktop"},
		{" claude--desktop! ", 0, "claude-desktop"},
		{"Ünïcode Ñame 2", 0, "n-code-ame-2"},
		{"日本語", 0, ""},
		{"", 0, ""},
		{"a.b_c", 0, "a-b-c"},
		{"Trip to Lisbon, 2026", 0, "trip-to-lisbon-2026"},
		{"Trip to Lisbon, 2026", -1, "trip-to-lisbon-2026"},
		{"abc def", 4, "abc"},
		{"abc def", 7, "abc-def"},
		{"abc def", 3, "abc"},
		{"abcdef", 2, "ab"},
		{"!!abc--def!!", 5, "abc-d"},
		{"Ünïcode", 1, "n"},
	}
	for _, tc := range tests {
		got := NamePart(tc.in, tc.maxLen)
		if got != tc.want {
			t.Errorf("NamePart(%q, %d) = %q, want %q", tc.in, tc.maxLen, got, tc.want)
		}
		if got != "" && (!IsClientName(got) || got[0] == '-' || got[len(got)-1] == '-') {
			t.Errorf("NamePart(%q, %d) = %q is not a client name without edge dashes", tc.in, tc.maxLen, got)
		}
	}
}
