package memory

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/openhuman/openhuman-host/sdk"
)

// readChunkArgs are tree_read_chunk's arguments.
type readChunkArgs struct {
	ChunkID   *string  `json:"chunk_id"`
	MaxTokens *float64 `json:"max_tokens"`
}

// readChunkResult is tree_read_chunk's structured content; Chunk is nil
// (JSON null) for an unknown id.
type readChunkResult struct {
	Chunk *chunkView `json:"chunk"`
	// Truncated is set when notes were cut to fit max_tokens.
	Truncated bool `json:"truncated,omitempty"`
}

func runReadChunk(ctx context.Context, _ *Provider, st *store, raw json.RawMessage) (*sdk.CallToolResult, error) {
	var args readChunkArgs
	if aerr := decodeArgs(raw, &args); aerr != nil {
		return nil, aerr
	}
	id, aerr := requiredString("chunk_id", args.ChunkID, maxChunkIDRunes)
	if aerr != nil {
		return nil, aerr
	}
	budget, aerr := parseMaxTokens(args.MaxTokens)
	if aerr != nil {
		return nil, aerr
	}
	c, err := st.chunk(ctx, id)
	if err != nil {
		return nil, err
	}
	truncated := false
	if c != nil && budget > 0 {
		truncated = fitNotes(c, budget)
	}
	if c == nil {
		return sdk.StructuredResult(
			fmt.Sprintf("No chunk has id %s; chunk ids come from memory_search, memory_recall or tree_browse.", quoteShort(id)),
			readChunkResult{})
	}
	var b strings.Builder
	fmt.Fprintf(&b, "Chunk %s, seq %d of %s (title %s):\n\n%s", c.ChunkID, c.Seq, c.DocumentID, quoteShort(oneLine(c.Title)), c.Content)
	if c.AnnotatesChunkID != "" {
		fmt.Fprintf(&b, "\n\nThis is a note about chunk %s.", c.AnnotatesChunkID)
	}
	if len(c.Tags) > 0 {
		fmt.Fprintf(&b, "\n\nTags: %s", strings.Join(c.Tags, ", "))
	}
	if len(c.DocumentTags) > 0 {
		fmt.Fprintf(&b, "\n\nDocument tags: %s", strings.Join(c.DocumentTags, ", "))
	}
	for _, n := range c.Notes {
		fmt.Fprintf(&b, "\n\nNote (%s):\n%s", n.DocumentID, n.Text)
	}
	if truncated {
		fmt.Fprintf(&b, "\n\n[notes cut to fit max_tokens %d]", budget)
	}
	return sdk.StructuredResult(b.String(), readChunkResult{Chunk: c, Truncated: truncated})
}

// fitNotes cuts the notes of c, each to the same share, so that the
// chunk, which is at most 2,000 characters and always whole, and its notes
// fit budget tokens in both the text and the structured result. It reports
// whether it cut anything.
func fitNotes(c *chunkView, budget int) bool {
	if len(c.Notes) == 0 {
		return false
	}
	room := budget*bytesPerToken/2 - len(c.Content) - 256*len(c.Notes)
	notes := 0
	for _, n := range c.Notes {
		notes += len(n.Text)
	}
	if notes <= room {
		return false
	}
	share := max(0, room/len(c.Notes))
	for i := range c.Notes {
		if len(c.Notes[i].Text) > share {
			c.Notes[i].Text = cutUTF8(c.Notes[i].Text, share) + "…"
		}
	}
	return true
}

var readChunkTool = tool{
	spec: sdk.Tool{
		Name:  ToolReadChunk,
		Title: "Read a memory chunk",
		Description: "Read the full text of one memory chunk by its chunk_id (as returned by memory_search). " +
			"The result also gives its document's title, namespace and tags, the chunk's own tags, the notes " +
			"attached to it, and its position (seq) in the document. " +
			"Use it when a search snippet is not enough. Returns chunk: null when no chunk has that id.",
		InputSchema: mustJSON(objectSchema([]string{"chunk_id"}, map[string]any{
			"chunk_id":   chunkIDSchema(),
			"max_tokens": maxTokensSchema("the chunk is returned whole and its notes are cut to fit."),
		})),
		OutputSchema: mustJSON(objectSchema([]string{"chunk"}, map[string]any{
			"truncated": map[string]any{"type": "boolean", "description": "Present when notes were cut to fit max_tokens."},
			"chunk": map[string]any{
				"description": "The chunk, or null when no chunk has that id.",
				"anyOf": []any{
					map[string]any{"type": "null"},
					hitSchema([]string{"content", "tags", "document_tags", "notes", "created_ms"}, map[string]any{
						"content":       map[string]any{"type": "string"},
						"tags":          map[string]any{"type": "array", "items": map[string]any{"type": "string"}, "description": "The chunk's own tags, as tree_tag set them."},
						"document_tags": map[string]any{"type": "array", "items": map[string]any{"type": "string"}, "description": "The tags of the whole document, as memory_store set them."},
						"notes": map[string]any{
							"type":        "array",
							"description": "Notes memory_note attached to this chunk.",
							"items": objectSchema([]string{"document_id", "text", "updated_ms"}, map[string]any{
								"document_id": map[string]any{"type": "string"},
								"text":        map[string]any{"type": "string"},
								"updated_ms":  map[string]any{"type": "integer"},
							}),
						},
						"created_ms": map[string]any{"type": "integer", "description": "When the chunk was first stored, Unix milliseconds."},
					}),
				},
			},
		})),
		Annotations: readAnnotations("Read a memory chunk"),
		Class:       sdk.ClassRead,
	},
	run: runReadChunk,
}
