package searxng

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

func TestSearchURL(t *testing.T) {
	tests := []struct {
		base string
		args searchArgs
		want string
	}{
		{"http://127.0.0.1:8888", searchArgs{Query: "hello"}, "http://127.0.0.1:8888/search?q=hello&format=json"},
		{"http://127.0.0.1:8888/", searchArgs{Query: "hello world"}, "http://127.0.0.1:8888/search?q=hello+world&format=json"},
		{"https://example.org/searxng/", searchArgs{Query: "a+b&c=d", Categories: []string{"general", "news"}, Language: "de-CH"},
			"https://example.org/searxng/search?q=a%2Bb%26c%3Dd&format=json&categories=general,news&language=de-CH"},
		{"https://example.org/my%20searx", searchArgs{Query: "日本", Categories: []string{"images"}},
			"https://example.org/my%20searx/search?q=%E6%97%A5%E6%9C%AC&format=json&categories=images"},
		{"http://[::1]:8080", searchArgs{Query: "#tag ?x", Language: "all"}, "http://[::1]:8080/search?q=%23tag+%3Fx&format=json&language=all"},
	}
	for _, tt := range tests {
		c := newClient(testSettings(t, tt.base))
		if got := c.searchURL(tt.args); got != tt.want {
			t.Errorf("%s %+v:\n got %s\nwant %s", tt.base, tt.args, got, tt.want)
		}
	}
}

func TestClientTransport(t *testing.T) {
	c := newClient(testSettings(t, "http://127.0.0.1:8888"))
	tr, ok := c.hc.Transport.(*http.Transport)
	if !ok {
		t.Fatalf("transport %T", c.hc.Transport)
	}
	if tr.Proxy != nil {
		t.Error("the transport takes a proxy; it must not (the provider has no environment)")
	}
	if c.hc.Timeout != 0 {
		t.Errorf("client timeout %v: each request has its own deadline", c.hc.Timeout)
	}
	if c.timeout != 10*time.Second || c.maxBody != 8<<20 {
		t.Errorf("timeout %v, body cap %d", c.timeout, c.maxBody)
	}
}

// hops serves /search as the first of n redirects, each to the next hop
// on the same server, and general.json at the end.
func hops(n int) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("/search", func(w http.ResponseWriter, r *http.Request) {
		if n == 0 {
			fixture("general.json", "application/json", http.StatusOK)(w, r)
			return
		}
		http.Redirect(w, r, "/hop/1?"+r.URL.RawQuery, http.StatusFound)
	})
	mux.HandleFunc("/hop/{i}", func(w http.ResponseWriter, r *http.Request) {
		var i int
		_, _ = fmt.Sscan(r.PathValue("i"), &i)
		if i >= n {
			fixture("general.json", "application/json", http.StatusOK)(w, r)
			return
		}
		http.Redirect(w, r, fmt.Sprintf("/hop/%d?%s", i+1, r.URL.RawQuery), http.StatusMovedPermanently)
	})
	return mux
}

func TestRedirects(t *testing.T) {
	for n := 0; n <= 4; n++ {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			srv := httptest.NewServer(hops(n))
			defer srv.Close()
			c := newClient(testSettings(t, srv.URL))
			raw, _, err := c.search(context.Background(), searchArgs{Query: "q"})
			if n <= maxRedirects {
				if err != nil || len(raw.Results) != 9 {
					t.Fatalf("%d redirects: %v", n, err)
				}
				return
			}
			want := "SearXNG at " + srv.URL + " redirected more than 3 times (last to " + srv.URL + "): set [providers.searxng] base_url to the instance's final address"
			if err == nil || err.Error() != want {
				t.Errorf("got %v\nwant %s", err, want)
			}
		})
	}
}

func TestRedirectChangingScheme(t *testing.T) {
	plain := httptest.NewServer(http.HandlerFunc(fixture("general.json", "application/json", http.StatusOK)))
	defer plain.Close()
	secure := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, plain.URL+"/search?"+r.URL.RawQuery, http.StatusFound)
	}))
	defer secure.Close()

	c := newClient(testSettings(t, secure.URL))
	c.hc.Transport.(*http.Transport).TLSClientConfig = secure.Client().Transport.(*http.Transport).TLSClientConfig
	_, _, err := c.search(context.Background(), searchArgs{Query: "q"})
	want := "SearXNG at " + secure.URL + " redirected from https to plain http (" + plain.URL + "); refused. Fix the instance's redirect or its server.base_url"
	if err == nil || err.Error() != want {
		t.Errorf("https→http: got %v\nwant %s", err, want)
	}

	upgrade := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, secure.URL+"/searx/search?"+r.URL.RawQuery, http.StatusMovedPermanently)
	}))
	defer upgrade.Close()
	c = newClient(testSettings(t, upgrade.URL+"/searx"))
	_, _, err = c.search(context.Background(), searchArgs{Query: "q"})
	want = "SearXNG at " + upgrade.URL + " redirected to " + secure.URL + ": set [providers.searxng] base_url to " + secure.URL + "/searx"
	if err == nil || err.Error() != want {
		t.Errorf("http→https: got %v\nwant %s", err, want)
	}
}

func TestRedirectToAnotherHostIsRefused(t *testing.T) {
	var reached atomic.Int32
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		reached.Add(1)
		fixture("general.json", "application/json", http.StatusOK)(w, r)
	}))
	defer other.Close()
	instance := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, other.URL+"/search?"+r.URL.RawQuery, http.StatusFound)
	}))
	defer instance.Close()

	c := newClient(testSettings(t, instance.URL))
	_, _, err := c.search(context.Background(), searchArgs{Query: "private words"})
	want := "SearXNG at " + instance.URL + " redirected to another host (" + other.URL + "); refused: only redirects within " + instance.URL +
		" are followed. If the instance moved, set [providers.searxng] base_url to " + other.URL
	if err == nil || err.Error() != want {
		t.Errorf("redirect to another host: got %v\nwant %s", err, want)
	}
	if n := reached.Load(); n != 0 {
		t.Errorf("the other host received %d requests", n)
	}
}

func TestTLSErrors(t *testing.T) {
	secure := httptest.NewUnstartedServer(http.HandlerFunc(fixture("general.json", "application/json", http.StatusOK)))
	secure.Config.ErrorLog = log.New(io.Discard, "", 0) // the refused handshake
	secure.StartTLS()
	defer secure.Close()
	c := newClient(testSettings(t, secure.URL))
	_, _, err := c.search(context.Background(), searchArgs{Query: "q"})
	if err == nil || !strings.HasPrefix(err.Error(), "cannot reach "+secure.URL+": its TLS certificate is not trusted (") {
		t.Errorf("untrusted certificate: %v", err)
	}

	plain := httptest.NewServer(http.HandlerFunc(fixture("general.json", "application/json", http.StatusOK)))
	defer plain.Close()
	httpsURL := "https://" + strings.TrimPrefix(plain.URL, "http://")
	c = newClient(testSettings(t, httpsURL))
	_, _, err = c.search(context.Background(), searchArgs{Query: "q"})
	if want := "cannot reach " + httpsURL + ": it does not speak TLS; use http:// in [providers.searxng] base_url"; err == nil || err.Error() != want {
		t.Errorf("https to a plain server: got %v\nwant %s", err, want)
	}
}

func TestBodyCap(t *testing.T) {
	body := `{"results": [], "query": "q"}`
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		// Chunked: no Content-Length to refuse on.
		w.(http.Flusher).Flush()
		_, _ = w.Write([]byte(body + strings.Repeat(" ", 1000-len(body))))
		if r.URL.Query().Get("q") == "over" {
			_, _ = w.Write([]byte(" "))
		}
	}))
	defer srv.Close()
	c := newClient(testSettings(t, srv.URL))
	c.maxBody = 1000
	if _, _, err := c.search(context.Background(), searchArgs{Query: "at"}); err != nil {
		t.Errorf("an answer of exactly the cap: %v", err)
	}
	_, _, err := c.search(context.Background(), searchArgs{Query: "over"})
	want := "SearXNG at " + srv.URL + " sent an answer larger than 1000 bytes; refused (is [providers.searxng] base_url the SearXNG root?)"
	var ierr *instanceError
	if !errors.As(err, &ierr) || err.Error() != want {
		t.Errorf("got %v\nwant %s", err, want)
	}
}

func TestTimeoutCoversTheBody(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"results": [`))
		w.(http.Flusher).Flush()
		<-r.Context().Done()
	}))
	defer srv.Close()
	c := newClient(testSettings(t, srv.URL))
	c.timeout = 200 * time.Millisecond
	// The body never ends, so only the timeout ends the search.
	_, _, err := c.search(context.Background(), searchArgs{Query: "q"})
	want := "SearXNG at " + srv.URL + " gave no answer within 10s ([providers.searxng] timeout_secs): the instance or its engines are slow or stuck. " +
		"Try again, raise timeout_secs, or lower the instance's outgoing.request_timeout"
	if err == nil || err.Error() != want {
		t.Errorf("got %v\nwant %s", err, want)
	}
}

func TestCallerDeadlineIsNotTheTimeout(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(slow))
	defer srv.Close()
	c := newClient(testSettings(t, srv.URL))
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	_, _, err := c.search(ctx, searchArgs{Query: "q"})
	var ierr *instanceError
	if errors.As(err, &ierr) || !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("the caller's deadline must come back as its own error, got %v", err)
	}
}

func TestConnectionClosedEarly(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		conn, _, err := w.(http.Hijacker).Hijack()
		if err == nil {
			_ = conn.Close()
		}
	}))
	defer srv.Close()
	c := newClient(testSettings(t, srv.URL))
	_, _, err := c.search(context.Background(), searchArgs{Query: "q"})
	want := "SearXNG at " + srv.URL + " closed the connection before answering in full; try again, and check the instance's log"
	if err == nil || err.Error() != want {
		t.Errorf("got %v\nwant %s", err, want)
	}
}

func TestCleanErrorBody(t *testing.T) {
	tests := []struct{ in, want string }{
		{"", ""},
		{"Bad Gateway\r\n", "Bad Gateway"},
		{"a\x00b\x1bc", "a b c"},
		{strings.Repeat("x", 199) + "é", strings.Repeat("x", 199)},
		{strings.Repeat("y", 300), strings.Repeat("y", 200)},
		{"\xff\xfeok", "\uFFFDok"},
	}
	for _, tt := range tests {
		if got := cleanErrorBody([]byte(tt.in)); got != tt.want {
			t.Errorf("cleanErrorBody(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}
