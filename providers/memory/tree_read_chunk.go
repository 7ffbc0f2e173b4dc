package memory

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/openhuman/openhuman-host/sdk"
)

// readChunkArgs are tree.read_chunk's arguments.
type readChunkArgs struct {
	ChunkID *string `json:"chunk_id"`
}

// readChunkResult is tree.read_chunk's structured content; Chunk is nil
// (JSON null) for an unknown id.
type readChunkResult struct {
	Chunk *chunkView `json:"chunk"`
}

// chunkView is one chunk with its document's details.
type chunkView struct {
	ChunkID    string   `json:"chunk_id" gorm:"column:chunk_id"`
	DocumentID string   `json:"document_id" gorm:"column:document_id"`
	Title      string   `json:"title" gorm:"column:title"`
	Namespace  string   `json:"namespace" gorm:"column:namespace"`
	SourceID   string   `json:"source_id" gorm:"column:source_id"`
	Seq        int      `json:"seq" gorm:"column:seq"`
	Content    string   `json:"content" gorm:"column:content"`
	Tags       []string `json:"tags" gorm:"-"`
	CreatedMS  int64    `json:"created_ms" gorm:"column:created_ms"`
	UpdatedMS  int64    `json:"updated_ms" gorm:"column:updated_ms"`
}

func runReadChunk(ctx context.Context, _ *Provider, st *store, raw json.RawMessage) (*sdk.CallToolResult, error) {
	var args readChunkArgs
	if aerr := decodeArgs(raw, &args); aerr != nil {
		return sdk.ErrorResult("%s: %s", ToolReadChunk, aerr), nil
	}
	id, aerr := requiredString("chunk_id", args.ChunkID, maxChunkIDRunes)
	if aerr != nil {
		return sdk.ErrorResult("%s: %s", ToolReadChunk, aerr), nil
	}
	c, err := st.chunk(ctx, id)
	if err != nil {
		return nil, err
	}
	if c == nil {
		return sdk.StructuredResult(
			fmt.Sprintf("No chunk has id %s; chunk ids come from memory.search results.", quoteShort(id)),
			readChunkResult{})
	}
	return sdk.StructuredResult(
		fmt.Sprintf("Chunk %s, seq %d of %s (title %s):\n\n%s", c.ChunkID, c.Seq, c.DocumentID, quoteShort(oneLine(c.Title)), c.Content),
		readChunkResult{Chunk: c})
}
