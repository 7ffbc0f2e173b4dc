package memory

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// Handles and hashtags.

// handleAt reads the @handle whose '@' is at i.
func handleAt(text string, i int) (entitySpan, bool) {
	if i > 0 {
		if r := tailRune(text[:i]); entityWordRune(r) || r == '.' || r == '@' ||
			r == '\'' && i > 1 && isAlnumASCII(text[i-2]) { // ana'@example.com
			return entitySpan{}, false
		}
	}
	end := i + 1 + handleWordRun(text, i+1)
	if end == i+1 {
		return entitySpan{}, false
	}
	for end+1 < len(text) && text[end] == '.' && isHandleByte(text[end+1]) {
		if end-i > maxHandleLen {
			return entitySpan{}, false
		}
		end += 1 + handleWordRun(text, end+1)
	}
	name := text[i+1 : end]
	if len(name) > maxHandleLen || !handleHasName(name) {
		return entitySpan{}, false
	}
	if end < len(text) {
		if r := headRune(text[end:]); entityWordRune(r) || r == '@' || r == '-' {
			return entitySpan{}, false
		}
	}
	surface := text[i:end]
	return entitySpan{start: i, end: end, m: newMention(EntityHandle, surface, strings.ToLower(surface))}, true
}

// handleWordRun returns the length of the run of handle bytes at i, up to
// one more than a handle can hold.
func handleWordRun(text string, i int) int {
	n := 0
	for i+n < len(text) && n <= maxHandleLen && isHandleByte(text[i+n]) {
		n++
	}
	return n
}

// handleHasName reports whether name has a letter or '_' outside a
// trailing am/pm, so that times (@3pm) and numbers (@2026) are not handles.
func handleHasName(name string) bool {
	if n := len(name); n > 2 && (equalFoldASCII(name[n-2:], "am") || equalFoldASCII(name[n-2:], "pm")) {
		name = name[:n-2]
	}
	for i := 0; i < len(name); i++ {
		if isLetterASCII(name[i]) || name[i] == '_' {
			return true
		}
	}
	return false
}

// isHandleByte reports whether c can be in a handle between dots.
func isHandleByte(c byte) bool {
	return isAlnumASCII(c) || c == '_'
}

// hashtagAt reads the #hashtag whose '#' is at i.
func hashtagAt(text string, i int) (entitySpan, bool) {
	if i > 0 {
		if r := tailRune(text[:i]); entityWordRune(r) || r == '&' || r == '#' {
			return entitySpan{}, false
		}
	}
	end := i + 1
	if r, size := utf8.DecodeRuneInString(text[end:]); unicode.IsLetter(r) {
		end += size
	} else {
		return entitySpan{}, false
	}
	for n := 1; end < len(text); n++ {
		r, size := utf8.DecodeRuneInString(text[end:])
		if !entityWordRune(r) {
			break
		}
		if n == maxHashtagRunes {
			return entitySpan{}, false
		}
		end += size
	}
	name := text[i+1 : end]
	if isHexColor(name) {
		return entitySpan{}, false
	}
	surface := text[i:end]
	return entitySpan{start: i, end: end, m: newMention(EntityHashtag, surface, strings.ToLower(surface))}, true
}

// isHexColor reports whether name looks like a CSS colour: 3, 4, 6 or 8
// hex digits, at least one of them a decimal digit.
func isHexColor(name string) bool {
	switch len(name) {
	case 3, 4, 6, 8:
	default:
		return false
	}
	digit := false
	for i := 0; i < len(name); i++ {
		if !isHexDigitASCII(name[i]) {
			return false
		}
		digit = digit || isDigitASCII(name[i])
	}
	return digit
}
