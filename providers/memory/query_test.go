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
			if diff := diff(tc.wantMatch, matchAll(words)); diff != "" {
				t.Errorf("matchAll (-want +got):\n%s", diff)
			}
		})
	}
}
