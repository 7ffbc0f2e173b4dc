package server

import (
	"net"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
)

// Limits of [authBackoff].
const (
	// freeFailures is how many wrong tokens an address may send before it
	// has to wait.
	freeFailures = 5
	// maxBackoff is the longest wait; it doubles from one second with each
	// failure past freeFailures.
	maxAuthBackoff = 5 * time.Minute
	// forgetAfter drops an address whose last failure is this old.
	forgetAfter = 15 * time.Minute
	// maxTracked bounds the addresses remembered; beyond it the oldest
	// entries are dropped first.
	maxTracked = 10000
)

// authBackoff slows down guessing of the bearer token: once a client
// address has sent freeFailures wrong or missing tokens, each further
// request from it is answered 429 Too Many Requests with Retry-After until
// a wait that doubles with every failure (up to maxAuthBackoff) is over.
// A right token clears the address. Each address is logged at warn level
// when it starts waiting, never with the token.
type authBackoff struct {
	log hclog.Logger
	now func() time.Time

	mu    sync.Mutex
	addrs map[string]*authFailures
}

type authFailures struct {
	count int
	last  time.Time // time of the last failure
	until time.Time // requests before this are refused
}

func newAuthBackoff(log hclog.Logger) *authBackoff {
	return &authBackoff{log: log, now: time.Now, addrs: map[string]*authFailures{}}
}

// wrap refuses waiting addresses before next (the bearer check) runs, and
// counts the 401s next answers.
func (b *authBackoff) wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		addr := clientAddr(r)
		if wait := b.waiting(addr); wait > 0 {
			w.Header().Set("Retry-After", strconv.Itoa(int((wait+time.Second-1)/time.Second)))
			w.Header().Set("Connection", "close")
			http.Error(w, "Too Many Requests: too many wrong bearer tokens from this address; wait before trying again", http.StatusTooManyRequests)
			return
		}
		sw := &statusWriter{ResponseWriter: w}
		next.ServeHTTP(sw, r)
		switch {
		case sw.code == http.StatusUnauthorized:
			b.failed(addr)
		case sw.code != 0 && sw.code < 400:
			b.succeeded(addr)
		}
	})
}

// waiting returns how long addr must still wait, or 0.
func (b *authBackoff) waiting(addr string) time.Duration {
	b.mu.Lock()
	defer b.mu.Unlock()
	f := b.addrs[addr]
	if f == nil {
		return 0
	}
	return max(f.until.Sub(b.now()), 0)
}

func (b *authBackoff) failed(addr string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	now := b.now()
	f := b.addrs[addr]
	if f == nil || now.Sub(f.last) > forgetAfter {
		if len(b.addrs) >= maxTracked {
			b.prune(now)
		}
		f = &authFailures{}
		b.addrs[addr] = f
	}
	f.count++
	f.last = now
	if f.count > freeFailures {
		wait := min(time.Second<<min(f.count-freeFailures-1, 20), maxAuthBackoff)
		f.until = now.Add(wait)
		if f.count == freeFailures+1 {
			b.log.Warn("wrong bearer tokens: slowing this client address down", "address", addr, "failures", f.count, "wait", wait)
		}
	}
}

func (b *authBackoff) succeeded(addr string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	delete(b.addrs, addr)
}

// prune drops forgotten addresses and, if that is not enough, the half
// with the oldest failures.
func (b *authBackoff) prune(now time.Time) {
	for a, f := range b.addrs {
		if now.Sub(f.last) > forgetAfter {
			delete(b.addrs, a)
		}
	}
	if len(b.addrs) < maxTracked {
		return
	}
	cutoff := now.Add(-forgetAfter / 2)
	for a, f := range b.addrs {
		if f.last.Before(cutoff) || len(b.addrs) >= maxTracked {
			delete(b.addrs, a)
		}
	}
}

// clientAddr is the request's peer IP address, without its port.
func clientAddr(r *http.Request) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return r.RemoteAddr
	}
	return host
}

// statusWriter records the status code written. It forwards Flush and
// Unwrap, so streamed (SSE) responses work through it.
type statusWriter struct {
	http.ResponseWriter
	code int
}

func (s *statusWriter) WriteHeader(code int) {
	if s.code == 0 {
		s.code = code
	}
	s.ResponseWriter.WriteHeader(code)
}

func (s *statusWriter) Write(p []byte) (int, error) {
	if s.code == 0 {
		s.code = http.StatusOK
	}
	return s.ResponseWriter.Write(p)
}

// Flush flushes the underlying writer when it can.
func (s *statusWriter) Flush() {
	if f, ok := s.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// Unwrap returns the underlying writer for http.ResponseController.
func (s *statusWriter) Unwrap() http.ResponseWriter { return s.ResponseWriter }
