package memory

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"

	"github.com/openhuman/openhuman-host/sdk"
)

// Tool names served by the memory provider.
const (
	// ToolStore saves a titled document into memory.
	ToolStore = "memory.store"
	// ToolSearch runs a full-text search over stored chunks.
	ToolSearch = "memory.search"
	// ToolReadChunk returns one chunk in full.
	ToolReadChunk = "tree.read_chunk"
)

// Argument bounds; the input schemas and the handlers' own checks share
// them.
const (
	maxTitleRunes    = 512
	maxContentBytes  = 1_000_000
	maxTags          = 50
	maxTagRunes      = 128
	defaultNamespace = "mcp"
	maxQueryRunes    = 1024
	minK             = 1
	maxK             = 50
	defaultK         = 10
	maxChunkIDRunes  = 256
)

// namespacePattern is what a namespace must match.
const namespacePattern = `^[A-Za-z0-9_.-]{1,64}$`

var namespaceRE = regexp.MustCompile(namespacePattern)

// handler runs one tool against an open store. Argument problems come back
// as isError results; a returned error is an internal failure.
type handler func(ctx context.Context, p *Provider, st *store, args json.RawMessage) (*sdk.CallToolResult, error)

// tool pairs a catalog entry with its handler.
type tool struct {
	spec sdk.Tool
	run  handler
}

// tools is the provider's catalog in the order Describe lists it.
var tools = []tool{
	{
		spec: sdk.Tool{
			Name:  ToolStore,
			Title: "Store in memory",
			Description: "Save a titled note or document to long-term memory so it can be found again later, " +
				"in this or any future conversation, with memory.search. Use it for facts, decisions, " +
				"summaries or reference text worth keeping. The content is split into chunks of about 512 " +
				"tokens and is searchable as soon as the call returns. Storing again with the same title " +
				"in the same namespace replaces that document's content and tags; a different title never " +
				"overwrites another document, even if the titles look alike. Returns the document_id.",
			InputSchema: mustJSON(objectSchema([]string{"title", "content"}, map[string]any{
				"title": map[string]any{
					"type":        "string",
					"minLength":   1,
					"maxLength":   maxTitleRunes,
					"description": "Short, specific title; it identifies the document: the same title updates it.",
				},
				"content": map[string]any{
					"type":      "string",
					"minLength": 1,
					// maxLength counts characters; the handler also enforces
					// the byte limit.
					"maxLength":   maxContentBytes,
					"description": fmt.Sprintf("The text to remember, at most %d bytes of UTF-8.", maxContentBytes),
				},
				"namespace": map[string]any{
					"type":        "string",
					"pattern":     namespacePattern,
					"default":     defaultNamespace,
					"description": "Groups documents; titles are unique within a namespace. Defaults to \"mcp\".",
				},
				"tags": map[string]any{
					"type":     "array",
					"maxItems": maxTags,
					"items": map[string]any{
						"type":      "string",
						"minLength": 1,
						"maxLength": maxTagRunes,
					},
					"description": "Labels for the document; replaces its previous tags.",
				},
			})),
			OutputSchema: mustJSON(objectSchema([]string{"document_id", "namespace", "key", "chunk_count"}, map[string]any{
				"document_id": map[string]any{"type": "string", "description": "<namespace>/<key>"},
				"namespace":   map[string]any{"type": "string"},
				"key":         map[string]any{"type": "string", "description": "The document's upsert key, derived from its title."},
				"chunk_count": map[string]any{"type": "integer", "minimum": 1},
			})),
			Annotations: sdk.Annotations{
				Title:           "Store in memory",
				ReadOnlyHint:    sdk.Bool(false),
				DestructiveHint: sdk.Bool(true),
				IdempotentHint:  sdk.Bool(true),
				OpenWorldHint:   sdk.Bool(false),
			},
			Class: sdk.ClassAct,
		},
		run: runStore,
	},
	{
		spec: sdk.Tool{
			Name:  ToolSearch,
			Title: "Search memory",
			Description: "Keyword search over everything stored in memory. Returns up to k chunks, best first, " +
				"ranked by BM25 with matches in a document's title counting more than matches in its body. " +
				"Every word of the query must appear in a chunk (its text or its document's title); matching " +
				"ignores case and accents, punctuation only separates words, and there are no operators. " +
				"Use a few distinctive keywords; if nothing comes back, try fewer or other words. Each hit " +
				"has a snippet with the matches marked **like this**; pass its chunk_id to tree.read_chunk " +
				"for the full text.",
			InputSchema: mustJSON(objectSchema([]string{"query"}, map[string]any{
				"query": map[string]any{
					"type":        "string",
					"minLength":   1,
					"maxLength":   maxQueryRunes,
					"description": "Words to look for; all must match.",
				},
				"k": map[string]any{
					"type":        "integer",
					"minimum":     minK,
					"maximum":     maxK,
					"default":     defaultK,
					"description": "Maximum number of chunks to return.",
				},
			})),
			OutputSchema: mustJSON(objectSchema([]string{"chunks"}, map[string]any{
				"chunks": map[string]any{
					"type": "array",
					"items": objectSchema(
						[]string{"chunk_id", "document_id", "title", "namespace", "source_id", "seq", "snippet", "score", "updated_ms"},
						map[string]any{
							"chunk_id":    map[string]any{"type": "string"},
							"document_id": map[string]any{"type": "string"},
							"title":       map[string]any{"type": "string"},
							"namespace":   map[string]any{"type": "string"},
							"source_id":   map[string]any{"type": "string"},
							"seq":         map[string]any{"type": "integer", "minimum": 0, "description": "Position of the chunk in its document, from 0."},
							"snippet":     map[string]any{"type": "string", "description": "Excerpt of the chunk with matches marked **like this**."},
							"score":       map[string]any{"type": "number", "exclusiveMinimum": 0, "description": "Relevance; higher is better."},
							"updated_ms":  map[string]any{"type": "integer", "description": "Last change, Unix milliseconds."},
						}),
				},
			})),
			Annotations: sdk.Annotations{
				Title:         "Search memory",
				ReadOnlyHint:  sdk.Bool(true),
				OpenWorldHint: sdk.Bool(false),
			},
			Class: sdk.ClassRead,
		},
		run: runSearch,
	},
	{
		spec: sdk.Tool{
			Name:  ToolReadChunk,
			Title: "Read a memory chunk",
			Description: "Read the full text of one memory chunk by its chunk_id (as returned by memory.search), " +
				"with its document's title, namespace, tags and the chunk's position (seq) in the document. " +
				"Use it when a search snippet is not enough. Returns chunk: null when no chunk has that id.",
			InputSchema: mustJSON(objectSchema([]string{"chunk_id"}, map[string]any{
				"chunk_id": map[string]any{
					"type":        "string",
					"minLength":   1,
					"maxLength":   maxChunkIDRunes,
					"description": "A chunk id such as chk_0123456789abcdef01234567.",
				},
			})),
			OutputSchema: mustJSON(objectSchema([]string{"chunk"}, map[string]any{
				"chunk": func() map[string]any {
					s := objectSchema(
						[]string{"chunk_id", "document_id", "title", "namespace", "source_id", "seq", "content", "tags", "created_ms", "updated_ms"},
						map[string]any{
							"chunk_id":    map[string]any{"type": "string"},
							"document_id": map[string]any{"type": "string"},
							"title":       map[string]any{"type": "string"},
							"namespace":   map[string]any{"type": "string"},
							"source_id":   map[string]any{"type": "string"},
							"seq":         map[string]any{"type": "integer", "minimum": 0},
							"content":     map[string]any{"type": "string"},
							"tags":        map[string]any{"type": "array", "items": map[string]any{"type": "string"}},
							"created_ms":  map[string]any{"type": "integer"},
							"updated_ms":  map[string]any{"type": "integer"},
						})
					s["type"] = []string{"object", "null"}
					s["description"] = "The chunk, or null when no chunk has that id."
					return s
				}(),
			})),
			Annotations: sdk.Annotations{
				Title:         "Read a memory chunk",
				ReadOnlyHint:  sdk.Bool(true),
				OpenWorldHint: sdk.Bool(false),
			},
			Class: sdk.ClassRead,
		},
		run: runReadChunk,
	},
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
