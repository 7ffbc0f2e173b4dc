package memory

import (
	"slices"
	"strings"
	"unicode"
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

// URLs.

// findURLs returns the http(s) URLs of text in order. A URL too long to be
// a mention is returned with a zero mention, so that it still claims its
// text.
func findURLs(text string) []entitySpan {
	var out []entitySpan
	for off := 0; off < len(text); {
		k := strings.Index(text[off:], "://")
		if k < 0 {
			break
		}
		k += off
		if f, ok := urlAt(text, k); ok {
			out = append(out, f)
			off = f.end
			continue
		}
		off = k + 3
	}
	return out
}

// urlAt reads the URL whose "://" is at sep.
func urlAt(text string, sep int) (entitySpan, bool) {
	var start int
	switch {
	case sep >= 5 && equalFoldASCII(text[sep-5:sep], "https"):
		start = sep - 5
	case sep >= 4 && equalFoldASCII(text[sep-4:sep], "http"):
		start = sep - 4
	default:
		return entitySpan{}, false
	}
	if start > 0 {
		// Not the tail of another scheme (git+https, xhttp) or word.
		if c := text[start-1]; c == '+' || c == '-' || c == '.' || gluesToWord(tailRune(text[:start])) {
			return entitySpan{}, false
		}
	}
	body := sep + 3
	end := body
	var opened, closed [3]int // (), [], {}
	for end < len(text) {
		c := text[end]
		if c < utf8.RuneSelf {
			if c <= ' ' || c == 0x7f || c == '<' || c == '>' || c == '"' || c == '`' {
				break
			}
			switch c {
			case '(', '[', '{':
				opened[bracket(c)]++
			case ')', ']', '}':
				closed[bracket(c)]++
			}
			end++
			continue
		}
		r, size := utf8.DecodeRuneInString(text[end:])
		if r == utf8.RuneError && size == 1 || unicode.IsSpace(r) || unicode.IsPunct(r) || !unicode.IsGraphic(r) {
			break
		}
		end += size
	}
	// Trim punctuation that ends the sentence rather than the URL.
trim:
	for end > body {
		switch c := text[end-1]; c {
		case '.', ',', ';', ':', '!', '?', '*', '\'', '#':
			end--
		case ')', ']', '}':
			b := bracket(c)
			if closed[b] <= opened[b] {
				break trim
			}
			closed[b]--
			end--
		default:
			break trim
		}
	}
	authEnd := body
	for authEnd < end && text[authEnd] != '/' && text[authEnd] != '?' && text[authEnd] != '#' {
		authEnd++
	}
	if !validAuthority(text[body:authEnd]) {
		return entitySpan{}, false
	}
	rest := text[authEnd:end]
	if h := strings.IndexByte(rest, '#'); h >= 0 {
		rest = rest[:h]
	}
	if rest == "/" {
		rest = ""
	}
	f := entitySpan{start: start, end: end}
	surface := text[start:end]
	if len(surface) <= maxMentionLen {
		key := strings.ToLower(text[start:authEnd]) + rest
		f.m = newMention(EntityURL, surface, key)
	}
	return f, true
}

// bracket returns 0, 1 or 2 for a parenthesis, square bracket or brace.
func bracket(c byte) int {
	switch c {
	case '(', ')':
		return 0
	case '[', ']':
		return 1
	}
	return 2
}

// validAuthority reports whether auth is [userinfo@]host[:port] with a
// host name (letters of any script, digits, '-', '.', '_', starting with
// a letter or digit) or a bracketed IPv6 address, and an all-digit port.
func validAuthority(auth string) bool {
	if k := strings.LastIndexByte(auth, '@'); k >= 0 {
		auth = auth[k+1:]
	}
	host, port := auth, ""
	if strings.HasPrefix(host, "[") {
		k := strings.IndexByte(host, ']')
		if k < 2 {
			return false
		}
		host, port = host[1:k], host[k+1:]
		for i := 0; i < len(host); i++ {
			if c := host[i]; !(isHexDigitASCII(c) || c == ':' || c == '.') {
				return false
			}
		}
		if port != "" {
			if port[0] != ':' {
				return false
			}
			port = port[1:]
		}
	} else {
		if k := strings.LastIndexByte(host, ':'); k >= 0 {
			host, port = host[:k], host[k+1:]
		}
		if host == "" {
			return false
		}
		for i, r := range host {
			alnum := unicode.IsLetter(r) || unicode.IsDigit(r)
			if !alnum && (i == 0 || r != '-' && r != '.' && r != '_') {
				return false
			}
		}
	}
	for i := 0; i < len(port); i++ {
		if !isDigitASCII(port[i]) {
			return false
		}
	}
	return true
}

// E-mail addresses.

// findEmails returns the e-mail addresses of text in order, skipping the
// '@'s inside urls (which are in order).
func findEmails(text string, urls []entitySpan) []entitySpan {
	var out []entitySpan
	u := 0
	low := 0 // where a local part may start: after the last claim
	for off := 0; off < len(text); {
		k := strings.IndexByte(text[off:], '@')
		if k < 0 {
			break
		}
		at := off + k
		for u < len(urls) && urls[u].end <= at {
			low = max(low, urls[u].end)
			u++
		}
		if u < len(urls) && urls[u].start <= at {
			off = urls[u].end
			continue
		}
		f, ok := emailAt(text, at, low)
		if ok && (u == len(urls) || f.end <= urls[u].start) {
			out = append(out, f)
			low = f.end
			off = f.end
			continue
		}
		off = at + 1
	}
	return out
}

// emailAt reads the e-mail address whose '@' is at at; its local part
// starts at low or later.
func emailAt(text string, at, low int) (entitySpan, bool) {
	start := at
	for start > low {
		c := text[start-1]
		// An apostrophe is part of the address only between letters or
		// digits, as in o'brien@example.com; 'ana@example.com' is quoted.
		if !isLocalByte(c) && (c != '\'' || start-1 == low || start == at || !isAlnumASCII(text[start-2])) {
			break
		}
		start--
		if at-start > maxEmailLocalLen {
			return entitySpan{}, false
		}
	}
	local := text[start:at]
	if local == "" || local[0] == '.' || local[len(local)-1] == '.' || strings.Contains(local, "..") {
		return entitySpan{}, false
	}
	if start > 0 {
		if start == low && isLocalByte(text[start-1]) {
			return entitySpan{}, false // the local part runs into a claim
		}
		if r := tailRune(text[:start]); r == '@' || gluesToWord(r) {
			return entitySpan{}, false
		}
	}
	end := at + 1
	for end < len(text) && isDomainByte(text[end]) {
		end++
		if end-at-1 > maxEmailDomainLen+1 {
			return entitySpan{}, false
		}
	}
	for end > at+1 && text[end-1] == '.' {
		end--
	}
	if !validDomain(text[at+1 : end]) {
		return entitySpan{}, false
	}
	if end < len(text) {
		if r := headRune(text[end:]); r == '@' || gluesToWord(r) {
			return entitySpan{}, false
		}
	}
	surface := text[start:end]
	return entitySpan{start: start, end: end, m: newMention(EntityEmail, surface, strings.ToLower(surface))}, true
}

// validDomain reports whether d is at least two dot-separated labels of 1
// to 63 ASCII letters, digits and inner hyphens, the last being two or more
// letters or an xn-- (punycode) label.
func validDomain(d string) bool {
	if len(d) > maxEmailDomainLen {
		return false
	}
	labels := 0
	for start, i := 0, 0; i <= len(d); i++ {
		if i < len(d) && d[i] != '.' {
			continue
		}
		label := d[start:i]
		if label == "" || len(label) > 63 || label[0] == '-' || label[len(label)-1] == '-' {
			return false
		}
		labels++
		if i == len(d) {
			return labels >= 2 && validTLD(label)
		}
		start = i + 1
	}
	return false
}

// validTLD reports whether label can be a top-level domain.
func validTLD(label string) bool {
	if len(label) > 4 && equalFoldASCII(label[:4], "xn--") {
		return true
	}
	if len(label) < 2 {
		return false
	}
	for i := 0; i < len(label); i++ {
		if !isLetterASCII(label[i]) {
			return false
		}
	}
	return true
}

// isLocalByte reports whether c can be in the local part of an address.
func isLocalByte(c byte) bool {
	return isAlnumASCII(c) || c == '.' || c == '_' || c == '%' || c == '+' || c == '-'
}

// isDomainByte reports whether c can be in a domain name.
func isDomainByte(c byte) bool {
	return isAlnumASCII(c) || c == '.' || c == '-'
}

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

// Dates.

// numericDateAt reads a date starting with the run of n digits at i:
// 2026-11-30, 2026/11/30 or 30 November 2026. The digits must not continue
// a number, as in 12026-11-30 or 1.30 November 2026.
func numericDateAt(text string, i, n int) (entitySpan, bool) {
	if i > 0 && (isDigitASCII(text[i-1]) || text[i-1] == '.' && i > 1 && isDigitASCII(text[i-2])) {
		return entitySpan{}, false
	}
	switch n {
	case 4:
		return isoDateAt(text, i)
	case 1, 2:
		return dayFirstDateAt(text, i, n)
	}
	return entitySpan{}, false
}

// isoDateAt reads YYYY-MM-DD or YYYY/MM/DD at i, not followed by a digit.
func isoDateAt(text string, i int) (entitySpan, bool) {
	end := i + 10
	if end > len(text) || end < len(text) && isDigitASCII(text[end]) {
		return entitySpan{}, false
	}
	s := text[i:end]
	sep := s[4]
	if sep != '-' && sep != '/' || s[7] != sep || digitLen(s, 5) != 2 || digitLen(s, 8) != 2 {
		return entitySpan{}, false
	}
	return dateFound(text, i, end, smallAtoi(s[:4]), smallAtoi(s[5:7]), smallAtoi(s[8:10]))
}

// dayFirstDateAt reads "30 November 2026" at i, where n digits give the
// day: an optional ordinal suffix and '.', an optional "of", the month
// name, an optional comma and the year.
func dayFirstDateAt(text string, i, n int) (entitySpan, bool) {
	if i > 0 && gluesToWord(tailRune(text[:i])) {
		return entitySpan{}, false
	}
	day := smallAtoi(text[i : i+n])
	j, ok := ordinalAt(text, i+n)
	if !ok {
		return entitySpan{}, false
	}
	if j < len(text) && text[j] == '.' {
		j++ // 30. November 2026
	}
	if s := spaceLen(text, j); s > 0 {
		j += s
	} else {
		return entitySpan{}, false
	}
	if j+2 < len(text) && equalFoldASCII(text[j:j+2], "of") {
		if s := spaceLen(text, j+2); s > 0 {
			j += 2 + s
		}
	}
	month, m, abbr := monthAt(text, j)
	if m == 0 {
		return entitySpan{}, false
	}
	j += m
	if abbr && j < len(text) && text[j] == '.' {
		j++
	}
	year, end, ok := yearAt(text, j)
	if !ok {
		return entitySpan{}, false
	}
	return dateFound(text, i, end, year, month, day)
}

// monthFirstDateAt reads "November 30, 2026" at i: the month name, an
// optional '.', the day with an optional ordinal suffix, an optional comma
// and the year.
func monthFirstDateAt(text string, i int) (entitySpan, bool) {
	if i > 0 && gluesToWord(tailRune(text[:i])) {
		return entitySpan{}, false
	}
	month, m, abbr := monthAt(text, i)
	if m == 0 {
		return entitySpan{}, false
	}
	j := i + m
	if abbr && j < len(text) && text[j] == '.' {
		j++
	}
	if s := spaceLen(text, j); s > 0 {
		j += s
	} else {
		return entitySpan{}, false
	}
	n := digitLen(text, j)
	if n < 1 || n > 2 {
		return entitySpan{}, false
	}
	day := smallAtoi(text[j : j+n])
	j, ok := ordinalAt(text, j+n)
	if !ok {
		return entitySpan{}, false
	}
	year, end, ok := yearAt(text, j)
	if !ok {
		return entitySpan{}, false
	}
	return dateFound(text, i, end, year, month, day)
}

// ordinalAt skips an ordinal suffix (st, nd, rd, th in any case) at j. It
// fails when a word goes on after the day.
func ordinalAt(text string, j int) (int, bool) {
	if j+2 <= len(text) && !entityWordAt(text, j+2) {
		switch s := text[j : j+2]; {
		case equalFoldASCII(s, "st"), equalFoldASCII(s, "nd"), equalFoldASCII(s, "rd"), equalFoldASCII(s, "th"):
			return j + 2, true
		}
	}
	return j, !entityWordAt(text, j)
}

// yearAt reads the separator before a year (a comma, spaces, or both) and
// the four-digit year at j, returning the year and where it ends.
func yearAt(text string, j int) (year, end int, ok bool) {
	k := j
	if k < len(text) && text[k] == ',' {
		k++
	}
	k += spaceLen(text, k)
	if k == j || digitLen(text, k) != 4 {
		return 0, 0, false
	}
	end = k + 4
	if end < len(text) && gluesToWord(headRune(text[end:])) {
		return 0, 0, false
	}
	return smallAtoi(text[k:end]), end, true
}

// monthNamed returns the month a lower-case English month name or
// abbreviation names, and whether it is an abbreviation; month 0 means it
// names none.
func monthNamed(name string) (month int, abbr bool) {
	switch name {
	case "january":
		return 1, false
	case "february":
		return 2, false
	case "march":
		return 3, false
	case "april":
		return 4, false
	case "may":
		return 5, false
	case "june":
		return 6, false
	case "july":
		return 7, false
	case "august":
		return 8, false
	case "september":
		return 9, false
	case "october":
		return 10, false
	case "november":
		return 11, false
	case "december":
		return 12, false
	case "jan":
		return 1, true
	case "feb":
		return 2, true
	case "mar":
		return 3, true
	case "apr":
		return 4, true
	case "jun":
		return 6, true
	case "jul":
		return 7, true
	case "aug":
		return 8, true
	case "sep", "sept":
		return 9, true
	case "oct":
		return 10, true
	case "nov":
		return 11, true
	case "dec":
		return 12, true
	}
	return 0, false
}

// monthPrefix reports whether the three ASCII letters p start an English
// month name, in any case.
func monthPrefix(p string) bool {
	switch string([]byte{p[0] | 0x20, p[1] | 0x20, p[2] | 0x20}) {
	case "jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec":
		return true
	}
	return false
}

// monthAt reads a whole-word month name at j, returning the month, the
// name's length (0 when there is none) and whether it is an abbreviation.
func monthAt(text string, j int) (month, n int, abbr bool) {
	var buf [len("september")]byte
	for j+n < len(text) && isLetterASCII(text[j+n]) {
		if n == len(buf) {
			return 0, 0, false
		}
		buf[n] = text[j+n] | 0x20
		n++
	}
	if n < 3 || entityWordAt(text, j+n) {
		return 0, 0, false
	}
	month, abbr = monthNamed(string(buf[:n]))
	if month == 0 {
		return 0, 0, false
	}
	return month, n, abbr
}

// dateFound returns the date mention of text[start:end] if the date
// exists.
func dateFound(text string, start, end, year, month, day int) (entitySpan, bool) {
	if !validCalendarDate(year, month, day) {
		return entitySpan{}, false
	}
	key := [10]byte{
		byte('0' + year/1000), byte('0' + year/100%10), byte('0' + year/10%10), byte('0' + year%10), '-',
		byte('0' + month/10), byte('0' + month%10), '-',
		byte('0' + day/10), byte('0' + day%10),
	}
	return entitySpan{start: start, end: end, m: newMention(EntityDate, text[start:end], string(key[:]))}, true
}

// validCalendarDate reports whether the date exists in the proleptic
// Gregorian calendar, with a four-digit year.
func validCalendarDate(year, month, day int) bool {
	if year < 1000 || year > 9999 || month < 1 || month > 12 || day < 1 {
		return false
	}
	days := 31
	switch month {
	case 4, 6, 9, 11:
		days = 30
	case 2:
		days = 28
		if year%4 == 0 && (year%100 != 0 || year%400 == 0) {
			days = 29
		}
	}
	return day <= days
}

// Character classes.

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

func isDigitASCII(c byte) bool    { return c >= '0' && c <= '9' }
func isLetterASCII(c byte) bool   { return c|0x20 >= 'a' && c|0x20 <= 'z' }
func isAlnumASCII(c byte) bool    { return isDigitASCII(c) || isLetterASCII(c) }
func isHexDigitASCII(c byte) bool { return isDigitASCII(c) || c|0x20 >= 'a' && c|0x20 <= 'f' }
