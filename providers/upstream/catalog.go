package upstream

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// The catalog session of a server is the session its tools, prompts and
// resources are listed on, that is pinged, and whose state Servers
// reports. While at least one client has a session of its own with the
// server, it is one of those (the most recently used when one must be
// chosen), and no other session with the server is open, so a stdio
// server runs one process per client and no more. While none has, it is
// the shared session, opened at Configure and used by calls from no MCP
// session (the command line).
//
// The first client session that opens takes the catalog over and the
// shared session is closed (once no request holds it). When the catalog
// session's client leaves (SessionClosed, idle or evicted) another
// client's session takes over; when it was the last one, a shared session
// is opened again in the background at once, and the leaving session
// keeps serving the catalog until that is up, so the catalog has no gap.
// The shared session is opened again rather than opened lazily because
// the catalog must stay fresh and the server's state true while no client
// uses the server: a client connecting to the host gets tools/list from
// the host's catalog without reaching the provider, list_changed
// notifications need a session to arrive on, and a server that went away
// must be reported down without waiting for a call. Its cost is one start
// each time a server's last client leaves.
//
// When the catalog session ends by itself (a stdio server exited, an
// HTTP session was lost, two pings failed) another client's live session
// takes over; with none, the server is reported failed and the shared
// session is reconnected in the background with backoff, until it or a
// client's session is up.

// isClientLocked reports whether c is a client's session that is still
// in p.clients. p.mu must be held.
func (p *Provider) isClientLocked(c *conn) bool {
	cc := p.clients[c.key]
	return c.key != "" && cc != nil && cc.conn == c
}

// liveClientLocked returns the client session with s to serve the
// catalog: the current catalog session if it is a live client session,
// else the most recently used live one; nil when there is none. p.mu must
// be held.
func (p *Provider) liveClientLocked(s *server) *conn {
	if cur := p.conns[s.name]; cur != nil && cur.alive() && p.isClientLocked(cur) {
		return cur
	}
	var best *clientConn
	for k, cc := range p.clients {
		if !strings.HasPrefix(k, s.name+"\x00") || !cc.conn.alive() {
			continue
		}
		if best == nil || cc.used.After(best.used) {
			best = cc
		}
	}
	if best == nil {
		return nil
	}
	return best.conn
}

// settlement is what settleLocked leaves to do once p.mu is released.
type settlement struct {
	// closing are sessions to close.
	closing []*conn
	// reopen are servers whose shared session must be opened in the
	// background, for the configuration of gen and bg.
	reopen []*server
	gen    uint64
	bg     context.Context
	// back are servers whose catalog has a live session again after
	// having none: the host is asked to list the catalog again.
	back []*server
}

// settleLocked gives s's catalog the session the lifecycle above says,
// after a client session opened, closed or ended, or the shared session
// opened or ended. p.mu must be held for writing; apply must be called
// with what it returns, outside p.mu.
func (p *Provider) settleLocked(s *server, st *settlement) {
	if p.health[s.name] == nil {
		// Disabled, unavailable or unconfigured.
		return
	}
	cur := p.conns[s.name]
	sh := p.shared[s.name]
	if sh != nil && !sh.alive() {
		delete(p.shared, s.name)
		p.retireLocked(sh, st)
		sh = nil
	}
	next := p.liveClientLocked(s)
	if next == nil {
		next = sh
	}
	if next == nil {
		// No live session: a leaving client's live session (cur) serves
		// the catalog until the shared session replacing it is up. A
		// server that never connected is keepConnecting's.
		if cur != nil && cur.refused() {
			// The server refused the credentials: opening the shared
			// session again would be refused again.
			p.refused[s.name] = true
		}
		if cur != nil && !p.reopening[s.name] && !p.refused[s.name] {
			p.reopening[s.name] = true
			st.reopen = append(st.reopen, s)
			st.gen, st.bg = p.gen, p.bg
		}
		return
	}
	if next != sh && sh != nil {
		// A client's session serves the catalog: the shared one goes.
		delete(p.shared, s.name)
		p.retireLocked(sh, st)
	}
	delete(p.refused, s.name)
	if cur != next {
		p.conns[s.name] = next
		go p.watchCatalog(p.bg, p.gen, s, next)
		if cur != nil && cur != sh && !p.isClientLocked(cur) {
			// A leaving client's session, kept until now, or one that
			// ended.
			p.retireLocked(cur, st)
		}
	}
	if p.health[s.name].state != StateConnected {
		// The server is up: the catalog has a live session.
		st.back = append(st.back, s)
		p.health[s.name] = &health{state: StateConnected}
	}
}

// retireLocked closes c, now or, while a request holds it, when the last
// hold is released. p.mu must be held for writing.
func (p *Provider) retireLocked(c *conn, st *settlement) {
	if c.holds > 0 {
		p.retired[c] = true
		return
	}
	st.closing = append(st.closing, c)
}

// apply does what settleLocked left to do. Sessions are closed in the
// background: closing waits for the server, which is no business of the
// request that caused it.
func (p *Provider) apply(st settlement) {
	for _, c := range st.closing {
		p.closing.Go(c.close)
	}
	for _, s := range st.reopen {
		go p.reopenShared(st.bg, st.gen, s)
	}
	p.mu.RLock()
	announce := p.configured
	p.mu.RUnlock()
	if announce {
		for _, s := range st.back {
			p.catalogChanged(s)
		}
	}
}

// hold takes one hold of c, so that it is not closed under a request
// (see release). p.mu must be held for writing.
func (c *conn) hold() *conn {
	c.holds++
	return c
}

// release releases one hold of c and closes c if it was retired and
// this was its last hold.
func (p *Provider) release(c *conn) {
	p.mu.Lock()
	c.holds--
	done := c.holds == 0 && p.retired[c]
	if done {
		delete(p.retired, c)
	}
	p.mu.Unlock()
	if done {
		p.closing.Go(c.close)
	}
}

// allConnsLocked returns every open session, each once. p.mu must be held.
func (p *Provider) allConnsLocked() []*conn {
	seen := map[*conn]bool{}
	var out []*conn
	add := func(c *conn) {
		if c != nil && !seen[c] {
			seen[c] = true
			out = append(out, c)
		}
	}
	for _, c := range p.conns {
		add(c)
	}
	for _, c := range p.shared {
		add(c)
	}
	for _, cc := range p.clients {
		add(cc.conn)
	}
	for c := range p.retired {
		add(c)
	}
	return out
}

// watchCatalog pings c, the catalog session of s of generation gen,
// while it is one (every s's ping_interval_secs, else keepAlive, each
// ping given half of it; a session with a call in flight is not pinged:
// the call shows whether the server answers), closes it after
// keepAliveFailures failed pings in a row, and once it ended settles the
// catalog: another client's session takes over, or the server is
// reported failed with why and its shared session is reconnected in the
// background.
func (p *Provider) watchCatalog(bg context.Context, gen uint64, s *server, c *conn) {
	every := p.keepAlive
	if s.ping >= 0 {
		every = s.ping
	}
	var tick <-chan time.Time
	if every > 0 {
		t := time.NewTicker(every)
		defer t.Stop()
		tick = t.C
	}
	failures := 0
	for {
		select {
		case <-bg.Done():
			return
		case <-c.done:
			p.catalogEnded(gen, s, c)
			return
		case <-tick:
		}
		p.mu.RLock()
		current, busy := p.gen == gen && p.conns[s.name] == c, c.busy()
		p.mu.RUnlock()
		if !current {
			return
		}
		if busy {
			failures = 0
			continue
		}
		ctx, cancel := context.WithTimeout(bg, every/2)
		err := c.session.Ping(ctx, nil)
		cancel()
		var werr *jsonrpc.Error
		switch {
		case err == nil:
			failures = 0
		case errors.As(err, &werr) && werr.Code == jsonrpc.CodeMethodNotFound:
			// The server does not answer pings: its session's end
			// still shows.
			tick = nil
		case bg.Err() != nil:
			return
		default:
			if failures++; failures >= keepAliveFailures {
				p.log.Warn("upstream server did not answer pings; ending its session", "server", s.name, "error", redactText(err.Error()))
				c.close()
			}
		}
	}
}

// catalogEnded settles s's catalog after its session c ended by itself.
func (p *Provider) catalogEnded(gen uint64, s *server, c *conn) {
	var st settlement
	p.mu.Lock()
	if p.gen != gen || p.conns[s.name] != c || p.health[s.name] == nil {
		p.mu.Unlock()
		return
	}
	refused := c.refused()
	if refused {
		p.refused[s.name] = true
	}
	p.settleLocked(s, &st)
	down := p.conns[s.name] == c
	why := "the session ended"
	if c.endErr != nil {
		why += ": " + redactText(c.endErr.Error())
	}
	if refused {
		why += "; the server refused its credentials: " + authHint(s)
	}
	if down && p.health[s.name].state != StateFailed {
		// A failed attempt to open the shared session again already
		// said why.
		p.health[s.name] = &health{state: StateFailed, err: fmt.Sprintf("%s: %s", s.where(), why), next: time.Now()}
	}
	p.mu.Unlock()
	switch {
	case down && refused:
		p.log.Warn("upstream session ended; not reconnecting in the background until the configuration is loaded again", "server", s.name, "error", why)
	case down:
		p.log.Warn("upstream session ended; reconnecting in the background", "server", s.name, "error", why)
	default:
		p.log.Debug("catalog session ended; another client's session serves the catalog", "server", s.name, "error", why)
	}
	p.apply(st)
}

// needsSharedLocked reports whether s's catalog has neither a live
// client session nor a live shared session to serve it. p.mu must be
// held.
func (p *Provider) needsSharedLocked(s *server) bool {
	if p.health[s.name] == nil {
		return false
	}
	if sh := p.shared[s.name]; sh != nil && sh.alive() {
		return false
	}
	return p.liveClientLocked(s) == nil
}

// reopenShared opens s's shared session for its catalog, in the
// background, retrying with backoff (sharedSession's), until it is up, a
// client's session serves the catalog, or generation gen ends. A leaving
// client's session that still serves the catalog is closed after the
// first failed attempt: the server is then reported failed.
func (p *Provider) reopenShared(bg context.Context, gen uint64, s *server) {
	for {
		p.mu.Lock()
		if p.gen != gen {
			p.mu.Unlock()
			return
		}
		if !p.needsSharedLocked(s) {
			delete(p.reopening, s.name)
			p.mu.Unlock()
			return
		}
		p.mu.Unlock()
		ctx, cancel := context.WithTimeout(bg, attemptTimeout(s))
		_, release, err := p.sharedSession(ctx, s)
		cancel()
		if err == nil {
			release()
			continue
		}
		if bg.Err() != nil {
			return
		}
		var st settlement
		p.mu.Lock()
		if cur := p.conns[s.name]; p.gen == gen && cur != nil && cur.alive() && cur != p.shared[s.name] && !p.isClientLocked(cur) {
			p.retireLocked(cur, &st)
		}
		p.mu.Unlock()
		p.apply(st)
		p.retryMu.Lock()
		wait := time.Until(p.retries[s.name].next)
		p.retryMu.Unlock()
		t := time.NewTimer(max(wait, firstConnectRetry))
		select {
		case <-t.C:
		case <-bg.Done():
			t.Stop()
			return
		}
	}
}
