package main

import (
	"cmp"
	"slices"
	"strings"
	"unicode"
)

// Retrieval-quality metrics at the document level. A ranking is a list of
// document keys, best first, as a tool returned them chunk by chunk: the
// same document may appear more than once, and only its first appearance
// counts.

// qualityCut is the n of recall@n and precision@n.
const qualityCut = 5

// mrrCut is how many distinct documents the reciprocal rank looks at.
const mrrCut = 10

// topDocs returns the first n distinct keys of ranked, in order.
func topDocs(ranked []string, n int) []string {
	seen := make(map[string]bool, n)
	out := make([]string, 0, n)
	for _, d := range ranked {
		if len(out) == n {
			break
		}
		if seen[d] {
			continue
		}
		seen[d] = true
		out = append(out, d)
	}
	return out
}

// countRelevant counts the keys of top that are relevant.
func countRelevant(top []string, relevant map[string]bool) int {
	n := 0
	for _, d := range top {
		if relevant[d] {
			n++
		}
	}
	return n
}

// recallAt is the share of the relevant documents found among the first n
// distinct documents of ranked: 0 when nothing is relevant.
func recallAt(ranked []string, relevant map[string]bool, n int) float64 {
	if len(relevant) == 0 {
		return 0
	}
	return float64(countRelevant(topDocs(ranked, n), relevant)) / float64(len(relevant))
}

// precisionAt is the share of the first n distinct documents of ranked
// that are relevant, over n whether or not n documents came back.
func precisionAt(ranked []string, relevant map[string]bool, n int) float64 {
	return float64(countRelevant(topDocs(ranked, n), relevant)) / float64(n)
}

// reciprocalRank is 1/r for the rank r (from 1) of the first relevant
// document among the first n distinct documents of ranked, else 0.
func reciprocalRank(ranked []string, relevant map[string]bool, n int) float64 {
	for i, d := range topDocs(ranked, n) {
		if relevant[d] {
			return 1 / float64(i+1)
		}
	}
	return 0
}

// scores are one query's metrics.
type scores struct {
	Recall    float64 `json:"recall_at_5"`
	Precision float64 `json:"precision_at_5"`
	RR        float64 `json:"reciprocal_rank"`
}

// score computes recall@5, precision@5 and the reciprocal rank within the
// first 10 documents.
func score(ranked []string, relevant map[string]bool) scores {
	return scores{
		Recall:    recallAt(ranked, relevant, qualityCut),
		Precision: precisionAt(ranked, relevant, qualityCut),
		RR:        reciprocalRank(ranked, relevant, mrrCut),
	}
}

// mean averages scores; MRR is the mean of the reciprocal ranks.
func mean(ss []scores) scores {
	var m scores
	if len(ss) == 0 {
		return m
	}
	for _, s := range ss {
		m.Recall += s.Recall
		m.Precision += s.Precision
		m.RR += s.RR
	}
	n := float64(len(ss))
	return scores{Recall: m.Recall / n, Precision: m.Precision / n, RR: m.RR / n}
}

// grepDoc is one document of the grep baseline, its text in lower case.
type grepDoc struct {
	key  string
	text string
}

// grepIndex is the grep baseline: no index at all, a scan of every
// document's text per query.
type grepIndex struct {
	docs []grepDoc
}

// add adds a document under key.
func (g *grepIndex) add(key, text string) {
	g.docs = append(g.docs, grepDoc{key: key, text: strings.ToLower(text)})
}

// stopWords are dropped from grep queries, as [memorytool.Recall] drops
// English function words: the baseline's query is the question's content
// words.
var stopWords = func() map[string]bool {
	m := make(map[string]bool, len(functionWords))
	for _, w := range functionWords {
		m[w] = true
	}
	return m
}()

// grepTerms returns the distinct lower-case words of query (runs of
// letters and digits) without stop words; when every word is a stop word,
// all of them.
func grepTerms(query string) []string {
	words := strings.FieldsFunc(strings.ToLower(query), func(r rune) bool {
		return !unicode.IsLetter(r) && !unicode.IsDigit(r)
	})
	var all, content []string
	seen := map[string]bool{}
	for _, w := range words {
		if seen[w] {
			continue
		}
		seen[w] = true
		all = append(all, w)
		if !stopWords[w] {
			content = append(content, w)
		}
	}
	if len(content) == 0 {
		return all
	}
	return content
}

// rank returns the keys of the documents that contain every term of query
// as a substring, ignoring case (so "commit" also finds "commits"), most
// occurrences of the terms first, ties by key; at most n.
func (g *grepIndex) rank(query string, n int) []string {
	terms := grepTerms(query)
	if len(terms) == 0 {
		return nil
	}
	type match struct {
		key   string
		count int
	}
	var ms []match
	for _, d := range g.docs {
		total := 0
		for _, t := range terms {
			c := strings.Count(d.text, t)
			if c == 0 {
				total = 0
				break
			}
			total += c
		}
		if total > 0 {
			ms = append(ms, match{d.key, total})
		}
	}
	slices.SortFunc(ms, func(a, b match) int {
		if c := cmp.Compare(b.count, a.count); c != 0 {
			return c
		}
		return cmp.Compare(a.key, b.key)
	})
	out := make([]string, 0, min(n, len(ms)))
	for _, m := range ms[:min(n, len(ms))] {
		out = append(out, m.key)
	}
	return out
}
