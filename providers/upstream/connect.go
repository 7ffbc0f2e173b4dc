package upstream

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/openhuman/openhuman-host/sdk"
	"github.com/openhuman/openhuman-host/sdk/mcpwire"
)

// terminateGrace is how long a stdio server gets to exit after its stdin
// closes, and again after SIGTERM, before it is killed.
const terminateGrace = 2 * time.Second

// conn is an open client session with one upstream server.
type conn struct {
	srv     *server
	session *mcp.ClientSession
	cmd     *exec.Cmd     // nil for HTTP servers
	done    chan struct{} // closed when the session has ended
	// endErr is why the session ended; set before done is closed.
	endErr error
	// relay routes the session's server requests and notifications; nil
	// for sessions that relay nothing (upstream check).
	relay *relay
	// http is an HTTP session's transport; nil for stdio.
	http *headerTransport
	// holds counts the requests that were handed the session and have not
	// released it; eviction never closes a held session. Changed and read
	// with Provider.mu held.
	holds int
	// key is the session's key in Provider.clients; "" for the shared
	// session.
	key string
	// closeOnce makes close safe to call more than once.
	closeOnce sync.Once
	// opened is when the session was established.
	opened time.Time
}

// refused reports whether the server refused the credentials of c, an
// HTTP session, after it was established (HTTP 401 or 403 once the OAuth
// handler, if any, had tried): the sign-in cannot give what the server
// wants.
func (c *conn) refused() bool {
	return c.http != nil && c.http.refusedSince(c.opened)
}

// watch closes c.done once the session ends (the stdio server exited, the
// HTTP connection failed for good, or close was called).
func (c *conn) watch() *conn {
	c.opened = time.Now()
	c.done = make(chan struct{})
	go func() {
		c.endErr = c.session.Wait()
		close(c.done)
	}()
	return c
}

// sessionEndGrace is how long a failed request waits for its session to
// be seen ending: the transport error (EOF) reaches the request a moment
// before the session's end is noticed.
const sessionEndGrace = 250 * time.Millisecond

// endedSoon reports whether the session has ended or ends within d.
func (c *conn) endedSoon(d time.Duration) bool {
	select {
	case <-c.done:
		return true
	case <-time.After(d):
		return false
	}
}

// busy reports whether a request holds the session or a call is in
// flight on it. Provider.mu must be held.
func (c *conn) busy() bool {
	if c.holds > 0 {
		return true
	}
	if c.relay == nil {
		return false
	}
	c.relay.mu.Lock()
	defer c.relay.mu.Unlock()
	return len(c.relay.calls) > 0
}

// alive reports whether the session is still up.
func (c *conn) alive() bool {
	select {
	case <-c.done:
		return false
	default:
		return true
	}
}

// close ends the session and, for a stdio server, its process. The
// process is killed whether or not it has exited: the go-sdk may be
// waiting for it in the background (ProcessState is not safe to read
// then), and killing an exited process does nothing.
func (c *conn) close() {
	c.closeOnce.Do(func() {
		_ = c.session.Close()
		if c.cmd != nil && c.cmd.Process != nil {
			_ = c.cmd.Process.Kill()
			if c.srv.ownGroup {
				killGroup(c.cmd)
			}
		}
	})
}

// connect opens a session with s within ctx whose server requests and
// notifications go to the host, on behalf of owner (nil for the shared
// session).
func (p *Provider) connect(ctx context.Context, s *server, owner *sdk.Caller) (*conn, error) {
	return connect(ctx, p.log, s, newRelay(p, s, owner))
}

// connect opens a client session with s within ctx, its handlers set up
// by r (nil: none).
func connect(ctx context.Context, log hclog.Logger, s *server, r *relay) (*conn, error) {
	opts := sessionOptions(r)
	c, err := connectAt(ctx, log, s, r, opts)
	var signIn *signInError
	if err != nil && opts != nil && opts.ProtocolVersion < multiRoundTripVersion && ctx.Err() == nil && !errors.As(err, &signIn) {
		// A server that speaks only 2026-07-28 refuses an earlier
		// client's revision: meet it at the newest one it speaks, whose
		// questions reach the client as requests during its call.
		if nc, nerr := connectAt(ctx, log, s, r, nil); nerr == nil {
			log.Debug("upstream server refused the client's protocol version; connected at its newest", "server", s.name, "asked", opts.ProtocolVersion)
			return nc, nil
		}
	}
	return c, err
}

// connectAt is connect asking for the protocol version in opts (nil: the
// newest the go-sdk speaks).
func connectAt(ctx context.Context, log hclog.Logger, s *server, r *relay, opts *mcp.ClientSessionOptions) (*conn, error) {
	client := mcp.NewClient(&mcp.Implementation{Name: "openhuman-host-upstream", Version: Version}, clientOptions(r))
	if r != nil {
		client.AddReceivingMiddleware(r.passThroughElicitation)
	}
	if s.trace {
		client.AddSendingMiddleware(traceRequests(s.name))
	}
	if s.endpoint != nil {
		var base http.RoundTripper = http.DefaultTransport
		if s.trace {
			base = sdk.TracedHTTP(base)
		}
		ht := &headerTransport{base: base, headers: s.headers}
		t := &mcp.StreamableClientTransport{
			Endpoint:     s.endpoint.String(),
			HTTPClient:   &http.Client{Transport: ht},
			OAuthHandler: s.oauthHandler,
		}
		cs, err := client.Connect(ctx, t, opts)
		if err != nil {
			var signIn *signInError
			if errors.As(err, &signIn) {
				return nil, fmt.Errorf("%s: %w", s.where(), signIn)
			}
			if ht.refusedSince(time.Time{}) {
				return nil, fmt.Errorf("%s: cannot connect: %s; %s", s.where(), redactText(err.Error()), authHint(s))
			}
			return nil, fmt.Errorf("%s: cannot connect: %s", s.where(), redactText(err.Error()))
		}
		return (&conn{srv: s, session: cs, relay: r, http: ht}).watch(), nil
	}

	environ := s.environ
	if environ == nil {
		environ = os.Environ()
	}
	env := childEnv(environ, s.env)
	bin, err := lookCommand(s.command, envValue(env, "PATH"), s.cwd)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", s.where(), err)
	}
	cmd := exec.Command(bin, s.args...)
	cmd.Env = env
	cmd.Dir = s.cwd
	if s.ownGroup {
		ownGroup(cmd)
	}
	tail := &tailBuffer{max: stderrTail}
	cmd.Stderr = io.MultiWriter(log.Named(s.name).StandardWriter(&hclog.StandardLoggerOptions{ForceLevel: hclog.Debug}), tail)
	cs, err := client.Connect(ctx, &mcpwire.CommandTransport{Cmd: cmd, Terminate: terminateGrace}, opts)
	if err != nil {
		if cmd.Process != nil && cmd.ProcessState == nil {
			_ = cmd.Process.Kill()
		}
		if s.ownGroup {
			killGroup(cmd)
		}
		msg := fmt.Sprintf("%s: cannot start or initialise it: %s", s.where(), redactText(err.Error()))
		if t := tail.text(); t != "" {
			msg += "; its stderr ended with: " + t
		}
		return nil, errors.New(msg)
	}
	return (&conn{srv: s, session: cs, cmd: cmd, relay: r}).watch(), nil
}

// sessionOptions asks a client's own upstream session for the protocol
// version that client asked the host for (when the go-sdk speaks it), so
// the server behaves towards the client as it would directly: before
// 2026-07-28 it may sample and elicit during a call (some tools do only
// that), from then on it returns input requests the client answers
// itself. A server that does not speak the version is met at the newest
// one it does ([connect]): a 2026-07-28-only server's input requests then
// reach an older client as requests during its call, and an older
// server's requests reach a 2026-07-28 client as input requests. The
// shared session asks for the newest version.
func sessionOptions(r *relay) *mcp.ClientSessionOptions {
	if r == nil || r.owner == nil || !slices.Contains(mcp.SupportedProtocolVersions(), r.owner.ProtocolVersion) {
		return nil
	}
	return &mcp.ClientSessionOptions{ProtocolVersion: r.owner.ProtocolVersion}
}

// stderrTail is how much of a stdio server's last stderr output a failed
// start quotes, in bytes.
const stderrTail = 512

// tailBuffer keeps the last max bytes written to it; safe for concurrent
// use.
type tailBuffer struct {
	mu  sync.Mutex
	max int
	buf []byte
}

// Write implements io.Writer.
func (b *tailBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.buf = append(b.buf, p...)
	if over := len(b.buf) - b.max; over > 0 {
		b.buf = append(b.buf[:0], b.buf[over:]...)
	}
	return len(p), nil
}

// text is what the buffer holds, on one line, without control characters
// or invalid UTF-8, endpoints redacted.
func (b *tailBuffer) text() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return redactText(sanitise(strings.Join(strings.Fields(string(b.buf)), " "), b.max))
}

// headerTransport adds the server's configured headers to every request,
// and notes when the server last refused one's credentials.
type headerTransport struct {
	base    http.RoundTripper
	headers map[string]string
	// refused is the UnixNano time of the last 401 or 403 response.
	refused atomic.Int64
}

// RoundTrip implements http.RoundTripper.
func (t *headerTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if len(t.headers) > 0 {
		req = req.Clone(req.Context())
		for k, v := range t.headers {
			req.Header.Set(k, v)
		}
	}
	resp, err := t.base.RoundTrip(req)
	if err == nil && (resp.StatusCode == http.StatusUnauthorized || resp.StatusCode == http.StatusForbidden) {
		t.refused.Store(time.Now().UnixNano())
	}
	return resp, err
}

// refusedSince reports whether the server answered 401 or 403 at or after
// since.
func (t *headerTransport) refusedSince(since time.Time) bool {
	n := t.refused.Load()
	return n != 0 && n >= since.UnixNano()
}

// authHint says what to do when s refused a request's credentials.
func authHint(s *server) string {
	switch {
	case s.oauth != nil:
		return fmt.Sprintf("run `openhuman-host upstream login %s` to sign in again", s.name)
	case len(s.headers) > 0:
		return "the credentials of its auth table were refused: check the environment variables it names"
	}
	return "it requires authorization: add an auth table (`openhuman-host upstream check " + s.name + "` says which kind)"
}

// childEnv is the environment of a stdio server: the provider's own (which
// the host reduced to an allow-list), then the server's env, with a PATH
// completed by extraPathDirs.
func childEnv(base []string, extra map[string]string) []string {
	// Keyed by envKey (on Windows, names differ in case only: Path is
	// PATH), spelt as first seen.
	vars := map[string]string{}
	names := map[string]string{}
	var order []string
	set := func(k, v string) {
		key := envKey(k)
		if _, ok := vars[key]; !ok {
			order = append(order, key)
			names[key] = k
		}
		vars[key] = v
	}
	for _, kv := range base {
		if k, v, ok := strings.Cut(kv, "="); ok && !hostInternal(k) {
			set(k, v)
		}
	}
	for k, v := range extra {
		set(k, v)
	}
	set("PATH", completePath(vars[envKey("PATH")], vars[envKey(homeVar)]))
	out := make([]string, 0, len(order))
	for _, k := range order {
		out = append(out, names[k]+"="+vars[k])
	}
	return out
}

// hostInternal reports whether the environment variable k belongs to the
// link between the host and this provider (go-plugin's PLUGIN_* handshake
// variables, including its client certificate, and the magic cookie) or
// to the provider's own runtime (the GC settings the host hands its
// providers), which a stdio server must not receive; its own env table
// may still set GOGC or GOMEMLIMIT.
func hostInternal(k string) bool {
	k = strings.ToUpper(k)
	return strings.HasPrefix(k, "PLUGIN_") || strings.HasPrefix(k, "OPENHUMAN_") || k == "GOGC" || k == "GOMEMLIMIT"
}

// completePath appends the extraPathDirs that path lacks; a pattern with
// "*" adds the newest folder it matches, if any.
func completePath(path, home string) string {
	dirs := filepath.SplitList(path)
	for _, d := range extraPathDirs {
		if strings.HasPrefix(d, "~/") {
			if home == "" {
				continue
			}
			d = filepath.Join(home, filepath.FromSlash(d[2:]))
		}
		if strings.Contains(d, "*") {
			if d = newestMatch(d); d == "" {
				continue
			}
		}
		if !containsString(dirs, d) {
			dirs = append(dirs, d)
		}
	}
	return strings.Join(dirs, string(filepath.ListSeparator))
}

// newestMatch returns the folder matching pattern whose "*" part is the
// highest version ("v22.11.0" above "v20.18.1" and "v9.0.0"); "" when none
// does.
func newestMatch(pattern string) string {
	matches, _ := filepath.Glob(pattern)
	best, bestVer := "", []int(nil)
	for _, m := range matches {
		if info, err := os.Stat(m); err != nil || !info.IsDir() {
			continue
		}
		ver := versionParts(m)
		if best == "" || slices.Compare(ver, bestVer) > 0 {
			best, bestVer = m, ver
		}
	}
	return best
}

// versionParts returns the numbers in s, in order: "v22.11.0" is 22 11 0.
func versionParts(s string) []int {
	var out []int
	n, in := 0, false
	for _, r := range s + " " {
		if r >= '0' && r <= '9' {
			n, in = n*10+int(r-'0'), true
			continue
		}
		if in {
			out = append(out, n)
		}
		n, in = 0, false
	}
	return out
}

func containsString(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

// envValue returns the value of key in env.
func envValue(env []string, key string) string {
	for _, kv := range env {
		if k, v, ok := strings.Cut(kv, "="); ok && envKey(k) == envKey(key) {
			return v
		}
	}
	return ""
}
