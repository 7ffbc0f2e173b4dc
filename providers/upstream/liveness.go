package upstream

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/openhuman/openhuman-host/providers/upstream/upstreamwire"
	"github.com/openhuman/openhuman-host/sdk"
)

// Background connection of the shared sessions: every enabled server is
// connected in parallel, each within its own start_timeout_secs. One that
// fails is tried again in the background, waiting firstConnectRetry after
// the first failure and twice as long after each further one, up to
// maxConnectRetry, until it connects or the provider is configured again
// or closed. When it connects after Configure returned, the host is asked
// to list the catalog again, so clients see its tools appear
// (notifications/tools/list_changed).
const (
	firstConnectRetry = time.Second
	maxConnectRetry   = time.Minute
	// configureMargin is the part of Configure's deadline left for the
	// host: Configure stops waiting for servers this long before it.
	configureMargin = time.Second
	// configureWait is the longest Configure waits for servers, unless
	// told to wait for all: a client gets the tools of the servers up by
	// then at once, and the others' with tools/list_changed.
	configureWait = 5 * time.Second
)

// Server states, as [Provider.Servers] reports them.
const (
	StateConnecting = upstreamwire.StateConnecting
	StateConnected  = upstreamwire.StateConnected
	StateFailed     = upstreamwire.StateFailed
)

// StatusURI is the resource the host reads, never listed to clients, for
// [Provider.Servers] as a JSON array of [ServerStatus]: `providers status`
// and the unknown-tool error say per server what is wrong.
const StatusURI = upstreamwire.StatusURI

// ServerStatus is the state of one enabled server: of the session its
// catalog is read from (a client's, else the shared one).
type ServerStatus = upstreamwire.ServerStatus

// health is the state of a server's catalog session; guarded by
// Provider.mu.
type health struct {
	state    string
	err      string
	attempts int
	next     time.Time
}

// Servers returns the state of every enabled server, in config order.
func (p *Provider) Servers() []ServerStatus {
	p.mu.RLock()
	defer p.mu.RUnlock()
	var out []ServerStatus
	for _, s := range p.servers {
		h := p.health[s.name]
		if h == nil {
			continue
		}
		out = append(out, ServerStatus{Name: s.name, State: h.state, Error: h.err, Attempts: h.attempts, NextAttempt: h.next})
	}
	return out
}

// connectAll starts connecting every enabled server of generation gen in
// the background and waits until each has made its first attempt, or
// until configureWait has passed (unless waitAll), or ctx is
// configureMargin from its deadline (or done): servers still connecting
// then go on in the background.
func (p *Provider) connectAll(ctx context.Context, bg context.Context, gen uint64, servers []*server, waitAll bool) {
	var first sync.WaitGroup
	for _, s := range servers {
		if !s.enabled || s.unavailable != "" {
			continue
		}
		first.Add(1)
		go p.keepConnecting(bg, gen, s, first.Done)
	}
	all := make(chan struct{})
	go func() {
		first.Wait()
		close(all)
	}()
	wait := ctx
	if d, ok := ctx.Deadline(); ok {
		var cancel context.CancelFunc
		wait, cancel = context.WithDeadline(ctx, d.Add(-configureMargin))
		defer cancel()
	}
	if !waitAll {
		var cancel context.CancelFunc
		wait, cancel = context.WithTimeout(wait, configureWait)
		defer cancel()
	}
	select {
	case <-all:
	case <-wait.Done():
		var pending []string
		p.mu.RLock()
		for _, s := range servers {
			if h := p.health[s.name]; h != nil && h.state == StateConnecting {
				pending = append(pending, s.name)
			}
		}
		p.mu.RUnlock()
		if len(pending) > 0 {
			p.log.Info("still connecting in the background; their tools appear once they are up", "servers", strings.Join(pending, ","))
		}
	}
}

// keepConnecting connects s's shared session for generation gen, retrying
// with backoff until it succeeds, a client's session serves the catalog,
// or bg ends. firstDone is called once the first attempt has ended.
func (p *Provider) keepConnecting(bg context.Context, gen uint64, s *server, firstDone func()) {
	defer func() {
		if firstDone != nil {
			firstDone()
		}
	}()
	for attempt := 1; ; attempt++ {
		p.mu.RLock()
		// A client's session may have served the catalog meanwhile;
		// from then on the catalog's own watchers keep it.
		done := p.gen != gen || p.conns[s.name] != nil
		p.mu.RUnlock()
		if done {
			return
		}
		start := time.Now()
		ctx, cancel := context.WithTimeout(bg, attemptTimeout(s))
		c, err := p.connect(ctx, s, nil)
		timedOut := ctx.Err() != nil && bg.Err() == nil
		cancel()
		if bg.Err() != nil {
			if c != nil {
				c.close()
			}
			return
		}
		if err == nil {
			var st settlement
			p.mu.Lock()
			if p.gen != gen {
				p.mu.Unlock()
				c.close()
				return
			}
			if old := p.shared[s.name]; old != nil {
				st.closing = append(st.closing, old)
			}
			// It serves the catalog, unless a client's session came
			// first: then settleLocked closes it.
			p.shared[s.name] = c
			p.settleLocked(s, &st)
			p.mu.Unlock()
			p.apply(st)
			transport, where := "stdio", s.command
			if s.endpoint != nil {
				transport, where = "http", redactURL(s.endpoint)
			}
			p.log.Info("connected", "server", s.name, "transport", transport, "target", where,
				"duration", time.Since(start).Round(time.Millisecond).String(), "attempt", attempt)
			return
		}
		msg := redactText(err.Error())
		if timedOut {
			msg = fmt.Sprintf("%s did not connect within %s (start_timeout_secs): %s", s.where(), attemptTimeout(s), msg)
		}
		delay := min(firstConnectRetry<<min(attempt-1, 10), maxConnectRetry)
		p.mu.Lock()
		if p.gen != gen || p.conns[s.name] != nil {
			p.mu.Unlock()
			return
		}
		p.health[s.name] = &health{state: StateFailed, err: msg, attempts: attempt, next: time.Now().Add(delay)}
		p.mu.Unlock()
		p.log.Warn("cannot connect to upstream server; its tools are missing until it can be reached", "server", s.name,
			"attempt", attempt, "retry_in", delay.String(), "error", msg)
		if firstDone != nil {
			firstDone()
			firstDone = nil
		}
		t := time.NewTimer(delay)
		select {
		case <-t.C:
		case <-bg.Done():
			t.Stop()
			return
		}
		p.mu.Lock()
		if p.gen == gen && p.conns[s.name] == nil {
			p.health[s.name].state = StateConnecting
		}
		p.mu.Unlock()
	}
}

// Pinging of the catalog sessions (watchCatalog): every keepAliveEvery
// (Options.KeepAlive), each given half of it to answer; keepAliveFailures
// failures in a row end the session.
const (
	keepAliveEvery    = 30 * time.Second
	keepAliveFailures = 2
)

// downReason says why the tools of the server whose prefix name starts
// with are missing, for the unknown-tool error; "" when no server that is
// down matches.
func (p *Provider) downReason(name string) string {
	p.mu.RLock()
	defer p.mu.RUnlock()
	var out []string
	for _, s := range p.servers {
		h := p.health[s.name]
		if h == nil || h.state == StateConnected || !strings.HasPrefix(name, sdk.ClientName(s.prefix)) {
			continue
		}
		switch h.state {
		case StateConnecting:
			out = append(out, fmt.Sprintf("upstream server %q is still connecting", s.name))
		case StateFailed:
			if h.next.IsZero() {
				out = append(out, fmt.Sprintf("upstream server %q cannot start: %s", s.name, h.err))
				continue
			}
			out = append(out, fmt.Sprintf("upstream server %q is down (%s); it is tried again in %s",
				s.name, h.err, time.Until(h.next).Round(time.Second)))
		}
	}
	slices.Sort(out)
	return strings.Join(out, "; ")
}

// attemptTimeout bounds one attempt to connect s: its start_timeout_secs,
// or, for a server that may ask its user to sign in in the browser, at
// least the time the user is given for that.
func attemptTimeout(s *server) time.Duration {
	if s.oauth != nil && s.oauth.Interactive {
		return max(s.start, signInWait+30*time.Second)
	}
	return s.start
}
