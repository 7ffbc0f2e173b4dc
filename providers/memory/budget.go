package memory

import (
	"encoding/json"
	"unicode/utf8"
)

// Token budgets. A result's size is estimated at one token per
// bytesPerToken bytes of its text and structured content together, the
// usual rule of thumb for English with current tokenizers; a budget bounds
// what a call adds to the model's context. A max_tokens argument is 100 to
// 1,000,000 tokens (its schema tag says so), 0 when none is given.
const (
	bytesPerToken = 4
	// defaultVersionTokens bounds memory_history's text of one version
	// when the caller gives no max_tokens.
	defaultVersionTokens = 8000
	// resultOverhead is the room, in bytes, fitHits leaves for the parts
	// of a result other than its hits.
	resultOverhead = 512
)

// fitHits returns the longest prefix of hits whose lines (their text
// rendering) and JSON fit within budget tokens, and whether hits were
// left out. A budget of 0 keeps every hit.
func fitHits[T any](hits []T, budget int, line func(T) string) ([]T, bool) {
	if budget <= 0 {
		return hits, false
	}
	// What a result says besides its hits (the mode, counts, notes on the
	// ranking) is kept out of the hits' share.
	limit := budget*bytesPerToken - resultOverhead
	used := 0
	for i, h := range hits {
		b, _ := json.Marshal(h)
		used += len(b) + len(line(h)) + 2
		if used > limit {
			return hits[:i], true
		}
	}
	return hits, false
}

// cutUTF8 returns the first at most n bytes of s, ending at a character
// boundary.
func cutUTF8(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}
