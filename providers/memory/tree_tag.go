package memory

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/openhuman/openhuman-host/sdk"
)

// tagArgs are tree_tag's arguments; the schema bounds each tag in
// characters, validateTags in bytes.
type tagArgs struct {
	chunkIDArg
	Tags []string `json:"tags" jsonschema:"The chunk's new tag set." schema:"minItems=1,maxItems=50,items.minLength=1,items.maxLength=128"`
}

// tagResult is tree_tag's structured content.
type tagResult struct {
	ChunkID string   `json:"chunk_id"`
	Tags    []string `json:"tags" jsonschema:"The tag set now stored."`
}

// validateTags checks the items of a tag list argument, whose schema
// bounds their number: none blank after trimming spaces, each at most
// maxTagBytes bytes. Duplicates, compared without regard to case, are
// dropped; the first spelling wins and the order is kept.
func validateTags(name string, in []string) ([]string, *argError) {
	return uniqueList(name, in, func(t string) string {
		if len(t) > maxTagBytes {
			return fmt.Sprintf("must be at most %d bytes, got %d", maxTagBytes, len(t))
		}
		return ""
	}, strings.ToLower)
}

// tagTool is tree_tag's catalog entry; its schemas come from tagArgs and
// tagResult.
var tagTool = sdk.Tool{
	Name:  ToolTag,
	Title: "Tag a memory chunk",
	Description: "Tag a stored memory chunk: set its tags, replacing those it had. Tags are short labels " +
		"(1 to 50 per call, at most 128 bytes each; duplicates that differ only in case are merged) " +
		"that memory_search and memory_recall match like words. Get chunk ids from memory_search, " +
		"memory_recall or tree_browse. An unknown chunk_id is an error.",
	Annotations: actAnnotations("Tag a memory chunk"),
	Class:       sdk.ClassAct,
}

func runTag(ctx context.Context, _ *Provider, st *store, args tagArgs) (*sdk.CallToolResult, tagResult, error) {
	id := strings.TrimSpace(args.ChunkID)
	tags, aerr := validateTags("tags", args.Tags)
	if aerr != nil {
		return nil, tagResult{}, aerr
	}
	err := st.setChunkTags(ctx, id, tags)
	if errors.Is(err, errNoChunk) {
		return nil, tagResult{}, noChunk(id)
	}
	if err != nil {
		return nil, tagResult{}, err
	}
	return sdk.TextResult(fmt.Sprintf("Chunk %s now has %s: %s.", id, plural(len(tags), "tag"), strings.Join(tags, ", "))),
		tagResult{ChunkID: id, Tags: tags}, nil
}
