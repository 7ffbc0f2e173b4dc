package memory

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/openhuman/openhuman-host/sdk"
)

// noteArgs are memory_note's arguments.
type noteArgs struct {
	ChunkID  *string `json:"chunk_id"`
	NoteText *string `json:"note_text"`
}

// noteResult is memory_note's structured content.
type noteResult struct {
	ChunkID    string `json:"chunk_id"`
	DocumentID string `json:"document_id"`
	Replaced   bool   `json:"replaced"`
	ChunkCount int    `json:"chunk_count"`
}

var noteTool = tool{
	spec: sdk.Tool{
		Name:  ToolNote,
		Title: "Annotate a memory chunk",
		Description: "Attach a note to one memory chunk: a correction, a follow-up, or why it matters. " +
			"The note is stored as its own document next to the chunk's, is found by memory_search and " +
			"memory_recall (its hits carry annotates_chunk_id), and is shown with the chunk by " +
			"tree_read_chunk. A chunk has one note: noting it again replaces the note. An unknown " +
			"chunk_id is an error.",
		InputSchema: mustJSON(objectSchema([]string{"chunk_id", "note_text"}, map[string]any{
			"chunk_id": chunkIDSchema(),
			"note_text": map[string]any{
				"type":        "string",
				"minLength":   1,
				"maxLength":   maxNoteBytes,
				"description": fmt.Sprintf("The note, at most %d bytes of UTF-8.", maxNoteBytes),
			},
		})),
		OutputSchema: mustJSON(objectSchema([]string{"chunk_id", "document_id", "replaced", "chunk_count"}, map[string]any{
			"chunk_id":    map[string]any{"type": "string", "description": "The chunk the note is about."},
			"document_id": map[string]any{"type": "string", "description": "The note's own document: <namespace>/mcp-note-<chunk_id>."},
			"replaced":    map[string]any{"type": "boolean", "description": "True when the chunk had a note that this one replaced."},
			"chunk_count": map[string]any{"type": "integer", "minimum": 1},
		})),
		Annotations: actAnnotations("Annotate a memory chunk"),
		Class:       sdk.ClassAct,
	},
	run: runNote,
}

func runNote(ctx context.Context, p *Provider, st *store, raw json.RawMessage) (*sdk.CallToolResult, error) {
	var args noteArgs
	if aerr := decodeArgs(raw, &args); aerr != nil {
		return nil, aerr
	}
	id, aerr := requiredString("chunk_id", args.ChunkID, maxChunkIDRunes)
	if aerr != nil {
		return nil, aerr
	}
	text, aerr := requiredText("note_text", args.NoteText, maxNoteBytes, "")
	if aerr != nil {
		return nil, aerr
	}
	res, err := st.putNote(ctx, id, text)
	if errors.Is(err, errNoChunk) {
		return nil, noChunk(id)
	}
	if err != nil {
		return nil, fmt.Errorf("store note: %w", err)
	}
	pieces := splitChunks(text, maxChunkRunes)
	p.afterWrite(ctx, res.Fresh)
	verb := "Added a note"
	if !res.Created {
		verb = "Replaced the note"
	}
	return sdk.StructuredResult(
		fmt.Sprintf("%s on chunk %s (document %s).", verb, id, res.DocumentID),
		noteResult{ChunkID: id, DocumentID: res.DocumentID, Replaced: !res.Created, ChunkCount: len(pieces)})
}
