package memory

import (
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"
)

// longText returns n paragraphs of about 600 characters each, separated by
// blank lines.
func longText(n int) string {
	paras := make([]string, n)
	for i := range paras {
		var b strings.Builder
		for s := 0; b.Len() < 600; s++ {
			fmt.Fprintf(&b, "Paragraph %d sentence %d talks about lighthouses and tides. ", i, s)
		}
		paras[i] = strings.TrimSpace(b.String())
	}
	return strings.Join(paras, "\n\n")
}

func TestSplitChunks(t *testing.T) {
	t.Parallel()
	tests := map[string]struct {
		text  string
		limit int
		want  []string
	}{
		"empty":                  {text: "", limit: 10, want: nil},
		"fits":                   {text: "short text", limit: 10, want: []string{"short text"}},
		"paragraphs packed":      {text: "aa bb\n\ncc\n\ndd ee ff", limit: 12, want: []string{"aa bb\n\ncc\n\n", "dd ee ff"}},
		"paragraph first":        {text: "one two\nthree\n\nfour five", limit: 16, want: []string{"one two\nthree\n\n", "four five"}},
		"blank line with spaces": {text: "alpha beta\n  \t\ngamma", limit: 15, want: []string{"alpha beta\n  \t\n", "gamma"}},
		"lines":                  {text: "line one\nline two\nline three", limit: 18, want: []string{"line one\nline two\n", "line three"}},
		"sentences":              {text: "First one. Second one! Third? Fourth.", limit: 23, want: []string{"First one. Second one! ", "Third? Fourth."}},
		"sentence with quote":    {text: `He said "stop." Then left.`, limit: 18, want: []string{`He said "stop." `, "Then left."}},
		"words":                  {text: "alpha beta gamma delta", limit: 11, want: []string{"alpha beta ", "gamma delta"}},
		"hard cut":               {text: "abcdefghijklmnopqrstuvwxyz", limit: 10, want: []string{"abcdefghij", "klmnopqrst", "uvwxyz"}},
		"multi-byte hard cut":    {text: "日本語のテキストです", limit: 4, want: []string{"日本語の", "テキスト", "です"}},
		"cjk sentences":          {text: "今日は晴れ。明日は雨です。", limit: 8, want: []string{"今日は晴れ。", "明日は雨です。"}},
		"emoji":                  {text: "😀😀😀 🎉🎉🎉", limit: 3, want: []string{"😀😀😀", " ", "🎉🎉🎉"}},
		"long word in text":      {text: "hi abcdefghijkl yo", limit: 6, want: []string{"hi ", "abcdef", "ghijkl", " yo"}},
		"crlf paragraphs":        {text: "one\r\n\r\ntwo", limit: 7, want: []string{"one\r\n\r\n", "two"}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			got := splitChunks(tc.text, tc.limit)
			if diff := diff(tc.want, got); diff != "" {
				t.Errorf("splitChunks (-want +got):\n%s", diff)
			}
			checkPieces(t, tc.text, got, tc.limit)
		})
	}
}

// TestSplitChunksLong splits realistic long documents with the real limit.
func TestSplitChunksLong(t *testing.T) {
	t.Parallel()
	tests := map[string]struct {
		text string
		// paragraphAligned means every chunk but the last must end with a
		// paragraph break.
		paragraphAligned bool
		wantChunks       int
	}{
		"paragraphs": {text: longText(10), paragraphAligned: true, wantChunks: 4},
		"one huge paragraph": {
			text:       strings.Repeat("A sentence about the sea. ", 400),
			wantChunks: 6,
		},
		"no spaces at all": {text: strings.Repeat("x", 5000), wantChunks: 3},
		"accented and CJK": {text: strings.Repeat("Café crème brûlée, 東京タワー。", 300), wantChunks: 4},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			got := splitChunks(tc.text, maxChunkRunes)
			checkPieces(t, tc.text, got, maxChunkRunes)
			if len(got) != tc.wantChunks {
				t.Errorf("got %d chunks, want %d", len(got), tc.wantChunks)
			}
			if tc.paragraphAligned {
				for i, c := range got[:len(got)-1] {
					if !strings.HasSuffix(c, "\n\n") {
						t.Errorf("chunk %d does not end at a paragraph break: ...%q", i, c[len(c)-20:])
					}
				}
			}
		})
	}
}

// checkPieces checks the invariants of any split: exact reassembly, valid
// UTF-8, no empty piece and no piece over the limit.
func checkPieces(t *testing.T, text string, pieces []string, limit int) {
	t.Helper()
	if got := strings.Join(pieces, ""); got != text {
		t.Errorf("pieces do not reassemble the text")
	}
	for i, p := range pieces {
		if p == "" {
			t.Errorf("piece %d is empty", i)
		}
		if !utf8.ValidString(p) {
			t.Errorf("piece %d is not valid UTF-8", i)
		}
		if n := utf8.RuneCountInString(p); n > limit {
			t.Errorf("piece %d has %d characters, limit %d", i, n, limit)
		}
	}
}
