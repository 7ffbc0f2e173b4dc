package memory

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"

	"github.com/openhuman/openhuman-host/sdk"
)

// Argument bounds; the input schemas and the handlers' own checks share
// them.
const (
	maxTitleRunes    = 512
	maxContentBytes  = 1_000_000
	maxTags          = 50
	maxTagBytes      = 128
	maxNoteBytes     = 100_000
	defaultNamespace = "mcp"
	maxQueryRunes    = 1024
	minK             = 1
	maxK             = 50
	defaultK         = 10
	maxChunkIDRunes  = 256
	maxOffset        = 1_000_000
	maxFilterItems   = 100
	maxEmailRunes    = 254
	maxSourceIDRunes = 4096
	maxEntityIDRunes = 300
)

// chunkIDSchema is the input schema of a chunk_id argument.
func chunkIDSchema() map[string]any {
	return map[string]any{
		"type":        "string",
		"minLength":   1,
		"maxLength":   maxChunkIDRunes,
		"description": "A chunk id such as chk_0123456789abcdef01234567, from memory_search, memory_recall or tree_browse.",
	}
}

// kSchema is the input schema of a k argument.
func kSchema(what string) map[string]any {
	return map[string]any{
		"type":        "integer",
		"minimum":     minK,
		"maximum":     maxK,
		"default":     defaultK,
		"description": fmt.Sprintf("Maximum number of %s to return, %d to %d.", what, minK, maxK),
	}
}

// namespacePattern is what a namespace must match.
const namespacePattern = `^[A-Za-z0-9_.-]{1,64}$`

var namespaceRE = regexp.MustCompile(namespacePattern)

// handler runs one tool against an open store. Argument problems and
// references to things that do not exist are returned as *argError, which
// CallTool turns into an isError result naming the tool; any other error is
// an internal failure.
type handler func(ctx context.Context, p *Provider, st *store, args json.RawMessage) (*sdk.CallToolResult, error)

// tool pairs a catalog entry with its handler.
type tool struct {
	spec sdk.Tool
	run  handler
}

// tools is the provider's catalog in the order Describe lists it.
var tools = []tool{
	storeTool,
	forgetTool,
	noteTool,
	tagTool,
	searchTool,
	recallTool,
	readChunkTool,
	historyTool,
	browseTool,
	topEntitiesTool,
	listSourcesTool,
}

// toolsByName indexes tools for CallTool.
var toolsByName = func() map[string]tool {
	m := make(map[string]tool, len(tools))
	for _, t := range tools {
		m[t.spec.Name] = t
	}
	return m
}()

// objectSchema is a JSON Schema for an object with exactly the given
// properties.
func objectSchema(required []string, properties map[string]any) map[string]any {
	s := map[string]any{
		"type":                 "object",
		"properties":           properties,
		"additionalProperties": false,
	}
	if len(required) > 0 {
		s["required"] = required
	}
	return s
}

func mustJSON(v any) json.RawMessage {
	b, err := json.Marshal(v)
	if err != nil {
		panic(fmt.Sprintf("memory: marshal schema: %v", err))
	}
	return b
}

// readAnnotations are the annotations of a memory tool that only reads:
// read-only, closed world.
func readAnnotations(title string) sdk.Annotations {
	return sdk.Annotations{Title: title, ReadOnlyHint: sdk.Bool(true), OpenWorldHint: sdk.Bool(false)}
}

// actAnnotations are the annotations of a memory tool that writes: it
// replaces what it writes (destructive), writing the same again changes
// nothing more (idempotent), closed world.
func actAnnotations(title string) sdk.Annotations {
	return sdk.Annotations{
		Title:           title,
		ReadOnlyHint:    sdk.Bool(false),
		DestructiveHint: sdk.Bool(true),
		IdempotentHint:  sdk.Bool(true),
		OpenWorldHint:   sdk.Bool(false),
	}
}
