// Package telemetry_test checks the built openhuman-host binary's
// telemetry against real components: a Prometheus server from Debian's
// packages scrapes its /metrics, and an OTLP/HTTP receiver in the test
// collects the spans of the host process and of its upstream provider's
// process for one call that reaches an upstream MCP server, which
// continues the same trace.
//
// It needs OPENHUMAN_HOST_BIN (the built server) and, for the scrape,
// prometheus on PATH or in /usr/bin. `make test` provides both and sets
// OPENHUMAN_REQUIRE_PROMETHEUS, which turns a missing one from a skip into
// a failure. By hand:
//
//	make build && OPENHUMAN_HOST_BIN=$PWD/bin/openhuman-host go test -tags sqlite_fts5 ./test/telemetry/
package telemetry_test

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/protobuf/proto"

	"github.com/openhuman/openhuman-host/providers/memory/memorytool"
	"github.com/openhuman/openhuman-host/sdk"
	"github.com/openhuman/openhuman-host/sdk/testproc"
	"github.com/openhuman/openhuman-host/sdk/testwait"
	"github.com/openhuman/openhuman-host/test/internal/prereq"
)

// envRequire, set, turns a missing prerequisite into a failure.
const envRequire = "OPENHUMAN_REQUIRE_PROMETHEUS"

func unavailable(t *testing.T, why string) {
	t.Helper()
	prereq.Missing(t, "telemetry: "+why+"; run `make test`, or by hand: make build && OPENHUMAN_HOST_BIN=$PWD/bin/openhuman-host go test -tags sqlite_fts5 ./test/telemetry/", envRequire)
}

func hostBin(t *testing.T) string {
	t.Helper()
	bin, err := prereq.Executable("OPENHUMAN_HOST_BIN", "path of the built openhuman-host")
	if err != nil {
		unavailable(t, err.Error())
	}
	return bin
}

// host is a running `openhuman-host serve --transport http`.
type host struct {
	url    string
	stderr *testwait.Buffer
}

// startHost serves config on a free loopback port with token and waits
// for its endpoint line.
func startHost(t *testing.T, config, token string) *host {
	t.Helper()
	bin := hostBin(t)
	dir := t.TempDir()
	cfg := filepath.Join(dir, "config.toml")
	if err := os.WriteFile(cfg, []byte(config), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, bin, "--config", cfg, "serve", "--transport", "http", "--port", "0")
	cmd.Env = append(os.Environ(), "OPENHUMAN_DATA_DIR="+filepath.Join(dir, "data"), "OPENHUMAN_MCP_TOKEN="+token, "OPENHUMAN_LOG_LEVEL=info")
	cmd.Cancel = func() error { return cmd.Process.Signal(os.Interrupt) }
	stderr := &testwait.Buffer{}
	pr, pw := io.Pipe()
	cmd.Stderr = io.MultiWriter(stderr, pw)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	t.Cleanup(func() {
		cancel()
		<-done
		if t.Failed() {
			t.Logf("host stderr:\n%s", stderr.String())
		}
	})
	go func() { _ = cmd.Wait(); _ = pw.Close(); close(done) }()
	endpoint := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(pr)
		re := regexp.MustCompile(`MCP endpoint (http://\S+)`)
		for sc.Scan() {
			if m := re.FindStringSubmatch(sc.Text()); m != nil {
				endpoint <- m[1]
			}
		}
		_, _ = io.Copy(io.Discard, pr)
	}()
	select {
	case u := <-endpoint:
		return &host{url: u, stderr: stderr}
	case <-done:
		t.Fatalf("the host exited before serving:\n%s", stderr.String())
	case <-testwait.After(t):
		t.Fatalf("the host did not print its endpoint:\n%s", stderr.String())
	}
	return nil
}

// bearer adds an Authorization header to every request.
type bearer struct {
	token string
	base  http.RoundTripper
}

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return b.base.RoundTrip(r)
}

func connect(t *testing.T, endpoint, token string) *mcp.ClientSession {
	t.Helper()
	c := mcp.NewClient(&mcp.Implementation{Name: "telemetry-test", Version: "1"}, nil)
	cs, err := c.Connect(testwait.Context(t), &mcp.StreamableClientTransport{
		Endpoint: endpoint, HTTPClient: &http.Client{Transport: bearer{token: token, base: http.DefaultTransport}},
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cs.Close() })
	return cs
}

// newToken is a bearer token strong enough for the host: 32 random bytes
// in hex.
func newToken(t *testing.T) string {
	t.Helper()
	var b [32]byte
	if _, err := rand.Read(b[:]); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(b[:])
}

// TestPrometheusScrapes: a real Prometheus scrapes the host's /metrics
// with the MCP endpoint's bearer token, and its query API returns the
// tool-call counter by tool and decision after calls.
func TestPrometheusScrapes(t *testing.T) {
	t.Parallel()
	promBin, err := exec.LookPath("prometheus")
	if err != nil {
		unavailable(t, "prometheus is not installed (Debian package prometheus; `make prometheus-deps`)")
	}
	token := newToken(t)
	h := startHost(t, "[telemetry]\nprometheus = true\n", token)
	u, err := url.Parse(h.url)
	if err != nil {
		t.Fatal(err)
	}

	// Without the token /metrics is refused like MCP.
	resp, err := http.Get(h.url + "metrics")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("GET /metrics without the token = %d, want 401", resp.StatusCode)
	}

	cs := connect(t, h.url, token)
	const stores = 3
	for i := range stores {
		res, err := cs.CallTool(testwait.Context(t), &mcp.CallToolParams{Name: memorytool.Store,
			Arguments: map[string]any{"title": fmt.Sprintf("note %d", i), "content": "the offsite is in Lisbon"}})
		if err != nil || res.IsError {
			t.Fatalf(memorytool.Store+" = %+v, %v", res, err)
		}
	}
	if res, err := cs.CallTool(testwait.Context(t), &mcp.CallToolParams{Name: memorytool.Search, Arguments: map[string]any{"query": "Lisbon"}}); err != nil || res.IsError {
		t.Fatalf(memorytool.Search+" = %+v, %v", res, err)
	}

	dir := t.TempDir()
	promPort, err := testproc.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	promCfg := fmt.Sprintf(`global:
  scrape_interval: 1s
  scrape_timeout: 1s
scrape_configs:
  - job_name: openhuman
    metrics_path: /metrics
    authorization:
      credentials: %s
    static_configs:
      - targets: [%q]
`, token, u.Host)
	if err := os.WriteFile(filepath.Join(dir, "prometheus.yml"), []byte(promCfg), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	prom := exec.CommandContext(ctx, promBin, "--config.file="+filepath.Join(dir, "prometheus.yml"),
		"--storage.tsdb.path="+filepath.Join(dir, "data"), "--web.listen-address=127.0.0.1:"+strconv.Itoa(promPort))
	promLog := &testwait.Buffer{}
	prom.Stdout, prom.Stderr = promLog, promLog
	if err := prom.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cancel()
		_ = prom.Wait()
		if t.Failed() {
			t.Logf("prometheus log:\n%s", promLog.String())
		}
	})

	// What the query API returns once Prometheus has scraped after the
	// calls: the counter of each tool and decision.
	query := func(q string) map[string]float64 {
		resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/api/v1/query?query=%s", promPort, url.QueryEscape(q)))
		if err != nil {
			return nil
		}
		defer resp.Body.Close()
		var body struct {
			Status string `json:"status"`
			Data   struct {
				Result []struct {
					Metric map[string]string `json:"metric"`
					Value  [2]any            `json:"value"`
				} `json:"result"`
			} `json:"data"`
		}
		if json.NewDecoder(resp.Body).Decode(&body) != nil || body.Status != "success" {
			return nil
		}
		out := map[string]float64{}
		for _, r := range body.Data.Result {
			s, _ := r.Value[1].(string)
			v, _ := strconv.ParseFloat(s, 64)
			out[r.Metric["gen_ai_tool_name"]+" "+r.Metric["openhuman_decision"]] = v
		}
		return out
	}
	var got map[string]float64
	testwait.Until(t, "Prometheus to return the call counter", func() bool {
		got = query("openhuman_tool_calls_total")
		return got[memorytool.Store+" allowed"] == stores && got[memorytool.Search+" allowed"] == 1
	})
	if len(got) != 2 {
		t.Errorf("openhuman_tool_calls_total = %v, want "+memorytool.Store+" and "+memorytool.Search+" only", got)
	}
	// The semantic conventions' histogram and the host's own gauges are
	// scraped too.
	testwait.Until(t, "Prometheus to return mcp.server.operation.duration and the provider state", func() bool {
		ops := query(`sum(mcp_server_operation_duration_seconds_count{mcp_method_name="tools/call"})`)
		up := query(`openhuman_provider_state{openhuman_provider="memory",openhuman_state="running"}`)
		return ops[" "] == stores+1 && up[" "] == 1
	})
}

// receiver is an OTLP/HTTP trace receiver: it keeps every span it is
// sent, with its resource's service.name.
type receiver struct {
	mu    sync.Mutex
	spans []span
}

type span struct {
	service, name           string
	traceID, spanID, parent string
	kind                    string
	attrs                   map[string]string
}

func (r *receiver) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	if req.URL.Path != "/v1/traces" {
		http.NotFound(w, req)
		return
	}
	body, err := io.ReadAll(req.Body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	var msg coltracepb.ExportTraceServiceRequest
	if err := proto.Unmarshal(body, &msg); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	r.mu.Lock()
	for _, rs := range msg.GetResourceSpans() {
		service := ""
		for _, kv := range rs.GetResource().GetAttributes() {
			if kv.GetKey() == "service.name" {
				service = kv.GetValue().GetStringValue()
			}
		}
		for _, ss := range rs.GetScopeSpans() {
			for _, s := range ss.GetSpans() {
				attrs := map[string]string{}
				for _, kv := range s.GetAttributes() {
					attrs[kv.GetKey()] = kv.GetValue().GetStringValue()
				}
				r.spans = append(r.spans, span{service: service, name: s.GetName(),
					traceID: fmt.Sprintf("%x", s.GetTraceId()), spanID: fmt.Sprintf("%x", s.GetSpanId()),
					parent: fmt.Sprintf("%x", s.GetParentSpanId()), kind: s.GetKind().String(), attrs: attrs})
			}
		}
	}
	r.mu.Unlock()
	w.Header().Set("Content-Type", "application/x-protobuf")
	out, _ := proto.Marshal(&coltracepb.ExportTraceServiceResponse{})
	_, _ = w.Write(out)
}

func (r *receiver) all() []span {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]span(nil), r.spans...)
}

// TestOneTraceAcrossProcesses: a tools/call that a client sends with its
// own traceparent, to an upstream tool, makes one trace: the host's
// SERVER span (child of the client's, and the tool's execute_tool span),
// the upstream provider's CLIENT span to the upstream server, and the
// upstream server's span, which continues the context the request carried
// in params._meta. With the provider in a plugin process, the gRPC call
// into that process comes between the first two, and the provider's spans
// are that process's.
func TestOneTraceAcrossProcesses(t *testing.T) {
	t.Parallel()
	t.Run("host", func(t *testing.T) {
		t.Parallel()
		oneTrace(t, "host", "openhuman-host", []string{
			"openhuman-host: tools/call echo",
			"openhuman-host: tools/call up__echo",
		})
	})
	t.Run("plugin", func(t *testing.T) {
		t.Parallel()
		oneTrace(t, "plugin", "openhuman-host.upstream", []string{
			"openhuman-host.upstream: tools/call echo",
			"openhuman-host.upstream: openhuman.provider.v1.Provider/CallTool",
			"openhuman-host: tools/call up__echo",
		})
	})
}

// oneTrace is TestOneTraceAcrossProcesses with the upstream provider's
// [upstream] process setting process: its CLIENT span is exported as
// service, and want are the spans from it up to the client's.
func oneTrace(t *testing.T, process, service string, want []string) {
	recv := &receiver{}
	collector := httptest.NewServer(recv)
	t.Cleanup(collector.Close)

	// The upstream server: one tool, whose handler continues the trace
	// context of the request's _meta in a span of its own.
	upSpans := tracetest.NewSpanRecorder()
	upTracer := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(upSpans)).Tracer("upstream-server")
	var (
		mu         sync.Mutex
		headerSeen string
	)
	upstream := mcp.NewServer(&mcp.Implementation{Name: "up", Version: "1"}, nil)
	mcp.AddTool(upstream, &mcp.Tool{Name: "echo", Description: "echo"}, func(ctx context.Context, req *mcp.CallToolRequest, in struct {
		Text string `json:"text"`
	}) (*mcp.CallToolResult, any, error) {
		ctx = sdk.ExtractTraceMeta(ctx, req.Params.Meta)
		_, sp := upTracer.Start(ctx, "echo handler", trace.WithSpanKind(trace.SpanKindServer))
		sp.End()
		mu.Lock()
		headerSeen = req.Extra.Header.Get("Traceparent")
		mu.Unlock()
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: in.Text}}}, nil, nil
	})
	up := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return upstream }, nil))
	t.Cleanup(up.Close)

	token := newToken(t)
	h := startHost(t, fmt.Sprintf(`[telemetry]
traces = true
otlp_endpoint = %q

[upstream]
process = %q

[[upstream.servers]]
name = "up"
endpoint = %q
`, collector.URL, process, up.URL), token)
	cs := connect(t, h.url, token)
	var tools []string
	testwait.Until(t, "the upstream tool to be listed", func() bool {
		res, err := cs.ListTools(testwait.Context(t), nil)
		if err != nil {
			return false
		}
		tools = tools[:0]
		for _, tl := range res.Tools {
			tools = append(tools, tl.Name)
		}
		return strings.Contains(strings.Join(tools, " "), "up__echo")
	})
	const clientTrace, clientSpan = "5bf92f3577b34da6a3ce929d0e0e4736", "10f067aa0ba902b7"
	res, err := cs.CallTool(testwait.Context(t), &mcp.CallToolParams{Name: "up__echo", Arguments: map[string]any{"text": "private words"},
		Meta: mcp.Meta{"traceparent": "00-" + clientTrace + "-" + clientSpan + "-01"}})
	if err != nil || res.IsError {
		t.Fatalf("up__echo = %+v, %v", res, err)
	}

	// The upstream server continued the client's trace.
	ended := upSpans.Ended()
	if len(ended) != 1 || ended[0].SpanContext().TraceID().String() != clientTrace {
		t.Fatalf("upstream server spans = %d, trace %v; want one in the client's trace %s", len(ended), traceIDs(ended), clientTrace)
	}
	upParent := ended[0].Parent().SpanID().String()
	mu.Lock()
	if !strings.Contains(headerSeen, clientTrace) {
		t.Errorf("the upstream request's traceparent header = %q, want the client's trace", headerSeen)
	}
	mu.Unlock()

	// The host and the provider process export their spans (batched):
	// wait for the provider's CLIENT span, the upstream server's parent.
	find := func(pred func(span) bool) (span, bool) {
		for _, s := range recv.all() {
			if pred(s) {
				return s, true
			}
		}
		return span{}, false
	}
	var providerClient span
	testwait.Until(t, "the upstream provider's CLIENT span to reach the receiver", func() bool {
		var ok bool
		providerClient, ok = find(func(s span) bool { return s.spanID == upParent })
		return ok
	})
	if providerClient.service != service || providerClient.name != "tools/call echo" || providerClient.kind != "SPAN_KIND_CLIENT" ||
		providerClient.attrs["mcp.method.name"] != "tools/call" || providerClient.attrs["gen_ai.tool.name"] != "echo" {
		t.Errorf("the upstream server's parent span = %+v, want the upstream provider's tools/call echo CLIENT span", providerClient)
	}
	// Walk up from it to the client's span: every hop is in the trace.
	var chain []string
	cur := providerClient
	testwait.Until(t, "every span of the call to reach the receiver", func() bool {
		chain = chain[:0]
		cur = providerClient
		for range 20 {
			chain = append(chain, cur.service+": "+cur.name)
			if cur.parent == clientSpan {
				return true
			}
			next, ok := find(func(s span) bool { return s.spanID == cur.parent })
			if !ok {
				return false
			}
			cur = next
		}
		return false
	})
	for _, s := range recv.all() {
		if s.traceID == clientTrace {
			for k, v := range s.attrs {
				if strings.Contains(v, "private words") {
					t.Errorf("span %s carries the arguments in %s", s.name, k)
				}
			}
		}
	}
	if strings.Join(chain, "\n") != strings.Join(want, "\n") {
		t.Errorf("spans from the upstream server's parent up to the client's span:\n%s\nwant:\n%s", strings.Join(chain, "\n"), strings.Join(want, "\n"))
	}
}

func traceIDs(spans []sdktrace.ReadOnlySpan) []string {
	var out []string
	for _, s := range spans {
		out = append(out, s.SpanContext().TraceID().String())
	}
	return out
}
