package memory

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

// resultTokens is the estimated size of a result, text and structured
// content together.
func resultTokens(t *testing.T, p *Provider, name string, args map[string]any) (int, json.RawMessage) {
	t.Helper()
	res := callRaw(t, p, name, args)
	if res.IsError {
		t.Fatalf("%s: %s", name, res.Content[0].Text)
	}
	return (len(res.Content[0].Text) + len(res.StructuredContent)) / bytesPerToken, res.StructuredContent
}

// TestMaxTokens checks that search, recall and browse keep their best
// hits within max_tokens and say so, and that a version's text is read in
// pieces that fit.
func TestMaxTokens(t *testing.T) {
	t.Parallel()
	p, _ := newProvider(t)
	for i := range 30 {
		put(t, p, map[string]any{"title": fmt.Sprintf("Otter %d", i), "content": fmt.Sprintf("otters hold hands while sleeping, note %d. %s", i, longText(1))})
	}
	for _, tc := range []struct {
		tool string
		args map[string]any
	}{
		{ToolSearch, map[string]any{"query": "otters", "k": 30}},
		{ToolRecall, map[string]any{"query": "do otters sleep", "k": 30}},
		{ToolBrowse, map[string]any{"query": "otters", "k": 30}},
	} {
		full, _ := resultTokens(t, p, tc.tool, tc.args)
		tc.args["max_tokens"] = 600
		got, sc := resultTokens(t, p, tc.tool, tc.args)
		var out struct {
			Chunks    []json.RawMessage `json:"chunks"`
			Truncated bool              `json:"truncated"`
		}
		if err := json.Unmarshal(sc, &out); err != nil {
			t.Fatal(err)
		}
		if full <= 600 || got > 600 || len(out.Chunks) == 0 || len(out.Chunks) >= 30 {
			t.Errorf("%s: %d tokens in full, %d with max_tokens 600 (%d chunks)", tc.tool, full, got, len(out.Chunks))
		}
		if tc.tool != ToolBrowse && !out.Truncated {
			t.Errorf("%s: result does not say it was truncated", tc.tool)
		}
	}

	long := strings.Repeat("élan vital ", 2000) // 24,000 bytes
	put(t, p, map[string]any{"title": "Essay", "content": long})
	doc := put(t, p, map[string]any{"title": "Essay", "content": "short now"})
	var text strings.Builder
	offset := 0
	for range 30 {
		args := map[string]any{"document_id": doc.DocumentID, "version": 1, "max_tokens": 1000}
		if offset > 0 {
			args["offset"] = offset
		}
		res := call[historyResult](t, p, ToolHistory, args)
		text.WriteString(res.Versions[0].Content)
		if len(res.Versions[0].Content) > 1000*bytesPerToken/2 {
			t.Fatalf("a piece of %d bytes exceeds the budget", len(res.Versions[0].Content))
		}
		if res.NextOffset == nil {
			break
		}
		offset = *res.NextOffset
	}
	if text.String() != long {
		t.Errorf("the pieces of version 1 give %d bytes, want the %d of the text", text.Len(), len(long))
	}
	if res := callRaw(t, p, ToolHistory, map[string]any{"document_id": doc.DocumentID, "offset": 5}); !res.IsError {
		t.Errorf("offset without version is not refused")
	}
	if res := callRaw(t, p, ToolSearch, map[string]any{"query": "otters", "max_tokens": 5}); !res.IsError {
		t.Errorf("max_tokens 5 is not refused")
	}
}
