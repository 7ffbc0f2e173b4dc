package memory

import (
	"testing"
)

func TestQueryWords(t *testing.T) {
	t.Parallel()
	tests := map[string]struct {
		query     string
		wantWords []string
		wantMatch string
	}{
		"plain":               {query: "Lighthouse keeper", wantWords: []string{"Lighthouse", "keeper"}, wantMatch: `"Lighthouse" "keeper"`},
		"c++ and open quote":  {query: `c++ "quote`, wantWords: []string{"c", "quote"}, wantMatch: `"c" "quote"`},
		"NEAR group":          {query: "NEAR(", wantWords: []string{"NEAR"}, wantMatch: `"NEAR"`},
		"boolean operators":   {query: "AND OR NOT", wantWords: []string{"AND", "OR", "NOT"}, wantMatch: `"AND" "OR" "NOT"`},
		"star only":           {query: "*", wantWords: nil, wantMatch: ""},
		"column filter":       {query: "title:x", wantWords: []string{"title", "x"}, wantMatch: `"title" "x"`},
		"negation":            {query: "-x", wantWords: []string{"x"}, wantMatch: `"x"`},
		"prefix and caret":    {query: "^light* +tide", wantWords: []string{"light", "tide"}, wantMatch: `"light" "tide"`},
		"braces and colon":    {query: "{title content}: sea", wantWords: []string{"title", "content", "sea"}, wantMatch: `"title" "content" "sea"`},
		"accents kept":        {query: "café", wantWords: []string{"café"}, wantMatch: `"café"`},
		"combining mark kept": {query: "cafe\u0301 au lait", wantWords: []string{"cafe\u0301", "au", "lait"}, wantMatch: "\"cafe\u0301\" \"au\" \"lait\""},
		"lone combining mark": {query: "\u0301 x", wantWords: []string{"x"}, wantMatch: `"x"`},
		"cjk":                 {query: "東京タワー、夜", wantWords: []string{"東京タワー", "夜"}, wantMatch: `"東京タワー" "夜"`},
		"digits and dots":     {query: "v1.2.3", wantWords: []string{"v1", "2", "3"}, wantMatch: `"v1" "2" "3"`},
		"only punctuation":    {query: `"" () -- ::`, wantWords: nil, wantMatch: ""},
		"repeats kept once":   {query: "tide Tide TIDE moon tide", wantWords: []string{"tide", "moon"}, wantMatch: `"tide" "moon"`},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			words := queryWords(tc.query)
			if diff := diff(tc.wantWords, words); diff != "" {
				t.Errorf("queryWords (-want +got):\n%s", diff)
			}
			if diff := diff(tc.wantMatch, matchAll(wordTerms(words))); diff != "" {
				t.Errorf("matchAll (-want +got):\n%s", diff)
			}
		})
	}
}

func TestQueryTerms(t *testing.T) {
	t.Parallel()
	tests := map[string]struct {
		query     string
		wantMatch string
		wantText  string
	}{
		"plain":                   {`lighthouse keeper`, `"lighthouse" "keeper"`, `lighthouse keeper`},
		"phrase":                  {`the "lighthouse keeper" retired`, `"the" "lighthouse keeper" "retired"`, `the "lighthouse keeper" retired`},
		"prefix":                  {`deploy* notes`, `"deploy"* "notes"`, `deploy* notes`},
		"star after space":        {`deploy *`, `"deploy"`, `deploy`},
		"unpaired quote":          {`"open ended`, `"open" "ended"`, `open ended`},
		"empty quotes":            {`"" x`, `"x"`, `x`},
		"punctuation in a phrase": {`"c++ (v2)"`, `"c v2"`, `"c v2"`},
		"quoted single word":      {`"the"`, `"the"`, `"the"`},
		"repeated phrase":         {`"a b" "A B"`, `"a b"`, `"a b"`},
		"phrase keeps repeats":    {`"bye bye"`, `"bye bye"`, `"bye bye"`},
		"syntax stays text":       {`NEAR("x" y) AND z*`, `"NEAR" "x" "y" "AND" "z"*`, `NEAR "x" y AND z*`},
		"two phrases":             {`"a b" c "d e"`, `"a b" "c" "d e"`, `"a b" c "d e"`},
		"only a star":             {`*`, ``, ``},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			terms := queryTerms(tc.query)
			if got := matchAll(terms); got != tc.wantMatch {
				t.Errorf("matchAll = %q, want %q", got, tc.wantMatch)
			}
			if got := termList(terms); got != tc.wantText {
				t.Errorf("termList = %q, want %q", got, tc.wantText)
			}
		})
	}
}

func TestContentTermsKeepsQuotedAndPrefixes(t *testing.T) {
	t.Parallel()
	got := termList(contentTerms(queryTerms(`what is "the who" and "how" or to* the wifi`)))
	if want := `"the who" "how" to* wifi`; got != want {
		t.Errorf("contentTerms = %q, want %q", got, want)
	}
}
