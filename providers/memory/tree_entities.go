package memory

import (
	"context"
	"fmt"
	"regexp"
	"strings"

	"github.com/openhuman/openhuman-host/sdk"
)

// topEntitiesArgs are tree_top_entities' arguments; K is filled in with
// its default when the call leaves it out.
type topEntitiesArgs struct {
	Kind string `json:"kind,omitempty" jsonschema:"Only entities of this kind: email, url, handle, hashtag or date." schema:"pattern=^[a-z][a-z0-9_]{0,31}$"`
	K    int    `json:"k,omitzero" jsonschema:"Maximum number of entities to return, 1 to 50." schema:"minimum=1,maximum=50,default=10"`
}

// topEntitiesResult is tree_top_entities' structured content.
type topEntitiesResult struct {
	Entities []entityRow `json:"entities"`
}

// entityKindPattern is what an entity kind looks like; the default
// extractor's kinds and those of added extractors all match it, and so
// must the kind argument (its schema tag says so).
const entityKindPattern = `^[a-z][a-z0-9_]{0,31}$`

var entityKindRE = regexp.MustCompile(entityKindPattern)

// topEntitiesTool is tree_top_entities' catalog entry; its schemas come
// from topEntitiesArgs and topEntitiesResult.
var topEntitiesTool = sdk.Tool{
	Name:  ToolTopEntities,
	Title: "Top entities in memory",
	Description: "List the entities memory mentions most: email addresses (kind email), URLs (url), " +
		"@handles (handle), #hashtags (hashtag) and dates (date, as YYYY-MM-DD), found in every stored " +
		"chunk. Ranked by how often they are mentioned, then by how recently. Pass an entity_id to " +
		"tree_browse (entity_ids) to list the chunks that mention it.",
	Annotations: readAnnotations("Top entities in memory"),
	Class:       sdk.ClassRead,
}

func runTopEntities(ctx context.Context, _ *Provider, st *store, args topEntitiesArgs) (*sdk.CallToolResult, topEntitiesResult, error) {
	kind := args.Kind
	rows, err := st.topEntities(ctx, kind, args.K)
	if err != nil {
		return nil, topEntitiesResult{}, err
	}
	if len(rows) == 0 && kind != "" {
		kinds, err := st.entityKinds(ctx)
		if err != nil {
			return nil, topEntitiesResult{}, err
		}
		present := "there are no entities yet"
		if len(kinds) > 0 {
			present = "kinds present: " + strings.Join(kinds, ", ")
		}
		return sdk.TextResult(fmt.Sprintf("No entities of kind %s in memory; %s.", quoteShort(kind), present)),
			topEntitiesResult{Entities: rows}, nil
	}
	return sdk.TextResult(entitiesText(rows)), topEntitiesResult{Entities: rows}, nil
}

// entitiesText renders entities one line each.
func entitiesText(rows []entityRow) string {
	if len(rows) == 0 {
		return "No entities in memory yet."
	}
	return joinLines(rows, func(i int, e entityRow) string {
		return fmt.Sprintf("%d. %s (%s) %s in %s, last %s", i+1, e.EntityID, quoteShort(e.Surface),
			plural(int(e.Count), "mention"), plural(int(e.ChunkCount), "chunk"), formatMS(e.LastSeenMS))
	})
}
