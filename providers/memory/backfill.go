package memory

import (
	"context"
	"time"

	"github.com/openhuman/openhuman-host/sdk/embeddings"
)

const (
	// backfillBatch is how many chunks the backfill embeds and saves per
	// round: one request of the default batch size, so an interrupted
	// process loses at most one request's work.
	backfillBatch = 64
	// backfillStartDelay postpones the first round, so one-shot commands
	// (tools call, memory stats) exit before spending requests on it.
	backfillStartDelay = 10 * time.Second
	// backfillPoll is how often an idle backfill looks for chunks that
	// other processes (such as an import) wrote without embeddings.
	backfillPoll = 5 * time.Minute
	// Backfill retries after a failure wait from backfillRetryMin,
	// doubling up to backfillRetryMax.
	backfillRetryMin = 30 * time.Second
	backfillRetryMax = 10 * time.Minute
	// syncEmbedBudget bounds the embedding a tool call waits for (the new
	// chunks of a store, a recall's question), whatever timeout_secs
	// allows: a slow endpoint must not make a committed write look failed
	// or a recall time out instead of falling back.
	syncEmbedBudget = 10 * time.Second
	// endpointPause is how long tool calls stop waiting for the endpoint
	// after it failed them; the backfill keeps trying meanwhile.
	endpointPause = time.Minute
)

// endpointFailed records that the embeddings endpoint failed a tool call:
// for endpointPause, calls go without embeddings at once.
func (p *Provider) endpointFailed(err error) {
	p.endpointDown.Store(&endpointFailure{until: time.Now().Add(endpointPause), reason: redactEndpointError(err)})
}

// endpointFailure is the last failure of the embeddings endpoint.
type endpointFailure struct {
	until  time.Time
	reason string
}

// endpointPaused returns why tool calls should not wait for the endpoint
// now, or "".
func (p *Provider) endpointPaused() string {
	if f := p.endpointDown.Load(); f != nil && time.Now().Before(f.until) {
		return f.reason
	}
	return ""
}

// afterWrite embeds the chunks a write just inserted, when an embedder is
// configured, so they are found by meaning at once. A failure is logged
// and left to the backfill: the write itself has succeeded, and keyword
// search finds the chunks meanwhile.
func (p *Provider) afterWrite(ctx context.Context, fresh []chunkRow) {
	emb := p.embedder
	if emb == nil || len(fresh) == 0 {
		return
	}
	p.mu.Lock()
	st := p.store
	p.mu.Unlock()
	if st == nil {
		return
	}
	chunks := make([]chunkText, len(fresh))
	for i, c := range fresh {
		chunks[i] = chunkText{PK: c.PK, ID: c.ID, Content: c.Content}
	}
	if p.endpointPaused() != "" {
		return // the backfill embeds them once the endpoint answers again
	}
	ectx, cancel := context.WithTimeout(ctx, syncEmbedBudget)
	defer cancel()
	if err := p.embedChunks(ectx, st, chunks); err != nil {
		if ctx.Err() != nil {
			return // the call itself ended; the backfill will embed them
		}
		if !embeddings.IsTextRefusal(err) {
			// A refused text says nothing about the endpoint; the
			// backfill sets it aside and embeds the rest.
			p.endpointFailed(err)
		}
		p.logger.Warn("embedding new chunks failed; the backfill will retry", "chunks", len(chunks), "error", err)
	}
}

// kickBackfill wakes the backfill without waiting.
func (p *Provider) kickBackfill() {
	select {
	case p.kick <- struct{}{}:
	default:
	}
}

// embedChunks embeds chunks and saves the vectors.
func (p *Provider) embedChunks(ctx context.Context, st *store, chunks []chunkText) error {
	texts := make([]string, len(chunks))
	for i, c := range chunks {
		texts[i] = c.Content
	}
	vecs, err := p.embedder.Embed(ctx, texts)
	if err != nil {
		return err
	}
	if len(vecs) > 0 {
		p.dims.Store(int64(len(vecs[0])))
	}
	return st.saveEmbeddings(ctx, p.embedder.Model(), chunks, vecs)
}

// backfill embeds chunks that have no embedding from the configured model
// and dimension (stored before the embedder was configured, while it
// failed, or by another process) until ctx is done. It starts after
// backfillStartDelay; later, a kick ends a wait early.
func (p *Provider) backfill(ctx context.Context, st *store) {
	defer close(p.backfillDone)
	// Kicks do not shorten the start delay: a one-shot command that
	// kicks would spend requests it cannot finish.
	start := time.NewTimer(p.backfillDelay)
	select {
	case <-ctx.Done():
		start.Stop()
		return
	case <-start.C:
	}
	retry := backfillRetryMin
	for {
		n, err := p.backfillOnce(ctx, st)
		var wait time.Duration
		switch {
		case ctx.Err() != nil:
			return
		case err != nil:
			p.logger.Warn("embeddings backfill failed; retrying", "in", retry.String(), "error", err)
			wait = retry
			retry = min(2*retry, backfillRetryMax)
		case n > 0:
			retry = backfillRetryMin
			p.endpointDown.Store(nil)
			continue
		default:
			retry = backfillRetryMin
			wait = backfillPoll
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-p.kick:
			t.Stop()
		case <-t.C:
		}
	}
}

// backfillOnce embeds one batch of chunks that lack an embedding and
// returns how many it embedded.
func (p *Provider) backfillOnce(ctx context.Context, st *store) (int, error) {
	chunks, err := st.missingEmbeddings(ctx, p.embedder.Model(), int(p.dims.Load()), backfillBatch, p.quarantined())
	if err != nil || len(chunks) == 0 {
		return 0, err
	}
	err = p.embedChunks(ctx, st, chunks)
	if err == nil {
		p.logger.Debug("backfilled embeddings", "chunks", len(chunks))
		return len(chunks), nil
	}
	if len(chunks) == 1 || ctx.Err() != nil || !embeddings.IsTextRefusal(err) {
		return 0, err
	}
	// One text the endpoint refuses (too long for the model, say: a 400,
	// 413 or 422) must not hold back the others: embed them one by one. If some succeed,
	// the endpoint works and the ones that fail are set aside for the life
	// of the process; if none does, the endpoint is the problem.
	var done int
	var failed []int64
	for _, c := range chunks {
		if ctx.Err() != nil {
			return done, ctx.Err()
		}
		if p.embedChunks(ctx, st, []chunkText{c}) != nil {
			failed = append(failed, c.PK)
		} else {
			done++
		}
	}
	if done == 0 {
		return 0, err
	}
	p.quarantine(failed)
	p.logger.Warn("the embeddings endpoint refused some chunks; they stay without embeddings until restart",
		"chunks", len(failed), "error", err)
	return done, nil
}

// quarantine sets chunks aside from the backfill.
func (p *Provider) quarantine(pks []int64) {
	p.quarantineMu.Lock()
	defer p.quarantineMu.Unlock()
	if p.skipped == nil {
		p.skipped = map[int64]bool{}
	}
	for _, pk := range pks {
		p.skipped[pk] = true
	}
}

// quarantined lists the chunks set aside from the backfill.
func (p *Provider) quarantined() []int64 {
	p.quarantineMu.Lock()
	defer p.quarantineMu.Unlock()
	out := make([]int64, 0, len(p.skipped))
	for pk := range p.skipped {
		out = append(out, pk)
	}
	return out
}
