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
// marks alone are dropped: they index as nothing. Repeated words, compared
// without regard to case, are kept once.
func queryWords(text string) []string {
	var words []string
	seen := map[string]bool{}
	for _, w := range strings.FieldsFunc(text, func(r rune) bool { return !isWordRune(r) }) {
		// A repeated word adds nothing to the match but costs a pass
		// over its index entries, so it is kept once.
		if key := strings.ToLower(w); strings.IndexFunc(w, isWordBase) >= 0 && !seen[key] {
			seen[key] = true
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
	// Words never contain quotes, but phraseExprs doubles them to keep
	// this safe if queryWords ever changes.
	return strings.Join(phraseExprs(words), " ")
}

// phraseExprs returns each word as an FTS5 expression of its own, quoted
// as matchAll quotes it.
func phraseExprs(words []string) []string {
	out := make([]string, len(words))
	for i, w := range words {
		out[i] = `"` + strings.ReplaceAll(w, `"`, `""`) + `"`
	}
	return out
}

// matchAny builds an FTS5 MATCH expression that any of words satisfies;
// it returns "" when words is empty.
func matchAny(words []string) string {
	return strings.Join(phraseExprs(words), " OR ")
}

// contentWords drops common English function words from a question's
// words, so that "who is joining the trip" ranks by "joining" and "trip"
// instead of also matching every chunk that has "the". When every word is
// a function word, all are kept.
func contentWords(words []string) []string {
	var out []string
	for _, w := range words {
		if !stopwords[strings.ToLower(w)] {
			out = append(out, w)
		}
	}
	if len(out) == 0 {
		return words
	}
	return out
}

// stopwords are English function words that carry no topic.
var stopwords = func() map[string]bool {
	m := map[string]bool{}
	for _, w := range strings.Fields(`a an and are as at be been but by can could did do does
		for from had has have how i if in into is it its me my no not of on or our so than that the
		their them then there these they this to was we were what when where which who whom why will
		with would you your about after all also any because before between both each few more most
		other over same should some such through under until up very just only own`) {
		m[w] = true
	}
	return m
}()
