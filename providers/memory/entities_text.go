package memory

import (
	"unicode"
	"unicode/utf8"
)

// spacelessScripts are scripts written without spaces between words: a
// letter of theirs next to an address or date does not make it part of a
// word.
var spacelessScripts = []*unicode.RangeTable{
	unicode.Han, unicode.Hiragana, unicode.Katakana,
	unicode.Thai, unicode.Lao, unicode.Khmer, unicode.Myanmar,
}

// entityWordRune reports whether r is part of a word: a letter, a decimal
// digit, a combining mark or '_'.
func entityWordRune(r rune) bool {
	if r < utf8.RuneSelf {
		return isAlnumASCII(byte(r)) || r == '_'
	}
	return unicode.IsLetter(r) || unicode.IsDigit(r) || unicode.IsMark(r)
}

// gluesToWord reports whether r, next to an address, URL or date, makes it
// part of a longer word. Letters of scripts written without spaces do not,
// so the address in 请联系ana@example.com is found.
func gluesToWord(r rune) bool {
	return entityWordRune(r) && (r < utf8.RuneSelf || !unicode.In(r, spacelessScripts...))
}

// entityWordAt reports whether a word rune starts at text[j:].
func entityWordAt(text string, j int) bool {
	return j < len(text) && entityWordRune(headRune(text[j:]))
}

// headRune returns the first rune of a non-empty s.
func headRune(s string) rune {
	if s[0] < utf8.RuneSelf {
		return rune(s[0])
	}
	r, _ := utf8.DecodeRuneInString(s)
	return r
}

// tailRune returns the last rune of a non-empty s.
func tailRune(s string) rune {
	if c := s[len(s)-1]; c < utf8.RuneSelf {
		return rune(c)
	}
	r, _ := utf8.DecodeLastRuneInString(s)
	return r
}

// spaceLen returns the length in bytes of the white space at text[j:].
func spaceLen(text string, j int) int {
	k := j
	for k < len(text) {
		if c := text[k]; c < utf8.RuneSelf {
			if c != ' ' && (c < '\t' || c > '\r') {
				break
			}
			k++
			continue
		}
		r, size := utf8.DecodeRuneInString(text[k:])
		if !unicode.IsSpace(r) {
			break
		}
		k += size
	}
	return k - j
}

// digitLen returns the number of ASCII digits at s[i:].
func digitLen(s string, i int) int {
	n := 0
	for i+n < len(s) && isDigitASCII(s[i+n]) {
		n++
	}
	return n
}

// letterLen returns the number of ASCII letters at s[i:].
func letterLen(s string, i int) int {
	n := 0
	for i+n < len(s) && isLetterASCII(s[i+n]) {
		n++
	}
	return n
}

// smallAtoi returns the value of a short run of ASCII digits.
func smallAtoi(s string) int {
	n := 0
	for i := 0; i < len(s); i++ {
		n = n*10 + int(s[i]-'0')
	}
	return n
}

// equalFoldASCII reports whether s equals t, which is lower-case, ignoring
// the case of ASCII letters.
func equalFoldASCII(s, t string) bool {
	if len(s) != len(t) {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if isLetterASCII(c) {
			c |= 0x20
		}
		if c != t[i] {
			return false
		}
	}
	return true
}

// allBytes reports whether every byte of s passes ok; true for "".
func allBytes(s string, ok func(byte) bool) bool {
	for i := 0; i < len(s); i++ {
		if !ok(s[i]) {
			return false
		}
	}
	return true
}

func isDigitASCII(c byte) bool    { return c >= '0' && c <= '9' }
func isLetterASCII(c byte) bool   { return c|0x20 >= 'a' && c|0x20 <= 'z' }
func isAlnumASCII(c byte) bool    { return isDigitASCII(c) || isLetterASCII(c) }
func isHexDigitASCII(c byte) bool { return isDigitASCII(c) || c|0x20 >= 'a' && c|0x20 <= 'f' }
