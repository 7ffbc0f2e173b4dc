package memory

import (
	"context"
	"fmt"
	"strings"

	"github.com/openhuman/openhuman-host/sdk"
)

// pageArgs are the arguments that page and scope a list of chunks:
// memory_search, memory_recall and tree_browse embed them. K is filled in
// with its default when the call leaves it out.
type pageArgs struct {
	K          int      `json:"k,omitzero" jsonschema:"Maximum number of chunks to return, 1 to 50." schema:"minimum=1,maximum=50,default=10"`
	Namespaces []string `json:"namespaces,omitempty" jsonschema:"Only these namespaces, e.g. [\"mcp\"] or [\"file\"]; leave it out, or give [\"*\"], to cover every namespace this client may read." schema:"maxItems=100,items.pattern=^(\\*|[A-Za-z0-9_.-]{1,64})$"`
}

// rankArgs are the arguments memory_search and memory_recall share
// besides their query. MaxTokens is 0 when the call gives none.
type rankArgs struct {
	pageArgs
	MaxTokens int `json:"max_tokens,omitzero" jsonschema:"Upper bound on the size of the result, in tokens (estimated at 4 bytes each): hits that do not fit are left out, best kept, and the result says truncated." schema:"minimum=100,maximum=1000000"`
}

// searchArgs are memory_search's arguments.
type searchArgs struct {
	Query string `json:"query" jsonschema:"Words to look for; all must match, common function words aside. \"A phrase\" and prefix* are understood." schema:"minLength=1,maxLength=1024"`
	rankArgs
}

// narrowScope checks a namespaces argument and returns ctx with the
// caller's scope narrowed to it.
func narrowScope(ctx context.Context, namespaces []string) (context.Context, *argError) {
	asked, aerr := stringList("namespaces", namespaces, nil)
	if aerr != nil {
		return ctx, aerr
	}
	sc, aerr := scopeOf(ctx).narrow(asked)
	if aerr != nil {
		return ctx, aerr
	}
	return withScope(ctx, sc), nil
}

// searchResult is memory_search's structured content.
type searchResult struct {
	Chunks []searchHit `json:"chunks"`
	// Truncated is set when max_tokens left out hits that matched.
	Truncated bool `json:"truncated,omitempty" jsonschema:"Present when max_tokens left out hits that matched."`
}

func runSearch(ctx context.Context, _ *Provider, st *store, args searchArgs) (*sdk.CallToolResult, searchResult, error) {
	ctx, aerr := narrowScope(ctx, args.Namespaces)
	if aerr != nil {
		return nil, searchResult{}, aerr
	}
	query := strings.TrimSpace(args.Query)
	terms := contentTerms(queryTerms(query))
	if len(terms) == 0 {
		return sdk.TextResult(fmt.Sprintf("No results: the query %s has no letters or digits to search for.", quoteShort(query))),
			searchResult{Chunks: []searchHit{}}, nil
	}
	hits, err := st.search(ctx, terms, args.K)
	if err != nil {
		return nil, searchResult{}, err
	}
	res := searchResult{Chunks: hits}
	res.Chunks, res.Truncated = fitHits(hits, args.MaxTokens, func(h searchHit) string { return searchLine(0, h) })
	text := searchText(terms, res.Chunks)
	if res.Truncated {
		text += fmt.Sprintf("\n%d more chunks matched but did not fit max_tokens %d; raise it or lower k.", len(hits)-len(res.Chunks), args.MaxTokens)
	}
	return sdk.TextResult(text), res, nil
}

// searchText renders hits one line each, best first.
func searchText(terms []queryTerm, hits []searchHit) string {
	if len(hits) == 0 {
		return fmt.Sprintf("No chunks contain all of: %s.", termList(terms))
	}
	return joinLines(hits, searchLine)
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

// joinLines renders items one line each, in order, with line(i, item)
// rendering the item at index i (from 0); "" when there are none.
func joinLines[T any](items []T, line func(i int, item T) string) string {
	var b strings.Builder
	for i, item := range items {
		if i > 0 {
			b.WriteByte('\n')
		}
		b.WriteString(line(i, item))
	}
	return b.String()
}

// searchTool is memory_search's catalog entry; its schemas come from
// searchArgs and searchResult.
var searchTool = sdk.Tool{
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
	Annotations: readAnnotations("Search memory"),
	Class:       sdk.ClassRead,
}
