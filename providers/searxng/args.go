package searxng

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Bounds of the tool's arguments; the input schema and the checks below
// share them.
const (
	maxQueryRunes    = 500
	maxCategories    = 4
	maxCategoryRunes = 32
	maxLanguageRunes = 16
)

// categoryAliases maps every category the tool accepts, lower-cased, to
// the SearXNG category it sends.
var categoryAliases = map[string]string{
	"web":     "general",
	"general": "general",
	"news":    "news",
	"images":  "images",
}

// validCategories is how messages list the accepted categories.
const validCategories = "web (the same as general), general, news, images"

// argError is a problem with the call's arguments: an isError result the
// model can correct.
type argError struct{ msg string }

func (e *argError) Error() string { return e.msg }

func argErrorf(format string, a ...any) *argError { return &argError{msg: fmt.Sprintf(format, a...)} }

// rawArgs are searxng_search's arguments as sent. MaxResults is a float so
// that 10.0, an integer in JSON Schema, decodes.
type rawArgs struct {
	Query      *string  `json:"query"`
	Categories []string `json:"categories"`
	Language   *string  `json:"language"`
	MaxResults *float64 `json:"max_results"`
}

// argNames lists the arguments for messages.
const argNames = "query, categories, language, max_results"

// searchArgs are the checked arguments of one search.
type searchArgs struct {
	query      string
	categories []string // SearXNG names, de-duplicated, in the caller's order
	language   string   // empty: send none
	maxResults int
}

// parseArgs decodes and checks searxng_search's arguments, filling in the
// configured defaults. The host has validated them against the input
// schema; this also guards direct callers and checks what the schema
// cannot say (the categories, case-insensitively, and the language).
func parseArgs(raw json.RawMessage, cfg settings) (searchArgs, error) {
	var a rawArgs
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
		raw = []byte("{}")
	}
	if raw[0] != '{' {
		return searchArgs{}, argErrorf("arguments must be a JSON object with %s", argNames)
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&a); err != nil {
		var typeErr *json.UnmarshalTypeError
		switch {
		case errors.As(err, &typeErr):
			return searchArgs{}, argErrorf("argument %q has the wrong type (a JSON %s): %s", typeErr.Field, typeErr.Value, argTypes)
		case strings.HasPrefix(err.Error(), "json: unknown field "):
			return searchArgs{}, argErrorf("unknown argument %s; searxng_search takes %s",
				strings.TrimPrefix(err.Error(), "json: unknown field "), argNames)
		default:
			return searchArgs{}, argErrorf("arguments are not a valid JSON object: %v", err)
		}
	}
	if _, err := dec.Token(); err != io.EOF {
		return searchArgs{}, argErrorf("arguments must be a single JSON object")
	}

	out := searchArgs{language: cfg.language, maxResults: cfg.maxResults}
	if a.Query == nil {
		return out, argErrorf("argument \"query\" is required: the words to search the web for")
	}
	out.query = strings.TrimSpace(*a.Query)
	if out.query == "" {
		return out, argErrorf("argument \"query\" must not be blank")
	}
	if n := utf8.RuneCountInString(out.query); n > maxQueryRunes {
		return out, argErrorf("argument \"query\" is %d characters long; at most %d allowed", n, maxQueryRunes)
	}
	cats, err := normaliseCategories(a.Categories)
	if err != nil {
		return out, err
	}
	out.categories = cats
	if a.Language != nil {
		lang := strings.TrimSpace(*a.Language)
		if lang == "" {
			return out, argErrorf("argument \"language\" must not be blank; leave it out to use the default")
		}
		canon, ok := canonicalLanguage(lang)
		if !ok {
			return out, argErrorf("argument \"language\" is %s, not a language: use \"all\", \"auto\", a code such as \"en\", or a code with a region such as \"de-CH\"",
				quoteShort(lang))
		}
		out.language = canon
	}
	if a.MaxResults != nil {
		f := *a.MaxResults
		if f != math.Trunc(f) || f < minResults || f > maxResults {
			return out, argErrorf("argument \"max_results\" must be an integer from %d to %d; got %s",
				minResults, maxResults, strconv.FormatFloat(f, 'f', -1, 64))
		}
		out.maxResults = int(f)
	}
	return out, nil
}

// argTypes says what each argument must be, for type errors.
const argTypes = "query is a string, categories an array of strings, language a string, max_results an integer"

// normaliseCategories maps the categories argument to SearXNG category
// names: case-insensitive, web becomes general, duplicates are dropped
// and the first occurrence's order is kept. An unknown value is an error
// that lists the valid ones.
func normaliseCategories(in []string) ([]string, error) {
	if len(in) > maxCategories {
		return nil, argErrorf("argument \"categories\" has %d items; at most %d allowed (%s)", len(in), maxCategories, validCategories)
	}
	var out []string
	for _, v := range in {
		name, ok := categoryAliases[strings.ToLower(strings.TrimSpace(v))]
		if !ok {
			return nil, argErrorf("unknown category %s in \"categories\"; valid categories are %s", quoteShort(v), validCategories)
		}
		if !slices.Contains(out, name) {
			out = append(out, name)
		}
	}
	return out, nil
}

// languageRE matches what SearXNG takes as a language: "all", "auto", a
// two- or three-letter ISO 639 code, optionally with a region (two
// letters or three digits, de-CH, es-419) or a script (four letters,
// zh-Hant).
var languageRE = regexp.MustCompile(`^(?i:all|auto|[a-z]{2,3}(?:-(?:[a-z]{2}|[0-9]{3}|[a-z]{4}))?)$`)

// canonicalLanguage checks a language and returns it in the casing
// SearXNG uses: lower-case codes, upper-case regions, title-case scripts
// ("DE-ch" becomes "de-CH").
func canonicalLanguage(s string) (string, bool) {
	if utf8.RuneCountInString(s) > maxLanguageRunes || !languageRE.MatchString(s) {
		return "", false
	}
	code, sub, found := strings.Cut(s, "-")
	code = strings.ToLower(code)
	if !found {
		return code, true
	}
	if len(sub) == 4 {
		sub = strings.ToUpper(sub[:1]) + strings.ToLower(sub[1:])
	} else {
		sub = strings.ToUpper(sub)
	}
	return code + "-" + sub, true
}

// quoteShort quotes s for a message, cut to 40 characters: arguments come
// from the model and may be long.
func quoteShort(s string) string {
	const limit = 40
	if utf8.RuneCountInString(s) <= limit {
		return strconv.Quote(s)
	}
	return strconv.Quote(string([]rune(s)[:limit])) + "…"
}
