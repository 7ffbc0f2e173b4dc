package main

import (
	"fmt"
	"math/rand/v2"
	"strings"
)

// Corpus shape. The vocabulary follows a Zipf–Mandelbrot law, P(rank r) ∝
// (zipfV + r)^-zipfS, which fits word frequencies of English text: with
// these values the most common word is about 5% of all words (as "the" is),
// and the 1000th is several hundred times rarer.
const (
	// vocabSize is the number of distinct pseudo-words.
	vocabSize = 20000
	// zipfS and zipfV are the exponent and offset of the word
	// distribution.
	zipfS = 1.07
	zipfV = 2.7
	// chunkLimit mirrors the provider's chunk size, in characters: an
	// import cuts documents into chunks of at most this many.
	chunkLimit = 2000
	// maxParagraph bounds a generated paragraph, in bytes, well below
	// chunkLimit, so the provider only ever cuts at paragraph breaks and
	// [Doc.Chunks] predicts its chunk count exactly.
	maxParagraph = 1200
	// entityRate is the chance that a sentence carries an entity (an
	// e-mail address, a URL, an @handle, a #hashtag or an ISO date).
	entityRate = 0.04
	// titleMinRank keeps the most common words out of titles, which name
	// topics.
	titleMinRank = 100
)

// Streams of the PCG generator, so that the vocabulary, the documents and
// the queries of one seed are independent of each other.
const (
	streamVocab   = 1
	streamDocs    = 2
	streamQueries = 3
)

// functionWords are English function words. Pseudo-words never spell one,
// and the natural-language recall queries are made of them plus vocabulary
// words.
var functionWords = strings.Fields(`a an and are as at be been but by can could did do does
	for from had has have how i if in into is it its me my no not of on or our so than that the
	their them then there these they this to was we were what when where which who whom why will
	with would you your about after all also any because before between both each few more most
	other over same should some such through under until up very just only own`)

// Syllable parts of the pseudo-words: an optional onset, a nucleus and an
// optional coda.
var (
	onsets = strings.Fields(`b c d f g h j k l m n p r s t v w z br cr dr fr gr pr tr bl cl fl gl pl sl ch sh th st sp qu`)
	nuclei = strings.Fields(`a e i o u a e i o u ai ea ou io ee`)
	codas  = strings.Fields(`n r s l m t nd st rk x`)
)

// tlds and recallTemplates add variety to URLs, e-mail addresses and
// recall queries.
var (
	tlds            = []string{"com", "org", "net", "io", "dev", "de", "fr"}
	recallTemplates = []string{
		"what did we decide about the %s %s",
		"where is the %s of %s",
		"how do I %s the %s",
		"who was working on %s and %s",
		"when did we talk about %s %s",
		"what is the %s for %s",
		"is there anything about %s or %s",
		"which %s did they use for the %s",
	}
)

// Vocabulary is a fixed list of pronounceable pseudo-words, most common
// first, with a Zipf-distributed sampler over them.
type Vocabulary struct {
	// Words holds the words by rank: Words[0] is the most common.
	Words []string
	zipf  *rand.Zipf
}

// NewVocabulary builds the vocabulary of seed and a sampler drawing ranks
// with r. Common words are short (one or two syllables), rare words long,
// as in natural languages.
func NewVocabulary(seed uint64, r *rand.Rand) *Vocabulary {
	gen := rand.New(rand.NewPCG(seed, streamVocab))
	taken := make(map[string]bool, vocabSize+len(functionWords))
	for _, w := range functionWords {
		taken[w] = true
	}
	words := make([]string, 0, vocabSize)
	for len(words) < vocabSize {
		rank := len(words)
		var syllables int
		switch {
		case rank < 100:
			syllables = 1 + gen.IntN(2)
		case rank < 2000:
			syllables = 2 + gen.IntN(2)
		default:
			syllables = 2 + gen.IntN(3)
		}
		w := pseudoWord(gen, syllables)
		if len(w) < 2 || taken[w] {
			continue
		}
		taken[w] = true
		words = append(words, w)
	}
	return &Vocabulary{Words: words, zipf: rand.NewZipf(r, zipfS, zipfV, vocabSize-1)}
}

// pseudoWord strings together syllables from gen.
func pseudoWord(gen *rand.Rand, syllables int) string {
	var b strings.Builder
	for range syllables {
		if gen.IntN(4) > 0 {
			b.WriteString(onsets[gen.IntN(len(onsets))])
		}
		b.WriteString(nuclei[gen.IntN(len(nuclei))])
		if gen.IntN(3) == 0 {
			b.WriteString(codas[gen.IntN(len(codas))])
		}
	}
	return b.String()
}

// Rank draws a word rank from the Zipf distribution.
func (v *Vocabulary) Rank() int { return int(v.zipf.Uint64()) }

// Word draws a word from the Zipf distribution.
func (v *Vocabulary) Word() string { return v.Words[v.Rank()] }

// wordFrom draws a word of rank minRank or more, drawing again until one
// comes up.
func (v *Vocabulary) wordFrom(minRank int) string {
	for {
		if r := v.Rank(); r >= minRank {
			return v.Words[r]
		}
	}
}

// Doc is one generated Markdown file.
type Doc struct {
	// Name is the file's path relative to the corpus directory.
	Name string
	// Text is the file's content.
	Text string
	// Chunks is the number of chunks an import makes of Text.
	Chunks int
}

// Generator writes a deterministic stream of Markdown documents: the same
// seed gives the same documents, byte for byte, in the same order.
type Generator struct {
	rng   *rand.Rand
	vocab *Vocabulary
	next  int
}

// NewGenerator returns the document stream of seed.
func NewGenerator(seed uint64) *Generator {
	rng := rand.New(rand.NewPCG(seed, streamDocs))
	return &Generator{rng: rng, vocab: NewVocabulary(seed, rng)}
}

// Vocabulary returns the words the documents are made of.
func (g *Generator) Vocabulary() *Vocabulary { return g.vocab }

// Next returns the next document. Documents are numbered from 1 and stored
// 1000 to a directory. Each has a "# Title" heading and paragraphs of
// sentences, an occasional "## " subheading or bullet list, and is about 1
// to 6 chunks long.
func (g *Generator) Next() Doc {
	g.next++
	n := g.next
	target := 1 + g.rng.IntN(6)
	// Aim between the length of target-1 full chunks and target chunks;
	// packing at paragraph breaks makes chunks a little shorter than the
	// limit, so the result is near target chunks.
	minLen := (target-1)*chunkLimit*9/10 + 300
	maxLen := target * chunkLimit * 9 / 10
	want := minLen + g.rng.IntN(maxLen-minLen+1)

	segments := []string{"# " + g.title() + "\n\n"}
	size := len(segments[0])
	for size < want {
		var p string
		switch x := g.rng.IntN(20); {
		case x == 0 && len(segments) > 1:
			p = "## " + g.title()
		case x == 1:
			p = g.list()
		default:
			p = g.paragraph()
		}
		segments = append(segments, p+"\n\n")
		size += len(p) + 2
	}
	last := len(segments) - 1
	segments[last] = strings.TrimRight(segments[last], "\n") + "\n"
	lens := make([]int, len(segments))
	for i, s := range segments {
		lens[i] = len(s)
	}
	return Doc{
		Name:   fmt.Sprintf("%03d/doc-%07d.md", (n-1)/1000, n),
		Text:   strings.Join(segments, ""),
		Chunks: packChunks(lens, chunkLimit),
	}
}

// packChunks counts the chunks of a text made of segments with the given
// lengths when segments are packed greedily into chunks of at most limit,
// as the provider's chunker does at paragraph breaks. Every segment must
// be at most limit long.
func packChunks(lens []int, limit int) int {
	total := 0
	for _, n := range lens {
		total += n
	}
	if total == 0 {
		return 0
	}
	if total <= limit {
		return 1
	}
	chunks, cur := 0, 0
	for _, n := range lens {
		if cur > 0 && cur+n > limit {
			chunks++
			cur = 0
		}
		cur += n
	}
	if cur > 0 {
		chunks++
	}
	return chunks
}

// title returns 2 to 6 capitalised topic words.
func (g *Generator) title() string {
	words := make([]string, 2+g.rng.IntN(5))
	for i := range words {
		words[i] = capitalize(g.vocab.wordFrom(titleMinRank))
	}
	return strings.Join(words, " ")
}

// paragraph returns 2 to 7 sentences, at most about maxParagraph bytes.
func (g *Generator) paragraph() string {
	var b strings.Builder
	for i, n := 0, 2+g.rng.IntN(6); i < n && b.Len() < maxParagraph-200; i++ {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(g.sentence())
	}
	return b.String()
}

// list returns a bullet list of 3 to 6 short items.
func (g *Generator) list() string {
	items := make([]string, 3+g.rng.IntN(4))
	for i := range items {
		words := make([]string, 2+g.rng.IntN(6))
		for j := range words {
			words[j] = g.vocab.Word()
		}
		items[i] = "- " + strings.Join(words, " ")
	}
	return strings.Join(items, "\n")
}

// sentence returns 6 to 22 words, capitalised, with an occasional comma
// and, at entityRate, an entity in it.
func (g *Generator) sentence() string {
	words := make([]string, 6+g.rng.IntN(17))
	for i := range words {
		words[i] = g.vocab.Word()
		if i < len(words)-1 && g.rng.IntN(12) == 0 {
			words[i] += ","
		}
	}
	if g.rng.Float64() < entityRate {
		words[g.rng.IntN(len(words))] = g.entity()
	}
	words[0] = capitalize(words[0])
	end := "."
	if g.rng.IntN(20) == 0 {
		end = "?"
	}
	return strings.Join(words, " ") + end
}

// entity returns an e-mail address, a URL, an @handle, a #hashtag or an
// ISO date, with the frequencies of notes and documents (URLs and dates
// most often).
func (g *Generator) entity() string {
	w := func() string { return g.vocab.wordFrom(titleMinRank) }
	switch x := g.rng.IntN(10); {
	case x < 2:
		return fmt.Sprintf("%s.%s@%s.%s", w(), w(), w(), tlds[g.rng.IntN(len(tlds))])
	case x < 5:
		return fmt.Sprintf("https://%s.%s/%s/%s", w(), tlds[g.rng.IntN(len(tlds))], w(), w())
	case x < 6:
		return "@" + w()
	case x < 7:
		return "#" + w()
	default:
		return fmt.Sprintf("%04d-%02d-%02d", 2019+g.rng.IntN(8), 1+g.rng.IntN(12), 1+g.rng.IntN(28))
	}
}

// capitalize upper-cases the first letter of an ASCII word.
func capitalize(w string) string {
	if w == "" || w[0] < 'a' || w[0] > 'z' {
		return w
	}
	return string(w[0]-'a'+'A') + w[1:]
}

// Queries draws benchmark queries from the vocabulary of a seed with its
// own random stream, so the queries do not depend on how many documents
// were generated.
type Queries struct {
	rng   *rand.Rand
	vocab *Vocabulary
}

// NewQueries returns the query stream of seed.
func NewQueries(seed uint64) *Queries {
	rng := rand.New(rand.NewPCG(seed, streamQueries))
	return &Queries{rng: rng, vocab: NewVocabulary(seed, rng)}
}

// Search returns a [memorytool.Search] query: 1 to 3 words, each drawn from
// the Zipf distribution, so queries mix very common and rare words as typed
// keywords do.
func (q *Queries) Search() string {
	words := make([]string, 1+q.rng.IntN(3))
	for i := range words {
		words[i] = q.vocab.Word()
	}
	return strings.Join(words, " ")
}

// Recall returns a natural-language [memorytool.Recall] query: a question of
// English function words around two vocabulary words.
func (q *Queries) Recall() string {
	t := recallTemplates[q.rng.IntN(len(recallTemplates))]
	return fmt.Sprintf(t, q.vocab.Word(), q.vocab.Word())
}
