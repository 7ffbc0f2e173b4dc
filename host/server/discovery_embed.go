package server

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/openhuman/openhuman-host/host/catalog"
	"github.com/openhuman/openhuman-host/host/toolindex"
	"github.com/openhuman/openhuman-host/sdk/embeddings"
)

// Embedder turns texts into vectors for tool_search; *embeddings.Client is
// one.
type Embedder interface {
	// Embed returns one L2-normalised vector per text, in the order of
	// texts, all of one dimension, or an error and no vectors. It must
	// honour ctx.
	Embed(ctx context.Context, texts []string) ([][]float32, error)
	// Model names the embedding model, for logs.
	Model() string
}

// Embeddings makes tool_search rank by meaning as well as by words
// ([discovery.embeddings]): each served tool's name, title and
// description is embedded in the background whenever the catalog
// changes, each query when it is searched, and the cosine ranking is
// fused with the BM25 ranking by reciprocal rank fusion.
type Embeddings struct {
	// Embedder embeds tool texts and queries. Required.
	Embedder Embedder
	// QueryTimeout bounds embedding one query, retries included, within
	// the call's own deadline; 0 or less means 30 seconds.
	QueryTimeout time.Duration
}

// Values of tool_search's "mode".
const (
	// SearchKeyword ranks by the query's words alone (BM25).
	SearchKeyword = "keyword"
	// SearchHybrid fuses the BM25 ranking with the cosine similarity of
	// embeddings.
	SearchHybrid = "hybrid"
)

const (
	// rrfK is reciprocal rank fusion's constant: a tool at rank r (from
	// 1) of a ranking scores 1/(rrfK + r). 60 is the value of the
	// original paper (Cormack, Clarke and Büttcher, SIGIR 2009), as in
	// the memory provider's recall.
	rrfK = 60
	// fusionCandidates is how many tools each ranking contributes before
	// fusion.
	fusionCandidates = 50
	// maxEmbedRunes bounds the text embedded for one tool: the name and
	// title, and as much of the description as fits.
	maxEmbedRunes = 2000
	// embedRound is how many tool texts one background request asks for
	// at most (the client splits it into batch_size requests); between
	// rounds the worker picks up catalog changes.
	embedRound = 256
	// defaultQueryTimeout is [Embeddings].QueryTimeout when unset.
	defaultQueryTimeout = 30 * time.Second
	// endpointPause is how long, after the endpoint failed, tool_search
	// ranks by keywords without waiting for it and the background does not
	// try again unless the catalog changes.
	endpointPause = time.Minute
)

// toolKey identifies the text embedded for a tool: the SHA-256 of it.
type toolKey [sha256.Size]byte

// toolVectors holds the embeddings of the served tools. Vectors are
// cached by the hash of the text embedded, so a catalog change embeds
// only the tools that are new or whose text changed; a change of
// embedder drops them all.
type toolVectors struct {
	mu sync.Mutex
	// emb is the embedder the vectors come from; nil when none is
	// configured.
	emb *Embeddings
	// want maps every served tool to the key of its text, for the
	// catalog served now; texts holds those texts.
	want  map[string]toolKey
	texts map[toolKey]string
	// vectors are the embeddings by key, of want's keys only.
	vectors map[toolKey][]float32
	// running is set while a worker embeds; idle is closed when it stops.
	running bool
	idle    chan struct{}
	// failure is the last failure of the endpoint, failedAt when it
	// happened; warned is set once it is logged, until a success.
	failure  string
	failedAt time.Time
	warned   bool
}

// toolText is what is embedded for t: its name in words, its title and
// its description, cut to maxEmbedRunes.
func toolText(t *catalog.Tool) string {
	name := strings.Join(strings.FieldsFunc(t.Name, func(r rune) bool { return r == '_' || r == '.' || r == '-' }), " ")
	parts := []string{name}
	if t.Title != "" {
		parts = append(parts, t.Title)
	}
	if d := strings.TrimSpace(t.Description); d != "" {
		parts = append(parts, d)
	}
	text := strings.Join(parts, "\n")
	if utf8.RuneCountInString(text) > maxEmbedRunes {
		text = string([]rune(text)[:maxEmbedRunes])
	}
	return text
}

// refreshVectors points the tool vectors at v's tools and emb, dropping
// the vectors neither uses, and starts embedding what is missing in the
// background. It never waits for the endpoint.
func (s *Server) refreshVectors(v *view, emb *Embeddings) {
	tv := &s.vectors
	tv.mu.Lock()
	defer tv.mu.Unlock()
	if tv.emb != emb {
		tv.emb, tv.vectors = emb, nil
		tv.failure, tv.failedAt, tv.warned = "", time.Time{}, false
	}
	if emb == nil {
		tv.want, tv.texts = nil, nil
		return
	}
	tv.want = make(map[string]toolKey, len(v.tools))
	tv.texts = make(map[toolKey]string, len(v.tools))
	for name, t := range v.tools {
		text := toolText(t)
		key := toolKey(sha256.Sum256([]byte(text)))
		tv.want[name] = key
		tv.texts[key] = text
	}
	for key := range tv.vectors {
		if _, ok := tv.texts[key]; !ok {
			delete(tv.vectors, key)
		}
	}
	// A catalog change is worth another try even right after a failure.
	tv.startLocked(s, true)
}

// startLocked starts a worker when vectors are missing and none runs;
// unless force, not within endpointPause of a failure. tv.mu is held.
func (tv *toolVectors) startLocked(s *Server, force bool) {
	if tv.emb == nil || tv.running || len(tv.missingLocked(1)) == 0 {
		return
	}
	if !force && tv.failure != "" && time.Since(tv.failedAt) < endpointPause {
		return
	}
	tv.running = true
	tv.idle = make(chan struct{})
	go s.embedTools(tv.emb, tv.idle)
}

// missingLocked returns up to n keys of wanted texts that have no vector,
// in a stable order. tv.mu is held.
func (tv *toolVectors) missingLocked(n int) []toolKey {
	var keys []toolKey
	for key := range tv.texts {
		if _, ok := tv.vectors[key]; !ok {
			keys = append(keys, key)
		}
	}
	slices.SortFunc(keys, func(a, b toolKey) int { return strings.Compare(string(a[:]), string(b[:])) })
	return keys[:min(n, len(keys))]
}

// embedTools embeds the missing tool texts for emb, embedRound at a time,
// until none is missing, emb is replaced, the endpoint fails or the server
// stops ([Server.CancelCalls]); then it closes idle.
func (s *Server) embedTools(emb *Embeddings, idle chan struct{}) {
	tv := &s.vectors
	stop := func() {
		tv.running = false
		close(idle)
		tv.mu.Unlock()
	}
	for {
		tv.mu.Lock()
		if tv.emb != emb || s.stopCtx.Err() != nil {
			stop()
			return
		}
		keys := tv.missingLocked(embedRound)
		if len(keys) == 0 {
			stop()
			return
		}
		texts := make([]string, len(keys))
		for i, key := range keys {
			texts[i] = tv.texts[key]
		}
		tv.mu.Unlock()

		vecs, err := emb.Embedder.Embed(s.stopCtx, texts)

		tv.mu.Lock()
		if tv.emb != emb {
			stop()
			return
		}
		if err != nil {
			if s.stopCtx.Err() == nil {
				tv.failedLocked(s, "embedding the tools for tool_search failed; it ranks by keywords until they are embedded", oneLineReason(err), err)
			}
			stop()
			return
		}
		if len(vecs) != len(keys) {
			err := fmt.Errorf("the embedder returned %d vectors for %d texts", len(vecs), len(keys))
			tv.failedLocked(s, "embedding the tools for tool_search failed; it ranks by keywords until they are embedded", err.Error(), err)
			stop()
			return
		}
		if tv.vectors == nil {
			tv.vectors = map[toolKey][]float32{}
		}
		for i, key := range keys {
			if _, ok := tv.texts[key]; ok {
				tv.vectors[key] = vecs[i]
			}
		}
		tv.succeededLocked()
		tv.mu.Unlock()
	}
}

// failedLocked records a failure of the endpoint, reason in words for
// the client, and logs msg and err at warn, once until the endpoint
// answers again. tv.mu is held.
func (tv *toolVectors) failedLocked(s *Server, msg, reason string, err error) {
	tv.failure, tv.failedAt = reason, time.Now()
	if !tv.warned {
		tv.warned = true
		s.log.Warn(msg, "model", tv.emb.Embedder.Model(), "error", err)
	}
}

// succeededLocked records that the endpoint answered. tv.mu is held.
func (tv *toolVectors) succeededLocked() {
	tv.failure, tv.failedAt, tv.warned = "", time.Time{}, false
}

// oneLineReason is err's message fit for a tool result: one line, at most
// 300 bytes.
func oneLineReason(err error) string {
	s := strings.Join(strings.Fields(err.Error()), " ")
	if len(s) > 300 {
		s = strings.ToValidUTF8(s[:300], "") + "…"
	}
	return s
}

// semanticRanking is the cosine ranking of one query.
type semanticRanking struct {
	// names are the tools with a vector similar to the query's (cosine
	// above 0), most similar first, at most fusionCandidates; similarity
	// holds their cosine similarity.
	names      []string
	similarity map[string]float64
	// without counts the tools keep accepts that have no vector yet.
	without int
}

// rankByMeaning embeds query and ranks by cosine similarity the served
// tools keep accepts that have a vector, leaving out those whose
// similarity is 0 or less. It returns a nil ranking and
// why, in words for the client, when it cannot: no embedder configured
// (reason ""), no tool embedded yet, the endpoint paused after a failure,
// or the query not embedded. An error is returned only when ctx ended.
func (s *Server) rankByMeaning(ctx context.Context, query string, keep func(name string) bool) (*semanticRanking, string, error) {
	tv := &s.vectors
	tv.mu.Lock()
	emb := tv.emb
	if emb == nil {
		tv.mu.Unlock()
		return nil, "", nil
	}
	vecs := map[string][]float32{}
	without := 0
	for name, key := range tv.want {
		if !keep(name) {
			continue
		}
		if v, ok := tv.vectors[key]; ok {
			vecs[name] = v
		} else {
			without++
		}
	}
	failure, failedAt := tv.failure, tv.failedAt
	tv.startLocked(s, false)
	tv.mu.Unlock()

	switch {
	case failure != "" && time.Since(failedAt) < endpointPause:
		return nil, "the embeddings endpoint failed less than a minute ago: " + failure, nil
	case len(vecs) == 0 && without > 0:
		return nil, "the tools' embeddings are not ready yet", nil
	case len(vecs) == 0:
		return nil, "no tool is available to rank", nil
	}
	timeout := emb.QueryTimeout
	if timeout <= 0 {
		timeout = defaultQueryTimeout
	}
	qctx, cancel := context.WithTimeout(ctx, timeout)
	q, err := emb.Embedder.Embed(qctx, []string{query})
	cancel()
	if err == nil && len(q) != 1 {
		err = fmt.Errorf("%d vectors for 1 text", len(q))
	}
	if err != nil {
		if ctx.Err() != nil {
			return nil, "", ctx.Err()
		}
		failure := oneLineReason(err)
		if errors.Is(qctx.Err(), context.DeadlineExceeded) {
			failure = fmt.Sprintf("it did not embed the query within %s", timeout)
		}
		tv.mu.Lock()
		if tv.emb == emb && !embeddings.IsTextRefusal(err) {
			tv.failedLocked(s, "embedding a tool_search query failed; ranking by keywords", failure, err)
		}
		tv.mu.Unlock()
		return nil, "the embeddings endpoint failed: " + failure, nil
	}
	tv.mu.Lock()
	if tv.emb == emb {
		tv.succeededLocked()
	}
	tv.mu.Unlock()

	r := &semanticRanking{similarity: make(map[string]float64, len(vecs)), without: without}
	for name, v := range vecs {
		// float32 rounding can put a unit vector's dot product just
		// outside [-1, 1].
		sim := max(-1, min(1, float64(embeddings.Dot(q[0], v))))
		if sim <= 0 {
			// Unrelated: a rank among such tools would only push the
			// keyword matches down.
			continue
		}
		r.similarity[name] = sim
		r.names = append(r.names, name)
	}
	slices.SortFunc(r.names, func(a, b string) int {
		if sa, sb := r.similarity[a], r.similarity[b]; sa != sb {
			if sa > sb {
				return -1
			}
			return 1
		}
		return strings.Compare(a, b)
	})
	r.names = r.names[:min(fusionCandidates, len(r.names))]
	return r, "", nil
}

// fuse merges rankings, each best first, by reciprocal rank fusion: a tool
// scores the sum of 1/(rrfK + rank) over the rankings that hold it. Ties
// go by name. It returns the best k.
func fuse(k int, rankings ...[]string) []toolindex.Hit {
	scores := map[string]float64{}
	for _, ranking := range rankings {
		for i, name := range ranking {
			scores[name] += 1 / float64(rrfK+i+1)
		}
	}
	return toolindex.Best(scores, k, nil)
}
