package memory

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/openhuman/openhuman-host/sdk"
)

// browseArgs are tree_browse's arguments; integers are floats so that
// 10.0 decodes (the checks refuse fractions).
type browseArgs struct {
	SourceKinds []string `json:"source_kinds"`
	SourceIDs   []string `json:"source_ids"`
	EntityIDs   []string `json:"entity_ids"`
	SinceMS     *float64 `json:"since_ms"`
	UntilMS     *float64 `json:"until_ms"`
	Query       *string  `json:"query"`
	K           *float64 `json:"k"`
	Offset      *float64 `json:"offset"`
	Namespaces  []string `json:"namespaces"`
	MaxTokens   *float64 `json:"max_tokens"`
}

// browseResult is tree_browse's structured content.
type browseResult struct {
	Chunks []browseHit `json:"chunks"`
	// Total counts every chunk that passes the filters, before offset and
	// k.
	Total  int64 `json:"total"`
	Offset int   `json:"offset"`
}

var browseTool = tool{
	spec: sdk.Tool{
		Name:  ToolBrowse,
		Title: "Browse memory",
		Description: "List memory chunks newest first (by last change), with filters: source kinds, " +
			"source ids (from tree_list_sources), entity ids (from tree_top_entities), a time range " +
			"and words that must all appear. Filters combine with AND; the values inside one list are " +
			"alternatives. Returns a page of k chunks starting at offset, and total, the number of chunks " +
			"that pass the filters: page with offset += k while offset < total. Each chunk has a snippet " +
			"(matches marked **like this** when query is given).",
		InputSchema: mustJSON(objectSchema(nil, map[string]any{
			"source_kinds": map[string]any{
				"type":        "array",
				"maxItems":    len(sourceKinds),
				"items":       map[string]any{"type": "string", "enum": sourceKinds},
				"description": "Keep chunks from sources of these kinds.",
			},
			"source_ids": map[string]any{
				"type":        "array",
				"maxItems":    maxFilterItems,
				"items":       map[string]any{"type": "string", "minLength": 1, "maxLength": maxSourceIDRunes},
				"description": "Keep chunks from these sources, e.g. mcp:mcp.",
			},
			"entity_ids": map[string]any{
				"type":        "array",
				"maxItems":    maxFilterItems,
				"items":       map[string]any{"type": "string", "minLength": 1, "maxLength": maxEntityIDRunes},
				"description": "Keep chunks that mention at least one of these entities, e.g. email:ana@example.com.",
			},
			"since_ms": map[string]any{
				"type": "integer", "minimum": 0, "maximum": maxSafeInteger,
				"description": "Keep chunks changed at or after this time, Unix milliseconds.",
			},
			"until_ms": map[string]any{
				"type": "integer", "minimum": 0, "maximum": maxSafeInteger,
				"description": "Keep chunks changed before this time, Unix milliseconds.",
			},
			"query": map[string]any{
				"type": "string", "minLength": 1, "maxLength": maxQueryRunes,
				"description": "Keep chunks that contain every word of this text (as memory_search matches).",
			},
			"k":          kSchema("chunks"),
			"namespaces": namespacesSchema(),
			"max_tokens": maxTokensSchema("chunks that do not fit are left for the next page (offset += the chunks returned)."),
			"offset": map[string]any{
				"type": "integer", "minimum": 0, "maximum": maxOffset, "default": 0,
				"description": "How many chunks to skip, for paging.",
			},
		})),
		OutputSchema: mustJSON(objectSchema([]string{"chunks", "total", "offset"}, map[string]any{
			"chunks": map[string]any{
				"type": "array",
				"items": hitSchema([]string{"snippet"}, map[string]any{
					"snippet": map[string]any{"type": "string", "description": "The start of the chunk, or an excerpt with matches marked **like this** when query is given."},
				}),
			},
			"total":  map[string]any{"type": "integer", "minimum": 0, "description": "Chunks that pass the filters, before paging."},
			"offset": map[string]any{"type": "integer", "minimum": 0},
		})),
		Annotations: readAnnotations("Browse memory"),
		Class:       sdk.ClassRead,
	},
	run: runBrowse,
}

func runBrowse(ctx context.Context, _ *Provider, st *store, raw json.RawMessage) (*sdk.CallToolResult, error) {
	var args browseArgs
	if aerr := decodeArgs(raw, &args); aerr != nil {
		return nil, aerr
	}
	f, k, offset, aerr := args.validate()
	if aerr != nil {
		return nil, aerr
	}
	if ctx, aerr = narrowScope(ctx, args.Namespaces); aerr != nil {
		return nil, aerr
	}
	budget, aerr := parseMaxTokens(args.MaxTokens)
	if aerr != nil {
		return nil, aerr
	}
	if args.Query != nil && f.Match == "" {
		return sdk.StructuredResult(
			fmt.Sprintf("No chunks: the query %s has no letters or digits to search for.", quoteShort(*args.Query)),
			browseResult{Chunks: []browseHit{}, Offset: offset})
	}
	hits, total, err := st.browse(ctx, f, k, offset)
	if err != nil {
		return nil, err
	}
	// Chunks that do not fit come on the next page.
	hits, _ = fitHits(hits, budget, func(h browseHit) string { return browseLine(offset, h) })
	text := browseText(hits, total, offset)
	for _, b := range []struct {
		name string
		v    *int64
	}{{"since_ms", f.SinceMS}, {"until_ms", f.UntilMS}} {
		// Before 1973-03-03 in milliseconds is a time in seconds after
		// 1970-01-01 by mistake, most likely.
		if b.v != nil && *b.v > 0 && *b.v < 100_000_000_000 {
			text += fmt.Sprintf("\nNote: %s %d is %s; times are Unix milliseconds: if you meant seconds, multiply by 1000.",
				b.name, *b.v, formatMS(*b.v))
		}
	}
	return sdk.StructuredResult(text, browseResult{Chunks: hits, Total: total, Offset: offset})
}

// normalizeEntityID writes an entity id the way the default extractor
// stores it: emails, handles and hashtags in lower case (with their @ or #),
// URLs with a lower-case scheme and host, so email:Ana@Example.com finds
// email:ana@example.com and hashtag:launch finds hashtag:#launch.
func normalizeEntityID(id string) string {
	kind, key, _ := strings.Cut(id, ":")
	switch kind {
	case EntityEmail:
		return kind + ":" + strings.ToLower(key)
	case EntityHandle:
		return kind + ":@" + strings.ToLower(strings.TrimPrefix(key, "@"))
	case EntityHashtag:
		return kind + ":#" + strings.ToLower(strings.TrimPrefix(key, "#"))
	case EntityURL:
		// Scheme and host are stored in lower case; the path is kept.
		if scheme, rest, ok := strings.Cut(key, "://"); ok {
			end := strings.IndexAny(rest, "/?#")
			if end < 0 {
				end = len(rest)
			}
			return kind + ":" + strings.ToLower(scheme) + "://" + strings.ToLower(rest[:end]) + rest[end:]
		}
	}
	return id
}

// normalizeSourceID lower-cases a source id's scheme (mcp, file) and drops
// a trailing slash from a file: folder, as sources are stored.
func normalizeSourceID(id string) string {
	scheme, rest, _ := strings.Cut(id, ":")
	scheme = strings.ToLower(scheme)
	if scheme == "file" && len(rest) > 1 {
		rest = strings.TrimRight(rest, "/")
		if rest == "" {
			rest = "/"
		}
	}
	return scheme + ":" + rest
}

// validate checks the arguments and returns the filter, k and offset.
func (a *browseArgs) validate() (browseFilter, int, int, *argError) {
	var f browseFilter
	var aerr *argError
	if f.SourceKinds, aerr = stringList("source_kinds", a.SourceKinds, len(sourceKinds), 16, func(s string) string {
		if !slices.Contains(sourceKinds, s) {
			return fmt.Sprintf("must be one of %s, got %s", strings.Join(sourceKinds, ", "), quoteShort(s))
		}
		return ""
	}); aerr != nil {
		return f, 0, 0, aerr
	}
	if f.SourceIDs, aerr = stringList("source_ids", a.SourceIDs, maxFilterItems, maxSourceIDRunes, func(s string) string {
		if scheme, rest, ok := strings.Cut(s, ":"); !ok || scheme == "" || rest == "" {
			return fmt.Sprintf("must be a source id such as mcp:<namespace> or file:<folder>, as tree_list_sources returns, got %s", quoteShort(s))
		}
		return ""
	}); aerr != nil {
		return f, 0, 0, aerr
	}
	if f.EntityIDs, aerr = stringList("entity_ids", a.EntityIDs, maxFilterItems, maxEntityIDRunes, func(s string) string {
		if kind, key, ok := strings.Cut(s, ":"); !ok || !entityKindRE.MatchString(kind) || key == "" {
			return fmt.Sprintf("must be an entity id <kind>:<value> such as email:ana@example.com, as tree_top_entities returns, got %s", quoteShort(s))
		}
		return ""
	}); aerr != nil {
		return f, 0, 0, aerr
	}
	for i, id := range f.EntityIDs {
		f.EntityIDs[i] = normalizeEntityID(id)
	}
	for i, id := range f.SourceIDs {
		f.SourceIDs[i] = normalizeSourceID(id)
	}
	if f.SinceMS, aerr = optionalInt64("since_ms", a.SinceMS, 0, maxSafeInteger); aerr != nil {
		return f, 0, 0, aerr
	}
	if f.UntilMS, aerr = optionalInt64("until_ms", a.UntilMS, 0, maxSafeInteger); aerr != nil {
		return f, 0, 0, aerr
	}
	if f.SinceMS != nil && f.UntilMS != nil && *f.SinceMS >= *f.UntilMS {
		return f, 0, 0, argErrorf("argument \"since_ms\" (%d) must be less than \"until_ms\" (%d)", *f.SinceMS, *f.UntilMS)
	}
	query, aerr := optionalString("query", a.Query, maxQueryRunes)
	if aerr != nil {
		return f, 0, 0, aerr
	}
	if terms := queryTerms(query); len(terms) > 0 {
		f.Match, f.Terms = matchAll(terms), terms
	}
	k, aerr := intInRange("k", a.K, minK, maxK, defaultK)
	if aerr != nil {
		return f, 0, 0, aerr
	}
	offset, aerr := intInRange("offset", a.Offset, 0, maxOffset, 0)
	if aerr != nil {
		return f, 0, 0, aerr
	}
	return f, k, offset, nil
}

// browseText renders a page of browse hits, one line each.
func browseText(hits []browseHit, total int64, offset int) string {
	if total == 0 {
		return "No chunks pass these filters. Source ids come from tree_list_sources, entity ids from tree_top_entities."
	}
	if len(hits) == 0 {
		return fmt.Sprintf("No chunks at offset %d: %s pass these filters.", offset, plural(int(total), "chunk"))
	}
	var b strings.Builder
	fmt.Fprintf(&b, "Chunks %d-%d of %d, newest first:", offset+1, offset+len(hits), total)
	for i, h := range hits {
		b.WriteString("\n" + browseLine(offset+i, h))
	}
	if next := int64(offset + len(hits)); next < total {
		fmt.Fprintf(&b, "\nMore: call again with offset %d.", next)
	}
	return b.String()
}

// browseLine renders the chunk at position i (from 0) of a browse.
func browseLine(i int, h browseHit) string {
	return fmt.Sprintf("%d. %s %s%s (%s, seq %d, %s): %s",
		i+1, h.ChunkID, quoteShort(oneLine(h.Title)), noteSuffix(h.chunkRef), h.DocumentID, h.Seq, formatMS(h.UpdatedMS), oneLine(h.Snippet))
}

// noteSuffix marks a chunk of a note in text results.
func noteSuffix(r chunkRef) string {
	if r.AnnotatesChunkID == "" {
		return ""
	}
	return " [note on " + r.AnnotatesChunkID + "]"
}

// formatMS renders Unix milliseconds as a UTC time for text results.
func formatMS(ms int64) string {
	return time.UnixMilli(ms).UTC().Format("2006-01-02 15:04 UTC")
}
