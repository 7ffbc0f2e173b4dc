package memory

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

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
		if !allBytes(host, func(c byte) bool { return isHexDigitASCII(c) || c == ':' || c == '.' }) {
			return false
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
	return allBytes(port, isDigitASCII)
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
	return allBytes(label, isLetterASCII)
}

// isLocalByte reports whether c can be in the local part of an address.
func isLocalByte(c byte) bool {
	return isAlnumASCII(c) || c == '.' || c == '_' || c == '%' || c == '+' || c == '-'
}

// isDomainByte reports whether c can be in a domain name.
func isDomainByte(c byte) bool {
	return isAlnumASCII(c) || c == '.' || c == '-'
}
