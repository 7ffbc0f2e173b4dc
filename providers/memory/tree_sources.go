package memory

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/openhuman/openhuman-host/sdk"
)

// listSourcesArgs are tree_list_sources' arguments.
type listSourcesArgs struct {
	UserEmailHint string `json:"user_email_hint,omitempty" jsonschema:"The user's own email address, e.g. ana@example.com." schema:"minLength=3,maxLength=254"`
}

// listSourcesResult is tree_list_sources' structured content.
type listSourcesResult struct {
	Sources []sourceView `json:"sources"`
}

// listSourcesTool is tree_list_sources' catalog entry; its schemas come
// from listSourcesArgs and listSourcesResult.
var listSourcesTool = sdk.Tool{
	Name:  ToolListSources,
	Title: "List memory sources",
	Description: "List where memory comes from: each source (memory_store namespaces as mcp:<namespace>, " +
		"imported folders as file:<directory>) with a display name, its kind (chat, email, document " +
		"or note), how many chunks it holds and when it last changed, most recent first. Give the " +
		"user's own email address as user_email_hint to see, per source, how many chunks mention the " +
		"user (user_mention_count); sources that mention the user most come first. Pass a source_id " +
		"to tree_browse (source_ids) to list its chunks.",
	Annotations: readAnnotations("List memory sources"),
	Class:       sdk.ClassRead,
}

func runListSources(ctx context.Context, _ *Provider, st *store, args listSourcesArgs) (*sdk.CallToolResult, listSourcesResult, error) {
	hint, aerr := optionalString("user_email_hint", args.UserEmailHint)
	if aerr != nil {
		return nil, listSourcesResult{}, aerr
	}
	if hint != "" && !looksLikeEmail(hint) {
		return nil, listSourcesResult{}, argErrorf("argument \"user_email_hint\" must be an email address such as ana@example.com, got %s",
			quoteShort(hint))
	}
	sources, err := st.listSources(ctx)
	if err != nil {
		return nil, listSourcesResult{}, err
	}
	if hint != "" {
		counts, err := st.mentionsBySource(ctx, EntityEmail+":"+strings.ToLower(hint))
		if err != nil {
			return nil, listSourcesResult{}, err
		}
		for i := range sources {
			n := counts[sources[i].SourceID]
			sources[i].UserMentionCount = &n
		}
		// Stable: sources without mentions keep their recency order.
		slices.SortStableFunc(sources, func(a, b sourceView) int {
			return int(*b.UserMentionCount - *a.UserMentionCount)
		})
	}
	return sdk.TextResult(sourcesText(sources)), listSourcesResult{Sources: sources}, nil
}

// looksLikeEmail reports whether s has the shape local@domain with no
// spaces.
func looksLikeEmail(s string) bool {
	local, domain, ok := strings.Cut(s, "@")
	return ok && local != "" && domain != "" && !strings.ContainsAny(s, " \t\r\n") && !strings.Contains(domain, "@")
}

// sourcesText renders sources one line each.
func sourcesText(sources []sourceView) string {
	if len(sources) == 0 {
		return "Memory is empty: no sources yet."
	}
	return joinLines(sources, func(i int, s sourceView) string {
		line := fmt.Sprintf("%d. %s (%s, %s): %s, last change %s", i+1, s.SourceID, s.SourceKind, quoteShort(s.DisplayName),
			plural(int(s.ChunkCount), "chunk"), formatMS(s.MostRecentMS))
		if s.UserMentionCount != nil {
			line += fmt.Sprintf(", %s mention the user", plural(int(*s.UserMentionCount), "chunk"))
		}
		return line
	})
}
