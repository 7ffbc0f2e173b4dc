package memory

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/openhuman/openhuman-host/sdk"
)

// noteArgs are memory_note's arguments; the schema bounds note_text in
// characters, runNote in bytes.
type noteArgs struct {
	chunkIDArg
	NoteText string `json:"note_text" jsonschema:"The note, at most 100000 bytes of UTF-8." schema:"minLength=1,maxLength=100000"`
}

// noteResult is memory_note's structured content.
type noteResult struct {
	ChunkID    string `json:"chunk_id" jsonschema:"The chunk the note is about."`
	DocumentID string `json:"document_id" jsonschema:"The note's own document: <namespace>/mcp-note-<chunk_id>."`
	Replaced   bool   `json:"replaced" jsonschema:"True when the chunk had a note that this one replaced."`
	ChunkCount int    `json:"chunk_count" schema:"minimum=1"`
}

// noteTool is memory_note's catalog entry; its schemas come from noteArgs
// and noteResult.
var noteTool = sdk.Tool{
	Name:  ToolNote,
	Title: "Annotate a memory chunk",
	Description: "Attach a note to one memory chunk: a correction, a follow-up, or why it matters. " +
		"The note is stored as its own document next to the chunk's, is found by memory_search and " +
		"memory_recall (its hits carry annotates_chunk_id), and is shown with the chunk by " +
		"tree_read_chunk. A chunk has one note: noting it again replaces the note. An unknown " +
		"chunk_id is an error.",
	Annotations: actAnnotations("Annotate a memory chunk"),
	Class:       sdk.ClassAct,
}

func runNote(ctx context.Context, p *Provider, st *store, args noteArgs) (*sdk.CallToolResult, noteResult, error) {
	id, text := strings.TrimSpace(args.ChunkID), args.NoteText
	if aerr := maxBytes("note_text", text, maxNoteBytes, ""); aerr != nil {
		return nil, noteResult{}, aerr
	}
	res, err := st.putNote(ctx, id, text)
	if errors.Is(err, errNoChunk) {
		return nil, noteResult{}, noChunk(id)
	}
	if err != nil {
		return nil, noteResult{}, fmt.Errorf("store note: %w", err)
	}
	pieces := splitChunks(text, maxChunkRunes)
	p.afterWrite(ctx, res.Fresh)
	verb := "Added a note"
	if !res.Created {
		verb = "Replaced the note"
	}
	return sdk.TextResult(fmt.Sprintf("%s on chunk %s (document %s).", verb, id, res.DocumentID)),
		noteResult{ChunkID: id, DocumentID: res.DocumentID, Replaced: !res.Created, ChunkCount: len(pieces)}, nil
}
