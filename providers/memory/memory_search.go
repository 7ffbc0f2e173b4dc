package memory

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/openhuman/openhuman-host/sdk"
)

// searchArgs are memory.search's arguments. K is a float so that 10.0, an
// integer in JSON Schema, decodes; intInRange refuses fractions.
type searchArgs struct {
	Query *string  `json:"query"`
	K     *float64 `json:"k"`
}

// searchResult is memory.search's structured content.
type searchResult struct {
	Chunks []searchHit `json:"chunks"`
}

// searchHit is one ranked chunk.
type searchHit struct {
	ChunkID    string  `json:"chunk_id" gorm:"column:chunk_id"`
	DocumentID string  `json:"document_id" gorm:"column:document_id"`
	Title      string  `json:"title" gorm:"column:title"`
	Namespace  string  `json:"namespace" gorm:"column:namespace"`
	SourceID   string  `json:"source_id" gorm:"column:source_id"`
	Seq        int     `json:"seq" gorm:"column:seq"`
	Snippet    string  `json:"snippet" gorm:"column:snippet"`
	Score      float64 `json:"score" gorm:"column:score"`
	UpdatedMS  int64   `json:"updated_ms" gorm:"column:updated_ms"`
}

func runSearch(ctx context.Context, _ *Provider, st *store, raw json.RawMessage) (*sdk.CallToolResult, error) {
	var args searchArgs
	if aerr := decodeArgs(raw, &args); aerr != nil {
		return sdk.ErrorResult("%s: %s", ToolSearch, aerr), nil
	}
	query, aerr := requiredString("query", args.Query, maxQueryRunes)
	if aerr != nil {
		return sdk.ErrorResult("%s: %s", ToolSearch, aerr), nil
	}
	k, aerr := intInRange("k", args.K, minK, maxK, defaultK)
	if aerr != nil {
		return sdk.ErrorResult("%s: %s", ToolSearch, aerr), nil
	}
	words := queryWords(query)
	if len(words) == 0 {
		return sdk.StructuredResult(
			fmt.Sprintf("No results: the query %s has no letters or digits to search for.", quoteShort(query)),
			searchResult{Chunks: []searchHit{}})
	}
	hits, err := st.search(ctx, matchAll(words), k)
	if err != nil {
		return nil, err
	}
	return sdk.StructuredResult(searchText(words, hits), searchResult{Chunks: hits})
}

// searchText renders hits one line each, best first.
func searchText(words []string, hits []searchHit) string {
	if len(hits) == 0 {
		return fmt.Sprintf("No chunks contain all of: %s.", strings.Join(words, " "))
	}
	var b strings.Builder
	for i, h := range hits {
		if i > 0 {
			b.WriteByte('\n')
		}
		fmt.Fprintf(&b, "%d. %s score=%.3f %s (%s, seq %d): %s",
			i+1, h.ChunkID, h.Score, quoteShort(oneLine(h.Title)), h.DocumentID, h.Seq, oneLine(h.Snippet))
	}
	return b.String()
}

// oneLine collapses every run of whitespace, newlines included, to a space.
func oneLine(s string) string {
	return strings.Join(strings.Fields(s), " ")
}
