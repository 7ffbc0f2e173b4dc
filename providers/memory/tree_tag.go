package memory

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/openhuman/openhuman-host/sdk"
)

// tagArgs are tree_tag's arguments.
type tagArgs struct {
	ChunkID *string  `json:"chunk_id"`
	Tags    []string `json:"tags"`
}

// tagResult is tree_tag's structured content.
type tagResult struct {
	ChunkID string   `json:"chunk_id"`
	Tags    []string `json:"tags"`
}

// validateTags checks a tag list argument: at least minItems and at most
// maxTags entries, none blank after trimming spaces, each at most
// maxTagBytes bytes. Duplicates, compared without regard to case, are
// dropped; the first spelling wins and the order is kept.
func validateTags(name string, in []string, minItems int) ([]string, *argError) {
	if len(in) < minItems {
		return nil, argErrorf("argument %q must have at least %d item, got %d", name, minItems, len(in))
	}
	if len(in) > maxTags {
		return nil, argErrorf("argument %q must have at most %d items, got %d", name, maxTags, len(in))
	}
	out := make([]string, 0, len(in))
	seen := make(map[string]bool, len(in))
	for i, t := range in {
		t = strings.TrimSpace(t)
		if t == "" {
			return nil, argErrorf("argument %q item %d must not be blank", name, i+1)
		}
		if len(t) > maxTagBytes {
			return nil, argErrorf("argument %q item %d must be at most %d bytes, got %d", name, i+1, maxTagBytes, len(t))
		}
		if key := strings.ToLower(t); !seen[key] {
			seen[key] = true
			out = append(out, t)
		}
	}
	return out, nil
}

var tagTool = tool{
	spec: sdk.Tool{
		Name:  ToolTag,
		Title: "Tag a memory chunk",
		Description: "Tag a stored memory chunk: set its tags, replacing those it had. Tags are short labels " +
			"(1 to 50 per call, at most 128 bytes each; duplicates that differ only in case are merged) " +
			"that memory_search and memory_recall match like words. Get chunk ids from memory_search, " +
			"memory_recall or tree_browse. An unknown chunk_id is an error.",
		InputSchema: mustJSON(objectSchema([]string{"chunk_id", "tags"}, map[string]any{
			"chunk_id": chunkIDSchema(),
			"tags": map[string]any{
				"type":     "array",
				"minItems": 1,
				"maxItems": maxTags,
				"items": map[string]any{
					"type":      "string",
					"minLength": 1,
					"maxLength": maxTagBytes,
				},
				"description": "The chunk's new tag set.",
			},
		})),
		OutputSchema: mustJSON(objectSchema([]string{"chunk_id", "tags"}, map[string]any{
			"chunk_id": map[string]any{"type": "string"},
			"tags":     map[string]any{"type": "array", "items": map[string]any{"type": "string"}, "description": "The tag set now stored."},
		})),
		Annotations: actAnnotations("Tag a memory chunk"),
		Class:       sdk.ClassAct,
	},
	run: runTag,
}

func runTag(ctx context.Context, _ *Provider, st *store, raw json.RawMessage) (*sdk.CallToolResult, error) {
	var args tagArgs
	if aerr := decodeArgs(raw, &args); aerr != nil {
		return nil, aerr
	}
	id, aerr := requiredString("chunk_id", args.ChunkID, maxChunkIDRunes)
	if aerr != nil {
		return nil, aerr
	}
	if args.Tags == nil {
		return nil, argErrorf(`argument "tags" is required`)
	}
	tags, aerr := validateTags("tags", args.Tags, 1)
	if aerr != nil {
		return nil, aerr
	}
	err := st.setChunkTags(ctx, id, tags)
	if errors.Is(err, errNoChunk) {
		return nil, noChunk(id)
	}
	if err != nil {
		return nil, err
	}
	return sdk.StructuredResult(
		fmt.Sprintf("Chunk %s now has %s: %s.", id, plural(len(tags), "tag"), strings.Join(tags, ", ")),
		tagResult{ChunkID: id, Tags: tags})
}
