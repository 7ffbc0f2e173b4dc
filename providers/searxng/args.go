package searxng

import (
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
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

// check completes arguments that passed the input schema with what the
// schema cannot say: it trims the query, maps the categories
// case-insensitively to SearXNG's names and checks the language, or uses
// the configured one when the call gives none. An error says what to
// send instead.
func (a *searchArgs) check(cfg settings) error {
	a.Query = strings.TrimSpace(a.Query)
	cats, err := normaliseCategories(a.Categories)
	if err != nil {
		return err
	}
	a.Categories = cats
	if a.Language == "" {
		a.Language = cfg.language
		return nil
	}
	lang := strings.TrimSpace(a.Language)
	if lang == "" {
		return errors.New(`argument "language" must not be blank; leave it out to use the default`)
	}
	canon, ok := canonicalLanguage(lang)
	if !ok {
		return fmt.Errorf(`argument "language" is %s, not a language: use "all", "auto", a code such as "en", or a code with a region such as "de-CH"`,
			quoteShort(lang))
	}
	a.Language = canon
	return nil
}

// normaliseCategories maps the categories argument to SearXNG category
// names: case-insensitive, web becomes general, duplicates are dropped
// and the first occurrence's order is kept. An unknown value is an error
// that lists the valid ones.
func normaliseCategories(in []string) ([]string, error) {
	var out []string
	for _, v := range in {
		name, ok := categoryAliases[strings.ToLower(strings.TrimSpace(v))]
		if !ok {
			return nil, fmt.Errorf(`unknown category %s in "categories"; valid categories are %s`, quoteShort(v), validCategories)
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
	if !languageRE.MatchString(s) {
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
