package memory

import (
	"fmt"
	"reflect"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"
)

// entityChunk is a realistic chunk of about 2000 characters with entities
// of every kind and things that look like them.
const entityChunk = `# Reef survey: planning notes

Attendees: Ana Lima (ana.lima@example.com), Bruno Costa <bruno@skyways.io> and @marta_r from the field team. Call notes by @skyways.

## Decisions

1. The next survey runs from 2026-11-30 to 4 December 2026; the backup window is Jan. 12, 2027 if the weather turns. Boats leave the marina at 06:30, so be there by @6am at the latest.
2. Results go on the shared page https://wiki.example.org/reef/survey-2026?view=full#results and in the tracker (https://tracker.example.com/issues/4521). Tag public posts with #ReefWatch and #coralbleaching; do not use #reef alone, it is taken.
3. Budget: 12,500 EUR for fuel, 3,200 EUR for equipment (quote Q-2026-114, valid until November 30, 2026). Invoices to finance@example.com, cc Ana.Lima@example.com.

## Open questions

- Do we need a permit renewal before 15th Jan 2027? Marta thinks the old one (issued 2024-02-29) covers it, see section 4.2 of the permit PDF.
- Can we borrow the second camera housing from the university lab? Bruno will ask @lab_ops on Monday.
- Weather model: use the 03/04/2026 forecast run or the newer one? Ambiguous dates like that are why we write ISO dates; it&#39;s in the style guide.

## Notes

Water temperature was 28.5 °C at 10 m depth last time, visibility about 15 m. The mooring line at site B is frayed and must be replaced; photos are at https://photos.example.net/album/B-site (folder "mooring"). Send corrections to the list before Friday, and remember that the C# scripts for the data logger live in the repo, not on the laptop. Colours for the charts: #1e90ff for depth, #ff8c00 for temperature.

Next sync: Nov 24 2026, 14:00 UTC, same link as last time. Agenda items go to https://wiki.example.org/reef/agenda by the day before. If you cannot make it, post a short status in the channel instead: what you did since the last sync, what is blocked, and what you need from whom. Keep threads short; long discussions belong on the wiki page.
`

// entityChunkCounts is what countEntities finds in entityChunk.
var entityChunkCounts = []entityCount{
	{ID: "date:2024-02-29", Kind: EntityDate, Surface: "2024-02-29", Count: 1},
	{ID: "date:2026-11-24", Kind: EntityDate, Surface: "Nov 24 2026", Count: 1},
	{ID: "date:2026-11-30", Kind: EntityDate, Surface: "2026-11-30", Count: 2},
	{ID: "date:2026-12-04", Kind: EntityDate, Surface: "4 December 2026", Count: 1},
	{ID: "date:2027-01-12", Kind: EntityDate, Surface: "Jan. 12, 2027", Count: 1},
	{ID: "date:2027-01-15", Kind: EntityDate, Surface: "15th Jan 2027", Count: 1},
	{ID: "email:ana.lima@example.com", Kind: EntityEmail, Surface: "ana.lima@example.com", Count: 2},
	{ID: "email:bruno@skyways.io", Kind: EntityEmail, Surface: "bruno@skyways.io", Count: 1},
	{ID: "email:finance@example.com", Kind: EntityEmail, Surface: "finance@example.com", Count: 1},
	{ID: "handle:@lab_ops", Kind: EntityHandle, Surface: "@lab_ops", Count: 1},
	{ID: "handle:@marta_r", Kind: EntityHandle, Surface: "@marta_r", Count: 1},
	{ID: "handle:@skyways", Kind: EntityHandle, Surface: "@skyways", Count: 1},
	{ID: "hashtag:#coralbleaching", Kind: EntityHashtag, Surface: "#coralbleaching", Count: 1},
	{ID: "hashtag:#reef", Kind: EntityHashtag, Surface: "#reef", Count: 1},
	{ID: "hashtag:#reefwatch", Kind: EntityHashtag, Surface: "#ReefWatch", Count: 1},
	{ID: "url:https://photos.example.net/album/B-site", Kind: EntityURL, Surface: "https://photos.example.net/album/B-site", Count: 1},
	{ID: "url:https://tracker.example.com/issues/4521", Kind: EntityURL, Surface: "https://tracker.example.com/issues/4521", Count: 1},
	{ID: "url:https://wiki.example.org/reef/agenda", Kind: EntityURL, Surface: "https://wiki.example.org/reef/agenda", Count: 1},
	{ID: "url:https://wiki.example.org/reef/survey-2026?view=full", Kind: EntityURL, Surface: "https://wiki.example.org/reef/survey-2026?view=full#results", Count: 1},
}

func mEmail(surface, key string) Mention {
	return Mention{Kind: EntityEmail, Surface: surface, Key: key}
}
func mURL(surface, key string) Mention { return Mention{Kind: EntityURL, Surface: surface, Key: key} }
func mHandle(surface, key string) Mention {
	return Mention{Kind: EntityHandle, Surface: surface, Key: key}
}
func mHashtag(surface, key string) Mention {
	return Mention{Kind: EntityHashtag, Surface: surface, Key: key}
}
func mDate(surface, key string) Mention { return Mention{Kind: EntityDate, Surface: surface, Key: key} }

// extractorCase is one text and the mentions the default extractor must
// find in it, in order.
type extractorCase struct {
	text string
	want []Mention
}

func runExtractorCases(t *testing.T, tests map[string]extractorCase) {
	t.Helper()
	x := DefaultExtractor()
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			got := x.Extract(tc.text)
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("Extract(%q)\n got %q\nwant %q", tc.text, got, tc.want)
			}
		})
	}
}

func TestDefaultExtractorEmails(t *testing.T) {
	t.Parallel()
	runExtractorCases(t, map[string]extractorCase{
		"plain":             {"Write to ana.lima@example.com today.", []Mention{mEmail("ana.lima@example.com", "ana.lima@example.com")}},
		"key lower-cased":   {"Ana.Lima@Example.COM", []Mention{mEmail("Ana.Lima@Example.COM", "ana.lima@example.com")}},
		"plus, subdomains":  {"<ana+notes@mail.example.co.uk>", []Mention{mEmail("ana+notes@mail.example.co.uk", "ana+notes@mail.example.co.uk")}},
		"mailto":            {"mailto:ana@example.com", []Mention{mEmail("ana@example.com", "ana@example.com")}},
		"apostrophes":       {"O'Brien@Example.com 'ana@example.com' ana'@example.com", []Mention{mEmail("O'Brien@Example.com", "o'brien@example.com"), mEmail("ana@example.com", "ana@example.com")}},
		"sentence end":      {"Mail ana@example.com... or (bob_1@example.org).", []Mention{mEmail("ana@example.com", "ana@example.com"), mEmail("bob_1@example.org", "bob_1@example.org")}},
		"punycode TLD":      {"ana@example.xn--p1ai", []Mention{mEmail("ana@example.xn--p1ai", "ana@example.xn--p1ai")}},
		"no handle":         {"ana.lima@skyways.io", []Mention{mEmail("ana.lima@skyways.io", "ana.lima@skyways.io")}},
		"CJK neighbours":    {"请联系ana@example.com谢谢", []Mention{mEmail("ana@example.com", "ana@example.com")}},
		"64-byte local":     {strings.Repeat("a", 64) + "@example.com", []Mention{mEmail(strings.Repeat("a", 64)+"@example.com", strings.Repeat("a", 64)+"@example.com")}},
		"65-byte local":     {strings.Repeat("a", 65) + "@example.com", nil},
		"no TLD":            {"ana@localhost", nil},
		"one-letter TLD":    {"ana@example.c", nil},
		"numeric TLD":       {"ana@10.0.0.1", nil},
		"doubled dot":       {"ana..lima@example.com", nil},
		"leading dot":       {".ana@example.com", nil},
		"trailing dot":      {"ana.@example.com", nil},
		"hyphen label":      {"ana@-example.com", nil},
		"empty label":       {"ana@example..com", nil},
		"two @s":            {"a@b@example.com", nil},
		"followed by @":     {"ana@example.com@example.org", nil},
		"glued to a word":   {"Müller.ana@example.com and anaé@example.com", nil},
		"glued TLD":         {"ana@example.coméé", nil},
		"bare @":            {"a @ b.com", nil},
		"in a URL":          {"https://example.com/?u=ana@example.com", []Mention{mURL("https://example.com/?u=ana@example.com", "https://example.com/?u=ana@example.com")}},
		"two in a sentence": {"ana@example.com,bob@example.com", []Mention{mEmail("ana@example.com", "ana@example.com"), mEmail("bob@example.com", "bob@example.com")}},
	})
}

func TestDefaultExtractorURLs(t *testing.T) {
	t.Parallel()
	long := "https://example.com/" + strings.Repeat("a", 237) // 257 bytes
	runExtractorCases(t, map[string]extractorCase{
		"key lower-cases scheme and host": {"See HTTPS://Example.COM/Path?Q=1.", []Mention{mURL("HTTPS://Example.COM/Path?Q=1", "https://example.com/Path?Q=1")}},
		"port and userinfo":               {"http://Ana@Example.com:8080/A", []Mention{mURL("http://Ana@Example.com:8080/A", "http://ana@example.com:8080/A")}},
		"root path dropped from key":      {"https://example.com/ and https://example.com", []Mention{mURL("https://example.com/", "https://example.com"), mURL("https://example.com", "https://example.com")}},
		"fragment not in key":             {"https://example.com/docs#install", []Mention{mURL("https://example.com/docs#install", "https://example.com/docs")}},
		"fragment-only #":                 {"https://example.com/page#", []Mention{mURL("https://example.com/page", "https://example.com/page")}},
		"fragment-only # then dot":        {"https://example.com/page#.", []Mention{mURL("https://example.com/page", "https://example.com/page")}},
		"trailing punctuation": {
			"(https://example.com/a), https://example.com/b; https://example.com/c! https://example.com/d? 'https://example.com/e' \"https://example.com/f\" [https://example.com/g] {https://example.com/h}: **https://example.com/i**",
			[]Mention{
				mURL("https://example.com/a", "https://example.com/a"), mURL("https://example.com/b", "https://example.com/b"),
				mURL("https://example.com/c", "https://example.com/c"), mURL("https://example.com/d", "https://example.com/d"),
				mURL("https://example.com/e", "https://example.com/e"), mURL("https://example.com/f", "https://example.com/f"),
				mURL("https://example.com/g", "https://example.com/g"), mURL("https://example.com/h", "https://example.com/h"),
				mURL("https://example.com/i", "https://example.com/i"),
			},
		},
		"markdown link":         {"[docs](https://example.com/docs).", []Mention{mURL("https://example.com/docs", "https://example.com/docs")}},
		"angle brackets":        {"<https://example.com>", []Mention{mURL("https://example.com", "https://example.com")}},
		"backticks":             {"`https://example.com/x`", []Mention{mURL("https://example.com/x", "https://example.com/x")}},
		"balanced parenthesis":  {"https://en.wikipedia.org/wiki/Reef_(disambiguation)", []Mention{mURL("https://en.wikipedia.org/wiki/Reef_(disambiguation)", "https://en.wikipedia.org/wiki/Reef_(disambiguation)")}},
		"balanced in parens":    {"(see https://en.wikipedia.org/wiki/Reef_(disambiguation)).", []Mention{mURL("https://en.wikipedia.org/wiki/Reef_(disambiguation)", "https://en.wikipedia.org/wiki/Reef_(disambiguation)")}},
		"query and fragment":    {"https://example.com/s?q=reef&tag=#a @bob", []Mention{mURL("https://example.com/s?q=reef&tag=#a", "https://example.com/s?q=reef&tag="), mHandle("@bob", "@bob")}},
		"handle in path":        {"https://Mastodon.social/@Skyways", []Mention{mURL("https://Mastodon.social/@Skyways", "https://mastodon.social/@Skyways")}},
		"date in path":          {"https://example.com/2026-11-30/notes", []Mention{mURL("https://example.com/2026-11-30/notes", "https://example.com/2026-11-30/notes")}},
		"IRI":                   {"https://例え.jp/パス", []Mention{mURL("https://例え.jp/パス", "https://例え.jp/パス")}},
		"CJK punctuation ends":  {"见https://example.com/a。谢谢", []Mention{mURL("https://example.com/a", "https://example.com/a")}},
		"curly quotes end":      {"“https://example.com/a”", []Mention{mURL("https://example.com/a", "https://example.com/a")}},
		"IPv6 host":             {"http://[::1]:8080/x", []Mention{mURL("http://[::1]:8080/x", "http://[::1]:8080/x")}},
		"256 bytes":             {long[:256], []Mention{mURL(long[:256], long[:256])}},
		"257 bytes, no mention": {long + "#reef/@ana", nil},
		"other schemes":         {"ftp://example.com file:///etc/hosts mailto://x", nil},
		"glued scheme":          {"xhttps://example.com git+https://example.com/r.git", nil},
		"no host":               {"http:// https://. https://:80 http://-x.com https://example.com:x", nil},
		"no scheme":             {"www.example.com example.com/path", nil},
	})
}

func TestDefaultExtractorHandles(t *testing.T) {
	t.Parallel()
	runExtractorCases(t, map[string]extractorCase{
		"plain":           {"ping @Skyways today", []Mention{mHandle("@Skyways", "@skyways")}},
		"underscore":      {"(@ana_lima2)", []Mention{mHandle("@ana_lima2", "@ana_lima2")}},
		"dots inside":     {"@ana.lima. and @ana.lima...", []Mention{mHandle("@ana.lima", "@ana.lima"), mHandle("@ana.lima", "@ana.lima")}},
		"possessive":      {"@ana's notes", []Mention{mHandle("@ana", "@ana")}},
		"quoted":          {"'@ana' but not ana'@bob", []Mention{mHandle("@ana", "@ana")}},
		"line start":      {"@ana\n@bob:", []Mention{mHandle("@ana", "@ana"), mHandle("@bob", "@bob")}},
		"39 chars":        {"@" + strings.Repeat("a", 39), []Mention{mHandle("@"+strings.Repeat("a", 39), "@"+strings.Repeat("a", 39))}},
		"40 chars":        {"@" + strings.Repeat("a", 40), nil},
		"40 with a dot":   {"@" + strings.Repeat("a", 38) + ".b", nil},
		"email":           {"ana@skyways.io", []Mention{mEmail("ana@skyways.io", "ana@skyways.io")}},
		"not an email":    {"ana@skyways", nil},
		"after dot":       {"x.@ana", nil},
		"after _":         {"x_@ana", nil},
		"after letter":    {"café@ana", nil},
		"times, numbers":  {"@3pm @10AM @2026 @1.5", nil},
		"hyphen":          {"@octo-cat", nil},
		"fediverse":       {"@ana@mastodon.social", nil},
		"non-ASCII after": {"@josé", nil},
		"lone @":          {"@ @@ana @. @_", []Mention{mHandle("@_", "@_")}},
		"leading dot":     {"@.ana", nil},
	})
}

func TestDefaultExtractorHashtags(t *testing.T) {
	t.Parallel()
	runExtractorCases(t, map[string]extractorCase{
		"plain":          {"Loving #ReefWatch today", []Mention{mHashtag("#ReefWatch", "#reefwatch")}},
		"unicode":        {"#東京 #café_2026 #ÜBER", []Mention{mHashtag("#東京", "#東京"), mHashtag("#café_2026", "#café_2026"), mHashtag("#ÜBER", "#über")}},
		"combining mark": {"#हिन्दी", []Mention{mHashtag("#हिन्दी", "#हिन्दी")}},
		"headings":       {"# Title\n## Section\n###", nil},
		"URL fragment":   {"https://example.com/page#section", []Mention{mURL("https://example.com/page#section", "https://example.com/page")}},
		"HTML entities":  {"it&#39;s &#x27;quoted&#x27; &#reef", nil},
		"languages":      {"C# and F# and c#", nil},
		"issue number":   {"issue #123 and #1st", nil},
		"glued":          {"a#tag ##tag _#tag 1#tag", nil},
		"hex colours":    {"#ff0000 #a1b2c3 #C0FFEE #1e90ff #abc1", nil},
		"hex-like words": {"#cafe #fff", []Mention{mHashtag("#cafe", "#cafe"), mHashtag("#fff", "#fff")}},
		"ends at hyphen": {"#reef-watch", []Mention{mHashtag("#reef", "#reef")}},
		"punctuation":    {"(#reefwatch). #a,#b", []Mention{mHashtag("#reefwatch", "#reefwatch"), mHashtag("#a", "#a"), mHashtag("#b", "#b")}},
		"100 characters": {"#" + strings.Repeat("a", 100), []Mention{mHashtag("#"+strings.Repeat("a", 100), "#"+strings.Repeat("a", 100))}},
		"101 characters": {"#" + strings.Repeat("a", 101), nil},
	})
}

func TestDefaultExtractorDates(t *testing.T) {
	t.Parallel()
	runExtractorCases(t, map[string]extractorCase{
		"ISO":                    {"Due 2026-11-30.", []Mention{mDate("2026-11-30", "2026-11-30")}},
		"ISO date-time":          {"at 2026-11-30T10:00:00Z", []Mention{mDate("2026-11-30", "2026-11-30")}},
		"year first slashes":     {"2026/11/30", []Mention{mDate("2026/11/30", "2026-11-30")}},
		"ISO in a file name":     {"notes_2026-11-30.md", []Mention{mDate("2026-11-30", "2026-11-30")}},
		"ISO range":              {"2026-11-30/2026-12-01", []Mention{mDate("2026-11-30", "2026-11-30"), mDate("2026-12-01", "2026-12-01")}},
		"leap days":              {"2024-02-29 2000-02-29", []Mention{mDate("2024-02-29", "2024-02-29"), mDate("2000-02-29", "2000-02-29")}},
		"not leap days":          {"2026-02-29 1900-02-29 February 29, 2026", nil},
		"invalid ISO":            {"2026-02-30 2026-13-01 2026-00-10 2026-04-31 2026-01-00 0999-01-01", nil},
		"inside longer numbers":  {"12026-11-30 2026-11-301 1.2026-11-30", nil},
		"mixed separators":       {"2026-11/30 2026/11-30 2026.11.30", nil},
		"short fields":           {"2026-1-5 2026-11-3", nil},
		"compact":                {"20261130", nil},
		"ambiguous numeric":      {"03/04/2026 3.4.2026 30/11/2026 11-30-2026 30.11.2026", nil},
		"numbers":                {"1234567890 v2.0.26 12:30 in 2026, page 30 of 2026, 1.30 November 2026", nil},
		"day month year":         {"30 November 2026", []Mention{mDate("30 November 2026", "2026-11-30")}},
		"day abbreviation year":  {"30 Nov 2026 and 1 jan. 2027", []Mention{mDate("30 Nov 2026", "2026-11-30"), mDate("1 jan. 2027", "2027-01-01")}},
		"ordinals":               {"30th Nov 2026, 1st of March 2026, 2nd May, 2026, 3RD JUNE 2026", []Mention{mDate("30th Nov 2026", "2026-11-30"), mDate("1st of March 2026", "2026-03-01"), mDate("2nd May, 2026", "2026-05-02"), mDate("3RD JUNE 2026", "2026-06-03")}},
		"dot after day":          {"30. November 2026", []Mention{mDate("30. November 2026", "2026-11-30")}},
		"month day year":         {"November 30, 2026", []Mention{mDate("November 30, 2026", "2026-11-30")}},
		"abbreviation no comma":  {"Nov 30 2026", []Mention{mDate("Nov 30 2026", "2026-11-30")}},
		"abbreviation with dot":  {"Nov. 30, 2026", []Mention{mDate("Nov. 30, 2026", "2026-11-30")}},
		"sept and ordinal":       {"SEPT 3rd 2026; sep 3rd, 2026; March 2nd,2026", []Mention{mDate("SEPT 3rd 2026", "2026-09-03"), mDate("sep 3rd, 2026", "2026-09-03"), mDate("March 2nd,2026", "2026-03-02")}},
		"weekday before":         {"on Monday, March 2nd, 2026.", []Mention{mDate("March 2nd, 2026", "2026-03-02")}},
		"no-break spaces":        {"30\u00a0November\u00a02026", []Mention{mDate("30\u00a0November\u00a02026", "2026-11-30")}},
		"across a line break":    {"November\n30, 2026", []Mention{mDate("November\n30, 2026", "2026-11-30")}},
		"CJK after the year":     {"30 November 2026年", []Mention{mDate("30 November 2026", "2026-11-30")}},
		"invalid named dates":    {"Nov 31, 2026; 31 April 2026; 0 May 2026; 30 November 0999", nil},
		"not month names":        {"Novel 30 2026, 30 Nova 2026, Mars 30 2026, Sun 30 2026, 30 Mayo 2026", nil},
		"no year or no day":      {"Nov 30; November 2026; 30 November; Nov 2026", nil},
		"glued":                  {"2Nov 30 2026, Nov 30 20261, Nov 30 2026a, 30x November 2026, x30 November 2026", nil},
		"period only after abbr": {"November. 30, 2026", nil},
		"one date per text span": {"5 May 30, 2026", []Mention{mDate("May 30, 2026", "2026-05-30")}},
	})
}

func TestDefaultExtractorMixed(t *testing.T) {
	t.Parallel()
	runExtractorCases(t, map[string]extractorCase{
		"text order": {
			"Meeting 2026-11-30 with Ana@Example.com (@ana) about #Reef, notes at https://example.com/reef#notes.",
			[]Mention{
				mDate("2026-11-30", "2026-11-30"),
				mEmail("Ana@Example.com", "ana@example.com"),
				mHandle("@ana", "@ana"),
				mHashtag("#Reef", "#reef"),
				mURL("https://example.com/reef#notes", "https://example.com/reef"),
			},
		},
		"empty":   {"", nil},
		"nothing": {"Nothing to see here: 42, 3.14, a@, #, @.", nil},
		"invalid UTF-8": {
			"\xff#reef\xfe @ana\xff https://example.com/\xffx",
			[]Mention{mHashtag("#reef", "#reef"), mHandle("@ana", "@ana"), mURL("https://example.com/", "https://example.com")},
		},
	})
}

func TestCountEntities(t *testing.T) {
	t.Parallel()
	def := []Extractor{DefaultExtractor()}
	tests := map[string]struct {
		extractors []Extractor
		text       string
		want       []entityCount
	}{
		"case-insensitive": {
			extractors: def,
			text:       "Ana.Lima@Example.com wrote; cc ana.lima@example.com.",
			want:       []entityCount{{ID: "email:ana.lima@example.com", Kind: EntityEmail, Surface: "Ana.Lima@Example.com", Count: 2}},
		},
		"date forms": {
			extractors: def,
			text:       "30 Nov 2026, 2026-11-30 and November 30, 2026",
			want:       []entityCount{{ID: "date:2026-11-30", Kind: EntityDate, Surface: "30 Nov 2026", Count: 3}},
		},
		"sorted by ID": {
			extractors: def,
			text:       "#Reef https://Example.com/ @ana #reef ana@example.com https://example.com",
			want: []entityCount{
				{ID: "email:ana@example.com", Kind: EntityEmail, Surface: "ana@example.com", Count: 1},
				{ID: "handle:@ana", Kind: EntityHandle, Surface: "@ana", Count: 1},
				{ID: "hashtag:#reef", Kind: EntityHashtag, Surface: "#Reef", Count: 2},
				{ID: "url:https://example.com", Kind: EntityURL, Surface: "https://Example.com/", Count: 2},
			},
		},
		"realistic chunk": {extractors: def, text: entityChunk, want: entityChunkCounts},
		"no entities":     {extractors: def, text: "nothing here", want: nil},
		"empty text":      {extractors: def, text: "", want: nil},
		"no extractors":   {extractors: nil, text: "ana@example.com", want: nil},
		"nil extractor":   {extractors: []Extractor{nil}, text: "ana@example.com", want: nil},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			got := countEntities(tc.extractors, tc.text)
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("countEntities(%q)\n got %+v\nwant %+v", tc.text, got, tc.want)
			}
		})
	}
}

// stubExtractor returns the same mentions for every text.
type stubExtractor []Mention

func (s stubExtractor) Extract(string) []Mention { return s }

func TestCountEntitiesCustomExtractor(t *testing.T) {
	t.Parallel()
	kind32 := "k" + strings.Repeat("x", 31)
	key256 := strings.Repeat("k", 256)
	surface256 := strings.Repeat("s", 256)
	custom := stubExtractor{
		{Kind: "person", Surface: "Ana", Key: "ana lima"},
		{Kind: "person", Surface: "ANA LIMA", Key: "ana lima"},
		{Kind: "place_2", Surface: "Lisbon", Key: "lisbon"},
		{Kind: kind32, Surface: "x", Key: "k"},
		{Kind: "thing", Surface: "long key", Key: key256},
		{Kind: "thing", Surface: surface256, Key: "s"},
		{Kind: EntityEmail, Surface: "ANA@example.com", Key: "ana@example.com"},
		// Dropped: bad kinds.
		{Kind: "", Surface: "x", Key: "x"},
		{Kind: "Person", Surface: "x", Key: "x"},
		{Kind: "1person", Surface: "x", Key: "x"},
		{Kind: "_person", Surface: "x", Key: "x"},
		{Kind: "per-son", Surface: "x", Key: "x"},
		{Kind: "per son", Surface: "x", Key: "x"},
		{Kind: "pérson", Surface: "x", Key: "x"},
		{Kind: kind32 + "x", Surface: "x", Key: "x"},
		// Dropped: bad keys and surfaces.
		{Kind: "person", Surface: "x", Key: ""},
		{Kind: "person", Surface: "x", Key: key256 + "k"},
		{Kind: "person", Surface: "x", Key: "\xff"},
		{Kind: "person", Surface: "", Key: "x"},
		{Kind: "person", Surface: surface256 + "s", Key: "x"},
		{Kind: "person", Surface: "a\xffb", Key: "x"},
	}
	got := countEntities([]Extractor{DefaultExtractor(), nil, custom}, "Mail ana@example.com")
	want := []entityCount{
		{ID: "email:ana@example.com", Kind: EntityEmail, Surface: "ana@example.com", Count: 2},
		{ID: kind32 + ":k", Kind: kind32, Surface: "x", Count: 1},
		{ID: "person:ana lima", Kind: "person", Surface: "Ana", Count: 2},
		{ID: "place_2:lisbon", Kind: "place_2", Surface: "Lisbon", Count: 1},
		{ID: "thing:" + key256, Kind: "thing", Surface: "long key", Count: 1},
		{ID: "thing:s", Kind: "thing", Surface: surface256, Count: 1},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("countEntities\n got %+v\nwant %+v", got, want)
	}
	if got := countEntities([]Extractor{stubExtractor{{Kind: "Bad"}}}, "x"); got != nil {
		t.Errorf("countEntities with only bad mentions = %+v, want nil", got)
	}
}

func TestDefaultExtractorConcurrent(t *testing.T) {
	t.Parallel()
	x := DefaultExtractor()
	texts := []string{
		entityChunk,
		"Ana@Example.com, @ana, #reef, https://example.com/a_(b), 30 Nov 2026",
		"请联系ana@example.com #東京 2026/11/30",
	}
	want := make([][]Mention, len(texts))
	for i, text := range texts {
		want[i] = x.Extract(text)
	}
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for n := range 50 {
				i := (g + n) % len(texts)
				if got := x.Extract(texts[i]); !reflect.DeepEqual(got, want[i]) {
					t.Errorf("goroutine %d: Extract(texts[%d]) = %q, want %q", g, i, got, want[i])
					return
				}
				if got := countEntities([]Extractor{x}, entityChunk); !reflect.DeepEqual(got, entityChunkCounts) {
					t.Errorf("goroutine %d: countEntities = %+v", g, got)
					return
				}
			}
		})
	}
	wg.Wait()
}

// TestDefaultExtractorLargeText runs the extractor over texts of 1 MB,
// realistic and adversarial, to catch quadratic behaviour: a quadratic scan
// of 1 MB runs for hours, so it ends this test by the test binary's
// timeout, while the linear scanner takes milliseconds (logged). The
// mentions found must still be valid.
func TestDefaultExtractorLargeText(t *testing.T) {
	t.Parallel()
	const size = 1 << 20
	fill := func(unit string) string { return strings.Repeat(unit, size/len(unit)+1) }

	n := size/(len(entityChunk)+1) + 1
	realistic := strings.Repeat(entityChunk+"\n", n)
	start := time.Now()
	got := countEntities([]Extractor{DefaultExtractor()}, realistic)
	elapsed := time.Since(start)
	want := make([]entityCount, len(entityChunkCounts))
	for i, e := range entityChunkCounts {
		e.Count *= n
		want[i] = e
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("countEntities(%d copies of entityChunk)\n got %+v\nwant %+v", n, got, want)
	}
	t.Logf("realistic %d bytes: %v", len(realistic), elapsed)

	adversarial := map[string]string{
		"@s":                 fill("@"),
		"a@":                 fill("a@"),
		"local part":         fill("a") + "@example.com",
		"dotted local part":  fill("a.") + "@example.com",
		"domain":             "a@" + fill("a"),
		"dotted domain":      "a@" + fill("a."),
		"handle":             "@" + fill("a"),
		"dotted handle":      "@" + fill("a."),
		"#s":                 fill("#"),
		"hashtag":            "#" + fill("a"),
		"#a":                 fill("#a "),
		"schemes":            fill("://"),
		"empty URLs":         fill("http:// "),
		"one long URL":       "https://example.com/" + fill("a"),
		"parentheses URL":    "https://example.com/" + fill("("),
		"closing URL":        "https://example.com/" + fill(")"),
		"URLs":               fill("https://example.com/a "),
		"digits":             fill("1"),
		"digit words":        fill("1 "),
		"ISO prefixes":       fill("2026-"),
		"day month":          fill("30 Nov "),
		"month day":          fill("Nov 30 "),
		"month words":        fill("November "),
		"spaces":             "30" + fill(" ") + "November 2026",
		"letters":            fill("a"),
		"non-ASCII":          fill("é"),
		"invalid UTF-8":      fill("\xff"),
		"emails":             fill("ana@example.com "),
		"entity soup":        fill("@a#b 1 Nov 2026-11-30 a@b.co https://x.io/(#) "),
		"no spaces anywhere": fill("a@b.co#x@y2026-11-30"),
	}
	for name, text := range adversarial {
		start := time.Now()
		ms := DefaultExtractor().Extract(text)
		elapsed := time.Since(start)
		t.Logf("%s: %d bytes, %d mentions, %v", name, len(text), len(ms), elapsed)
		for _, m := range ms {
			if !validMention(m) {
				t.Errorf("%s: invalid mention %q", name, m)
				break
			}
		}
	}
}

// dateKey matches a date mention's key.
var dateKey = regexp.MustCompile(`^[1-9][0-9]{3}-(0[1-9]|1[0-2])-(0[1-9]|[12][0-9]|3[01])$`)

// checkMentions checks the invariants of the default extractor's mentions
// of text: valid, in order, not overlapping, with keys normalised as their
// kind requires.
func checkMentions(text string, ms []Mention) error {
	pos := 0
	for _, m := range ms {
		if !validMention(m) {
			return fmt.Errorf("invalid mention %q", m)
		}
		i := strings.Index(text[pos:], m.Surface)
		if i < 0 {
			return fmt.Errorf("surface %q not found after byte %d, or out of order", m.Surface, pos)
		}
		pos += i + len(m.Surface)
		switch m.Kind {
		case EntityEmail, EntityHandle, EntityHashtag:
			if m.Key != strings.ToLower(m.Surface) {
				return fmt.Errorf("%s key %q is not the lower-cased surface %q", m.Kind, m.Key, m.Surface)
			}
			if m.Kind == EntityHandle && !strings.HasPrefix(m.Key, "@") || m.Kind == EntityHashtag && !strings.HasPrefix(m.Key, "#") {
				return fmt.Errorf("%s key %q lacks its sigil", m.Kind, m.Key)
			}
		case EntityURL:
			if !strings.HasPrefix(m.Key, "http://") && !strings.HasPrefix(m.Key, "https://") {
				return fmt.Errorf("url key %q", m.Key)
			}
		case EntityDate:
			if !dateKey.MatchString(m.Key) {
				return fmt.Errorf("date key %q", m.Key)
			}
		default:
			return fmt.Errorf("unknown kind %q", m.Kind)
		}
	}
	return nil
}

func FuzzDefaultExtractor(f *testing.F) {
	for _, seed := range []string{
		entityChunk,
		"Ana@Example.com @ana #reef https://example.com/a_(b)) 30 Nov. 2026 2026-02-29",
		"请联系ana@example.com #東京 2026/11/30 https://例え.jp/パス。",
		"&#x27; C# ## x @3pm @a.b. a@b@c.de November 30th, 2026",
		"\xff@\xfe#\xfd2026-11-30\xff",
	} {
		f.Add(seed)
	}
	x := DefaultExtractor()
	f.Fuzz(func(t *testing.T, text string) {
		if err := checkMentions(text, x.Extract(text)); err != nil {
			t.Errorf("Extract(%q): %v", text, err)
		}
	})
}

func BenchmarkDefaultExtractor(b *testing.B) {
	x := DefaultExtractor()
	b.SetBytes(int64(len(entityChunk)))
	b.ReportAllocs()
	for b.Loop() {
		x.Extract(entityChunk)
	}
}

func BenchmarkCountEntities(b *testing.B) {
	extractors := []Extractor{DefaultExtractor()}
	b.SetBytes(int64(len(entityChunk)))
	b.ReportAllocs()
	for b.Loop() {
		countEntities(extractors, entityChunk)
	}
}

func TestEntityChunkSize(t *testing.T) {
	t.Parallel()
	if n := utf8.RuneCountInString(entityChunk); n < 1800 || n > 2000 {
		t.Errorf("entityChunk has %d characters, want about 2000", n)
	}
}
