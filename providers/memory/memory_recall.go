package memory

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/openhuman/openhuman-host/sdk"
	"github.com/openhuman/openhuman-host/sdk/embeddings"
)

// Recall modes, reported in every memory_recall result.
const (
	// recallHybrid fuses cosine similarity over embeddings with BM25.
	recallHybrid = "hybrid"
	// recallKeyword ranks by BM25 over any of the query's words.
	recallKeyword = "keyword"
)

const (
	// rrfK is reciprocal rank fusion's constant: a chunk at rank r of a
	// ranking scores 1/(rrfK + r). 60 is the value of the original paper
	// (Cormack, Clarke and Büttcher, SIGIR 2009).
	rrfK = 60
	// recallCandidates is how many chunks each ranking contributes before
	// fusion.
	recallCandidates = 100
)

// recallArgs are memory_recall's arguments.
type recallArgs struct {
	Query string `json:"query" jsonschema:"A question or description of what to find." schema:"minLength=1,maxLength=1024"`
	rankArgs
}

// recallResult is memory_recall's structured content.
type recallResult struct {
	Mode   string      `json:"mode" schema:"enum=hybrid|keyword"`
	Chunks []recallHit `json:"chunks"`
	// FallbackReason says why an embedder that is configured was not
	// used for this call.
	FallbackReason string `json:"fallback_reason,omitempty" jsonschema:"Why keyword mode ran although an embeddings endpoint is configured."`
	// WithoutEmbedding counts, in hybrid mode, the chunks that have no
	// embedding of the configured model yet (the backfill is on it): they
	// are ranked by keywords only.
	WithoutEmbedding int64 `json:"without_embedding,omitempty" jsonschema:"Hybrid mode: chunks that have no embedding yet and are ranked by keywords only." schema:"minimum=1"`
	// Truncated is set when max_tokens left out hits that were found.
	Truncated bool `json:"truncated,omitempty" jsonschema:"Present when max_tokens left out hits that were found."`
}

// recallHit is one chunk of memory_recall.
type recallHit struct {
	chunkRef
	Snippet string  `json:"snippet" jsonschema:"Excerpt of the chunk; keyword matches marked **like this**."`
	Score   float64 `json:"score" jsonschema:"Relevance; higher is better. Reciprocal rank fusion in hybrid mode, BM25 in keyword mode." schema:"exclusiveMinimum=0"`
	// Similarity is the cosine similarity of the chunk's embedding to the
	// query's, in hybrid mode, for chunks that have an embedding.
	Similarity *float64 `json:"similarity,omitempty" jsonschema:"Hybrid mode only: cosine similarity of the chunk to the query." schema:"minimum=-1,maximum=1"`
}

// recallTool is memory_recall's catalog entry; its schemas come from
// recallArgs and recallResult.
var recallTool = sdk.Tool{
	Name:  ToolRecall,
	Title: "Recall from memory",
	Description: "Find the memory chunks that best answer a question or match a description in " +
		"natural language, e.g. \"what did we decide about the launch date?\". When the operator " +
		"configured an embeddings endpoint, chunks are ranked by meaning (cosine similarity of " +
		"embeddings) fused with keyword relevance (mode \"hybrid\"); otherwise by keyword relevance " +
		"over any of the question's words (mode \"keyword\"). The result says which mode ran. Use " +
		"memory_search instead for exact keywords that must all appear.",
	Annotations: readAnnotations("Recall from memory"),
	Class:       sdk.ClassRead,
}

func runRecall(ctx context.Context, p *Provider, st *store, args recallArgs) (*sdk.CallToolResult, recallResult, error) {
	ctx, aerr := narrowScope(ctx, args.Namespaces)
	if aerr != nil {
		return nil, recallResult{}, aerr
	}
	query := strings.TrimSpace(args.Query)
	res, err := p.recall(ctx, st, query, args.K)
	if err != nil {
		return nil, recallResult{}, err
	}
	all := len(res.Chunks)
	res.Chunks, res.Truncated = fitHits(res.Chunks, args.MaxTokens, func(h recallHit) string { return recallLine(0, h) })
	text := recallText(query, res)
	if res.Truncated {
		text += fmt.Sprintf("\n%d more chunks were found but did not fit max_tokens %d; raise it or lower k.", all-len(res.Chunks), args.MaxTokens)
	}
	return sdk.TextResult(text), res, nil
}

// recall ranks chunks for query; see memory_recall's description.
func (p *Provider) recall(ctx context.Context, st *store, query string, k int) (recallResult, error) {
	res := recallResult{Mode: recallKeyword, Chunks: []recallHit{}}
	content := contentTerms(queryTerms(query))
	match := st.matchAny(content)

	var similar []rankedPK
	if emb := p.embedder; emb != nil && p.endpointPaused() != "" {
		res.FallbackReason = "the embeddings endpoint failed less than a minute ago: " + p.endpointPaused()
	} else if emb != nil {
		ectx, cancel := context.WithTimeout(ctx, syncEmbedBudget)
		vecs, err := emb.Embed(ectx, []string{query})
		cancel()
		switch {
		case err != nil:
			if ctx.Err() != nil {
				return res, ctx.Err()
			}
			if !embeddings.IsTextRefusal(err) {
				p.endpointFailed(err)
			}
			p.logger.Warn("embedding the recall query failed; ranking by keywords", "error", err)
			res.FallbackReason = "the embeddings endpoint failed: " + redactEndpointError(err)
		default:
			p.dims.Store(int64(len(vecs[0])))
			similar, err = st.nearest(ctx, emb.Model(), vecs[0], recallCandidates)
			if err != nil {
				return res, err
			}
			with, without, err := st.embeddingStats(ctx, emb.Model(), len(vecs[0]))
			if err != nil {
				return res, err
			}
			if len(similar) > 0 {
				res.Mode = recallHybrid
				res.WithoutEmbedding = without
				break
			}
			if with == 0 && without > 0 {
				res.FallbackReason = fmt.Sprintf("no chunk has an embedding from model %s with %d dimensions yet; the backfill is embedding %s",
					emb.Model(), len(vecs[0]), plural(int(without), "chunk"))
				p.kickBackfill()
			} else {
				res.Mode = recallHybrid
			}
		}
	}
	var keyword []rankedPK
	if len(content) > 0 {
		var err error
		if keyword, err = st.rankWords(ctx, st.termExprs(content), false, recallCandidates); err != nil {
			return res, err
		}
	}

	type fused struct {
		pk         int64
		score      float64
		similarity *float64
	}
	var ranked []fused
	if res.Mode == recallKeyword {
		for _, r := range keyword[:min(k+dupSlack(k), len(keyword))] {
			ranked = append(ranked, fused{pk: r.PK, score: r.Score})
		}
	} else {
		byPK := map[int64]*fused{}
		add := func(list []rankedPK, vector bool) {
			for i, r := range list {
				f := byPK[r.PK]
				if f == nil {
					f = &fused{pk: r.PK}
					byPK[r.PK] = f
				}
				f.score += 1 / float64(rrfK+i+1)
				if vector {
					// float32 rounding can put a unit vector's dot product
					// just outside [-1, 1].
					sim := max(-1, min(1, r.Score))
					f.similarity = &sim
				}
			}
		}
		add(similar, true)
		add(keyword, false)
		for _, f := range byPK {
			ranked = append(ranked, *f)
		}
		slices.SortFunc(ranked, func(a, b fused) int {
			switch {
			case a.score != b.score:
				if a.score > b.score {
					return -1
				}
				return 1
			case a.pk > b.pk:
				return -1
			case a.pk < b.pk:
				return 1
			}
			return 0
		})
		ranked = ranked[:min(k+dupSlack(k), len(ranked))]
	}
	pks := make([]int64, len(ranked))
	for i, r := range ranked {
		pks[i] = r.pk
	}
	refs, err := st.refsByPK(ctx, pks, match)
	if err != nil {
		return res, err
	}
	seen := map[[32]byte]bool{}
	for _, r := range ranked {
		ref, ok := refs[r.pk]
		if !ok || seen[ref.textKey] {
			continue // deleted since it was ranked, or the same text as a better chunk
		}
		seen[ref.textKey] = true
		res.Chunks = append(res.Chunks, recallHit{chunkRef: ref.chunkRef, Snippet: ref.Snippet, Score: r.score, Similarity: r.similarity})
		if len(res.Chunks) == k {
			break
		}
	}
	return res, nil
}

// recallText renders a recall result one hit a line, after the mode.
func recallText(query string, res recallResult) string {
	var b strings.Builder
	switch res.Mode {
	case recallHybrid:
		b.WriteString("Mode: hybrid (embeddings fused with keywords).")
	default:
		b.WriteString("Mode: keyword (any of the query's words, BM25).")
		if res.FallbackReason != "" {
			b.WriteString(" Embeddings were not used: " + res.FallbackReason)
		}
	}
	if res.WithoutEmbedding > 0 {
		verb := "have"
		if res.WithoutEmbedding == 1 {
			verb = "has"
		}
		fmt.Fprintf(&b, " %s %s no embedding yet and can be found by keywords only.", plural(int(res.WithoutEmbedding), "chunk"), verb)
	}
	if len(res.Chunks) == 0 {
		fmt.Fprintf(&b, "\nNothing in memory matches %s.", quoteShort(query))
		return b.String()
	}
	for i, h := range res.Chunks {
		b.WriteString("\n" + recallLine(i, h))
	}
	return b.String()
}

// recallLine renders the i-th hit (from 0) of a recall.
func recallLine(i int, h recallHit) string {
	return fmt.Sprintf("%d. %s score=%.3g %s%s (%s, seq %d): %s",
		i+1, h.ChunkID, h.Score, quoteShort(oneLine(h.Title)), noteSuffix(h.chunkRef), h.DocumentID, h.Seq, oneLine(h.Snippet))
}
