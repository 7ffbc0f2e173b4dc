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
	ChunkID *string `json:"chunk_id"`
}

// readChunkResult is tree_read_chunk's structured content; Chunk is nil
// (JSON null) for an unknown id.
type readChunkResult struct {
	Chunk *chunkView `json:"chunk"`
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
	c, err := st.chunk(ctx, id)
	if err != nil {
		return nil, err
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
	return sdk.StructuredResult(b.String(), readChunkResult{Chunk: c})
}

var readChunkTool = tool{
	spec: sdk.Tool{
		Name:  ToolReadChunk,
		Title: "Read a memory chunk",
		Description: "Read the full text of one memory chunk by its chunk_id (as returned by memory_search), " +
			"with its document's title, namespace and tags, the chunk's own tags, the notes attached to it, and " +
			"its position (seq) in the document. " +
			"Use it when a search snippet is not enough. Returns chunk: null when no chunk has that id.",
		InputSchema: mustJSON(objectSchema([]string{"chunk_id"}, map[string]any{
			"chunk_id": chunkIDSchema(),
		})),
		OutputSchema: mustJSON(objectSchema([]string{"chunk"}, map[string]any{
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
