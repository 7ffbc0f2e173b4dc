package memory

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"

	"github.com/openhuman/openhuman-host/sdk"
)

// topEntitiesArgs are tree_top_entities' arguments.
type topEntitiesArgs struct {
	Kind *string  `json:"kind"`
	K    *float64 `json:"k"`
}

// topEntitiesResult is tree_top_entities' structured content.
type topEntitiesResult struct {
	Entities []entityRow `json:"entities"`
}

// entityKindPattern is what an entity kind looks like; the default
// extractor's kinds and those of added extractors all match it.
const entityKindPattern = `^[a-z][a-z0-9_]{0,31}$`

var entityKindRE = regexp.MustCompile(entityKindPattern)

var topEntitiesTool = tool{
	spec: sdk.Tool{
		Name:  ToolTopEntities,
		Title: "Top entities in memory",
		Description: "List the entities memory mentions most: email addresses (kind email), URLs (url), " +
			"@handles (handle), #hashtags (hashtag) and dates (date, as YYYY-MM-DD), found in every stored " +
			"chunk. Ranked by how often they are mentioned, then by how recently. Pass an entity_id to " +
			"tree_browse (entity_ids) to list the chunks that mention it.",
		InputSchema: mustJSON(objectSchema(nil, map[string]any{
			"kind": map[string]any{
				"type": "string", "pattern": entityKindPattern,
				"description": "Only entities of this kind: email, url, handle, hashtag or date.",
			},
			"k": kSchema("entities"),
		})),
		OutputSchema: mustJSON(objectSchema([]string{"entities"}, map[string]any{
			"entities": map[string]any{
				"type": "array",
				"items": objectSchema([]string{"entity_id", "kind", "surface", "count", "chunk_count", "last_seen_ms"}, map[string]any{
					"entity_id":    map[string]any{"type": "string", "description": "<kind>:<normalised form>, e.g. email:ana@example.com."},
					"kind":         map[string]any{"type": "string"},
					"surface":      map[string]any{"type": "string", "description": "The entity as first written."},
					"count":        map[string]any{"type": "integer", "minimum": 1, "description": "Mentions across all chunks."},
					"chunk_count":  map[string]any{"type": "integer", "minimum": 1, "description": "Chunks that mention it."},
					"last_seen_ms": map[string]any{"type": "integer", "description": "Latest change of a chunk that mentions it, Unix milliseconds."},
				}),
			},
		})),
		Annotations: readAnnotations("Top entities in memory"),
		Class:       sdk.ClassRead,
	},
	run: runTopEntities,
}

func runTopEntities(ctx context.Context, _ *Provider, st *store, raw json.RawMessage) (*sdk.CallToolResult, error) {
	var args topEntitiesArgs
	if aerr := decodeArgs(raw, &args); aerr != nil {
		return nil, aerr
	}
	kind, aerr := optionalString("kind", args.Kind, 32)
	if aerr != nil {
		return nil, aerr
	}
	if kind != "" && !entityKindRE.MatchString(kind) {
		return nil, argErrorf("argument \"kind\" must be a kind such as email, url, handle, hashtag or date (lower-case letters, digits and _), got %s",
			quoteShort(kind))
	}
	k, aerr := intInRange("k", args.K, minK, maxK, defaultK)
	if aerr != nil {
		return nil, aerr
	}
	rows, err := st.topEntities(ctx, kind, k)
	if err != nil {
		return nil, err
	}
	if len(rows) == 0 && kind != "" {
		kinds, err := st.entityKinds(ctx)
		if err != nil {
			return nil, err
		}
		present := "there are no entities yet"
		if len(kinds) > 0 {
			present = "kinds present: " + strings.Join(kinds, ", ")
		}
		return sdk.StructuredResult(fmt.Sprintf("No entities of kind %s in memory; %s.", quoteShort(kind), present),
			topEntitiesResult{Entities: rows})
	}
	return sdk.StructuredResult(entitiesText(rows), topEntitiesResult{Entities: rows})
}

// entitiesText renders entities one line each.
func entitiesText(rows []entityRow) string {
	if len(rows) == 0 {
		return "No entities in memory yet."
	}
	var b strings.Builder
	for i, e := range rows {
		if i > 0 {
			b.WriteByte('\n')
		}
		fmt.Fprintf(&b, "%d. %s (%s) %s in %s, last %s", i+1, e.EntityID, quoteShort(e.Surface),
			plural(int(e.Count), "mention"), plural(int(e.ChunkCount), "chunk"), formatMS(e.LastSeenMS))
	}
	return b.String()
}
