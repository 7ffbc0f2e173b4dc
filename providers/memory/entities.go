package memory

import (
	"slices"
	"strings"
	"unicode/utf8"
)

// Entity kinds the default extractor finds. Each names the Kind of a
// [Mention]; the rules below are what [DefaultExtractor] recognises.
const (
	// EntityEmail is an e-mail address such as ana.lima@example.com: an
	// ASCII local part of letters, digits and . _ % + - (and ' between
	// letters or digits, as in o'brien@example.com; at most 64 bytes, no
	// leading, trailing or doubled dot), '@' and a domain of at least two
	// labels whose last label is two or more letters (or an xn-- label).
	// A letter or digit right before or after it makes it part of a longer
	// word, not an address, unless it is of a script written without
	// spaces (请联系ana@example.com). The key is the whole address
	// lower-cased.
	EntityEmail = "email"
	// EntityURL is an http or https URL. It runs up to a space, a control
	// character, < > " or ` or non-ASCII punctuation; trailing
	// . , ; : ! ? * ' # and closing brackets are not part of it, except a
	// ) ] or } matched by an opening one inside the URL, as in
	// https://en.wikipedia.org/wiki/Reef_(disambiguation). The key is the
	// scheme and authority lower-cased followed by the path and query as
	// written, without the fragment and without a path that is only "/".
	// A URL longer than 256 bytes yields no mention. Nothing inside a URL
	// is read as another entity.
	EntityURL = "url"
	// EntityHandle is an @handle such as @skyways: 1 to 39 ASCII letters,
	// digits and underscores, with dots allowed between them (a trailing
	// dot ends the sentence). It must not be preceded by a letter, digit,
	// '.', '_', '@' or an apostrophe inside a word (so e-mail addresses
	// yield no handles), nor be followed by a letter, digit, '-' or '@'
	// (@octo-cat and @ana@mastodon.social are not read), and it must
	// contain a letter or '_' apart from a trailing am/pm (so @2026 and
	// @3pm are not handles). The key is "@" and the name lower-cased.
	EntityHandle = "handle"
	// EntityHashtag is a #hashtag such as #reefwatch: '#' then a letter of
	// any script, then letters, digits, combining marks and underscores, at
	// most 100 characters. It must not be preceded by a letter, digit, '_',
	// '&' (HTML entities such as &#x27;) or '#'; "# Title" is a heading,
	// not a hashtag, URL fragments are part of their URL, and CSS colours
	// such as #ff0000 (3, 4, 6 or 8 hex digits including a digit) are
	// skipped. The key is "#" and the name lower-cased.
	EntityHashtag = "hashtag"
	// EntityDate is a calendar date with a year from 1000 to 9999; the key
	// is YYYY-MM-DD. It is read from 2026-11-30 (also inside
	// 2026-11-30T10:00:00Z), 2026/11/30, 30 November 2026, 30 Nov. 2026,
	// 30. November 2026, 30th of November 2026, November 30, 2026,
	// Nov 30 2026 and Nov. 30th, 2026, with English month names or their
	// three-letter abbreviations (and Sept) in any case, and any white
	// space between the parts. Dates that do not exist, such as
	// 2026-02-30, are skipped, as are dates inside longer numbers
	// (12026-11-30, 2026-11-301) and compact forms such as 20261130.
	// Day-month-year and month-day-year digits such as 03/04/2026 are
	// deliberately not read: whether that is March or April depends on a
	// locale the text does not state.
	EntityDate = "date"
)

const (
	// maxEntityKindLen bounds a mention's Kind, in bytes.
	maxEntityKindLen = 32
	// maxMentionLen bounds a mention's Surface and Key, in bytes.
	maxMentionLen = 256
	// maxHandleLen bounds a handle's name (without the '@'), in bytes.
	maxHandleLen = 39
	// maxHashtagRunes bounds a hashtag's name (without the '#'), in
	// characters.
	maxHashtagRunes = 100
	// maxEmailLocalLen and maxEmailDomainLen bound the parts of an e-mail
	// address, in bytes.
	maxEmailLocalLen  = 64
	maxEmailDomainLen = 253
)

// Mention is one entity found in a text.
//
// Kind names the entity's kind: 1 to 32 bytes of lower-case ASCII letters,
// digits and '_', starting with a letter (such as [EntityEmail] or
// "person"). Surface is the text as written, 1 to 256 bytes. Key is the
// normalised form that identifies the entity within its kind (so
// Ana@Example.com and ana@example.com share the key ana@example.com), 1 to
// 256 bytes. Surface and Key must be valid UTF-8. Mentions that break these
// rules are dropped, never stored.
type Mention struct {
	Kind    string
	Surface string
	Key     string
}

// Extractor finds entity mentions in a chunk's text.
//
// Extract returns the mentions of text, one per occurrence (an entity
// mentioned twice yields two mentions), or nil when there are none.
// The caller owns the returned slice. Implementations must be safe for
// concurrent use and must not keep text after Extract returns. Extractors
// for richer kinds (people, places) can be added through
// Options.Extractors.
type Extractor interface {
	Extract(text string) []Mention
}

// DefaultExtractor returns the extractor used when Options.Extractors is
// nil. It finds e-mail addresses, http(s) URLs, @handles, #hashtags and
// dates (kinds [EntityEmail], [EntityURL], [EntityHandle], [EntityHashtag]
// and [EntityDate]; see them for the rules), returns them in text order,
// and never overlaps two mentions: a URL takes precedence over everything
// inside it and an e-mail address over the handle it contains. It runs in
// time linear in the length of the text and is safe for concurrent use.
func DefaultExtractor() Extractor {
	return defaultExtractor{}
}

// defaultExtractor is the stateless extractor [DefaultExtractor] returns.
type defaultExtractor struct{}

// entitySpan is a piece of text that belongs to one entity,
// text[start:end]. Its mention is zero when the piece is claimed but yields nothing, such
// as a URL too long to store.
type entitySpan struct {
	start, end int
	m          Mention
}

// Extract implements [Extractor].
func (defaultExtractor) Extract(text string) []Mention {
	// URLs and e-mail addresses are found first: they claim their text so
	// that the fragments, @s and dates inside them are not read again.
	claims := findURLs(text)
	if strings.IndexByte(text, '@') >= 0 {
		claims = append(claims, findEmails(text, claims)...)
		slices.SortFunc(claims, func(a, b entitySpan) int { return a.start - b.start })
	}
	var out []Mention
	next, limit := 0, len(text) // limit: where the next claim starts
	if len(claims) > 0 {
		limit = claims[0].start
	}
	for i := 0; i < len(text); {
		if i >= limit {
			c := &claims[next]
			out = appendMention(out, c.m)
			i = c.end
			next++
			limit = len(text)
			if next < len(claims) {
				limit = claims[next].start
			}
			continue
		}
		if !startsEntity[text[i]] {
			i++
			for i < limit && !startsEntity[text[i]] {
				i++
			}
			continue
		}
		var (
			f    entitySpan
			ok   bool
			skip = 1
		)
		switch c := text[i]; {
		case c == '@':
			f, ok = handleAt(text, i)
		case c == '#':
			f, ok = hashtagAt(text, i)
		case isDigitASCII(c):
			skip = digitLen(text, i)
			f, ok = numericDateAt(text, i, skip)
		default: // the initial of a month name
			skip = letterLen(text, i)
			if skip >= 3 && skip <= len("september") && monthPrefix(text[i:i+3]) {
				f, ok = monthFirstDateAt(text, i)
			}
		}
		if ok && f.end <= limit {
			out = appendMention(out, f.m)
			i = f.end
			continue
		}
		i = min(i+skip, limit) // stop at the next claim, whatever precedes it
	}
	return out
}

// startsEntity marks the bytes where the default extractor tries a
// handle, hashtag or date once URLs and e-mail addresses are found: '@',
// '#', ASCII digits and the initials of English month names.
var startsEntity = func() (t [256]bool) {
	t['@'], t['#'] = true, true
	for c := '0'; c <= '9'; c++ {
		t[c] = true
	}
	for _, c := range []byte("adfjmnos") {
		t[c], t[c-'a'+'A'] = true, true
	}
	return t
}()

// appendMention appends m to out unless it is zero, allocating room for a
// typical chunk's mentions at once.
func appendMention(out []Mention, m Mention) []Mention {
	if m.Kind == "" {
		return out
	}
	if out == nil {
		out = make([]Mention, 0, 16)
	}
	return append(out, m)
}

// newMention returns a default mention, or the zero Mention when its
// surface or key is too long. The default extractor's kinds are valid and
// its surfaces and keys valid UTF-8 (FuzzDefaultExtractor checks).
func newMention(kind, surface, key string) Mention {
	if len(surface) > maxMentionLen || key == "" || len(key) > maxMentionLen {
		return Mention{}
	}
	return Mention{Kind: kind, Surface: surface, Key: key}
}

// validMention reports whether m follows the rules of [Mention].
func validMention(m Mention) bool {
	return validKind(m.Kind) &&
		m.Surface != "" && len(m.Surface) <= maxMentionLen && utf8.ValidString(m.Surface) &&
		m.Key != "" && len(m.Key) <= maxMentionLen && utf8.ValidString(m.Key)
}

// validKind reports whether kind is 1 to 32 bytes of lower-case ASCII
// letters, digits and '_' starting with a letter.
func validKind(kind string) bool {
	if kind == "" || len(kind) > maxEntityKindLen || kind[0] < 'a' || kind[0] > 'z' {
		return false
	}
	for i := 1; i < len(kind); i++ {
		if c := kind[i]; !(c >= 'a' && c <= 'z' || isDigitASCII(c) || c == '_') {
			return false
		}
	}
	return true
}

// entityCount is one entity of a text with how often it occurs.
type entityCount struct {
	ID      string // Kind + ":" + Key, e.g. "email:ana.lima@example.com"
	Kind    string
	Surface string // the first surface seen for this ID
	Count   int    // >= 1
}

// countEntities runs every extractor over text, in order, and aggregates
// their mentions by ID, sorted by ID; an entity's Surface is the first one
// seen. Mentions that break the rules of [Mention] are dropped, and nil
// extractors are skipped. It returns nil when there are no entities. The
// result shares no memory with text.
func countEntities(extractors []Extractor, text string) []entityCount {
	var (
		out   []entityCount
		index map[string]int
	)
	for _, x := range extractors {
		if x == nil {
			continue
		}
		for _, m := range x.Extract(text) {
			if !validMention(m) {
				continue
			}
			id := m.Kind + ":" + m.Key
			if i, ok := index[id]; ok {
				out[i].Count++
				continue
			}
			if index == nil {
				index = make(map[string]int)
			}
			index[id] = len(out)
			out = append(out, entityCount{
				ID:      id,
				Kind:    id[:len(m.Kind)],
				Surface: strings.Clone(m.Surface),
				Count:   1,
			})
		}
	}
	slices.SortFunc(out, func(a, b entityCount) int { return strings.Compare(a.ID, b.ID) })
	return out
}
