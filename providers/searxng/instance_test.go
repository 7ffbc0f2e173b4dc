package searxng

import (
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// seenRequest is what the fake instance recorded of one request.
type seenRequest struct {
	Method string
	Path   string
	Query  url.Values
	Raw    string // the raw query
	Header http.Header
}

// fakeInstance is a local HTTP server standing in for a SearXNG instance.
// By default it answers GET /search according to the q parameter:
// scenarios maps a query to its handler, and any other query gets
// general.json. Every request is recorded.
type fakeInstance struct {
	*httptest.Server
	mu   sync.Mutex
	seen []seenRequest
}

// scenarios are the fake instance's answers, by query.
var scenarios = map[string]http.HandlerFunc{
	"news":                 fixture("news.json", "application/json", http.StatusOK),
	"images":               fixture("images.json", "application/json", http.StatusOK),
	"empty":                fixture("empty.json", "application/json", http.StatusOK),
	"variations":           fixture("variations.json", "application/json", http.StatusOK),
	"all failed searx":     fixture("all_failed_searx.json", "application/json", http.StatusOK),
	"all failed searxng":   fixture("all_failed_searxng.json", "application/json", http.StatusOK),
	"malformed":            fixture("malformed.json", "application/json", http.StatusOK),
	"not searxng":          fixture("not_searxng.json", "application/json", http.StatusOK),
	"html":                 fixture("index.html", "text/html; charset=utf-8", http.StatusOK),
	"html as json":         fixture("index.html", "application/json", http.StatusOK),
	"forbidden":            fixture("forbidden.html", "text/html; charset=utf-8", http.StatusForbidden),
	"too many":             fixture("too_many_requests.txt", "text/plain; charset=utf-8", http.StatusTooManyRequests),
	"too many retry-after": withHeader("Retry-After", "30", fixture("too_many_requests.txt", "text/plain", http.StatusTooManyRequests)),
	"server error":         text(http.StatusInternalServerError, "Internal Server Error\n\nTraceback (most recent call last):\n  File \"searx/webapp.py\""+strings.Repeat(" padding", 40)),
	"not found":            text(http.StatusNotFound, "<h1>Not Found</h1>"),
	"huge":                 huge(maxBodyBytes+1, true),
	"huge chunked":         huge(maxBodyBytes+1, false),
	"slow":                 slow,
	"redirect loop":        func(w http.ResponseWriter, r *http.Request) { http.Redirect(w, r, r.URL.String(), http.StatusFound) },
	"empty body":           text(http.StatusOK, ""),
}

// newFakeInstance starts a fake instance that closes when the test ends.
func newFakeInstance(t testing.TB) *fakeInstance {
	t.Helper()
	f := &fakeInstance{}
	f.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f.mu.Lock()
		f.seen = append(f.seen, seenRequest{Method: r.Method, Path: r.URL.Path, Query: r.URL.Query(), Raw: r.URL.RawQuery, Header: r.Header.Clone()})
		f.mu.Unlock()
		if r.URL.Path != "/search" {
			http.NotFound(w, r)
			return
		}
		if h, ok := scenarios[r.URL.Query().Get("q")]; ok {
			h(w, r)
			return
		}
		fixture("general.json", "application/json", http.StatusOK)(w, r)
	}))
	t.Cleanup(f.Close)
	return f
}

// requests returns the requests recorded so far.
func (f *fakeInstance) requests() []seenRequest {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]seenRequest(nil), f.seen...)
}

// last returns the last request; the test fails if there was none.
func (f *fakeInstance) last(t testing.TB) seenRequest {
	t.Helper()
	reqs := f.requests()
	if len(reqs) == 0 {
		t.Fatal("the instance got no request")
	}
	return reqs[len(reqs)-1]
}

// fixture answers with testdata/<name>.
func fixture(name, contentType string, status int) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		b, err := os.ReadFile(filepath.Join("testdata", name))
		if err != nil {
			http.Error(w, err.Error(), http.StatusTeapot)
			return
		}
		w.Header().Set("Content-Type", contentType)
		w.WriteHeader(status)
		_, _ = w.Write(b)
	}
}

func withHeader(key, value string, h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set(key, value)
		h(w, r)
	}
}

func text(status int, body string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.WriteHeader(status)
		_, _ = w.Write([]byte(body))
	}
}

// huge answers with n bytes of a JSON-looking body, declaring its length
// or streaming it in chunks.
func huge(n int, declareLength bool) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		if declareLength {
			w.Header().Set("Content-Length", strconv.Itoa(n))
		}
		chunk := []byte(`{"results": [` + strings.Repeat(" ", 64<<10))
		for written := 0; written < n; {
			c := chunk
			if len(c) > n-written {
				c = c[:n-written]
			}
			m, err := w.Write(c)
			written += m
			if err != nil {
				return
			}
			chunk = []byte(strings.Repeat(" ", 64<<10))
		}
	}
}

// slow answers only when the client gives up, or after 10 s.
func slow(w http.ResponseWriter, r *http.Request) {
	select {
	case <-r.Context().Done():
	case <-time.After(10 * time.Second):
		fixture("general.json", "application/json", http.StatusOK)(w, r)
	}
}

// closedAddress returns a loopback address nothing listens on.
func closedAddress(t testing.TB) string {
	t.Helper()
	return net.JoinHostPort("127.0.0.1", strconv.Itoa(freePort(t)))
}

// testSettings are settings for base, with the defaults otherwise.
func testSettings(t testing.TB, base string) settings {
	t.Helper()
	u, err := parseBaseURL(base)
	if err != nil {
		t.Fatal(err)
	}
	return settings{base: u, maxResults: defaultMaxResults, timeoutSecs: defaultTimeoutSecs}
}
