package searxng

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"

	"github.com/openhuman/openhuman-host/sdk"
	"github.com/openhuman/openhuman-host/sdk/sdktest"
)

// start serves a provider configured with config (base_url added when
// absent) through sdktest, which checks arguments and results the way the
// host does.
func start(t *testing.T, inst *fakeInstance, config map[string]any) *sdktest.Harness {
	t.Helper()
	if config == nil {
		config = map[string]any{}
	}
	if _, ok := config["base_url"]; !ok && inst != nil {
		config["base_url"] = inst.URL
	}
	return sdktest.Start(t, New(nil), &sdktest.Options{Config: config})
}

// call calls searxng_search and returns the result, failing the test on
// a call error.
func call(t *testing.T, h *sdktest.Harness, args map[string]any) *sdk.CallToolResult {
	t.Helper()
	res, err := h.Call(context.Background(), ToolSearch, args)
	if err != nil {
		t.Fatalf("call %v: %v", args, err)
	}
	return res
}

func resultText(t *testing.T, res *sdk.CallToolResult) string {
	t.Helper()
	if len(res.Content) != 1 || res.Content[0].Type != "text" {
		t.Fatalf("want one text block, got %+v", res.Content)
	}
	return res.Content[0].Text
}

// structured decodes a successful result's structured content.
func structured(t *testing.T, res *sdk.CallToolResult) searchOutput {
	t.Helper()
	if res.IsError {
		t.Fatalf("unexpected error result: %s", resultText(t, res))
	}
	var out searchOutput
	dec := json.NewDecoder(strings.NewReader(string(res.StructuredContent)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&out); err != nil {
		t.Fatalf("structured content %s: %v", res.StructuredContent, err)
	}
	return out
}

// errorText returns an error result's text, failing the test if the
// result is not an error.
func errorText(t *testing.T, res *sdk.CallToolResult) string {
	t.Helper()
	if !res.IsError {
		t.Fatalf("want an isError result, got %s / %s", resultText(t, res), res.StructuredContent)
	}
	if len(res.StructuredContent) != 0 {
		t.Errorf("error result carries structured content %s", res.StructuredContent)
	}
	return resultText(t, res)
}

func ptr[T any](v T) *T { return &v }

func TestCatalog(t *testing.T) {
	inst := newFakeInstance(t)
	h := start(t, inst, map[string]any{"max_results": 7, "timeout_secs": 20})
	if h.Catalog.Name != "searxng" || h.Catalog.Version != Version {
		t.Errorf("catalog %q %q", h.Catalog.Name, h.Catalog.Version)
	}
	if len(h.Catalog.Tools) != 1 || len(h.Catalog.Resources) != 0 {
		t.Fatalf("want exactly one tool and no resources, got %d and %d", len(h.Catalog.Tools), len(h.Catalog.Resources))
	}
	tool, ok := h.Tool("searxng_search")
	if !ok {
		t.Fatal("no searxng_search")
	}
	if tool.Class != sdk.ClassRead || tool.Title != "Web search" || tool.Annotations.Title != "Web search" {
		t.Errorf("class %q title %q annotation title %q", tool.Class, tool.Title, tool.Annotations.Title)
	}
	a := tool.Annotations
	if a.ReadOnlyHint == nil || !*a.ReadOnlyHint || a.OpenWorldHint == nil || !*a.OpenWorldHint {
		t.Errorf("annotations %+v: want readOnly and openWorld", a)
	}
	if tool.Timeout != 25*time.Second {
		t.Errorf("timeout %v, want timeout_secs + 5 s", tool.Timeout)
	}

	var in struct {
		Type                 string
		Required             []string
		AdditionalProperties *bool
		Properties           map[string]map[string]any
	}
	if err := json.Unmarshal(tool.InputSchema, &in); err != nil {
		t.Fatal(err)
	}
	if in.Type != "object" || in.AdditionalProperties == nil || *in.AdditionalProperties || !cmp.Equal(in.Required, []string{"query"}) {
		t.Errorf("input schema %s", tool.InputSchema)
	}
	if got := len(in.Properties); got != 4 {
		t.Errorf("%d properties, want query, categories, language, max_results", got)
	}
	if in.Properties["max_results"]["default"] != float64(7) || in.Properties["max_results"]["maximum"] != float64(maxResults) {
		t.Errorf("max_results schema %v: want the configured default 7 and maximum 50", in.Properties["max_results"])
	}
	cats := in.Properties["categories"]
	if cats["maxItems"] != float64(4) {
		t.Errorf("categories maxItems %v", cats["maxItems"])
	}
	if desc, _ := cats["description"].(string); !strings.Contains(desc, validCategories) {
		t.Errorf("categories description %q does not list %s", desc, validCategories)
	}
	if strings.Contains(string(tool.InputSchema), "enum") {
		t.Errorf("categories are checked in code, case-insensitively; the schema has an enum: %s", tool.InputSchema)
	}
	if in.Properties["query"]["maxLength"] != float64(500) || in.Properties["query"]["minLength"] != float64(1) {
		t.Errorf("query schema %v", in.Properties["query"])
	}

	var out struct {
		Type       string
		Required   []string
		Properties map[string]json.RawMessage
	}
	if err := json.Unmarshal(tool.OutputSchema, &out); err != nil {
		t.Fatal(err)
	}
	if out.Type != "object" || !cmp.Equal(out.Required, []string{"query", "results", "unresponsive_engines", "answers", "suggestions"}) {
		t.Errorf("output schema %s", tool.OutputSchema)
	}
	for _, k := range []string{"query", "results", "unresponsive_engines", "number_of_results", "answers", "suggestions", "infoboxes"} {
		if _, ok := out.Properties[k]; !ok {
			t.Errorf("output schema has no %s", k)
		}
	}
	// Optional outputs are left out, never null.
	if !strings.Contains(string(tool.OutputSchema), `"score":{"type":"number"`) ||
		string(out.Properties["number_of_results"]) != `{"type":"integer","description":"How many results the engines estimated in all; absent when they did not say.","minimum":1}` {
		t.Errorf("output schema %s: want score a number and number_of_results an integer from 1, neither null", tool.OutputSchema)
	}
}

func TestDescribeBeforeConfigure(t *testing.T) {
	cat, err := New(nil).Describe(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if err := sdktest.CheckCatalog(cat); err != nil {
		t.Fatal(err)
	}
	if err := sdktest.CheckManifest(Manifest(), cat); err != nil {
		t.Error(err)
	}
	if cat.Tools[0].Timeout != 15*time.Second {
		t.Errorf("timeout %v", cat.Tools[0].Timeout)
	}
}

func TestSearch(t *testing.T) {
	inst := newFakeInstance(t)
	h := start(t, inst, nil)
	res := call(t, h, map[string]any{
		"query":       "go context cancellation",
		"categories":  []string{"Web", "GENERAL", "news", "web"},
		"language":    "de-ch",
		"max_results": 5,
	})
	got := structured(t, res)

	req := inst.last(t)
	if req.Method != "GET" || req.Path != "/search" {
		t.Errorf("request %s %s", req.Method, req.Path)
	}
	if want := "q=go+context+cancellation&format=json&categories=general,news&language=de-CH"; req.Raw != want {
		t.Errorf("query string\n got %s\nwant %s", req.Raw, want)
	}
	if ua := req.Header.Get("User-Agent"); ua != "openhuman-host-searxng/"+Version {
		t.Errorf("User-Agent %q", ua)
	}
	if acc := req.Header.Get("Accept"); acc != "application/json" {
		t.Errorf("Accept %q", acc)
	}

	longSnippet := got.Results[3].Snippet
	if n := utf8.RuneCountInString(longSnippet); n != maxSnippetRunes || !strings.HasSuffix(longSnippet, "…") ||
		!strings.HasPrefix(longSnippet, "When developing a large application, especially in server software, sometimes it's helpful") {
		t.Errorf("long snippet (%d runes) %q", n, longSnippet)
	}
	got.Results[3].Snippet = "(checked above)"

	want := searchOutput{
		Query: "go context cancellation",
		Results: []result{
			{
				Title:    "context package - context - Go Packages",
				URL:      "https://pkg.go.dev/context",
				Snippet:  "Package context defines the Context type, which carries deadlines, cancellation signals, and other request-scoped values across API boundaries and between processes.",
				Source:   "duckduckgo",
				Engines:  []string{"duckduckgo", "brave", "startpage"},
				Score:    ptr(9.0),
				Category: "general",
			},
			{
				Title: "Go Concurrency Patterns: Context - The Go Programming Language",
				URL:   "https://go.dev/blog/context",
				Snippet: "In Go servers, each incoming request is handled in its own goroutine. Request handlers often start additional " +
					"goroutines to access backends… The context package makes it easy to pass request-scoped values, cancellation signals, and deadlines.",
				Source:    "brave",
				Engines:   []string{"brave", "duckduckgo"},
				Score:     ptr(4.5),
				Category:  "general",
				Published: "2014-07-29T00:00:00",
			},
			{
				Title:     "https://stackoverflow.com/questions/52799280/context-confusion-regarding-cancellation",
				URL:       "https://stackoverflow.com/questions/52799280/context-confusion-regarding-cancellation",
				Snippet:   "I have a goroutine that runs a long job; should it check ctx.Done()?",
				Source:    "stackexchange",
				Engines:   []string{"stackexchange"},
				Score:     ptr(2.25),
				Category:  "it",
				Published: "2018-10-14T09:12:45",
			},
			{
				Title:    "How To Use Contexts in Go | DigitalOcean",
				URL:      "https://www.digitalocean.com/community/tutorials/how-to-use-contexts-in-go",
				Snippet:  "(checked above)",
				Source:   "startpage",
				Engines:  []string{"startpage", "duckduckgo"},
				Score:    ptr(1.5),
				Category: "general",
			},
			{
				Title:    "When to cancel a context? : r/golang",
				URL:      "https://www.reddit.com/r/golang/comments/x1/when_to_cancel_a_context/",
				Snippet:  "",
				Source:   "brave",
				Engines:  []string{"brave"},
				Score:    ptr(0.8),
				Category: "general",
			},
		},
		UnresponsiveEngines: []unresponsive{{Engine: "google", Reason: "Suspended: CAPTCHA"}, {Engine: "qwant", Reason: "timeout"}},
		NumberOfResults:     1230000,
		Answers: []answer{{
			Answer: "WithCancel returns a derived context that points to the parent context but has a new Done channel.",
			URL:    "https://pkg.go.dev/context#WithCancel",
			Engine: "duckduckgo definitions",
		}},
		Suggestions: []string{"go context withtimeout", "go context withcancel example", "context.WithCancelCause"},
		Infoboxes: []infobox{{
			Title: "Go (programming language)",
			Content: "Go is a high-level, general-purpose programming language that is statically typed and compiled. It is known for the " +
				"simplicity of its syntax and the efficiency of development that it enables by the inclusion of a large standard library.",
			URL:    "https://en.wikipedia.org/wiki/Go_(programming_language)",
			Engine: "wikidata",
			URLs: []infoboxLink{
				{Title: "Official website", URL: "https://go.dev/"},
				{Title: "Wikipedia (en)", URL: "https://en.wikipedia.org/wiki/Go_(programming_language)"},
				{Title: "Wikidata", URL: "http://www.wikidata.org/entity/Q37227"},
			},
			Attributes: []infoboxAttrib{
				{Label: "Designed by", Value: "Robert Griesemer, Rob Pike, Ken Thompson"},
				{Label: "First appeared", Value: "10 November 2009"},
			},
		}},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("structured content (-want +got):\n%s", diff)
	}

	text := resultText(t, res)
	wantText := strings.Join([]string{
		`5 results for "go context cancellation" (about 1230000 in all):`,
		"1. context package - context - Go Packages — https://pkg.go.dev/context",
		"   Package context defines the Context type, which carries deadlines, cancellation signals, and other request-scoped values across API boundaries and between processes.",
		"2. Go Concurrency Patterns: Context - The Go Programming Language — https://go.dev/blog/context",
		"   In Go servers, each incoming request is handled in its own goroutine. Request handlers often start additional goroutines to access backends… The context package makes it easy to pass request-scoped values, cancellation signals, and deadlines.",
		"3. https://stackoverflow.com/questions/52799280/context-confusion-regarding-cancellation — https://stackoverflow.com/questions/52799280/context-confusion-regarding-cancellation",
		"   I have a goroutine that runs a long job; should it check ctx.Done()?",
		"4. How To Use Contexts in Go | DigitalOcean — https://www.digitalocean.com/community/tutorials/how-to-use-contexts-in-go",
		"   " + longSnippet,
		"5. When to cancel a context? : r/golang — https://www.reddit.com/r/golang/comments/x1/when_to_cancel_a_context/",
		"Answer: WithCancel returns a derived context that points to the parent context but has a new Done channel. (https://pkg.go.dev/context#WithCancel)",
		"Infobox: Go (programming language) — https://en.wikipedia.org/wiki/Go_(programming_language)",
		"   " + want.Infoboxes[0].Content,
		"Suggestions: go context withtimeout; go context withcancel example; context.WithCancelCause",
		"Unresponsive engines: google (Suspended: CAPTCHA), qwant (timeout)",
	}, "\n")
	if text != wantText {
		t.Errorf("text\n got:\n%s\nwant:\n%s", text, wantText)
	}
}

func TestSearchUsesConfiguredDefaults(t *testing.T) {
	inst := newFakeInstance(t)
	h := start(t, inst, map[string]any{"max_results": 3, "default_language": "EN"})
	got := structured(t, call(t, h, map[string]any{"query": "defaults"}))
	if len(got.Results) != 3 {
		t.Errorf("%d results, want the configured max_results 3", len(got.Results))
	}
	if raw := inst.last(t).Raw; raw != "q=defaults&format=json&language=en" {
		t.Errorf("query string %s: want no categories and the default language", raw)
	}
	// A language argument wins over the default; max_results over the
	// configured one.
	got = structured(t, call(t, h, map[string]any{"query": "defaults", "language": "all", "max_results": 50}))
	if len(got.Results) != 7 {
		t.Errorf("%d results, want all 7 that have a url", len(got.Results))
	}
	if raw := inst.last(t).Raw; raw != "q=defaults&format=json&language=all" {
		t.Errorf("query string %s", raw)
	}
}

func TestSearchWithoutLanguage(t *testing.T) {
	inst := newFakeInstance(t)
	h := start(t, inst, nil)
	call(t, h, map[string]any{"query": "a&b=c #d ünïcode", "categories": []string{"IMAGES"}})
	req := inst.last(t)
	if req.Raw != "q=a%26b%3Dc+%23d+%C3%BCn%C3%AFcode&format=json&categories=images" {
		t.Errorf("query string %s", req.Raw)
	}
	if req.Query.Get("q") != "a&b=c #d ünïcode" || req.Query.Get("format") != "json" || req.Query.Get("categories") != "images" || req.Query.Has("language") {
		t.Errorf("the instance saw %v", req.Query)
	}
}

func TestSearchNewsAndImages(t *testing.T) {
	inst := newFakeInstance(t)
	h := start(t, inst, nil)

	newsRes := call(t, h, map[string]any{"query": "news", "categories": []string{"news"}})
	news := structured(t, newsRes)
	if len(news.Results) != 2 {
		t.Fatalf("%d news results", len(news.Results))
	}
	if r := news.Results[0]; r.Published != "2025-01-07T18:30:00" || r.Category != "news" || r.Source != "bing news" ||
		r.Image != "https://www.nasa.gov/wp-content/uploads/msr.jpg" || !cmp.Equal(r.Engines, []string{"bing news", "yahoo news"}) {
		t.Errorf("news result %+v", r)
	}
	if strings.Contains(string(newsRes.StructuredContent), "number_of_results") {
		t.Errorf("number_of_results in %s: SearXNG's 0 means unknown and must be left out", newsRes.StructuredContent)
	}
	if !cmp.Equal(news.Answers, []answer{{Answer: "Mars Sample Return is a joint NASA-ESA campaign."}}) {
		t.Errorf("answers %+v", news.Answers)
	}
	if len(news.Infoboxes) != 0 || len(news.UnresponsiveEngines) != 0 {
		t.Errorf("infoboxes %v unresponsive %v", news.Infoboxes, news.UnresponsiveEngines)
	}

	res := call(t, h, map[string]any{"query": "images", "categories": []string{"images"}})
	images := structured(t, res)
	want := []result{
		{Title: "The Go Gopher - The Go Programming Language", URL: "https://go.dev/blog/gopher", Source: "bing images",
			Engines: []string{"bing images"}, Score: ptr(1.0), Category: "images", Image: "https://go.dev/blog/gopher/header.jpg"},
		{Title: "File:Go gopher.svg - Wikimedia Commons", URL: "https://commons.wikimedia.org/wiki/File:Go_gopher.svg", Snippet: "Go gopher, drawn by Renee French",
			Source: "wikicommons.images", Engines: []string{"wikicommons.images"}, Score: ptr(1.0), Category: "images", Image: "https://upload.wikimedia.org/wikipedia/commons/gopher.svg"},
	}
	if diff := cmp.Diff(want, images.Results); diff != "" {
		t.Errorf("image results (-want +got):\n%s", diff)
	}
	if !cmp.Equal(images.UnresponsiveEngines, []unresponsive{{Engine: "flickr", Reason: "HTTP error"}}) {
		t.Errorf("unresponsive %v", images.UnresponsiveEngines)
	}
	// Some engines failed, others answered: results, and the failures
	// reported alongside.
	if text := resultText(t, res); !strings.HasSuffix(text, "\nUnresponsive engines: flickr (HTTP error)") || !strings.HasPrefix(text, `2 results for "images":`) {
		t.Errorf("text %q", text)
	}
}

func TestSearchNoResults(t *testing.T) {
	inst := newFakeInstance(t)
	h := start(t, inst, nil)
	res := call(t, h, map[string]any{"query": "empty"})
	got := structured(t, res)
	want := searchOutput{Query: "empty", Results: []result{}, UnresponsiveEngines: []unresponsive{}, Answers: []answer{}, Suggestions: []string{"qzx"}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	if text := resultText(t, res); text != "No results for \"empty\".\nSuggestions: qzx" {
		t.Errorf("text %q", text)
	}
	// The structured content keeps empty lists as [], not null.
	for _, k := range []string{`"results":[]`, `"unresponsive_engines":[]`, `"answers":[]`} {
		if !strings.Contains(string(res.StructuredContent), k) {
			t.Errorf("structured content %s lacks %s", res.StructuredContent, k)
		}
	}
}

func TestSearchErrors(t *testing.T) {
	inst := newFakeInstance(t)
	// "slow" gets a host with a 1s timeout; the others the longest
	// timeout, so that a loaded machine sending the 8 MiB answers slowly
	// does not turn them into timeouts.
	slow := start(t, inst, map[string]any{"timeout_secs": 1})
	h := start(t, inst, map[string]any{"timeout_secs": maxTimeoutSecs})
	ep := inst.URL // http://127.0.0.1:port
	tests := []struct {
		query string
		want  string // the whole message after "searxng_search: "
	}{
		{"forbidden", "SearXNG at " + ep + " answered HTTP 403 Forbidden: the instance has the JSON format disabled. " +
			"Add json to search.formats in the instance's settings.yml (search: formats: [html, json]) and restart it"},
		{"too many", "SearXNG at " + ep + " answered HTTP 429 Too Many Requests: the instance's limiter rate-limited this search. " +
			"Wait a minute and try again, or, on an instance you run, set server.limiter: false in its settings.yml (public instances usually refuse API clients; use your own)"},
		{"too many retry-after", "SearXNG at " + ep + " answered HTTP 429 Too Many Requests: the instance's limiter rate-limited this search. " +
			"Wait 30 seconds (its Retry-After) and try again, or, on an instance you run, set server.limiter: false in its settings.yml (public instances usually refuse API clients; use your own)"},
		{"slow", "SearXNG at " + ep + " gave no answer within 1s ([providers.searxng] timeout_secs): the instance or its engines are slow or stuck. " +
			"Try again, raise timeout_secs, or lower the instance's outgoing.request_timeout"},
		{"all failed searx", "every engine failed: duckduckgo: HTTP error, wikipedia: HTTP error. SearXNG at " + ep + " got no results from any of its engines: " +
			"check that the instance can reach the internet and that these engines work (its logs, or its preferences page), then try again"},
		{"all failed searxng", "every engine failed: brave: too many requests, duckduckgo: CAPTCHA, google: Suspended: access denied, startpage: timeout. SearXNG at " + ep +
			" got no results from any of its engines: check that the instance can reach the internet and that these engines work (its logs, or its preferences page), then try again"},
		{"malformed", "SearXNG at " + ep + " did not answer JSON (is [providers.searxng] base_url the SearXNG root?): the JSON is malformed (unexpected end of JSON input)"},
		{"html", "SearXNG at " + ep + " did not answer JSON (is [providers.searxng] base_url the SearXNG root?): got an HTML page (text/html)"},
		{"html as json", "SearXNG at " + ep + " did not answer JSON (is [providers.searxng] base_url the SearXNG root?): got an HTML page (application/json)"},
		{"not searxng", "SearXNG at " + ep + ` did not answer JSON (is [providers.searxng] base_url the SearXNG root?): the JSON has no "results" array`},
		{"empty body", "SearXNG at " + ep + " did not answer JSON (is [providers.searxng] base_url the SearXNG root?): the answer was empty"},
		{"huge", "SearXNG at " + ep + " sent an answer larger than 8 MiB; refused (is [providers.searxng] base_url the SearXNG root?)"},
		{"huge chunked", "SearXNG at " + ep + " sent an answer larger than 8 MiB; refused (is [providers.searxng] base_url the SearXNG root?)"},
		{"redirect loop", "SearXNG at " + ep + " redirected more than 3 times (last to " + ep + "): set [providers.searxng] base_url to the instance's final address"},
		{"server error", "SearXNG at " + ep + " answered HTTP 500 Internal Server Error: Internal Server Error Traceback (most recent call last): File \"searx/webapp.py\"" +
			strings.Repeat(" padding", 14) + " paddi"},
		{"not found", "SearXNG at " + ep + " answered HTTP 404 Not Found: <h1>Not Found</h1> (is [providers.searxng] base_url the SearXNG root?)"},
	}
	for _, tt := range tests {
		t.Run(tt.query, func(t *testing.T) {
			h := h
			if tt.query == "slow" {
				h = slow
			}
			start := time.Now()
			res := call(t, h, map[string]any{"query": tt.query})
			if got := errorText(t, res); got != "searxng_search: "+tt.want {
				t.Errorf("message\n got %s\nwant searxng_search: %s", got, tt.want)
			}
			// "slow" answers after 10s, so only the 1s timeout makes it an
			// error, and a deadline never fires early.
			if d := time.Since(start); tt.query == "slow" && d < time.Second {
				t.Errorf("the timeout came after %v; want at least timeout_secs (1 s)", d)
			}
		})
	}
}

func TestSearchConnectionRefused(t *testing.T) {
	addr := closedAddress(t)
	h := start(t, nil, map[string]any{"base_url": "http://" + addr + "/searxng/"})
	got := errorText(t, call(t, h, map[string]any{"query": "anything"}))
	want := "searxng_search: cannot reach http://" + addr + ": is SearXNG running? ([providers.searxng] base_url)"
	if got != want {
		t.Errorf("message\n got %s\nwant %s", got, want)
	}
}

func TestSearchUnresolvableHost(t *testing.T) {
	h := start(t, nil, map[string]any{"base_url": "http://searxng.invalid:8888"})
	got := errorText(t, call(t, h, map[string]any{"query": "anything"}))
	if !strings.HasPrefix(got, "searxng_search: cannot reach http://searxng.invalid:8888: ") || !strings.HasSuffix(got, "check [providers.searxng] base_url") {
		t.Errorf("message %s", got)
	}
}

func TestArgumentErrors(t *testing.T) {
	inst := newFakeInstance(t)
	h := start(t, inst, nil)

	// What the host refuses before the provider sees it.
	rejected := []struct {
		name string
		args map[string]any
		arg  string
	}{
		{"no query", map[string]any{}, "query"},
		{"blank query", map[string]any{"query": "   "}, "query"},
		{"query too long", map[string]any{"query": strings.Repeat("é", 501)}, "query"},
		{"query not a string", map[string]any{"query": 7}, "query"},
		{"five categories", map[string]any{"query": "x", "categories": []string{"web", "news", "images", "general", "web"}}, "categories"},
		{"category not a string", map[string]any{"query": "x", "categories": []any{1}}, "categories"},
		{"categories not an array", map[string]any{"query": "x", "categories": "news"}, "categories"},
		{"max_results 0", map[string]any{"query": "x", "max_results": 0}, "max_results"},
		{"max_results 51", map[string]any{"query": "x", "max_results": 51}, "max_results"},
		{"max_results fraction", map[string]any{"query": "x", "max_results": 2.5}, "max_results"},
		{"language too long", map[string]any{"query": "x", "language": strings.Repeat("a", 17)}, "language"},
		{"unknown argument", map[string]any{"query": "x", "safesearch": 1}, "safesearch"},
	}
	for _, tt := range rejected {
		t.Run(tt.name, func(t *testing.T) {
			_, err := h.Call(context.Background(), ToolSearch, tt.args)
			var aerr *sdktest.ArgumentError
			if !errors.As(err, &aerr) {
				t.Fatalf("want the host to reject the arguments, got %v", err)
			}
			if aerr.Argument != tt.arg {
				t.Errorf("rejected argument %q, want %q (%s)", aerr.Argument, tt.arg, aerr.Message)
			}
		})
	}

	// What the schema lets through and the provider refuses, naming the
	// valid values.
	refused := []struct {
		name string
		args map[string]any
		want string
	}{
		{"unknown category", map[string]any{"query": "x", "categories": []string{"news", "Videos"}},
			`searxng_search: unknown category "Videos" in "categories"; valid categories are web (the same as general), general, news, images`},
		{"language not a code", map[string]any{"query": "x", "language": "english"},
			`searxng_search: argument "language" is "english", not a language: use "all", "auto", a code such as "en", or a code with a region such as "de-CH"`},
		{"blank language", map[string]any{"query": "x", "language": "  "},
			`searxng_search: argument "language" must not be blank; leave it out to use the default`},
	}
	for _, tt := range refused {
		t.Run(tt.name, func(t *testing.T) {
			if got := errorText(t, call(t, h, tt.args)); got != tt.want {
				t.Errorf("message\n got %s\nwant %s", got, tt.want)
			}
		})
	}
	if n := len(inst.requests()); n != 0 {
		t.Errorf("the instance got %d requests for refused arguments", n)
	}
}

func TestCallRawArguments(t *testing.T) {
	inst := newFakeInstance(t)
	h := start(t, inst, nil)
	// Arguments sent past the host get the host's own messages: sdk.AddTool
	// checks them with the host's validator.
	tests := []struct {
		args any
		want string
	}{
		{json.RawMessage(`[1]`), "arguments must be a JSON object; searxng_search takes: categories, language, max_results, query"},
		{json.RawMessage(`{"query":"x","k":1}`), `unknown argument "k"; searxng_search takes: categories, language, max_results, query`},
		{json.RawMessage(`{"query":["x"]}`), `argument "query" must be of type string; got array (1 items)`},
		{json.RawMessage(`{}`), `missing required argument "query"`},
		{json.RawMessage(`{"query":"x"} {}`), "arguments must be a JSON object: invalid character '{' after top-level value"},
		{json.RawMessage(`{"query":"x","max_results":0}`), `argument "max_results" must be between 1 and 50; got 0`},
		{json.RawMessage(`{"query":"x","categories":["a","b","c","d","e"]}`), `argument "categories" has 5 items; at most 4 allowed`},
		// What the schema lets through and the provider refuses.
		{json.RawMessage(`{"query":"x","categories":["a"]}`), `searxng_search: unknown category "a" in "categories"; valid categories are web (the same as general), general, news, images`},
	}
	for _, tt := range tests {
		res, err := h.CallRaw(context.Background(), ToolSearch, tt.args)
		if err != nil {
			t.Fatalf("%s: %v", tt.args, err)
		}
		if got := errorText(t, res); got != tt.want {
			t.Errorf("%s:\n got %s\nwant %s", tt.args, got, tt.want)
		}
	}
	if _, err := h.CallRaw(context.Background(), "searxng.search", json.RawMessage(`{"query":"x"}`)); err == nil || !strings.Contains(err.Error(), `no tool "searxng.search"`) {
		t.Errorf("unknown tool: %v", err)
	}
}

func TestCallerCancels(t *testing.T) {
	inst := newFakeInstance(t)
	p := New(nil)
	if err := p.Configure(context.Background(), &sdk.ConfigureRequest{Config: json.RawMessage(`{"base_url":"` + inst.URL + `"}`)}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	// "slow" answers after 10s: a search that ignored the cancellation
	// would end with results.
	time.AfterFunc(100*time.Millisecond, cancel)
	res, err := p.CallTool(ctx, &sdk.CallToolRequest{Name: ToolSearch, Arguments: json.RawMessage(`{"query":"slow"}`)})
	if !errors.Is(err, context.Canceled) || res != nil {
		t.Fatalf("want the cancellation as an error, got %v, %+v", err, res)
	}
}

func TestNotConfigured(t *testing.T) {
	p := New(nil)
	if _, err := p.CallTool(context.Background(), &sdk.CallToolRequest{Name: ToolSearch, Arguments: json.RawMessage(`{"query":"x"}`)}); err == nil ||
		!strings.Contains(err.Error(), "not configured") {
		t.Errorf("got %v", err)
	}
	if err := p.Close(); err != nil {
		t.Error(err)
	}
	if _, err := p.ReadResource(context.Background(), &sdk.ReadResourceRequest{URI: "searxng://x"}); !errors.Is(err, sdk.ErrResourceNotFound) {
		t.Errorf("ReadResource: %v", err)
	}
}

func TestReconfigure(t *testing.T) {
	first, second := newFakeInstance(t), newFakeInstance(t)
	p := New(nil)
	ctx := context.Background()
	for _, inst := range []*fakeInstance{first, second} {
		if err := p.Configure(ctx, &sdk.ConfigureRequest{Config: json.RawMessage(`{"base_url":"` + inst.URL + `","max_results":2}`)}); err != nil {
			t.Fatal(err)
		}
		res, err := p.CallTool(ctx, &sdk.CallToolRequest{Name: ToolSearch, Arguments: json.RawMessage(`{"query":"x"}`)})
		if err != nil || res.IsError {
			t.Fatalf("%v %+v", err, res)
		}
	}
	if len(first.requests()) != 1 || len(second.requests()) != 1 {
		t.Errorf("requests: %d to the first instance, %d to the second", len(first.requests()), len(second.requests()))
	}
	if err := p.Close(); err != nil {
		t.Error(err)
	}
}
