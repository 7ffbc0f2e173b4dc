package memory

import (
	"regexp"
	"strings"
	"testing"
)

func TestSlug(t *testing.T) {
	t.Parallel()
	tests := map[string]struct {
		title string
		want  string
	}{
		"simple":             {title: "Meeting Notes", want: "meeting-notes"},
		"punctuation runs":   {title: "  Q3 -- plan: v2!!  ", want: "q3-plan-v2"},
		"non-ASCII letters":  {title: "Café crème", want: "caf-cr-me"},
		"only symbols":       {title: "!!! ???", want: "untitled"},
		"only non-ASCII":     {title: "日本語", want: "untitled"},
		"digits":             {title: "2024-01-05", want: "2024-01-05"},
		"truncated":          {title: strings.Repeat("a", 70), want: strings.Repeat("a", 64)},
		"truncated at dash":  {title: strings.Repeat("a", 63) + " b", want: strings.Repeat("a", 63)},
		"underscore and dot": {title: "file_name.txt", want: "file-name-txt"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			if diff := diff(tc.want, slug(tc.title)); diff != "" {
				t.Errorf("slug(%q) (-want +got):\n%s", tc.title, diff)
			}
		})
	}
}

func TestKeys(t *testing.T) {
	t.Parallel()
	tests := map[string]struct {
		got, want string
	}{
		"store key":         {got: storeKey("Meeting Notes"), want: "mcp-store-meeting-notes"},
		"untitled key":      {got: storeKey("???"), want: "mcp-store-untitled"},
		"disambiguated key": {got: disambiguatedKey("mcp-store-meeting-notes", "meeting notes"), want: "mcp-store-meeting-notes-" + sha8("meeting notes")},
		"document id":       {got: documentID("work", "mcp-store-x"), want: "work/mcp-store-x"},
		"source id":         {got: sourceIDForNamespace("work"), want: "mcp:work"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			if diff := diff(tc.want, tc.got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func TestChunkID(t *testing.T) {
	t.Parallel()
	format := regexp.MustCompile(`^chk_[0-9a-f]{24}$`)
	base := chunkID("mcp/k", 0, "text")
	tests := map[string]struct {
		id       string
		sameBase bool
	}{
		"same input":        {id: chunkID("mcp/k", 0, "text"), sameBase: true},
		"other document":    {id: chunkID("mcp/j", 0, "text")},
		"other position":    {id: chunkID("mcp/k", 1, "text")},
		"other content":     {id: chunkID("mcp/k", 0, "texts")},
		"separator matters": {id: chunkID("mcp/k0", 0, "text")},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			if !format.MatchString(tc.id) {
				t.Errorf("id %q does not match %s", tc.id, format)
			}
			if (tc.id == base) != tc.sameBase {
				t.Errorf("id %q == base %q: %v, want %v", tc.id, base, tc.id == base, tc.sameBase)
			}
		})
	}
}
