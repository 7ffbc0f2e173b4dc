package memory

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/openhuman/openhuman-host/sdk"
)

func TestBriefText(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("word ", 40)
	tests := map[string]struct {
		args, structured string
		want             string
	}{
		"search hits for the query": {
			args:       `{"query":"coral reef","k":5}`,
			structured: `{"chunks":[{"chunk_id":"chk_1","title":"Reef trip","snippet":"the **reef**"},{"chunk_id":"chk_2"},{},{},{}]}`,
			want:       `5 hits for "coral reef"; full results in structuredContent`,
		},
		"one hit, truncated, with a count": {
			args:       `{"query":"reef"}`,
			structured: `{"chunks":[{"chunk_id":"chk_1"}],"next_offset":1000,"truncated":true}`,
			want:       `1 hit for "reef", next offset 1000, truncated; full results in structuredContent`,
		},
		"no hits": {
			args:       `{"query":"reef"}`,
			structured: `{"chunks":[]}`,
			want:       `0 hits for "reef"; full results in structuredContent`,
		},
		"recall names its mode, not its fallback sentence": {
			args:       `{"query":"what did we decide?"}`,
			structured: `{"mode":"keyword","chunks":[{},{}],"fallback_reason":"the embeddings endpoint is down"}`,
			want:       `2 hits for "what did we decide?", mode keyword; full results in structuredContent`,
		},
		"a long query is cut, on one line": {
			args:       `{"query":"first line\nsecond ` + long + `"}`,
			structured: `{"chunks":[{}]}`,
			want:       `1 hit for "first line second word word word word word word word word word w"…; full results in structuredContent`,
		},
		"a page that does not reach the total says where the next starts": {
			args:       `{"k":2,"offset":4}`,
			structured: `{"chunks":[{},{}],"total":37,"offset":4}`,
			want:       `2 chunks, total 37, offset 4, next offset 6; full results in structuredContent`,
		},
		"the last page says no next offset": {
			args:       `{"k":2,"offset":35}`,
			structured: `{"chunks":[{},{}],"total":37,"offset":35}`,
			want:       `2 chunks, total 37, offset 35; full results in structuredContent`,
		},
		"a version in pieces gives its next offset": {
			args:       `{"document_id":"mcp/notes","version":1}`,
			structured: `{"document_id":"mcp/notes","versions":[{"version":1,"content":"text of the version"}],"next_offset":8000}`,
			want:       `1 version, document id mcp/notes, next offset 8000; full results in structuredContent`,
		},
		"an object is named with its id": {
			args:       `{"chunk_id":"chk_1"}`,
			structured: `{"chunk":{"chunk_id":"chk_1","text":"the whole chunk text"},"truncated":true}`,
			want:       `chunk chk_1, truncated; full results in structuredContent`,
		},
		"null is named as missing": {
			args:       `{"chunk_id":"chk_404"}`,
			structured: `{"chunk":null}`,
			want:       `no chunk; full results in structuredContent`,
		},
		"counts of zero and false flags are left out": {
			args:       `{"query":"reef","dry_run":true}`,
			structured: `{"dry_run":false,"documents":2,"chunks":0,"notes":0,"document_ids":["a","b"],"documents_touched":2}`,
			want:       `2 document ids, documents 2, documents touched 2; full results in structuredContent`,
		},
		"text with spaces stays in the structured content": {
			args:       `{}`,
			structured: `{"document_id":"mcp/a b","title":"A title","namespace":"work","entities":[{"id":"e"}]}`,
			want:       `1 entity, namespace work; full results in structuredContent`,
		},
		"nothing to say": {
			args:       `{}`,
			structured: `{"title":"A title"}`,
			want:       `Full results in structuredContent`,
		},
	}
	for name, tc := range tests {
		got, ok := briefText(json.RawMessage(tc.args), json.RawMessage(tc.structured))
		if !ok || got != tc.want {
			t.Errorf("%s:\n got %q, %v\nwant %q", name, got, ok, tc.want)
		}
		if strings.ContainsAny(got, "\n\r") {
			t.Errorf("%s: %q is more than one line", name, got)
		}
	}
	for _, bad := range []string{`[1]`, `"x"`, `{"a":`, ``} {
		if got, ok := briefText(json.RawMessage(`{}`), json.RawMessage(bad)); ok {
			t.Errorf("briefText of %q = %q, true; want false", bad, got)
		}
	}
	many := map[string]int{}
	for i := range 60 {
		many[strings.Repeat("k", 10)+itoa(int64(i))] = i + 1
	}
	raw, _ := json.Marshal(many)
	got, _ := briefText(json.RawMessage(`{}`), raw)
	if len(got) > maxBriefBytes+len("…; "+briefTail) || !strings.HasSuffix(got, "…; "+briefTail) {
		t.Errorf("a result of many fields gives %d bytes: %q", len(got), got)
	}
}

// The memory tools answer a caller that reads structuredContent with one
// line in place of their text, and every other caller with the full text;
// the structured content is the same either way, and errors keep their
// text.
func TestBriefMemoryResults(t *testing.T) {
	t.Parallel()
	p := newProviderWith(t,
		map[string]any{"title": "Reef trip", "content": "We dove the coral reef at dawn; the reef was bright."},
		map[string]any{"title": "Boat", "content": "The boat to the reef left at six."},
		map[string]any{"title": "Lunch", "content": "Sandwiches on the beach."},
	)
	ctx := context.Background()
	run := func(name, args string, brief bool) *sdk.CallToolResult {
		t.Helper()
		res, err := p.CallTool(ctx, &sdk.CallToolRequest{Name: name, Arguments: json.RawMessage(args),
			Caller: sdk.Caller{SourceType: "mcp:claude-code", ClientName: "claude-code", ReadsStructuredContent: brief}})
		if err != nil {
			t.Fatalf("%s %s: %v", name, args, err)
		}
		return res
	}
	tests := []struct {
		tool, args, want string
	}{
		{ToolSearch, `{"query":"reef"}`, `2 hits for "reef"; full results in structuredContent`},
		{ToolRecall, `{"query":"when did the boat leave for the reef?"}`, `2 hits for "when did the boat leave for the reef?", mode keyword; full results in structuredContent`},
		{ToolBrowse, `{"k":2}`, `2 chunks, total 3, next offset 2; full results in structuredContent`},
		{ToolListSources, `{}`, `1 source; full results in structuredContent`},
		{ToolForget, `{"query":"reef","dry_run":true}`, `2 document ids, dry run, documents 2, chunks 2, documents touched 2; full results in structuredContent`},
	}
	for _, tc := range tests {
		full, brief := run(tc.tool, tc.args, false), run(tc.tool, tc.args, true)
		if len(brief.Content) != 1 || brief.Content[0].Text != tc.want {
			t.Errorf("%s %s for a client that reads structuredContent:\n got %+v\nwant %q", tc.tool, tc.args, brief.Content, tc.want)
		}
		if full.Content[0].Text == tc.want || len(full.Content[0].Text) <= len(tc.want) {
			t.Errorf("%s %s for other clients: %q, want the full text", tc.tool, tc.args, full.Content[0].Text)
		}
		if string(full.StructuredContent) != string(brief.StructuredContent) {
			t.Errorf("%s: structured content differs:\n%s\n%s", tc.tool, full.StructuredContent, brief.StructuredContent)
		}
		validateOutput(t, tc.tool, brief.StructuredContent)
	}

	// Full search text lists every hit; the brief line does not.
	if full := run(ToolSearch, `{"query":"reef"}`, false).Content[0].Text; !strings.Contains(full, "1. chk_") || !strings.Contains(full, "2. chk_") {
		t.Errorf("full search text = %q", full)
	}
	// An error keeps its full text.
	res := run(ToolSearch, `{"query":"reef","namespaces":["elsewhere"],"k":0}`, true)
	if !res.IsError || !strings.Contains(res.Content[0].Text, `"k"`) {
		t.Errorf("error result = %+v, want the full error", res)
	}
	// Text already shorter than a summary stays.
	if got := run(ToolSearch, `{"query":"volcano"}`, true).Content[0].Text; got != "No chunks contain all of: volcano." {
		t.Errorf("no hits: %q", got)
	}
}

func TestBriefResultLeavesOthersAlone(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("a hit line that says a lot; ", 10)
	structured := json.RawMessage(`{"chunks":[{},{}]}`)
	ok := &sdk.CallToolResult{Content: []sdk.Content{sdk.TextContent(long), {Type: "image", Data: []byte{1}}, sdk.TextContent(long)}, StructuredContent: structured}
	got := briefResult(json.RawMessage(`{}`), ok)
	want := []sdk.Content{sdk.TextContent("2 chunks; full results in structuredContent"), {Type: "image", Data: []byte{1}}}
	if diff := diff(want, got.Content); diff != "" {
		t.Errorf("content (-want +got):\n%s", diff)
	}
	if ok.Content[0].Text != long || len(ok.Content) != 3 {
		t.Error("briefResult changed its argument")
	}
	for name, res := range map[string]*sdk.CallToolResult{
		"error":                 {Content: []sdk.Content{sdk.TextContent(long)}, StructuredContent: structured, IsError: true},
		"no structured content": {Content: []sdk.Content{sdk.TextContent(long)}},
		"nil":                   nil,
	} {
		if got := briefResult(json.RawMessage(`{}`), res); got != res {
			t.Errorf("%s: result replaced: %+v", name, got)
		}
	}
}
