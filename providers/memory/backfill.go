package memory

import (
	"context"
	"time"
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
)

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
	if err := p.embedChunks(ctx, st, chunks); err != nil {
		p.logger.Warn("embedding new chunks failed; the backfill will retry", "chunks", len(chunks), "error", err)
		p.kickBackfill()
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
// backfillStartDelay, or at once when kicked.
func (p *Provider) backfill(ctx context.Context, st *store) {
	defer close(p.backfillDone)
	start := time.NewTimer(p.backfillDelay)
	select {
	case <-ctx.Done():
		start.Stop()
		return
	case <-p.kick:
		start.Stop()
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
			p.logger.Warn("embeddings backfill failed; retrying", "in", retry, "error", err)
			wait = retry
			retry = min(2*retry, backfillRetryMax)
		case n > 0:
			retry = backfillRetryMin
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
	chunks, err := st.missingEmbeddings(ctx, p.embedder.Model(), int(p.dims.Load()), backfillBatch)
	if err != nil || len(chunks) == 0 {
		return 0, err
	}
	if err := p.embedChunks(ctx, st, chunks); err != nil {
		return 0, err
	}
	p.logger.Debug("backfilled embeddings", "chunks", len(chunks))
	return len(chunks), nil
}
