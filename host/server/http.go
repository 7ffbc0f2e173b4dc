package server

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

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
}

// HTTPHandler returns the MCP Streamable HTTP handler (MCP 2025-11-25,
// basic/transports §Streamable HTTP) at path "/" (other paths get 404).
// Requests pass, in order: Origin validation, bearer authentication, the go-sdk's
// DNS-rebinding (Host header) protection and body cap, then the session's
// MCP server.
func (s *Server) HTTPHandler(opts *HTTPOptions) http.Handler {
	var o HTTPOptions
	if opts != nil {
		o = *opts
	}
	var h http.Handler = mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s.mcp }, &mcp.StreamableHTTPOptions{
		MaxRequestBodyBytes: o.MaxBodyBytes,
		SessionTimeout:      o.SessionIdleTimeout,
	})
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
		h = bearerChallenge(auth.RequireBearerToken(verify, &auth.RequireBearerTokenOptions{AllowMissingExpiration: true})(h))
	}
	return endpointOnly(originCheck(o.AllowedOrigins, h))
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
	if code == http.StatusUnauthorized && c.Header().Get("WWW-Authenticate") == "" {
		c.Header().Set("WWW-Authenticate", `Bearer realm="openhuman-host"`)
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

// endpointOnly serves MCP at "/" and nothing else.
func endpointOnly(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/" {
			http.Error(w, "Not Found: the MCP endpoint is /", http.StatusNotFound)
			return
		}
		next.ServeHTTP(w, r)
	})
}

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
