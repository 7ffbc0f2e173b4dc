package searxng

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"
)

func TestPlainText(t *testing.T) {
	tests := []struct{ in, want string }{
		{"plain", "plain"},
		{"<b>Go</b>lang", "Golang"},
		{"one<br>two<br/>three</p><p>four", "one two three four"},
		{"<span class=\"highlight\">cancel</span> a <em>context</em>", "cancel a context"},
		{"a < b and c > d", "a < b and c > d"},
		{"1 <2 and 3<4", "1 <2 and 3<4"},
		{"x <!-- a comment with <b>tags</b> --> y", "x y"},
		{"AT&amp;T &lt;b&gt; &#39;quoted&#39; &hellip;", "AT&T <b> 'quoted' …"},
		{"unclosed <a href=\"http://x", "unclosed"},
		{"ends with <", "ends with <"},
		{"  tabs\tand\n\nnewlines\r\n ", "tabs and newlines"},
		{"bell\u0007and\u001bescape", "bell and escape"},
		{"bad \xff utf-8", "bad utf-8"},
		{"<DIV>Upper</DIV>Case", "Upper Case"},
	}
	for _, tt := range tests {
		if got := plainText(tt.in, 100); got != tt.want {
			t.Errorf("plainText(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestOneLineCaps(t *testing.T) {
	if got := oneLine("short", 5); got != "short" {
		t.Errorf("got %q", got)
	}
	if got := oneLine("exactly six", 6); got != "exact…" {
		t.Errorf("got %q", got)
	}
	// The cut never leaves a space before the ellipsis.
	if got := oneLine("ab cd", 4); got != "ab…" {
		t.Errorf("got %q", got)
	}
	long := strings.Repeat("é", 600)
	got := oneLine(long, maxSnippetRunes)
	if utf8.RuneCountInString(got) != maxSnippetRunes || !strings.HasSuffix(got, "…") || !utf8.ValidString(got) {
		t.Errorf("%d runes, valid %v", utf8.RuneCountInString(got), utf8.ValidString(got))
	}
}

func TestCleanURL(t *testing.T) {
	tests := []struct{ in, want string }{
		{"https://example.org/a?b=c#d", "https://example.org/a?b=c#d"},
		{"  https://example.org/  ", "https://example.org/"},
		{"https://example.org/a b", ""},
		{"https://example.org/\nx", ""},
		{"https://example.org/\u00a0", "https://example.org/"},
		{"https://example.org/\u2003x", ""},
		{"https://example.org/\xff", ""},
		{"", ""},
	}
	for _, tt := range tests {
		if got := cleanURL(tt.in); got != tt.want {
			t.Errorf("cleanURL(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

// TestDecodeVariations feeds the decoder values of unexpected types: it
// takes what it can and skips the rest, without failing the answer.
func TestDecodeVariations(t *testing.T) {
	body, err := os.ReadFile(filepath.Join("testdata", "variations.json"))
	if err != nil {
		t.Fatal(err)
	}
	raw, err := decodeResponse(body, "application/json")
	if err != nil {
		t.Fatal(err)
	}
	got := normalise(raw, "variations", 10)
	want := searchOutput{
		Query: "variations",
		Results: []result{
			{Title: "https://example.org/a", URL: "https://example.org/a", Source: "qwant", Engines: []string{"qwant"}, Score: ptr(1.25), Published: "1700000000"},
			{Title: "12345", URL: "https://example.org/b", Snippet: "x z & 1 < 2", Engines: []string{}, Published: "2024-02-29 12:00:00"},
			{Title: "Hello World", URL: "https://example.org/e", Source: "bing", Engines: []string{"bing", "7"}},
		},
		UnresponsiveEngines: []unresponsive{
			{Engine: "wikipedia", Reason: "unknown error"},
			{Engine: "yandex", Reason: "timeout"},
			{Engine: "mojeek", Reason: "unknown error"},
			{Engine: "bing", Reason: "HTTP error"},
		},
		NumberOfResults: 42,
		Answers:         []answer{{Answer: "a string answer"}, {Answer: "a text answer"}},
		Suggestions:     []string{"a single suggestion"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	if allEnginesFailed(got) {
		t.Error("results and failed engines together are not a failure")
	}
}

func TestDecodeRejects(t *testing.T) {
	tests := []struct {
		body, contentType, want string
	}{
		{"", "application/json", "the answer was empty"},
		{"  \n", "application/json", "the answer was empty"},
		{"<!DOCTYPE html><html></html>", "text/html; charset=utf-8", "got an HTML page (text/html)"},
		{"Service Unavailable", "text/html", "got text/html, not a JSON object"},
		{"[]", "application/json", "got application/json, not a JSON object"},
		{"query,results", "", "got no content type, not a JSON object"},
		{`{"results": [}`, "application/json", "the JSON is malformed (invalid character '}' looking for beginning of value)"},
		{`{"results": {}}`, "application/json", `the JSON has no "results" array`},
		{`{"answers": []}`, "application/json", `the JSON has no "results" array`},
	}
	for _, tt := range tests {
		_, err := decodeResponse([]byte(tt.body), tt.contentType)
		if err == nil || err.Error() != tt.want {
			t.Errorf("%q: got %v, want %s", tt.body, err, tt.want)
		}
	}
	// The content is what counts, not the content type a proxy put on it.
	if _, err := decodeResponse([]byte(`{"results": []}`), "text/html"); err != nil {
		t.Errorf("JSON labelled text/html: %v", err)
	}
	// results: null is an answer with no results.
	raw, err := decodeResponse([]byte(`{"results": null, "unresponsive_engines": [["bing", "timeout"]]}`), "application/json; charset=utf-8")
	if err != nil {
		t.Fatal(err)
	}
	if out := normalise(raw, "q", 10); !allEnginesFailed(out) {
		t.Errorf("%+v: want every engine failed", out)
	}
}

func TestAllEnginesFailed(t *testing.T) {
	failed := []unresponsive{{Engine: "bing", Reason: "timeout"}}
	tests := []struct {
		out  searchOutput
		want bool
	}{
		{searchOutput{UnresponsiveEngines: failed}, true},
		{searchOutput{}, false},
		{searchOutput{Results: []result{{URL: "https://x"}}, UnresponsiveEngines: failed}, false},
		// An answerer (a calculator, say) answered although the engines
		// failed: that is an answer, not a failure.
		{searchOutput{Answers: []answer{{Answer: "4"}}, UnresponsiveEngines: failed}, false},
		{searchOutput{Infoboxes: []infobox{{Title: "x"}}, UnresponsiveEngines: failed}, false},
	}
	for i, tt := range tests {
		if got := allEnginesFailed(tt.out); got != tt.want {
			t.Errorf("%d: got %v", i, got)
		}
	}
}

func TestNormaliseCaps(t *testing.T) {
	var b strings.Builder
	b.WriteString(`{"results": [`)
	for i := range 60 {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(`{"url": "https://example.org/` + strings.Repeat("x", i) + `", "title": "` + strings.Repeat("t", 400) + `"}`)
	}
	b.WriteString(`], "suggestions": ["a", "a", "b", "c", "d", "e", "f", "g", "h", "i", "j", "k", "l"]}`)
	raw, err := decodeResponse([]byte(b.String()), "application/json")
	if err != nil {
		t.Fatal(err)
	}
	out := normalise(raw, "q", 50)
	if len(out.Results) != 50 {
		t.Errorf("%d results, want max_results 50", len(out.Results))
	}
	if n := utf8.RuneCountInString(out.Results[0].Title); n != maxTitleRunes {
		t.Errorf("title of %d runes, want %d", n, maxTitleRunes)
	}
	if !cmp.Equal(out.Suggestions, []string{"a", "b", "c", "d", "e", "f", "g", "h", "i", "j"}) {
		t.Errorf("suggestions %q: want 10, de-duplicated", out.Suggestions)
	}
}
