package searxng

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestNormaliseCategories(t *testing.T) {
	tests := []struct {
		in   []string
		want []string
		err  string
	}{
		{nil, nil, ""},
		{[]string{}, nil, ""},
		{[]string{"web"}, []string{"general"}, ""},
		{[]string{"WEB"}, []string{"general"}, ""},
		{[]string{"General"}, []string{"general"}, ""},
		{[]string{" news "}, []string{"news"}, ""},
		{[]string{"Images", "news"}, []string{"images", "news"}, ""},
		{[]string{"news", "web", "general", "Web"}, []string{"news", "general"}, ""},
		{[]string{"web", "general"}, []string{"general"}, ""},
		{[]string{"images", "IMAGES", "news", "NEWS"}, []string{"images", "news"}, ""},
		{[]string{"videos"}, nil, `unknown category "videos" in "categories"; valid categories are web (the same as general), general, news, images`},
		{[]string{"news", ""}, nil, `unknown category "" in "categories"; valid categories are web (the same as general), general, news, images`},
		{[]string{"it"}, nil, `unknown category "it" in "categories"; valid categories are web (the same as general), general, news, images`},
	}
	for _, tt := range tests {
		got, err := normaliseCategories(tt.in)
		if tt.err != "" {
			if err == nil || err.Error() != tt.err {
				t.Errorf("%q: got error %v, want %s", tt.in, err, tt.err)
			}
			continue
		}
		if err != nil || !cmp.Equal(got, tt.want) {
			t.Errorf("%q: got %q, %v; want %q", tt.in, got, err, tt.want)
		}
	}
}

func TestCanonicalLanguage(t *testing.T) {
	tests := []struct {
		in, want string
		ok       bool
	}{
		{"en", "en", true},
		{"EN", "en", true},
		{"de-CH", "de-CH", true},
		{"de-ch", "de-CH", true},
		{"PT-br", "pt-BR", true},
		{"es-419", "es-419", true},
		{"zh-hant", "zh-Hant", true},
		{"fil", "fil", true},
		{"all", "all", true},
		{"ALL", "all", true},
		{"auto", "auto", true},
		{"e", "", false},
		{"english", "", false},
		{"en_US", "", false},
		{"en-", "", false},
		{"en-U", "", false},
		{"en-US-x", "", false},
		{"en-12", "", false},
		{" en", "", false},
		{"de-CH;q=0.9", "", false},
		{"", "", false},
	}
	for _, tt := range tests {
		got, ok := canonicalLanguage(tt.in)
		if got != tt.want || ok != tt.ok {
			t.Errorf("%q: got %q %v, want %q %v", tt.in, got, ok, tt.want, tt.ok)
		}
	}
}

func TestCheckArgs(t *testing.T) {
	cfg := settings{maxResults: 8, language: "fr"}
	got := searchArgs{Query: "  climate  report ", Categories: []string{"NEWS", "web"}, MaxResults: 12}
	if err := got.check(cfg); err != nil {
		t.Fatal(err)
	}
	want := searchArgs{Query: "climate  report", Categories: []string{"news", "general"}, Language: "fr", MaxResults: 12}
	if !cmp.Equal(got, want) {
		t.Errorf("got %+v, want %+v", got, want)
	}
	got = searchArgs{Query: "x", Language: " DE-ch ", MaxResults: 8}
	if err := got.check(cfg); err != nil {
		t.Fatal(err)
	}
	want = searchArgs{Query: "x", Language: "de-CH", MaxResults: 8}
	if !cmp.Equal(got, want) {
		t.Errorf("got %+v, want %+v", got, want)
	}
}
