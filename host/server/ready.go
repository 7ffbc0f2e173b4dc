package server

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"net/http"
	"strings"
	"time"
)

// ReadyPath is the path of the readiness check.
const ReadyPath = "/readyz"

// DefaultReadyTimeout bounds one readiness check when
// [HTTPOptions.ReadyTimeout] is 0.
const DefaultReadyTimeout = 3 * time.Second

// Readiness is the JSON body of GET /readyz.
type Readiness struct {
	// Status is "ready" (answered with 200) or "not ready" (503).
	Status string `json:"status"`
	// Replica is [Options.Replica]; absent when unnamed.
	Replica string `json:"replica,omitempty"`
	// Checks lists every check, in a fixed order.
	Checks []ReadyCheck `json:"checks"`
}

// ReadyCheck is one check of a [Readiness].
type ReadyCheck struct {
	// Name names what was checked: "providers", "audit" or "storage".
	Name string `json:"name"`
	// OK is whether it passed.
	OK bool `json:"ok"`
	// Detail says what was found, or why it failed (databases named as
	// host:port/database, never with credentials). It is left out of the
	// answers to a caller without the bearer token, when the server has
	// one.
	Detail string `json:"detail,omitempty"`
}

// Ready runs the readiness checks within ctx.
type Ready func(ctx context.Context) []ReadyCheck

// Readiness statuses.
const (
	StatusReady    = "ready"
	StatusNotReady = "not ready"
)

// readyz answers GET and HEAD of [ReadyPath] with 200 when every check of
// ready passes and 503 otherwise, with a [Readiness] body, without
// requiring authentication, so that a probe (Kubernetes, a load
// balancer) needs no secret. When the server has a bearer token, a
// caller that does not send it gets the checks' names and results only:
// the details name paths and database hosts. Without ready, the path is
// left to next (404).
func (s *Server) readyz(ready Ready, token string, timeout time.Duration, next http.Handler) http.Handler {
	if ready == nil {
		return next
	}
	if timeout <= 0 {
		timeout = DefaultReadyTimeout
	}
	want := sha256.Sum256([]byte(token))
	authorized := func(r *http.Request) bool {
		if token == "" {
			return true
		}
		got, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		if !ok {
			return false
		}
		sum := sha256.Sum256([]byte(got))
		return subtle.ConstantTimeCompare(sum[:], want[:]) == 1
	}
	return jsonEndpoint(ReadyPath, next, func(r *http.Request) (any, int) {
		ctx, cancel := context.WithTimeout(r.Context(), timeout)
		defer cancel()
		checks := ready(ctx)
		out := Readiness{Status: StatusReady, Replica: s.opts.Replica, Checks: checks}
		code := http.StatusOK
		for _, c := range checks {
			if !c.OK {
				out.Status, code = StatusNotReady, http.StatusServiceUnavailable
			}
		}
		if !authorized(r) {
			out.Checks = make([]ReadyCheck, len(checks))
			for i, c := range checks {
				out.Checks[i] = ReadyCheck{Name: c.Name, OK: c.OK}
			}
		}
		return out, code
	})
}
