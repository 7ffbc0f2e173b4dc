package memory

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// maxChunkRunes bounds a chunk's length in characters. About four
// characters make a token in English text, so this keeps chunks near the
// 512 tokens that embedding models and snippets work well with.
const maxChunkRunes = 2000

// boundary is a level of text structure that chunks prefer to end at,
// coarsest first.
type boundary int

const (
	paragraphBoundary boundary = iota
	lineBoundary
	sentenceBoundary
	wordBoundary
	runeBoundary
)

// splitChunks splits text into ordered pieces of at most limit characters
// whose concatenation is exactly text. A piece ends at a paragraph break
// when it can, else at a line break, then after a sentence, then after a
// word, and only as a last resort between two characters; it never splits a
// UTF-8 sequence. Adjacent segments are packed greedily, so short
// paragraphs share a chunk. An empty text yields no pieces.
func splitChunks(text string, limit int) []string {
	if text == "" {
		return nil
	}
	return splitAt(text, limit, paragraphBoundary)
}

func splitAt(text string, limit int, level boundary) []string {
	if utf8.RuneCountInString(text) <= limit {
		return []string{text}
	}
	if level == runeBoundary {
		return cutRunes(text, limit)
	}
	segments := segment(text, level)
	if len(segments) == 1 {
		return splitAt(text, limit, level+1)
	}
	// Segments are consecutive parts of text, so every piece is a part of
	// text too, text[start:end], and is sliced out of it, not copied.
	var (
		out        []string
		start, end int
		runes      int
	)
	flush := func() {
		if end > start {
			out = append(out, text[start:end])
			start, runes = end, 0
		}
	}
	for _, s := range segments {
		n := utf8.RuneCountInString(s)
		if n > limit {
			// The tail of an oversized segment may share a chunk with what
			// follows it.
			flush()
			sub := splitAt(s, limit, level+1)
			out = append(out, sub[:len(sub)-1]...)
			tail := sub[len(sub)-1]
			end += len(s)
			start, runes = end-len(tail), utf8.RuneCountInString(tail)
			continue
		}
		if runes+n > limit {
			flush()
		}
		end += len(s)
		runes += n
	}
	flush()
	return out
}

// segment cuts text after every boundary of the given level; the whitespace
// that makes a boundary stays with the segment before it.
func segment(text string, level boundary) []string {
	var (
		out   []string
		start int
	)
	for i := 0; i < len(text); {
		r, size := decodeRune(text, i)
		end := i + size
		cut := false
		switch {
		case isSpace(r):
			// Take the whole whitespace run, then decide whether it is a
			// boundary of this level.
			newlines := 0
			if r == '\n' {
				newlines++
			}
			for end < len(text) {
				r2, s2 := decodeRune(text, end)
				if !isSpace(r2) {
					break
				}
				if r2 == '\n' {
					newlines++
				}
				end += s2
			}
			switch level {
			case paragraphBoundary:
				cut = newlines >= 2
			case lineBoundary:
				cut = newlines >= 1
			case sentenceBoundary:
				cut = newlines >= 1 || endsSentence(text[start:i])
			case wordBoundary:
				cut = true
			}
		case level == sentenceBoundary && isFullWidthStop(r):
			// CJK sentences end without a following space.
			cut = true
		}
		i = end
		if cut && i < len(text) {
			out = append(out, text[start:i])
			start = i
		}
	}
	return append(out, text[start:])
}

// decodeRune decodes the rune at text[i:], ASCII without a call: most
// text is ASCII, and segment looks at every rune of it.
func decodeRune(text string, i int) (rune, int) {
	if c := text[i]; c < utf8.RuneSelf {
		return rune(c), 1
	}
	return utf8.DecodeRuneInString(text[i:])
}

// asciiSpace marks the ASCII runes unicode.IsSpace reports.
var asciiSpace = [utf8.RuneSelf]bool{'\t': true, '\n': true, '\v': true, '\f': true, '\r': true, ' ': true}

// isSpace is unicode.IsSpace, with ASCII looked up.
func isSpace(r rune) bool {
	if r < utf8.RuneSelf {
		return asciiSpace[r]
	}
	return unicode.IsSpace(r)
}

// endsSentence reports whether s ends with sentence punctuation, allowing
// closing quotes and brackets after it.
func endsSentence(s string) bool {
	s = strings.TrimRightFunc(s, func(r rune) bool {
		return strings.ContainsRune(`"')]}’”»`, r)
	})
	r, _ := utf8.DecodeLastRuneInString(s)
	return strings.ContainsRune(".!?…;", r)
}

func isFullWidthStop(r rune) bool {
	return strings.ContainsRune("。！？", r)
}

// cutRunes cuts text into pieces of limit characters (the last may be
// shorter).
func cutRunes(text string, limit int) []string {
	var out []string
	for len(text) > 0 {
		n, i := 0, 0
		for i < len(text) && n < limit {
			_, size := utf8.DecodeRuneInString(text[i:])
			i += size
			n++
		}
		out = append(out, text[:i])
		text = text[i:]
	}
	return out
}
