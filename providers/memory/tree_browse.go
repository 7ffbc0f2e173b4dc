package memory

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/openhuman/openhuman-host/sdk"
)

// browseArgs are tree_browse's arguments. SinceMS and UntilMS are nil
// when the call leaves them out: 0 is a time. Offset is filled in with its
// default, 0, and MaxTokens is 0 when the call gives none.
type browseArgs struct {
	SourceKinds []string `json:"source_kinds,omitempty" jsonschema:"Keep chunks from sources of these kinds." schema:"maxItems=4,items.enum=chat|email|document|note"`
	SourceIDs   []string `json:"source_ids,omitempty" jsonschema:"Keep chunks from these sources, e.g. mcp:mcp." schema:"maxItems=100,items.minLength=1,items.maxLength=4096"`
	EntityIDs   []string `json:"entity_ids,omitempty" jsonschema:"Keep chunks that mention at least one of these entities, e.g. email:ana@example.com." schema:"maxItems=100,items.minLength=1,items.maxLength=300"`
	SinceMS     *int64   `json:"since_ms,omitempty" jsonschema:"Keep chunks changed at or after this time, Unix milliseconds." schema:"minimum=0,maximum=9007199254740991"`
	UntilMS     *int64   `json:"until_ms,omitempty" jsonschema:"Keep chunks changed before this time, Unix milliseconds." schema:"minimum=0,maximum=9007199254740991"`
	Query       string   `json:"query,omitempty" jsonschema:"Keep chunks that contain every word of this text (as memory_search matches)." schema:"minLength=1,maxLength=1024"`
	pageArgs
	MaxTokens int `json:"max_tokens,omitzero" jsonschema:"Upper bound on the size of the result, in tokens (estimated at 4 bytes each): chunks that do not fit are left for the next page (offset += the chunks returned)." schema:"minimum=100,maximum=1000000"`
	Offset    int `json:"offset,omitzero" jsonschema:"How many chunks to skip, for paging." schema:"minimum=0,maximum=1000000,default=0"`
}

// browseResult is tree_browse's structured content.
type browseResult struct {
	Chunks []browseHit `json:"chunks"`
	// Total counts every chunk that passes the filters, before offset and
	// k.
	Total  int64 `json:"total" jsonschema:"Chunks that pass the filters, before paging." schema:"minimum=0"`
	Offset int   `json:"offset" schema:"minimum=0"`
}

// browseTool is tree_browse's catalog entry; its schemas come from
// browseArgs and browseResult.
var browseTool = sdk.Tool{
	Name:  ToolBrowse,
	Title: "Browse memory",
	Description: "List memory chunks newest first (by last change), with filters: source kinds, " +
		"source ids (from tree_list_sources), entity ids (from tree_top_entities), a time range " +
		"and words that must all appear. Filters combine with AND; the values inside one list are " +
		"alternatives. Returns a page of k chunks starting at offset, and total, the number of chunks " +
		"that pass the filters: page with offset += k while offset < total. Each chunk has a snippet " +
		"(matches marked **like this** when query is given).",
	Annotations: readAnnotations("Browse memory"),
	Class:       sdk.ClassRead,
}

func runBrowse(ctx context.Context, _ *Provider, st *store, args browseArgs) (*sdk.CallToolResult, browseResult, error) {
	f, aerr := args.validate()
	if aerr != nil {
		return nil, browseResult{}, aerr
	}
	if ctx, aerr = narrowScope(ctx, args.Namespaces); aerr != nil {
		return nil, browseResult{}, aerr
	}
	offset := args.Offset
	if args.Query != "" && f.Match == "" {
		return sdk.TextResult(fmt.Sprintf("No chunks: the query %s has no letters or digits to search for.", quoteShort(args.Query))),
			browseResult{Chunks: []browseHit{}, Offset: offset}, nil
	}
	hits, total, err := st.browse(ctx, f, args.K, offset)
	if err != nil {
		return nil, browseResult{}, err
	}
	// Chunks that do not fit come on the next page.
	hits, _ = fitHits(hits, args.MaxTokens, func(h browseHit) string { return browseLine(offset, h) })
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
	return sdk.TextResult(text), browseResult{Chunks: hits, Total: total, Offset: offset}, nil
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

// validate checks what the input schema cannot and returns the filter.
func (a *browseArgs) validate() (browseFilter, *argError) {
	f := browseFilter{SinceMS: a.SinceMS, UntilMS: a.UntilMS}
	var aerr *argError
	if f.SourceKinds, aerr = stringList("source_kinds", a.SourceKinds, nil); aerr != nil {
		return f, aerr
	}
	if f.SourceIDs, aerr = stringList("source_ids", a.SourceIDs, func(s string) string {
		if scheme, rest, ok := strings.Cut(s, ":"); !ok || scheme == "" || rest == "" {
			return fmt.Sprintf("must be a source id such as mcp:<namespace> or file:<folder>, as tree_list_sources returns, got %s", quoteShort(s))
		}
		return ""
	}); aerr != nil {
		return f, aerr
	}
	if f.EntityIDs, aerr = stringList("entity_ids", a.EntityIDs, func(s string) string {
		if kind, key, ok := strings.Cut(s, ":"); !ok || !entityKindRE.MatchString(kind) || key == "" {
			return fmt.Sprintf("must be an entity id <kind>:<value> such as email:ana@example.com, as tree_top_entities returns, got %s", quoteShort(s))
		}
		return ""
	}); aerr != nil {
		return f, aerr
	}
	for i, id := range f.EntityIDs {
		f.EntityIDs[i] = normalizeEntityID(id)
	}
	for i, id := range f.SourceIDs {
		f.SourceIDs[i] = normalizeSourceID(id)
	}
	if f.SinceMS != nil && f.UntilMS != nil && *f.SinceMS >= *f.UntilMS {
		return f, argErrorf("argument \"since_ms\" (%d) must be less than \"until_ms\" (%d)", *f.SinceMS, *f.UntilMS)
	}
	query, aerr := optionalString("query", a.Query)
	if aerr != nil {
		return f, aerr
	}
	if terms := queryTerms(query); len(terms) > 0 {
		f.Match, f.Terms = matchAll(terms), terms
	}
	return f, nil
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
