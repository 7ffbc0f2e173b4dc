package memory

import (
	"strings"
	"unicode"
)

// queryWords splits user text into the words FTS5's unicode61 tokenizer
// would index: runs of letters, digits and private-use characters, with
// combining marks kept inside their word. Everything else, including every
// character FTS5 gives a meaning to (quotes, parentheses, *, :, ^, -, +),
// separates words, so user input can never be read as query syntax. Runs of
// marks alone are dropped: they index as nothing.
func queryWords(text string) []string {
	var words []string
	for _, w := range strings.FieldsFunc(text, func(r rune) bool { return !isWordRune(r) }) {
		if strings.IndexFunc(w, isWordBase) >= 0 {
			words = append(words, w)
		}
	}
	return words
}

func isWordRune(r rune) bool {
	return isWordBase(r) || unicode.IsMark(r)
}

func isWordBase(r rune) bool {
	return unicode.IsLetter(r) || unicode.IsNumber(r) || unicode.Is(unicode.Co, r)
}

// matchAll builds an FTS5 MATCH expression that requires every word: each
// word becomes a quoted string, and FTS5 joins adjacent strings with an
// implicit AND. It returns "" when words is empty.
func matchAll(words []string) string {
	quoted := make([]string, len(words))
	for i, w := range words {
		// Words never contain quotes, but doubling them keeps this safe if
		// queryWords ever changes.
		quoted[i] = `"` + strings.ReplaceAll(w, `"`, `""`) + `"`
	}
	return strings.Join(quoted, " ")
}
