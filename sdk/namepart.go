package sdk

import "strings"

// NamePart turns free text, such as a title or a client's name, into a
// stable, ASCII-only part of a tool, prompt, namespace or key name: it
// lower-cases text and keeps its ASCII letters and digits, turning every
// other run of characters into a single "-". The result has no leading or
// trailing "-", is at most maxLen bytes long when maxLen > 0 (cut, then
// trimmed of a trailing "-"; maxLen <= 0 means no limit), and is empty
// when text has no ASCII letter or digit, so callers pick their own
// fallback. "Claude Desktop" and " claude--desktop! " both give
// "claude-desktop".
//
// Every non-empty result matches [a-z0-9-]+ and thus the declared names
// [ValidateTool] accepts (up to their 128 bytes) and, up to
// [MaxClientNameLen] bytes, [IsClientName]. The mapping is stable across
// releases: names built from it may be stored.
func NamePart(text string, maxLen int) string {
	var b strings.Builder
	dash := false
	for _, r := range strings.ToLower(text) {
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
	s := b.String()
	if maxLen <= 0 || len(s) <= maxLen {
		return s
	}
	// Every byte of s is one character, so any cut is a valid string.
	return strings.TrimRight(s[:maxLen], "-")
}
