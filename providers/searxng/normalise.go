package searxng

import (
	"fmt"
	"html"
	"math"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Caps on what one search returns, besides max_results.
const (
	maxSnippetRunes      = 500
	maxTitleRunes        = 300
	maxAnswers           = 5
	maxAnswerRunes       = 1000
	maxSuggestions       = 10
	maxInfoboxes         = 3
	maxInfoboxRunes      = 1000
	maxInfoboxLinks      = 10
	maxInfoboxAttributes = 20
	maxUnresponsive      = 50
	maxReasonRunes       = 200
	maxShortRunes        = 200
)

// searchOutput is searxng_search's structured content; sdk.AddTool
// derives the output schema from it and the types below.
type searchOutput struct {
	Query               string         `json:"query" jsonschema:"The query as searched."`
	Results             []result       `json:"results" jsonschema:"The results, best first, at most max_results."`
	UnresponsiveEngines []unresponsive `json:"unresponsive_engines" jsonschema:"Engines that failed during this search."`
	NumberOfResults     int64          `json:"number_of_results,omitzero" jsonschema:"How many results the engines estimated in all; absent when they did not say." schema:"minimum=1"`
	Answers             []answer       `json:"answers" jsonschema:"Direct answers to the query."`
	Suggestions         []string       `json:"suggestions" jsonschema:"Related queries the engines suggested."`
	Infoboxes           []infobox      `json:"infoboxes,omitempty" jsonschema:"Summaries of the query's topic (Wikipedia, Wikidata); absent when there are none."`
}

// result is one normalised result.
type result struct {
	Title     string   `json:"title" jsonschema:"The page's title, or its url when it has none."`
	URL       string   `json:"url" jsonschema:"The page's address." schema:"minLength=1"`
	Snippet   string   `json:"snippet" jsonschema:"Plain text from the page, as the engines showed it; may be empty."`
	Source    string   `json:"source" jsonschema:"The engine that found the result (the first of engines); empty when the instance did not say."`
	Engines   []string `json:"engines" jsonschema:"Every engine that found the result."`
	Score     *float64 `json:"score,omitempty" jsonschema:"SearXNG's ranking score; higher is better."`
	Category  string   `json:"category,omitempty" jsonschema:"The result's category, such as general, news or images."`
	Published string   `json:"published,omitempty" jsonschema:"When the page was published, as the instance reported it."`
	Image     string   `json:"image,omitempty" jsonschema:"For image results: the image's address."`
}

// unresponsive is an engine that failed, with SearXNG's reason.
type unresponsive struct {
	Engine string `json:"engine" jsonschema:"The engine's name."`
	Reason string `json:"reason" jsonschema:"Why it failed, as SearXNG says: timeout, CAPTCHA, HTTP error, too many requests…"`
}

// answer is a direct answer (a calculation, a conversion, a definition).
type answer struct {
	Answer string `json:"answer" jsonschema:"A direct answer, such as a calculation or a definition."`
	URL    string `json:"url,omitempty" jsonschema:"Where the answer comes from."`
	Engine string `json:"engine,omitempty" jsonschema:"The engine or answerer that gave it."`
}

// infobox is a summary of the query's topic.
type infobox struct {
	Title      string          `json:"title" jsonschema:"The topic."`
	Content    string          `json:"content,omitempty" jsonschema:"A summary of the topic."`
	URL        string          `json:"url,omitempty" jsonschema:"The topic's page."`
	Engine     string          `json:"engine,omitempty" jsonschema:"The engine that gave the infobox."`
	URLs       []infoboxLink   `json:"urls" jsonschema:"Links about the topic."`
	Attributes []infoboxAttrib `json:"attributes" jsonschema:"Facts about the topic."`
}

// infoboxLink is one link of an infobox.
type infoboxLink struct {
	Title string `json:"title" jsonschema:"The link's title."`
	URL   string `json:"url" jsonschema:"The link."`
}

// infoboxAttrib is one fact of an infobox.
type infoboxAttrib struct {
	Label string `json:"label" jsonschema:"The fact's name."`
	Value string `json:"value" jsonschema:"The fact."`
}

// normalise turns an answer into the tool's output: results without a url
// dropped, titles falling back to the url, snippets as plain text, at most
// max results, and every list capped.
func normalise(raw *rawResponse, query string, max int) searchOutput {
	out := searchOutput{
		Query:               query,
		Results:             []result{},
		UnresponsiveEngines: []unresponsive{},
		Answers:             []answer{},
		Suggestions:         []string{},
	}
	for _, r := range raw.Results {
		if len(out.Results) == max {
			break
		}
		u := cleanURL(string(r.URL))
		if u == "" {
			continue
		}
		res := result{
			URL:       u,
			Title:     plainText(string(r.Title), maxTitleRunes),
			Snippet:   plainText(string(r.Content), maxSnippetRunes),
			Category:  oneLine(string(r.Category), maxShortRunes),
			Published: oneLine(firstNonEmpty(string(r.PublishedDate), string(r.PubDate)), maxShortRunes),
			Image:     cleanURL(string(r.ImgSrc)),
		}
		if res.Title == "" {
			res.Title = u
		}
		res.Engines = []string{}
		engine := oneLine(string(r.Engine), maxShortRunes)
		if engine != "" {
			res.Engines = append(res.Engines, engine)
		}
		for _, e := range r.Engines {
			if e = oneLine(e, maxShortRunes); e != "" && !slices.Contains(res.Engines, e) {
				res.Engines = append(res.Engines, e)
			}
		}
		if len(res.Engines) > 0 {
			res.Source = res.Engines[0]
		}
		if r.Score.Valid && !math.IsNaN(r.Score.Value) && !math.IsInf(r.Score.Value, 0) {
			score := r.Score.Value
			res.Score = &score
		}
		out.Results = append(out.Results, res)
	}
	for _, u := range raw.UnresponsiveEngines {
		if len(out.UnresponsiveEngines) == maxUnresponsive {
			break
		}
		name := oneLine(u.Engine, maxShortRunes)
		if name == "" {
			continue
		}
		reason := oneLine(u.Reason, maxReasonRunes)
		if reason == "" {
			reason = "unknown error"
		}
		out.UnresponsiveEngines = append(out.UnresponsiveEngines, unresponsive{Engine: name, Reason: reason})
	}
	if n := raw.NumberOfResults; n.Valid && n.Value >= 1 && n.Value < 1<<53 {
		out.NumberOfResults = int64(n.Value)
	}
	for _, a := range raw.Answers {
		if len(out.Answers) == maxAnswers {
			break
		}
		if text := plainText(a.Text, maxAnswerRunes); text != "" {
			out.Answers = append(out.Answers, answer{Answer: text, URL: cleanURL(a.URL), Engine: oneLine(a.Engine, maxShortRunes)})
		}
	}
	for _, s := range raw.Suggestions {
		if len(out.Suggestions) == maxSuggestions {
			break
		}
		if s = oneLine(s, maxShortRunes); s != "" && !slices.Contains(out.Suggestions, s) {
			out.Suggestions = append(out.Suggestions, s)
		}
	}
	for _, ib := range raw.Infoboxes {
		if len(out.Infoboxes) == maxInfoboxes {
			break
		}
		box := infobox{
			Title:      plainText(string(ib.Infobox), maxTitleRunes),
			Content:    plainText(string(ib.Content), maxInfoboxRunes),
			URL:        cleanURL(string(ib.ID)),
			Engine:     oneLine(string(ib.Engine), maxShortRunes),
			URLs:       []infoboxLink{},
			Attributes: []infoboxAttrib{},
		}
		if !strings.HasPrefix(box.URL, "http://") && !strings.HasPrefix(box.URL, "https://") {
			box.URL = "" // SearXNG's id is usually the topic's URL, but not always
		}
		for _, l := range ib.URLs {
			if len(box.URLs) == maxInfoboxLinks {
				break
			}
			if u := cleanURL(string(l.URL)); u != "" {
				title := plainText(string(l.Title), maxShortRunes)
				if title == "" {
					title = u
				}
				box.URLs = append(box.URLs, infoboxLink{Title: title, URL: u})
			}
		}
		for _, a := range ib.Attributes {
			if len(box.Attributes) == maxInfoboxAttributes {
				break
			}
			label, value := plainText(string(a.Label), maxShortRunes), plainText(string(a.Value), maxShortRunes)
			if label != "" && value != "" {
				box.Attributes = append(box.Attributes, infoboxAttrib{Label: label, Value: value})
			}
		}
		if box.Title == "" && box.Content == "" {
			continue
		}
		if box.Title == "" {
			box.Title = firstNonEmpty(box.URL, "(untitled)")
		}
		out.Infoboxes = append(out.Infoboxes, box)
	}
	return out
}

// allEnginesFailed reports a search in which every engine failed: nothing
// came back (no results, answers or infoboxes) and SearXNG names engines
// that did not respond. That is not "no results": the query was never
// really searched.
func allEnginesFailed(out searchOutput) bool {
	return len(out.Results) == 0 && len(out.Answers) == 0 && len(out.Infoboxes) == 0 && len(out.UnresponsiveEngines) > 0
}

// enginesList renders failed engines as "name: reason, name: reason".
func enginesList(engines []unresponsive) string {
	parts := make([]string, len(engines))
	for i, e := range engines {
		parts[i] = e.Engine + ": " + e.Reason
	}
	return strings.Join(parts, ", ")
}

// renderText is the text block of a successful search: a numbered list of
// results, then answers, infoboxes, suggestions and failed engines.
func renderText(out searchOutput) string {
	var b strings.Builder
	if len(out.Results) == 0 {
		fmt.Fprintf(&b, "No results for %q.", out.Query)
	} else {
		noun := "results"
		if len(out.Results) == 1 {
			noun = "result"
		}
		fmt.Fprintf(&b, "%d %s for %q", len(out.Results), noun, out.Query)
		if out.NumberOfResults > int64(len(out.Results)) {
			fmt.Fprintf(&b, " (about %d in all)", out.NumberOfResults)
		}
		b.WriteString(":")
		for i, r := range out.Results {
			fmt.Fprintf(&b, "\n%d. %s — %s", i+1, r.Title, r.URL)
			if r.Snippet != "" {
				fmt.Fprintf(&b, "\n   %s", r.Snippet)
			}
		}
	}
	for _, a := range out.Answers {
		fmt.Fprintf(&b, "\nAnswer: %s", oneLine(a.Answer, maxAnswerRunes))
		if a.URL != "" {
			fmt.Fprintf(&b, " (%s)", a.URL)
		}
	}
	for _, ib := range out.Infoboxes {
		fmt.Fprintf(&b, "\nInfobox: %s", ib.Title)
		if ib.URL != "" {
			fmt.Fprintf(&b, " — %s", ib.URL)
		}
		if ib.Content != "" {
			fmt.Fprintf(&b, "\n   %s", ib.Content)
		}
	}
	if len(out.Suggestions) > 0 {
		fmt.Fprintf(&b, "\nSuggestions: %s", strings.Join(out.Suggestions, "; "))
	}
	if len(out.UnresponsiveEngines) > 0 {
		parts := make([]string, len(out.UnresponsiveEngines))
		for i, e := range out.UnresponsiveEngines {
			parts[i] = fmt.Sprintf("%s (%s)", e.Engine, e.Reason)
		}
		fmt.Fprintf(&b, "\nUnresponsive engines: %s", strings.Join(parts, ", "))
	}
	return b.String()
}

// plainText turns a fragment of HTML or text into one line of plain text:
// tags removed, entities decoded, whitespace collapsed, cut to max runes
// with an ellipsis.
func plainText(s string, max int) string {
	return oneLine(html.UnescapeString(stripTags(s)), max)
}

// stripTags removes HTML tags and comments: a "<" that starts a tag (a
// letter, "/", "!" or "?" follows) up to the next ">". Any other "<" is
// text, as in "a < b". A tag that never closes runs to the end. Block
// tags (<br>, <p>, <li>…) become a space so that the words on either side
// stay apart; inline tags (<b>, <span>…) vanish, as in "<b>Go</b>lang".
func stripTags(s string) string {
	if !strings.Contains(s, "<") {
		return s
	}
	var b strings.Builder
	for {
		i := strings.IndexByte(s, '<')
		if i < 0 || i == len(s)-1 {
			b.WriteString(s)
			return b.String()
		}
		b.WriteString(s[:i])
		c := s[i+1]
		if !(c == '/' || c == '!' || c == '?' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')) {
			b.WriteByte('<')
			s = s[i+1:]
			continue
		}
		end := ">"
		if strings.HasPrefix(s[i:], "<!--") {
			end = "-->"
		}
		j := strings.Index(s[i+1:], end)
		if j < 0 {
			return b.String()
		}
		if blockTags[tagName(s[i+1:i+1+j])] {
			b.WriteByte(' ')
		}
		s = s[i+1+j+len(end):]
	}
}

// tagName returns the lower-cased name of the tag whose text (between
// "<" and ">") is inner: "br" for "br/", "p" for "/p".
func tagName(inner string) string {
	inner = strings.TrimPrefix(inner, "/")
	n := 0
	for n < len(inner) && (inner[n] >= 'a' && inner[n] <= 'z' || inner[n] >= 'A' && inner[n] <= 'Z' || inner[n] >= '0' && inner[n] <= '9') {
		n++
	}
	return strings.ToLower(inner[:n])
}

// blockTags are the tags that separate words.
var blockTags = map[string]bool{
	"br": true, "p": true, "div": true, "li": true, "ul": true, "ol": true, "dl": true, "dt": true, "dd": true,
	"tr": true, "td": true, "th": true, "table": true, "hr": true, "blockquote": true, "pre": true,
	"h1": true, "h2": true, "h3": true, "h4": true, "h5": true, "h6": true,
	"section": true, "article": true, "header": true, "footer": true, "nav": true, "aside": true,
}

// oneLine collapses whitespace and control characters (newlines
// included) to single spaces, drops invalid UTF-8 and cuts the result to max runes, ending it with "…" when
// cut.
func oneLine(s string, max int) string {
	s = strings.ToValidUTF8(s, "")
	s = strings.Map(func(r rune) rune {
		if unicode.IsControl(r) {
			return ' '
		}
		return r
	}, s)
	s = strings.Join(strings.Fields(s), " ")
	if utf8.RuneCountInString(s) <= max {
		return s
	}
	r := []rune(s)
	return strings.TrimRight(string(r[:max-1]), " ") + "…"
}

// cleanURL returns s trimmed, or "" when it cannot be a URL: empty, or
// holding spaces, control characters or invalid UTF-8.
func cleanURL(s string) string {
	s = strings.TrimSpace(s)
	if !utf8.ValidString(s) {
		return ""
	}
	for _, r := range s {
		if r <= ' ' || r == 0x7f || unicode.IsControl(r) || unicode.IsSpace(r) {
			return ""
		}
	}
	return s
}
