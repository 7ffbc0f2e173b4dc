package server

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// HTTPOptions configures [Server.HTTPHandler]; a nil *HTTPOptions uses
// every default.
type HTTPOptions struct {
	// Token, when set, is the bearer token every request must carry
	// (Authorization: Bearer <token>), compared in constant time. Empty
	// disables authentication.
	Token string
	// AllowedOrigins lists browser origins (scheme://host[:port]) allowed
	// besides loopback ones. A request with any other Origin header is
	// refused with 403.
	AllowedOrigins []string
	// MaxBodyBytes caps a request body; larger requests get 413. Default
	// 4 MiB.
	MaxBodyBytes int64
	// SessionIdleTimeout closes sessions that send no request for this
	// long. Zero keeps them until the client deletes them.
	SessionIdleTimeout time.Duration
	// MaxSessions caps the MCP sessions the server holds at once; a
	// request that would open one more (a POST without Mcp-Session-Id) gets
	// 503 Service Unavailable with Retry-After. Default 256.
	MaxSessions int
	// BodyTimeout bounds the time to receive a request body, counted from
	// when the handler sees the request; a client that sends it slower has
	// its connection closed, authenticated or not. Default 30 s.
	BodyTimeout time.Duration
	// Metrics, when set, is served at GET [MetricsPath] behind the same
	// Host, Origin and bearer checks as MCP (a Prometheus scrape:
	// telemetry.Telemetry.PrometheusHandler). Default nil: 404.
	Metrics http.Handler
	// Ready, when set, answers GET /readyz ([ReadyPath]) with its checks:
	// 200 when all pass, 503 otherwise, without authentication; details
	// only with the token, when there is one. Default nil: no readiness
	// path (404).
	Ready Ready
	// ReadyTimeout bounds one run of Ready. Default 0 means
	// [DefaultReadyTimeout] (3 s).
	ReadyTimeout time.Duration
}

// MetricsPath is where [HTTPOptions].Metrics is served.
const MetricsPath = "/metrics"

// Defaults of [HTTPOptions].
const (
	DefaultMaxSessions = 256
	DefaultBodyTimeout = 30 * time.Second
)

// HTTPHandler returns the MCP Streamable HTTP handler (basic/transports
// §Streamable HTTP) at path "/" (other paths get 404). It serves MCP
// 2026-07-28 statelessly and the earlier revisions (2024-11-05 to
// 2025-11-25) with sessions, on the same endpoint ([routeProtocol]).
// A named server ([Options.Replica]) adds [ReplicaHeader] to every
// response. Requests pass, in order: DNS-rebinding (Host header)
// protection, the health check (GET /healthz, answered without
// authentication: [Health]), the readiness check (GET /readyz, with
// [HTTPOptions.Ready]: [Readiness]), Origin validation, bearer authentication,
// the body cap and routing by protocol revision, then the go-sdk's
// handler and the MCP server.
func (s *Server) HTTPHandler(opts *HTTPOptions) http.Handler {
	var o HTTPOptions
	if opts != nil {
		o = *opts
	}
	if o.MaxSessions <= 0 {
		o.MaxSessions = DefaultMaxSessions
	}
	if o.BodyTimeout <= 0 {
		o.BodyTimeout = DefaultBodyTimeout
	}
	if o.MaxBodyBytes <= 0 {
		o.MaxBodyBytes = mcp.DefaultMaxRequestBodyBytes
	}
	getServer := func(*http.Request) *mcp.Server { return s.mcp }
	var stateful http.Handler = mcp.NewStreamableHTTPHandler(getServer, &mcp.StreamableHTTPOptions{
		MaxRequestBodyBytes: o.MaxBodyBytes,
		SessionTimeout:      o.SessionIdleTimeout,
		// Streams can be resumed (Last-Event-ID) after a dropped
		// connection: the last 10 MiB of events of all sessions are
		// kept in memory, the oldest purged first.
		EventStore: mcp.NewMemoryEventStore(nil),
	})
	stateless := mcp.NewStreamableHTTPHandler(getServer, &mcp.StreamableHTTPOptions{
		MaxRequestBodyBytes: o.MaxBodyBytes,
		Stateless:           true,
		// A client that drops its POST cancels the call it carried.
		PropagateRequestCancellation: true,
	})
	h := routeProtocol(o.MaxBodyBytes, s.sessionCap(o.MaxSessions, s.cancelOnDelete(stateful)), stateless)
	protect := func(h http.Handler) http.Handler { return h }
	if o.Token != "" {
		want := sha256.Sum256([]byte(o.Token))
		verify := func(_ context.Context, token string, _ *http.Request) (*auth.TokenInfo, error) {
			// Comparing digests keeps the comparison constant-time even
			// when the lengths differ.
			got := sha256.Sum256([]byte(token))
			if subtle.ConstantTimeCompare(got[:], want[:]) != 1 {
				return nil, fmt.Errorf("%w: bearer token does not match", auth.ErrInvalidToken)
			}
			return &auth.TokenInfo{UserID: "token"}, nil
		}
		backoff := newAuthBackoff(s.log.Named("http"))
		protect = func(h http.Handler) http.Handler {
			return backoff.wrap(bearerChallenge(auth.RequireBearerToken(verify, &auth.RequireBearerTokenOptions{AllowMissingExpiration: true})(h)))
		}
	}
	routed := s.routeProfile(originCheck(o.AllowedOrigins, protect(h)))
	if o.Metrics != nil {
		routed = metricsRoute(originCheck(o.AllowedOrigins, protect(getOnly(o.Metrics))), routed)
	}
	return bodyDeadline(o.BodyTimeout, s.replicaHeader(rebindingCheck(s.healthz(s.readyz(o.Ready, o.Token, o.ReadyTimeout, routed)))))
}

// metricsRoute serves [MetricsPath] with metrics and every other path
// with next.
func metricsRoute(metrics, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == MetricsPath {
			metrics.ServeHTTP(w, r)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// getOnly answers methods other than GET and HEAD with 405.
func getOnly(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			w.Header().Set("Allow", "GET, HEAD")
			http.Error(w, "Method Not Allowed: "+MetricsPath+" answers GET", http.StatusMethodNotAllowed)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// MetricsHandler serves metrics at [MetricsPath] alone (404 elsewhere,
// 405 for methods other than GET and HEAD), with DNS-rebinding (Host
// header) protection and no authentication: for a listener of its own
// on a loopback address.
func MetricsHandler(metrics http.Handler) http.Handler {
	return rebindingCheck(metricsRoute(getOnly(metrics), http.NotFoundHandler()))
}

// ReplicaHeader is the response header that names the replica which
// answered ([Options.Replica]), on every HTTP response of a named server.
const ReplicaHeader = "Openhuman-Replica"

// HealthPath is the path of the health check a load balancer polls.
const HealthPath = "/healthz"

// Health is the JSON body of GET /healthz.
type Health struct {
	// Status is "ok" while the server serves.
	Status string `json:"status"`
	// Replica is [Options.Replica]; absent when unnamed.
	Replica string `json:"replica,omitempty"`
	// Tools is how many tools the server serves now.
	Tools int `json:"tools"`
}

// replicaHeader names the replica on every response.
func (s *Server) replicaHeader(next http.Handler) http.Handler {
	if s.opts.Replica == "" {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set(ReplicaHeader, s.opts.Replica)
		next.ServeHTTP(w, r)
	})
}

// healthz answers GET and HEAD of [HealthPath] with 200 and a [Health]
// body, without authentication, so that a load balancer can tell a
// serving replica from a dead one. It tells an unauthenticated caller the
// replica's name, which every answer's header carries, and how many tools
// it serves; nothing else. Every other request goes to next.
func (s *Server) healthz(next http.Handler) http.Handler {
	return jsonEndpoint(HealthPath, next, func(*http.Request) (any, int) {
		return Health{Status: "ok", Replica: s.opts.Replica, Tools: len(s.view.Load().catalog.Tools())}, http.StatusOK
	})
}

// jsonEndpoint answers GET and HEAD of path with the JSON of the body
// answer returns, with its status code, and tells caches not to keep it;
// other methods of path get 405. Every other path goes to next.
func jsonEndpoint(path string, next http.Handler, answer func(r *http.Request) (body any, code int)) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != path {
			next.ServeHTTP(w, r)
			return
		}
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			w.Header().Set("Allow", "GET, HEAD")
			http.Error(w, "Method Not Allowed: "+path+" answers GET and HEAD", http.StatusMethodNotAllowed)
			return
		}
		out, code := answer(r)
		body, _ := json.Marshal(out)
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Cache-Control", "no-store")
		w.WriteHeader(code)
		if r.Method == http.MethodGet {
			_, _ = w.Write(append(body, '\n'))
		}
	})
}

// rebindingCheck answers 403 to a request that arrived on a loopback
// address with a Host header that is not loopback: a web page whose name
// was made to resolve to 127.0.0.1 (DNS rebinding; MCP 2025-11-25,
// basic/security_best_practices §Local MCP Server Compromise). The go-sdk's
// handler applies the same rule, but after authentication; checking first
// tells such a page nothing, not even that a token is wanted.
func rebindingCheck(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if la, ok := r.Context().Value(http.LocalAddrContextKey).(net.Addr); ok && la != nil {
			local, _, err := net.SplitHostPort(la.String())
			host := r.Host
			if h, _, err := net.SplitHostPort(host); err == nil {
				host = h
			}
			if err == nil && IsLoopbackHost(local) && !IsLoopbackHost(strings.Trim(host, "[]")) {
				http.Error(w, fmt.Sprintf("Forbidden: invalid Host header %q", r.Host), http.StatusForbidden)
				return
			}
		}
		next.ServeHTTP(w, r)
	})
}

// sessionCap answers 503 with Retry-After to a request that would open a
// session beyond max (a POST without Mcp-Session-Id: an initialize), so a
// flood of new sessions cannot exhaust memory.
func (s *Server) sessionCap(max int, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost && r.Header.Get("Mcp-Session-Id") == "" {
			n := 0
			for range s.mcp.Sessions() {
				n++
			}
			if n >= max {
				w.Header().Set("Retry-After", "30")
				http.Error(w, fmt.Sprintf("Service Unavailable: openhuman-host already holds %d sessions, its limit ([server] max_sessions); "+
					"retry later, or close sessions you no longer use", n), http.StatusServiceUnavailable)
				return
			}
		}
		next.ServeHTTP(w, r)
	})
}

// cancelOnDelete cancels the running calls of the session a DELETE
// ends (MCP 2025-11-25, basic/transports §Session Management) before the
// go-sdk closes it, which waits for its calls: their providers see their
// contexts end, so their work and any LLM request they made stop.
func (s *Server) cancelOnDelete(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if id := r.Header.Get("Mcp-Session-Id"); r.Method == http.MethodDelete && id != "" {
			for ss := range s.mcp.Sessions() {
				if ss.ID() == id {
					s.cancelCalls(ss)
				}
			}
		}
		next.ServeHTTP(w, r)
	})
}

// bodyDeadline gives a request with a body timeout to arrive whole: it
// sets the connection's read deadline, and clears it once the body has
// been read to its end, so that what follows (a long tool call, a stream)
// is not cut. A body that never ends, read by the server or discarded
// after an early answer such as 401, hits the deadline and the connection
// is closed. Requests without a body are left alone: their connection's
// background read must not time out during a stream.
func bodyDeadline(timeout time.Duration, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Body != nil && r.Body != http.NoBody && r.ContentLength != 0 {
			rc := http.NewResponseController(w)
			if err := rc.SetReadDeadline(time.Now().Add(timeout)); err == nil {
				r.Body = &deadlineBody{ReadCloser: r.Body, clear: func() { _ = rc.SetReadDeadline(time.Time{}) }}
			}
		}
		next.ServeHTTP(w, r)
	})
}

// deadlineBody clears the read deadline once the body is read to its end.
type deadlineBody struct {
	io.ReadCloser
	clear func()
	done  bool
}

func (b *deadlineBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if err == io.EOF && !b.done {
		b.done = true
		b.clear()
	}
	return n, err
}

// bearerChallenge makes every 401 carry a WWW-Authenticate challenge
// (RFC 6750 §3, as MCP 2025-11-25 basic/authorization asks): the go-sdk's
// middleware adds one only when it has resource metadata or scopes to
// name.
func bearerChallenge(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		next.ServeHTTP(&challengeWriter{ResponseWriter: w}, r)
	})
}

// challengeWriter adds the challenge when a 401 is written. It forwards
// Flush and Unwrap, so streamed (SSE) responses work through it.
type challengeWriter struct {
	http.ResponseWriter
}

// WriteHeader adds WWW-Authenticate: Bearer to a 401 that has none.
func (c *challengeWriter) WriteHeader(code int) {
	if code == http.StatusUnauthorized {
		if c.Header().Get("WWW-Authenticate") == "" {
			c.Header().Set("WWW-Authenticate", `Bearer realm="openhuman-host"`)
		}
		// Answer at once and drop the connection: the server would
		// otherwise wait for the unread body of a client it does not know.
		c.Header().Set("Connection", "close")
	}
	c.ResponseWriter.WriteHeader(code)
}

// Flush flushes the underlying writer when it can.
func (c *challengeWriter) Flush() {
	if f, ok := c.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// Unwrap returns the underlying writer for http.ResponseController.
func (c *challengeWriter) Unwrap() http.ResponseWriter { return c.ResponseWriter }

// originCheck refuses browser requests from origins other than loopback
// and the allowed list, so a web page cannot drive the server through the
// user's browser (MCP 2025-11-25, basic/transports §Security Warning).
func originCheck(allowed []string, next http.Handler) http.Handler {
	norm := make([]string, 0, len(allowed))
	for _, a := range allowed {
		norm = append(norm, strings.TrimRight(strings.ToLower(a), "/"))
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		origin := r.Header.Get("Origin")
		if origin != "" && !originAllowed(origin, norm) {
			http.Error(w, "Forbidden: origin "+origin+" is not allowed; add it to [server] allowed_origins", http.StatusForbidden)
			return
		}
		next.ServeHTTP(w, r)
	})
}

func originAllowed(origin string, allowed []string) bool {
	o := strings.TrimRight(strings.ToLower(origin), "/")
	if slices.Contains(allowed, o) {
		return true
	}
	u, err := url.Parse(o)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") {
		return false
	}
	return IsLoopbackHost(u.Hostname())
}

// IsLoopbackHost reports whether host (a name or IP, without port) is
// "localhost" or a loopback address.
func IsLoopbackHost(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(strings.Trim(host, "[]"))
	return ip != nil && ip.IsLoopback()
}

// MinTokenBits is the least entropy [CheckToken] accepts in a bearer
// token: 32 random bytes.
const MinTokenBits = 256

// minTokenDistinct is the fewest different characters [CheckToken]
// accepts: a random token of 64 hex digits has fewer than 8 about once in
// 10^20 draws.
const minTokenDistinct = 8

// ErrWeakToken is wrapped by [CheckToken]'s error.
var ErrWeakToken = errors.New("bearer token is too weak")

// CheckToken refuses a bearer token that could be guessed or never
// match: one with white space at either end, fewer than 8 different
// characters, or an estimated entropy ([TokenBits]) below [MinTokenBits],
// such as fewer than 64 hex digits or 43 base64 characters.
func CheckToken(token string) error {
	if strings.TrimSpace(token) != token {
		return fmt.Errorf("%w: it starts or ends with white space, which HTTP drops from the header, so no client could send it", ErrWeakToken)
	}
	distinct := map[rune]bool{}
	for _, r := range token {
		distinct[r] = true
	}
	if len(distinct) < minTokenDistinct {
		return fmt.Errorf("%w: it has only %d different characters; generate one with: openssl rand -hex 32", ErrWeakToken, len(distinct))
	}
	if bits := TokenBits(token); bits < MinTokenBits {
		return fmt.Errorf("%w: %d characters carry about %d bits at most, and at least %d are needed; "+
			"generate one with: openssl rand -hex 32", ErrWeakToken, utf8.RuneCountInString(token), int(bits), MinTokenBits)
	}
	return nil
}

// TokenBits estimates the entropy of token in bits as if each character
// were drawn at random from the smallest usual alphabet holding all of
// them: digits (3.3 bits), hex digits (4), letters and digits with the
// base64 signs (6), any other printable ASCII (6.6). A token with
// repeated characters is counted as generously, so the estimate is an
// upper bound.
func TokenBits(token string) float64 {
	digits, hexOnly, b64 := true, true, true
	for _, r := range token {
		isDigit := r >= '0' && r <= '9'
		isHex := isDigit || (r >= 'a' && r <= 'f') || (r >= 'A' && r <= 'F')
		isB64 := isDigit || (r >= 'a' && r <= 'z') || (r >= 'A' && r <= 'Z') || strings.ContainsRune("+/=-_", r)
		digits = digits && isDigit
		hexOnly = hexOnly && isHex
		b64 = b64 && isB64
	}
	perChar := math.Log2(95)
	switch {
	case digits:
		perChar = math.Log2(10)
	case hexOnly:
		perChar = 4
	case b64:
		perChar = 6
	}
	return float64(utf8.RuneCountInString(token)) * perChar
}

// ErrInsecureBind is returned by [CheckBind] for a non-loopback address
// without a token.
var ErrInsecureBind = errors.New("refusing to listen on a non-loopback address without a bearer token")

// CheckBind refuses to serve on a non-loopback host without a token, since
// anyone who can reach the port could then read and write the user's
// memory. force overrides the check.
func CheckBind(host, token string, force bool) error {
	if force || token != "" || IsLoopbackHost(host) {
		return nil
	}
	return fmt.Errorf("%w: set --auth-token or OPENHUMAN_MCP_TOKEN, or bind 127.0.0.1", ErrInsecureBind)
}
