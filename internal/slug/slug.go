// Package slug turns free text into a stable, ASCII-only identifier part.
package slug

import "strings"

// Make lower-cases s and keeps its ASCII letters and digits, turning every
// other run of characters into a single "-"; the result has no leading or
// trailing dash and is empty when s has no ASCII letter or digit.
// "Claude Desktop" and " claude--desktop! " both give "claude-desktop".
func Make(s string) string {
	var b strings.Builder
	dash := false
	for _, r := range strings.ToLower(s) {
		if (r >= 'a' && r <= 'z') || (r >= '0' && r <= '9') {
			if dash && b.Len() > 0 {
				b.WriteByte('-')
			}
			dash = false
			b.WriteRune(r)
			continue
		}
		dash = true
	}
	return b.String()
}

// Cut returns s cut to at most n bytes with trailing dashes removed; s is
// expected to come from Make, so every byte is one character.
func Cut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return strings.TrimRight(s[:n], "-")
}
