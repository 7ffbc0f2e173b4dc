package memory

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/openhuman/openhuman-host/sdk"
)

// queryArgs are the arguments of memory_search and memory_recall. K is a
// float so that 10.0, an integer in JSON Schema, decodes; intInRange
// refuses fractions.
type queryArgs struct {
	Query      *string  `json:"query"`
	K          *float64 `json:"k"`
	Namespaces []string `json:"namespaces"`
	MaxTokens  *float64 `json:"max_tokens"`
}

// queryParams are the checked arguments of memory_search and
// memory_recall.
type queryParams struct {
	query string
	k     int
	// maxTokens is the result's budget, 0 for none.
	maxTokens int
}

// parseQueryArgs decodes and checks a query, k, namespaces and max_tokens,
// and returns ctx narrowed to the namespaces asked for.
func parseQueryArgs(ctx context.Context, raw json.RawMessage) (context.Context, queryParams, error) {
	var (
		args queryArgs
		qp   queryParams
		aerr *argError
	)
	if aerr = decodeArgs(raw, &args); aerr != nil {
		return ctx, qp, aerr
	}
	if qp.query, aerr = requiredString("query", args.Query, maxQueryRunes); aerr != nil {
		return ctx, qp, aerr
	}
	if qp.k, aerr = intInRange("k", args.K, minK, maxK, defaultK); aerr != nil {
		return ctx, qp, aerr
	}
	if qp.maxTokens, aerr = parseMaxTokens(args.MaxTokens); aerr != nil {
		return ctx, qp, aerr
	}
	if ctx, aerr = narrowScope(ctx, args.Namespaces); aerr != nil {
		return ctx, qp, aerr
	}
	return ctx, qp, nil
}

// narrowScope checks a namespaces argument and returns ctx with the
// caller's scope narrowed to it.
func narrowScope(ctx context.Context, namespaces []string) (context.Context, *argError) {
	asked, aerr := stringList("namespaces", namespaces, maxFilterItems, 64, func(ns string) string {
		if ns != anyNamespace && !namespaceRE.MatchString(ns) {
			return `must match ` + namespacePattern + ` or be "*"`
		}
		return ""
	})
	if aerr != nil {
		return ctx, aerr
	}
	sc, aerr := scopeOf(ctx).narrow(asked)
	if aerr != nil {
		return ctx, aerr
	}
	return withScope(ctx, sc), nil
}

// namespacesSchema is the input schema of a namespaces argument.
func namespacesSchema() map[string]any {
	return map[string]any{
		"type":     "array",
		"maxItems": maxFilterItems,
		"items":    map[string]any{"type": "string", "pattern": `^(\*|[A-Za-z0-9_.-]{1,64})$`},
		"description": "Only these namespaces, e.g. [\"mcp\"] or [\"file\"]; leave it out, or give [\"*\"], " +
			"to cover every namespace this client may read.",
	}
}

// searchResult is memory_search's structured content.
type searchResult struct {
	Chunks []searchHit `json:"chunks"`
	// Truncated is set when max_tokens left out hits that matched.
	Truncated bool `json:"truncated,omitempty"`
}

func runSearch(ctx context.Context, _ *Provider, st *store, raw json.RawMessage) (*sdk.CallToolResult, error) {
	ctx, qp, err := parseQueryArgs(ctx, raw)
	if err != nil {
		return nil, err
	}
	query, k := qp.query, qp.k
	terms := contentTerms(queryTerms(query))
	if len(terms) == 0 {
		return sdk.StructuredResult(
			fmt.Sprintf("No results: the query %s has no letters or digits to search for.", quoteShort(query)),
			searchResult{Chunks: []searchHit{}})
	}
	hits, err := st.search(ctx, terms, k)
	if err != nil {
		return nil, err
	}
	res := searchResult{Chunks: hits}
	res.Chunks, res.Truncated = fitHits(hits, qp.maxTokens, func(h searchHit) string { return searchLine(0, h) })
	text := searchText(terms, res.Chunks)
	if res.Truncated {
		text += fmt.Sprintf("\n%d more chunks matched but did not fit max_tokens %d; raise it or lower k.", len(hits)-len(res.Chunks), qp.maxTokens)
	}
	return sdk.StructuredResult(text, res)
}

// searchText renders hits one line each, best first.
func searchText(terms []queryTerm, hits []searchHit) string {
	if len(hits) == 0 {
		return fmt.Sprintf("No chunks contain all of: %s.", termList(terms))
	}
	var b strings.Builder
	for i, h := range hits {
		if i > 0 {
			b.WriteByte('\n')
		}
		b.WriteString(searchLine(i, h))
	}
	return b.String()
}

// searchLine renders the i-th hit (from 0) of a search.
func searchLine(i int, h searchHit) string {
	return fmt.Sprintf("%d. %s score=%.3g %s%s (%s, seq %d): %s",
		i+1, h.ChunkID, h.Score, quoteShort(oneLine(h.Title)), noteSuffix(h.chunkRef), h.DocumentID, h.Seq, oneLine(h.Snippet))
}

// oneLine collapses every run of whitespace, newlines included, to a space.
func oneLine(s string) string {
	return strings.Join(strings.Fields(s), " ")
}

var searchTool = tool{
	spec: sdk.Tool{
		Name:  ToolSearch,
		Title: "Search memory",
		Description: "Keyword search over everything stored in memory: the notes, documents and files saved, written " +
			"down or imported earlier. Returns up to k chunks, best first, " +
			"ranked by BM25 over every match, with matches in a document's title counting more than matches in its body. " +
			"Every word of the query must appear in a chunk (its text, its document's title or its tags), except " +
			"common English function words (the, how, do, I, ...), which are ignored unless the query has nothing else; matching " +
			"ignores case, accents and English word endings (ship finds ships). Two forms are understood: " +
			"\"words in double quotes\" must appear together in that order, and a word followed by * matches " +
			"every word that starts with it (config* finds configuration); other punctuation only separates words. " +
			"Use a few distinctive keywords; if nothing comes back, try fewer or other words. Each hit " +
			"has a snippet with the matches marked **like this**; pass its chunk_id to tree_read_chunk " +
			"for the full text. To ask a question in natural language, use memory_recall instead.",
		InputSchema: mustJSON(objectSchema([]string{"query"}, map[string]any{
			"query": map[string]any{
				"type":        "string",
				"minLength":   1,
				"maxLength":   maxQueryRunes,
				"description": "Words to look for; all must match, common function words aside. \"A phrase\" and prefix* are understood.",
			},
			"k":          kSchema("chunks"),
			"namespaces": namespacesSchema(),
			"max_tokens": maxTokensSchema("hits that do not fit are left out, best kept, and the result says truncated."),
		})),
		OutputSchema: mustJSON(objectSchema([]string{"chunks"}, map[string]any{
			"chunks": map[string]any{
				"type": "array",
				"items": hitSchema([]string{"snippet", "score"}, map[string]any{
					"snippet": map[string]any{"type": "string", "description": "Excerpt of the chunk with matches marked **like this**."},
					"score":   map[string]any{"type": "number", "exclusiveMinimum": 0, "description": "BM25 relevance; higher is better."},
				}),
			},
			"truncated": map[string]any{"type": "boolean", "description": "Present when max_tokens left out hits that matched."},
		})),
		Annotations: readAnnotations("Search memory"),
		Class:       sdk.ClassRead,
	},
	run: runSearch,
}
