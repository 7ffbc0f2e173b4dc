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
	for _, w := range splitWords(text) {
		// A repeated word adds nothing to the match but costs a pass
		// over its index entries, so it is kept once.
		if key := strings.ToLower(w); !seen[key] {
			seen[key] = true
			words = append(words, w)
		}
	}
	return words
}

// splitWords is queryWords without dropping repeats.
func splitWords(text string) []string {
	var words []string
	for _, w := range strings.FieldsFunc(text, func(r rune) bool { return !isWordRune(r) }) {
		if strings.IndexFunc(w, isWordBase) >= 0 {
			words = append(words, w)
		}
	}
	return words
}

// queryTerm is one thing a query asks for: a word, a phrase (words in
// double quotes, which must occur in that order, next to each other) or a
// prefix (a word followed by *, which any word starting with it matches).
type queryTerm struct {
	// words is the word, or the phrase's words in order.
	words []string
	// prefix is set for a word followed by *.
	prefix bool
	// quoted is set for a term written in double quotes, which is kept
	// even if it is a function word.
	quoted bool
}

// expr is the term as an FTS5 phrase expression: its words quoted
// together, then * for a prefix.
func (t queryTerm) expr() string {
	q := make([]string, len(t.words))
	for i, w := range t.words {
		// Words never contain quotes, but doubling them keeps this safe
		// if splitWords ever changes.
		q[i] = strings.ReplaceAll(w, `"`, `""`)
	}
	e := `"` + strings.Join(q, " ") + `"`
	if t.prefix {
		e += "*"
	}
	return e
}

// String is the term as a person would write it: word, word* or "a
// phrase".
func (t queryTerm) String() string {
	switch {
	case t.prefix:
		return t.words[0] + "*"
	case t.quoted:
		return `"` + strings.Join(t.words, " ") + `"`
	}
	return t.words[0]
}

// queryTerms reads a query: text in a pair of double quotes is a phrase (a
// single quoted word is a word kept even if it is a function word), a
// word right before * is a prefix, and every other character only
// separates words (see queryWords), so the query can never be read as FTS5
// syntax. An unpaired quote is a separator. Repeated terms, compared
// without regard to case, are kept once.
func queryTerms(text string) []queryTerm {
	var terms []queryTerm
	seen := map[string]bool{}
	add := func(t queryTerm) {
		if key := strings.ToLower(t.expr()); !seen[key] {
			seen[key] = true
			terms = append(terms, t)
		}
	}
	for rest := text; rest != ""; {
		plain, quoted, found := rest, "", false
		if open := strings.IndexByte(rest, '"'); open >= 0 {
			if end := strings.IndexByte(rest[open+1:], '"'); end >= 0 {
				plain, quoted, found = rest[:open], rest[open+1:open+1+end], true
				rest = rest[open+end+2:]
			} else {
				rest = ""
			}
		} else {
			rest = ""
		}
		for _, t := range plainTerms(plain) {
			add(t)
		}
		if words := splitWords(quoted); found && len(words) > 0 {
			add(queryTerm{words: words, quoted: true})
		}
	}
	return terms
}

// plainTerms reads unquoted text: words, and prefixes where a word is
// followed by *.
func plainTerms(text string) []queryTerm {
	var out []queryTerm
	rs := []rune(text)
	for i := 0; i < len(rs); {
		if !isWordRune(rs[i]) {
			i++
			continue
		}
		j := i
		for j < len(rs) && isWordRune(rs[j]) {
			j++
		}
		if w := string(rs[i:j]); strings.IndexFunc(w, isWordBase) >= 0 {
			out = append(out, queryTerm{words: []string{w}, prefix: j < len(rs) && rs[j] == '*'})
		}
		i = j
	}
	return out
}

// wordTerms makes each word a term.
func wordTerms(words []string) []queryTerm {
	out := make([]queryTerm, len(words))
	for i, w := range words {
		out[i] = queryTerm{words: []string{w}}
	}
	return out
}

// mapSlice returns f of each element of in, in order.
func mapSlice[T, U any](in []T, f func(T) U) []U {
	out := make([]U, len(in))
	for i, v := range in {
		out[i] = f(v)
	}
	return out
}

// termExprs returns the FTS5 expression of each term.
func termExprs(terms []queryTerm) []string { return mapSlice(terms, queryTerm.expr) }

// termList renders terms for messages, space-separated.
func termList(terms []queryTerm) string {
	return strings.Join(mapSlice(terms, queryTerm.String), " ")
}

func isWordRune(r rune) bool {
	return isWordBase(r) || unicode.IsMark(r)
}

func isWordBase(r rune) bool {
	return unicode.IsLetter(r) || unicode.IsNumber(r) || unicode.Is(unicode.Co, r)
}

// matchAll builds an FTS5 MATCH expression that requires every term (FTS5
// joins adjacent phrases with an implicit AND); "" when terms is empty.
func matchAll(terms []queryTerm) string {
	return strings.Join(termExprs(terms), " ")
}

// matchAny builds an FTS5 MATCH expression that any of terms satisfies;
// "" when terms is empty.
func matchAny(terms []queryTerm) string {
	return strings.Join(termExprs(terms), " OR ")
}

// contentTerms drops common English function words from a question's
// terms, so that "who is joining the trip" ranks by "joining" and "trip"
// instead of also matching every chunk that has "the". Phrases, prefixes
// and quoted words are kept. When every term is a function word, all are
// kept.
func contentTerms(terms []queryTerm) []queryTerm {
	var out []queryTerm
	for _, t := range terms {
		if t.quoted || t.prefix || len(t.words) != 1 || !stopwords[strings.ToLower(t.words[0])] {
			out = append(out, t)
		}
	}
	if len(out) == 0 {
		return terms
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
