package searxng

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/openhuman/openhuman-host/sdk/testproc"
	"github.com/openhuman/openhuman-host/sdk/testwait"
)

// searxRun is Debian's searx launcher (package searx: the predecessor of
// SearXNG, with the same JSON API).
const searxRun = "searx-run"

// searxSettings is a complete settings.yml for Debian's searx 1.1 with two
// engines that fail whether or not the machine has internet access: one
// asks a local server that answers 503, the other a loopback port nothing
// listens on. Debian ships no default settings, so the file replaces them
// whole (use_default_settings: false).
const searxSettings = `use_default_settings: false
general:
  debug: false
  instance_name: "openhuman-test"
search:
  safe_search: 0
  autocomplete: ""
  default_lang: ""
  ban_time_on_fail: 0
  max_ban_time_on_fail: 0
  formats: [html, json]
server:
  port: %d
  bind_address: "127.0.0.1"
  secret_key: "openhuman-host-searxng-test-secret"
  base_url: false
  image_proxy: false
  http_protocol_version: "1.0"
  method: "GET"
  default_http_headers: {}
ui:
  static_path: "/usr/share/python3-searx/static"
  templates_path: "/usr/share/python3-searx/templates"
  default_theme: oscar
  default_locale: ""
  theme_args:
    oscar_style: logicodev
outgoing:
  # Engines get long enough to answer on a busy machine; closed-port
  # fails at once either way.
  request_timeout: 60.0
  max_request_timeout: 60.0
  pool_connections: 10
  pool_maxsize: 10
enabled_plugins: []
engines:
  - name: stub-json
    engine: json_engine
    search_url: %s/engine?q={query}
    url_query: url
    title_query: title
    content_query: content
    results_query: results
    categories: general, news
    shortcut: sj
    enable_http: true
  - name: closed-port
    engine: xpath
    search_url: http://%s/search?q={query}
    url_xpath: //a/@href
    title_xpath: //a
    content_xpath: //p
    categories: general
    shortcut: cp
    enable_http: true
locales:
  en: English
doi_resolvers:
  oadoi.org: "https://oadoi.org/"
default_doi_resolver: "oadoi.org"
`

// TestRealSearx runs searches against Debian's searx on loopback. Its two
// engines are local: a stub that answers 503 (or results, for queries
// with "works") and a port nothing listens on, so the test needs no
// internet and gives the same answers with it. The first search fails in
// every engine, and the provider must say so, naming them, from a real
// server's own answer; the second gets the stub's results through searx,
// with the other engine reported unresponsive.
func TestRealSearx(t *testing.T) {
	runner, err := exec.LookPath(searxRun)
	if err != nil {
		// CI installs searx and sets OPENHUMAN_REQUIRE_SEARX, so there a
		// missing server is a failure, not a skip.
		if os.Getenv("OPENHUMAN_REQUIRE_SEARX") == "1" {
			t.Fatalf("%s is not installed but OPENHUMAN_REQUIRE_SEARX=1 (Debian: apt-get install searx)", searxRun)
		}
		t.Skipf("%s is not installed (Debian: apt-get install searx); skipping the test against a real searx server", searxRun)
	}
	if testing.Short() {
		t.Skip("-short: skipping the test against a real searx server")
	}
	var engineHits atomic.Int32
	stub := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		engineHits.Add(1)
		if !strings.Contains(r.URL.Query().Get("q"), "works") {
			http.Error(w, "engine unavailable", http.StatusServiceUnavailable)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"results": [` +
			`{"url": "https://example.org/one", "title": "First hit", "content": "The first <b>result</b>,   from the stub."},` +
			`{"url": "https://example.org/two", "title": "Second hit", "content": "Another one."}]}`))
	}))
	t.Cleanup(stub.Close)

	base := startSearx(t, runner, stub.URL, closedAddress(t))
	h := start(t, nil, map[string]any{"base_url": base, "timeout_secs": 120})
	res := call(t, h, map[string]any{"query": "openhuman host", "categories": []string{"web"}, "language": "en"})
	got := errorText(t, res)
	t.Logf("searx answered: %s", got)
	prefix := "searxng_search: every engine failed: "
	suffix := ". SearXNG at " + base + " got no results from any of its engines: " +
		"check that the instance can reach the internet and that these engines work (its logs, or its preferences page), then try again"
	if !strings.HasPrefix(got, prefix) || !strings.HasSuffix(got, suffix) {
		t.Fatalf("message %q", got)
	}
	// searx keeps failed engines in a set: either order.
	engines := strings.Split(strings.TrimSuffix(strings.TrimPrefix(got, prefix), suffix), ", ")
	if len(engines) != 2 {
		t.Fatalf("failed engines %q: want stub-json and closed-port", engines)
	}
	names := map[string]string{}
	for _, e := range engines {
		name, reason, ok := strings.Cut(e, ": ")
		if !ok || reason == "" {
			t.Errorf("engine %q has no reason", e)
		}
		names[name] = reason
	}
	if _, ok := names["stub-json"]; !ok {
		t.Errorf("stub-json not reported in %q", got)
	}
	if _, ok := names["closed-port"]; !ok {
		t.Errorf("closed-port not reported in %q", got)
	}
	if engineHits.Load() == 0 {
		t.Error("searx never asked the stub engine: the search did not reach the engines")
	}

	// One engine answers, the other still fails: results from a real
	// server's JSON, with the failure reported beside them.
	res = call(t, h, map[string]any{"query": "it works", "max_results": 1})
	out := structured(t, res)
	if len(out.Results) != 1 {
		t.Fatalf("%d results, want max_results 1: %s", len(out.Results), res.StructuredContent)
	}
	r := out.Results[0]
	if r.URL != "https://example.org/one" && r.URL != "https://example.org/two" {
		t.Errorf("result %+v", r)
	}
	if r.Source != "stub-json" || len(r.Engines) != 1 || r.Engines[0] != "stub-json" || r.Title == "" || r.Score == nil {
		t.Errorf("result %+v: want stub-json as source and engine, a title and a score", r)
	}
	if r.URL == "https://example.org/one" && r.Snippet != "The first result, from the stub." {
		t.Errorf("snippet %q", r.Snippet)
	}
	if len(out.UnresponsiveEngines) != 1 || out.UnresponsiveEngines[0].Engine != "closed-port" || out.UnresponsiveEngines[0].Reason == "" {
		t.Errorf("unresponsive engines %+v: want closed-port with its reason", out.UnresponsiveEngines)
	}
	if text := resultText(t, res); !strings.HasPrefix(text, `1 result for "it works"`) || !strings.Contains(text, "\nUnresponsive engines: closed-port (") {
		t.Errorf("text %q", text)
	}
}

// startSearx starts searx on a free loopback port with searxSettings and
// returns its root URL once /healthz answers. The process is killed when
// the test ends; its output is logged if the test fails.
func startSearx(t *testing.T, runner, stubURL, closed string) string {
	t.Helper()
	// The port is chosen before searx binds it; another process may take it
	// in between (searx then exits), so try a few. Python starts slowly on
	// a busy machine: each attempt waits until the test's deadline is near.
	var lastErr error
	for attempt := 0; attempt < 3; attempt++ {
		port := freePort(t)
		dir := t.TempDir()
		settingsPath := filepath.Join(dir, "settings.yml")
		if err := os.WriteFile(settingsPath, []byte(fmt.Sprintf(searxSettings, port, stubURL, closed)), 0o600); err != nil {
			t.Fatal(err)
		}
		out := &testwait.Buffer{}
		cmd := exec.Command(runner)
		cmd.Env = []string{"PATH=/usr/bin:/bin", "HOME=" + dir, "LANG=C.UTF-8", "SEARX_SETTINGS_PATH=" + settingsPath, "SEARX_DEBUG=0"}
		cmd.Dir = dir
		cmd.Stdout, cmd.Stderr = out, out
		if err := cmd.Start(); err != nil {
			t.Fatalf("start %s: %v", runner, err)
		}
		exited := make(chan struct{})
		go func() { _ = cmd.Wait(); close(exited) }()
		stop := func() {
			_ = cmd.Process.Kill()
			<-exited
		}
		base := fmt.Sprintf("http://127.0.0.1:%d", port)
		if lastErr = waitHealthy(base, exited, testwait.Deadline(t)); lastErr == nil {
			t.Cleanup(func() {
				stop()
				if t.Failed() {
					t.Logf("searx output:\n%s", out.String())
				}
			})
			return base
		}
		stop()
		t.Logf("searx attempt %d: %v; output:\n%s", attempt+1, lastErr, out.String())
	}
	t.Fatalf("searx did not start: %v", lastErr)
	return ""
}

// waitHealthy polls base/healthz until it answers 200, the process exits
// or the deadline passes.
func waitHealthy(base string, exited <-chan struct{}, deadline time.Time) error {
	client := &http.Client{Timeout: time.Second}
	start := time.Now()
	for time.Now().Before(deadline) {
		select {
		case <-exited:
			return fmt.Errorf("searx exited before answering")
		default:
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, base+"/healthz", nil)
		resp, err := client.Do(req)
		if err == nil {
			_ = resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				cancel()
				return nil
			}
		}
		cancel()
		time.Sleep(100 * time.Millisecond)
	}
	return fmt.Errorf("no answer on %s/healthz after %v (the test's deadline is near)", base, time.Since(start).Round(time.Second))
}

// freePort returns a loopback port that was free a moment ago.
func freePort(t testing.TB) int {
	t.Helper()
	port, err := testproc.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	return port
}
