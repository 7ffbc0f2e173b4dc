//lint:file-ignore SA1019 logging, deprecated from protocol 2026-07-28 (SEP-2577), stays supported for upstream servers on earlier versions: the level a client sets is passed on to them.

package upstream

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/openhuman/openhuman-host/sdk"
)

// Per-client sessions: each host session (told apart by its session token,
// else its session hash) gets its own session with each upstream server,
// so that a server keeping state per session keeps it per client. At most
// maxClientSessions per server stay open while unused (the least recently
// used is closed first; a session a request holds is never closed under
// it), and one unused for the server's session_idle_secs is closed by a
// sweep every reapEvery (or half the idle time, if shorter), unless the
// client subscribed to resources through it.
const (
	maxClientSessions = 16
	reapEvery         = 30 * time.Second
)

// clientConn is a client's session with one server.
type clientConn struct {
	conn *conn
	used time.Time
}

// clientState is what the provider remembers for one host session across
// its upstream sessions, so that a session opened again (after eviction,
// or after its server restarted) is set up the same way.
type clientState struct {
	// level is the logging level the client set; "" when it set none.
	level string
	// subs holds the subscribed resource URIs, by server name.
	subs map[string]map[string]bool
}

// clientKey tells host sessions apart: the session token when the host
// sends one (provider protocol 2 and later), else the session hash; ""
// for calls from no MCP session, which share one upstream session per
// server.
func clientKey(c sdk.Caller) string {
	if c.SessionToken != "" {
		return c.SessionToken
	}
	return c.SessionHash
}

// sessionOwner is the caller that a per-client session acts for outside
// any call (log messages, server requests between calls): caller without
// what belongs to one call. Nil when the caller has no session token, so
// that the host could not reach its session anyway.
func sessionOwner(c sdk.Caller) *sdk.Caller {
	if c.SessionToken == "" {
		return nil
	}
	c.ProgressToken, c.CallToken = nil, ""
	return &c
}

// session returns a live session with s for caller (its own per-client
// session, or the shared one for calls from no MCP session, such as the
// command line), connecting or reconnecting (with the backoff of that
// session: one client's failures do not hold up the others) when needed.
// A new per-client session gets the client's logging level and
// subscriptions before it is returned. The session is held, so that
// eviction cannot close it under the request, until release is called;
// release is safe to call more than once.
func (p *Provider) session(ctx context.Context, s *server, caller sdk.Caller) (c *conn, release func(), err error) {
	client := clientKey(caller)
	if client == "" {
		return p.sharedSession(ctx, s)
	}
	key := s.name + "\x00" + client
	if c := p.holdClient(key); c != nil {
		return c, p.releaser(c), nil
	}
	defer p.opening.lock(key)()
	if c := p.holdClient(key); c != nil {
		return c, p.releaser(c), nil
	}
	if err := p.backingOff(s, key); err != nil {
		return nil, nil, err
	}
	nc, err := p.connect(ctx, s, sessionOwner(caller))
	if err != nil {
		if ctx.Err() == nil {
			p.log.Warn("cannot open a client's upstream session", "server", s.name, "error", redactText(err.Error()))
		}
		p.connectFailed(ctx, key)
		return nil, nil, fmt.Errorf("connect: %w", err)
	}
	p.connected(key)
	nc.key = key
	applied := p.prepare(ctx, nc, client)
	var st settlement
	p.mu.Lock()
	if p.clients == nil {
		p.clients = map[string]*clientConn{}
	}
	old := p.clients[key]
	p.clients[key] = &clientConn{conn: nc.hold(), used: time.Now()}
	gone := p.evictLocked(s.name)
	if old != nil {
		gone = append(gone, old.conn)
	}
	// The new session may take the catalog over (closing the shared
	// session) or bring the server back.
	p.dropLocked(gone, &st)
	p.settleLocked(s, &st)
	// A level set while the session was being prepared reached neither
	// prepare nor SetLoggingLevel's list of open sessions.
	level := p.levelLocked(client)
	p.mu.Unlock()
	if level != applied {
		p.applyLevel(ctx, nc, level)
	}
	// Closing waits for the server (a stdio process to exit, a
	// 2026-07-28 session's subscriptions/listen to end), which is no
	// business of this call: apply does it in the background.
	p.apply(st)
	return nc, p.releaser(nc), nil
}

// dropLocked adds to st the client sessions in gone, just removed from
// p.clients, to close, and settles their servers' catalogs; a live one
// that serves its server's catalog is left to settleLocked, which keeps
// it until a successor is up. p.mu must be held for writing.
func (p *Provider) dropLocked(gone []*conn, st *settlement) {
	servers := map[*server]bool{}
	for _, c := range gone {
		servers[c.srv] = true
		if p.conns[c.srv.name] != c || !c.alive() {
			st.closing = append(st.closing, c)
		}
	}
	for s := range servers {
		p.settleLocked(s, st)
	}
}

// holdClient returns the live per-client session under key, held, and
// marks it used; nil when there is none.
func (p *Provider) holdClient(key string) *conn {
	p.mu.Lock()
	defer p.mu.Unlock()
	cc := p.clients[key]
	if cc == nil || !cc.conn.alive() {
		return nil
	}
	cc.used = time.Now()
	cc.conn.holds++
	return cc.conn
}

// releaser returns the func that releases one hold of c (see release),
// once.
func (p *Provider) releaser(c *conn) func() {
	var once sync.Once
	return func() { once.Do(func() { p.release(c) }) }
}

// prepare sets a new session up for client: the logging level it set and
// the resources it subscribed to through s. Failures are logged. It
// returns the level it applied.
func (p *Provider) prepare(ctx context.Context, c *conn, client string) string {
	p.mu.RLock()
	var level string
	var uris []string
	if st := p.states[client]; st != nil {
		level = st.level
		for uri := range st.subs[c.srv.name] {
			uris = append(uris, uri)
		}
	}
	p.mu.RUnlock()
	if level != "" {
		p.applyLevel(ctx, c, level)
	}
	if len(uris) == 0 {
		return level
	}
	if !canSubscribe(c) {
		p.log.Warn("subscriptions not renewed", "server", c.srv.name, "reason", "the server no longer declares resources.subscribe")
		return level
	}
	slices.Sort(uris)
	for _, uri := range uris {
		if err := c.session.Subscribe(ctx, &mcp.SubscribeParams{URI: uri}); err != nil {
			p.log.Warn("subscription not renewed", "server", c.srv.name, "uri", sanitise(uri, 200), "error", redactText(err.Error()))
		}
	}
	p.log.Debug("subscriptions renewed", "server", c.srv.name, "count", len(uris))
	return level
}

// keyClient is the client key of a p.clients key (server name, NUL, client
// key).
func keyClient(k string) string {
	_, client, _ := strings.Cut(k, "\x00")
	return client
}

// levelLocked returns the logging level client set. p.mu must be held.
func (p *Provider) levelLocked(client string) string {
	if st := p.states[client]; st != nil {
		return st.level
	}
	return ""
}

// stateLocked returns client's state, creating it. p.mu must be held for
// writing.
func (p *Provider) stateLocked(client string) *clientState {
	st := p.states[client]
	if st == nil {
		st = &clientState{subs: map[string]map[string]bool{}}
		if p.states == nil {
			p.states = map[string]*clientState{}
		}
		p.states[client] = st
	}
	return st
}

// hasSubsLocked reports whether client subscribed to resources of server.
// p.mu must be held.
func (p *Provider) hasSubsLocked(client, server string) bool {
	st := p.states[client]
	return st != nil && len(st.subs[server]) > 0
}

// evictLocked removes s's ended and idle client sessions (keeping idle
// ones that carry subscriptions) and, beyond maxClientSessions, the least
// recently used ones, and returns them to be closed. p.mu must be held.
func (p *Provider) evictLocked(server string) []*conn {
	var mine []string
	var out []*conn
	for k, cc := range p.clients {
		client, ok := strings.CutPrefix(k, server+"\x00")
		if !ok {
			continue
		}
		idle := cc.conn.srv.idle > 0 && time.Since(cc.used) > cc.conn.srv.idle && !p.hasSubsLocked(client, server) && !cc.conn.busy()
		if idle || !cc.conn.alive() {
			out = append(out, cc.conn)
			delete(p.clients, k)
			continue
		}
		mine = append(mine, k)
	}
	sort.Slice(mine, func(i, j int) bool { return p.clients[mine[i]].used.Before(p.clients[mine[j]].used) })
	// Sessions with a call in flight are never closed under it: while
	// more than maxClientSessions are busy, the cap is exceeded until
	// their calls end.
	excess := len(mine) - maxClientSessions
	for _, k := range mine {
		if excess <= 0 {
			break
		}
		if p.clients[k].conn.busy() {
			continue
		}
		out = append(out, p.clients[k].conn)
		delete(p.clients, k)
		excess--
	}
	return out
}

// sharedSession returns the shared session with s, held (release must
// be called), opening it when there is none or the last one ended (with
// backoff): a stdio server that exited is started again, an HTTP session
// the server forgot is initialised again. It serves the catalog while no
// client has a session with s; otherwise it is closed once released.
func (p *Provider) sharedSession(ctx context.Context, s *server) (*conn, func(), error) {
	if c := p.holdShared(s); c != nil {
		return c, p.releaser(c), nil
	}
	defer p.opening.lock(s.name)()
	if c := p.holdShared(s); c != nil {
		return c, p.releaser(c), nil
	}
	if err := p.backingOff(s, s.name); err != nil {
		return nil, nil, err
	}
	p.mu.RLock()
	gen := p.gen
	p.mu.RUnlock()
	p.log.Debug("opening the shared session", "server", s.name)
	nc, err := p.connect(ctx, s, nil)
	if err != nil {
		p.connectFailed(ctx, s.name)
		if ctx.Err() == nil {
			p.retryMu.Lock()
			st := p.retries[s.name]
			p.retryMu.Unlock()
			p.mu.Lock()
			// While a client's session serves the catalog, the server is
			// up for it.
			if h := p.health[s.name]; h != nil && p.gen == gen && p.liveClientLocked(s) == nil {
				p.health[s.name] = &health{state: StateFailed, err: redactText(err.Error()), attempts: st.failures, next: st.next}
			}
			p.mu.Unlock()
		}
		return nil, nil, fmt.Errorf("reconnect: %w", err)
	}
	p.connected(s.name)
	p.prepare(ctx, nc, "")
	var st settlement
	p.mu.Lock()
	if p.gen != gen || p.shared == nil {
		// Configured again or closed meanwhile.
		p.mu.Unlock()
		nc.close()
		return nil, nil, fmt.Errorf("%s: the provider was configured again or closed", s.where())
	}
	if old := p.shared[s.name]; old != nil {
		st.closing = append(st.closing, old)
	}
	p.shared[s.name] = nc.hold()
	p.settleLocked(s, &st)
	p.mu.Unlock()
	p.apply(st)
	return nc, p.releaser(nc), nil
}

// holdShared returns the live shared session with s, held; nil when
// there is none.
func (p *Provider) holdShared(s *server) *conn {
	p.mu.Lock()
	defer p.mu.Unlock()
	c := p.shared[s.name]
	if c == nil || !c.alive() {
		return nil
	}
	return c.hold()
}

// backingOff returns an error while the session of s under key (the
// server's name for its shared session, else the p.clients key) is in its
// reconnection backoff.
func (p *Provider) backingOff(s *server, key string) error {
	p.retryMu.Lock()
	defer p.retryMu.Unlock()
	if wait := time.Until(p.retries[key].next); wait > 0 {
		return fmt.Errorf("%s is down and is tried again in %s", s.where(), wait.Round(100*time.Millisecond))
	}
	return nil
}

// connectFailed starts or lengthens the backoff of the session under key
// (see backingOff) after a failed connect: the next attempt waits
// firstRetry, doubling per failure up to maxRetry. A connect that failed
// because ctx ended (the caller stopped waiting) says nothing about the
// server and starts no backoff.
func (p *Provider) connectFailed(ctx context.Context, key string) {
	if ctx.Err() != nil {
		return
	}
	p.retryMu.Lock()
	defer p.retryMu.Unlock()
	st := p.retries[key]
	st.failures++
	st.next = time.Now().Add(min(firstRetry<<min(st.failures-1, 10), maxRetry))
	p.retries[key] = st
}

// connected ends the backoff of the session under key.
func (p *Provider) connected(key string) {
	p.retryMu.Lock()
	defer p.retryMu.Unlock()
	delete(p.retries, key)
}

// keyedMutex is a set of mutexes by key, each existing while locked or
// waited for.
type keyedMutex struct {
	mu sync.Mutex
	m  map[string]*keyedEntry
}

type keyedEntry struct {
	mu      sync.Mutex
	waiters int
}

// lock locks key's mutex and returns the func that unlocks it.
func (k *keyedMutex) lock(key string) func() {
	k.mu.Lock()
	if k.m == nil {
		k.m = map[string]*keyedEntry{}
	}
	e := k.m[key]
	if e == nil {
		e = &keyedEntry{}
		k.m[key] = e
	}
	e.waiters++
	k.mu.Unlock()
	e.mu.Lock()
	return func() {
		e.mu.Unlock()
		k.mu.Lock()
		if e.waiters--; e.waiters == 0 {
			delete(k.m, key)
		}
		k.mu.Unlock()
	}
}

// dropSession marks client's session with s as gone, so that the next
// call reconnects.
func (p *Provider) dropSession(s *server, c *conn, client string) {
	var st settlement
	p.mu.Lock()
	if client == "" && p.shared[s.name] == c {
		delete(p.shared, s.name)
	}
	if key := s.name + "\x00" + client; client != "" && p.clients[key] != nil && p.clients[key].conn == c {
		delete(p.clients, key)
	}
	if p.conns[s.name] == c {
		p.settleLocked(s, &st)
		if p.conns[s.name] == c {
			// No other session serves the catalog: the next one to open
			// does (the request's own, or the shared session opened
			// again), and the server, which answered, is not reported
			// down meanwhile.
			delete(p.conns, s.name)
		}
	}
	p.mu.Unlock()
	c.close()
	p.apply(st)
}

// openSession returns client's open session with s without connecting:
// nil when there is none or it ended.
func (p *Provider) openSession(s *server, client string) *conn {
	p.mu.RLock()
	defer p.mu.RUnlock()
	var c *conn
	if client == "" {
		c = p.shared[s.name]
	} else if cc := p.clients[s.name+"\x00"+client]; cc != nil {
		c = cc.conn
	}
	if c == nil || !c.alive() {
		return nil
	}
	return c
}

// SetLoggingLevel remembers the level req.Caller's session set and passes
// it on to that client's open upstream sessions whose server declares the
// logging capability; sessions opened later get it right after they
// connect. On sessions of protocol 2026-07-28 and later the level travels
// with each call instead. Failures are logged, never returned. It
// implements [sdk.SessionObserver].
func (p *Provider) SetLoggingLevel(ctx context.Context, req *sdk.SetLoggingLevelRequest) error {
	client := clientKey(req.Caller)
	if client == "" {
		p.log.Debug("logging level ignored: the caller has no session")
		return nil
	}
	p.mu.Lock()
	p.stateLocked(client).level = req.Level
	var open []*conn
	for k, cc := range p.clients {
		if keyClient(k) == client && cc.conn.alive() {
			open = append(open, cc.conn)
		}
	}
	p.mu.Unlock()
	for _, c := range open {
		p.applyLevel(ctx, c, req.Level)
	}
	return nil
}

// applyLevel sends logging/setLevel on c when its server declares the
// logging capability and the session predates protocol 2026-07-28 (which
// carries the level in each request's _meta instead).
func (p *Provider) applyLevel(ctx context.Context, c *conn, level string) {
	if level == "" || newProtocol(c) {
		return
	}
	init := c.session.InitializeResult()
	if init == nil || init.Capabilities == nil || init.Capabilities.Logging == nil {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, c.srv.timeout)
	defer cancel()
	if err := c.session.SetLoggingLevel(ctx, &mcp.SetLoggingLevelParams{Level: mcp.LoggingLevel(level)}); err != nil {
		p.log.Warn("logging level not set", "server", c.srv.name, "level", sanitise(level, 20), "error", redactText(err.Error()))
	}
}

// SessionClosed closes caller's per-client sessions and forgets its
// logging level and subscriptions. It implements [sdk.SessionObserver].
func (p *Provider) SessionClosed(_ context.Context, caller sdk.Caller) error {
	client := clientKey(caller)
	if client == "" {
		return nil
	}
	var st settlement
	p.mu.Lock()
	var gone []*conn
	for k, cc := range p.clients {
		if keyClient(k) == client {
			gone = append(gone, cc.conn)
			delete(p.clients, k)
		}
	}
	delete(p.states, client)
	// A catalog session among them is kept until another session serves
	// the catalog.
	p.dropLocked(gone, &st)
	p.mu.Unlock()
	if len(gone) > 0 {
		p.log.Debug("client session closed", "upstream_sessions", len(gone))
	}
	// A stdio server gets terminateGrace to exit: apply closes in the
	// background, so as not to hold the host up.
	p.apply(st)
	return nil
}

var _ sdk.SessionObserver = (*Provider)(nil)

// reapIdle closes, every reapEvery or half the shortest session_idle_secs,
// the client sessions unused for their server's session_idle_secs, until
// bg ends: a client that left without ending its session (an HTTP client
// that never sent DELETE) does not keep a stdio server running.
func (p *Provider) reapIdle(bg context.Context, servers []*server) {
	every := reapEvery
	for _, s := range servers {
		if s.idle > 0 {
			every = min(every, s.idle/2)
		}
	}
	t := time.NewTicker(max(every, 10*time.Millisecond))
	defer t.Stop()
	for {
		select {
		case <-bg.Done():
			return
		case <-t.C:
		}
		var out []*conn
		var st settlement
		p.mu.Lock()
		for _, s := range servers {
			if s.idle > 0 {
				out = append(out, p.evictLocked(s.name)...)
			}
		}
		p.dropLocked(out, &st)
		p.mu.Unlock()
		for _, c := range out {
			p.log.Debug("closing an idle client session", "server", c.srv.name)
		}
		p.apply(st)
	}
}
