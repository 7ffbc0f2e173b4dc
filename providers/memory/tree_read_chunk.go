package memory

import (
	"context"
	"fmt"
	"strings"

	"github.com/openhuman/openhuman-host/sdk"
)

// readChunkArgs are tree_read_chunk's arguments; MaxTokens is 0 when the
// call gives none.
type readChunkArgs struct {
	chunkIDArg
	MaxTokens int `json:"max_tokens,omitzero" jsonschema:"Upper bound on the size of the result, in tokens (estimated at 4 bytes each): the chunk is returned whole and its notes are cut to fit." schema:"minimum=100,maximum=1000000"`
}

// readChunkResult is tree_read_chunk's structured content; Chunk is nil
// (JSON null) for an unknown id.
type readChunkResult struct {
	Chunk *chunkView `json:"chunk" jsonschema:"The chunk, or null when no chunk has that id."`
	// Truncated is set when notes were cut to fit max_tokens.
	Truncated bool `json:"truncated,omitempty" jsonschema:"Present when notes were cut to fit max_tokens."`
}

func runReadChunk(ctx context.Context, _ *Provider, st *store, args readChunkArgs) (*sdk.CallToolResult, readChunkResult, error) {
	id, budget := strings.TrimSpace(args.ChunkID), args.MaxTokens
	c, err := st.chunk(ctx, id)
	if err != nil {
		return nil, readChunkResult{}, err
	}
	truncated := false
	if c != nil && budget > 0 {
		truncated = fitNotes(c, budget)
	}
	if c == nil {
		return sdk.TextResult(fmt.Sprintf("No chunk has id %s; chunk ids come from memory_search, memory_recall or tree_browse.", quoteShort(id))),
			readChunkResult{}, nil
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
	return sdk.TextResult(b.String()), readChunkResult{Chunk: c, Truncated: truncated}, nil
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

// readChunkTool is tree_read_chunk's catalog entry; its schemas come from
// readChunkArgs and readChunkResult.
var readChunkTool = sdk.Tool{
	Name:  ToolReadChunk,
	Title: "Read a memory chunk",
	Description: "Read the full text of one memory chunk by its chunk_id (as returned by memory_search). " +
		"The result also gives its document's title, namespace and tags, the chunk's own tags, the notes " +
		"attached to it, and its position (seq) in the document. " +
		"Use it when a search snippet is not enough. Returns chunk: null when no chunk has that id.",
	Annotations: readAnnotations("Read a memory chunk"),
	Class:       sdk.ClassRead,
}
