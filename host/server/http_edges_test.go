package server

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/openhuman/openhuman-host/host/policy"
	"github.com/openhuman/openhuman-host/sdk"
	"github.com/openhuman/openhuman-host/sdk/testwait"
)

// post sends body to the handler's endpoint with the headers a Streamable
// HTTP client sends, plus extra, and returns the status and body.
func postMCP(t *testing.T, url, body string, extra map[string]string) (int, http.Header, string) {
	t.Helper()
	req := newRequest(t, http.MethodPost, url, body)
	req.Header.Set("Accept", "application/json, text/event-stream")
	for k, v := range extra {
		req.Header.Set(k, v)
	}
	resp, got := send(t, req)
	return resp.StatusCode, resp.Header, got
}

// serveHTTP serves s's HTTP handler with opts until the test ends.
func serveHTTP(t *testing.T, s *Server, opts *HTTPOptions) *httptest.Server {
	t.Helper()
	ts := httptest.NewServer(s.HTTPHandler(opts))
	t.Cleanup(ts.Close)
	return ts
}

// newRequest is a request of method to url, with body as JSON when it is
// not empty.
func newRequest(t *testing.T, method, url, body string) *http.Request {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	return req
}

// send sends req and returns the answer, whose body it has read to the
// end and closed, with that body. It is for answers that end, not for
// event streams.
func send(t *testing.T, req *http.Request) (*http.Response, string) {
	t.Helper()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("read the answer to %s %s: %v", req.Method, req.URL, err)
	}
	return resp, string(body)
}

// fetch sends a request of method to url with body (see newRequest) and
// returns what send does.
func fetch(t *testing.T, method, url, body string) (*http.Response, string) {
	t.Helper()
	return send(t, newRequest(t, method, url, body))
}

// sseData returns the answer an SSE response body carries, its last
// non-empty data line (the first event may only prime the stream for
// resumption); a body that is not SSE is returned as it is.
func sseData(body string) string {
	data := body
	for _, line := range strings.Split(body, "\n") {
		if d, ok := strings.CutPrefix(line, "data:"); ok && strings.TrimSpace(d) != "" {
			data = strings.TrimSpace(d)
		}
	}
	return data
}

// jsonRPCError decodes a JSON-RPC error response.
func jsonRPCError(t *testing.T, body string) (id any, code int64, message string) {
	t.Helper()
	var m struct {
		JSONRPC string `json:"jsonrpc"`
		ID      any    `json:"id"`
		Error   *struct {
			Code    int64  `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	if err := json.Unmarshal([]byte(body), &m); err != nil || m.JSONRPC != "2.0" || m.Error == nil {
		t.Fatalf("body %q is not a JSON-RPC error response (%v)", body, err)
	}
	return m.ID, m.Error.Code, m.Error.Message
}

// TestHTTPSessionlessRequestIs400: a request of the session-based
// revisions without Mcp-Session-Id that is not initialize gets HTTP 400
// with a JSON-RPC -32600 error for its id, naming the fix; initialize
// still opens a session.
func TestHTTPSessionlessRequestIs400(t *testing.T) {
	t.Parallel()
	s, _ := newTestServer(t, policy.Supervised, true)
	ts := serveHTTP(t, s, nil)
	for name, body := range map[string]string{
		"request":      `{"jsonrpc":"2.0","id":7,"method":"tools/list"}`,
		"notification": `{"jsonrpc":"2.0","method":"notifications/initialized"}`,
	} {
		status, hdr, got := postMCP(t, ts.URL+"/", body, map[string]string{"MCP-Protocol-Version": "2025-11-25"})
		if status != http.StatusBadRequest || !strings.HasPrefix(hdr.Get("Content-Type"), "application/json") {
			t.Errorf("%s: status %d, content type %q; want 400 application/json", name, status, hdr.Get("Content-Type"))
			continue
		}
		id, code, msg := jsonRPCError(t, got)
		if code != codeInvalidRequest || !strings.Contains(msg, "without an Mcp-Session-Id header; send initialize first") {
			t.Errorf("%s: error %d %q", name, code, msg)
		}
		if wantID := map[string]any{"request": float64(7), "notification": nil}[name]; id != wantID {
			t.Errorf("%s: id %v, want %v", name, id, wantID)
		}
	}
	status, hdr, got := postMCP(t, ts.URL+"/", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"c","version":"1"}}}`, nil)
	if status != http.StatusOK || hdr.Get("Mcp-Session-Id") == "" {
		t.Errorf("initialize: status %d, session %q, body %s", status, hdr.Get("Mcp-Session-Id"), got)
	}
	status, _, got = postMCP(t, ts.URL+"/", `{"jsonrpc":"2.0","id":2,"method":`, nil)
	if _, code, _ := jsonRPCError(t, got); status != http.StatusBadRequest || code != codeParseError {
		t.Errorf("malformed JSON: status %d, body %s; want 400 with -32700", status, got)
	}
}

// TestHTTPBatchIs400JSON: a batch on 2025-06-18 or later, which have no
// batching, gets HTTP 400 with a JSON-RPC -32600 body, not plain text.
func TestHTTPBatchIs400JSON(t *testing.T) {
	t.Parallel()
	s, _ := newTestServer(t, policy.Supervised, true)
	ts := serveHTTP(t, s, nil)
	for _, v := range []string{"2025-06-18", "2025-11-25"} {
		status, _, got := postMCP(t, ts.URL+"/", `[{"jsonrpc":"2.0","id":1,"method":"ping"}]`, map[string]string{"MCP-Protocol-Version": v})
		if status != http.StatusBadRequest {
			t.Errorf("%s: status %d, want 400", v, status)
			continue
		}
		if _, code, msg := jsonRPCError(t, got); code != codeInvalidRequest || !strings.Contains(msg, "no JSON-RPC batches") {
			t.Errorf("%s: error %d %q", v, code, msg)
		}
	}
}

// TestHTTPServesBothRevisions: on one endpoint, a 2026-07-28 client is
// served without a session and a 2025-11-25 client with one.
func TestHTTPServesBothRevisions(t *testing.T) {
	t.Parallel()
	s, _ := newTestServer(t, policy.Supervised, true)
	ts := serveHTTP(t, s, nil)
	ctx := context.Background()
	for _, v := range []string{"2026-07-28", "2025-11-25", "2025-03-26"} {
		cs, err := mcp.NewClient(&mcp.Implementation{Name: "c", Version: "1"}, nil).
			Connect(ctx, &mcp.StreamableClientTransport{Endpoint: ts.URL + "/"}, &mcp.ClientSessionOptions{ProtocolVersion: v})
		if err != nil {
			t.Fatalf("%s: %v", v, err)
		}
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "fake_search", Arguments: map[string]any{"query": "reef"}})
		if err != nil || res.IsError || !strings.Contains(textOf(res), `found {"query":"reef"}`) {
			t.Errorf("%s: call = %+v, %v", v, res, err)
		}
		if hasSession := cs.ID() != ""; hasSession != (v < statelessVersion) {
			t.Errorf("%s: session id %q", v, cs.ID())
		}
		_ = cs.Close()
	}
}

// TestHTTPDeleteCancelsCalls: DELETE of a session cancels the calls it
// has running: the provider sees its context end, so its work (and any
// LLM request it made) stops, and the session's client is told.
func TestHTTPDeleteCancelsCalls(t *testing.T) {
	t.Parallel()
	started, stopped := make(chan struct{}), make(chan error, 1)
	p := &fakeProvider{call: func(ctx context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
		close(started)
		<-ctx.Done()
		stopped <- ctx.Err()
		return nil, ctx.Err()
	}}
	pol := testPolicy(t, policy.Options{Level: policy.Supervised})
	s, err := New(testCatalog(), map[string]Dispatcher{"fake": p}, &Options{Policy: pol, ToolTimeout: time.Until(testwait.Deadline(t))})
	if err != nil {
		t.Fatal(err)
	}
	ts := serveHTTP(t, s, nil)
	ctx := testwait.Context(t)
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "c", Version: "1"}, nil).
		Connect(ctx, &mcp.StreamableClientTransport{Endpoint: ts.URL + "/"}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		_, _ = cs.CallTool(ctx, &mcp.CallToolParams{Name: "fake_search", Arguments: map[string]any{"query": "long"}})
	}()
	select {
	case <-started:
	case <-ctx.Done():
		t.Fatal("the call never reached the provider")
	}
	req, _ := http.NewRequestWithContext(ctx, http.MethodDelete, ts.URL+"/", nil)
	req.Header.Set("Mcp-Session-Id", cs.ID())
	if resp, _ := send(t, req); resp.StatusCode != http.StatusNoContent {
		t.Fatalf("DELETE: status %d", resp.StatusCode)
	}
	select {
	case err := <-stopped:
		if !errors.Is(err, context.Canceled) {
			t.Errorf("provider context ended with %v, want context.Canceled", err)
		}
	case <-ctx.Done():
		t.Fatal("the provider's call was not cancelled when its session was deleted")
	}
	_ = cs.Close()
}

// TestStructureOnlyForClientsThatKnowIt: outputSchema and
// structuredContent, which 2025-06-18 introduced, are not sent to a
// client that negotiated 2025-03-26; later clients get them.
func TestStructureOnlyForClientsThatKnowIt(t *testing.T) {
	t.Parallel()
	s, _ := newTestServer(t, policy.Supervised, true)
	for _, tc := range []struct {
		version string
		want    bool
	}{{"2024-11-05", false}, {"2025-03-26", false}, {"2025-06-18", true}, {"2025-11-25", true}, {"2026-07-28", true}} {
		cs := connectVersion(t, s, "c", nil, tc.version)
		ctx := context.Background()
		list, err := cs.ListTools(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		for _, tool := range list.Tools {
			if tool.Name == "fake_store" && (tool.OutputSchema != nil) != tc.want {
				t.Errorf("%s: fake_store outputSchema = %v, want present %v", tc.version, tool.OutputSchema, tc.want)
			}
		}
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "fake_store", Arguments: map[string]any{"title": "t"}})
		if err != nil {
			t.Fatal(err)
		}
		if (res.StructuredContent != nil) != tc.want || textOf(res) != "stored" {
			t.Errorf("%s: result %+v, want structuredContent present %v and text", tc.version, res, tc.want)
		}
	}
	// The registered tool keeps its schema for everyone else.
	if cs := connectVersion(t, s, "c", nil, "2025-11-25"); cs != nil {
		list, _ := cs.ListTools(context.Background(), nil)
		for _, tool := range list.Tools {
			if tool.Name == "fake_store" && tool.OutputSchema == nil {
				t.Error("a 2025-03-26 client's listing removed the schema from the registered tool")
			}
		}
	}
}

// TestNonObjectArgumentsAre32602: arguments that are not a JSON object
// are a malformed request, JSON-RPC -32602, not a failed tool call; the
// call reaches no provider and writes no audit row.
func TestNonObjectArgumentsAre32602(t *testing.T) {
	t.Parallel()
	s, a := newTestServer(t, policy.Supervised, true)
	ts := serveHTTP(t, s, nil)
	ctx := context.Background()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "c", Version: "1"}, nil).
		Connect(ctx, &mcp.StreamableClientTransport{Endpoint: ts.URL + "/"}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	for _, args := range []string{`[]`, `"q=go"`, `42`, `true`} {
		status, _, body := postMCP(t, ts.URL+"/", `{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"fake_search","arguments":`+args+`}}`,
			map[string]string{"Mcp-Session-Id": cs.ID(), "MCP-Protocol-Version": "2025-11-25", "Accept": "application/json, text/event-stream"})
		data := sseData(body)
		if status != http.StatusOK {
			t.Errorf("arguments %s: status %d, body %s", args, status, body)
			continue
		}
		_, code, msg := jsonRPCError(t, data)
		if code != jsonrpc.CodeInvalidParams || !strings.Contains(msg, `"arguments" must be a JSON object`) {
			t.Errorf("arguments %s: error %d %q, want -32602", args, code, msg)
		}
	}
	if rows := a.all(); len(rows) != 0 {
		t.Errorf("malformed calls wrote audit rows: %+v", rows)
	}
}

// TestListCacheHints: on 2026-07-28 every list is private (it describes
// this user's tools and servers) with a positive ttlMs, resources/read is
// private and immediately stale, and tools come in name order.
func TestListCacheHints(t *testing.T) {
	t.Parallel()
	s, _ := newTestServer(t, policy.Supervised, true)
	cs := connectVersion(t, s, "c", nil, "2026-07-28")
	ctx := context.Background()
	tools, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if tools.CacheScope != "private" || tools.TTLMs != int(listTTL.Milliseconds()) {
		t.Errorf("tools/list cache hints = %q, %d ms", tools.CacheScope, tools.TTLMs)
	}
	var names []string
	for _, tool := range tools.Tools {
		names = append(names, tool.Name)
	}
	if !slices.IsSorted(names) || len(names) != 3 {
		t.Errorf("tools = %v, want the three in name order", names)
	}
	res, err := cs.ListResources(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if res.CacheScope != "private" || res.TTLMs <= 0 {
		t.Errorf("resources/list cache hints = %q, %d ms", res.CacheScope, res.TTLMs)
	}
	read, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "fake://doc"})
	if err != nil {
		t.Fatal(err)
	}
	if read.CacheScope != "private" || read.TTLMs != 0 {
		t.Errorf("resources/read cache hints = %q, %d ms", read.CacheScope, read.TTLMs)
	}
}

// TestHTTPBatchEdges: a batch on 2026-07-28, an empty batch and a
// session-less batch without initialize all get HTTP 400 with a JSON-RPC
// error body; a body over the cap is 413 naming the key on every
// revision.
func TestHTTPBatchEdges(t *testing.T) {
	t.Parallel()
	s, _ := newTestServer(t, policy.Supervised, true)
	ts := serveHTTP(t, s, &HTTPOptions{MaxBodyBytes: 1024})
	for name, tc := range map[string]struct {
		body, version, want string
	}{
		"2026-07-28 batch":   {`[{"jsonrpc":"2.0","id":1,"method":"ping"}]`, "2026-07-28", "no JSON-RPC batches"},
		"empty batch":        {`[]`, "", "empty JSON-RPC batch"},
		"session-less batch": {`[{"jsonrpc":"2.0","id":1,"method":"ping"},{"jsonrpc":"2.0","id":2,"method":"tools/list"}]`, "2025-03-26", "without an Mcp-Session-Id"},
	} {
		hdr := map[string]string{}
		if tc.version != "" {
			hdr["MCP-Protocol-Version"] = tc.version
		}
		status, _, body := postMCP(t, ts.URL+"/", tc.body, hdr)
		if status != http.StatusBadRequest {
			t.Errorf("%s: status %d, body %s", name, status, body)
			continue
		}
		if _, code, msg := jsonRPCError(t, body); code != codeInvalidRequest || !strings.Contains(msg, tc.want) {
			t.Errorf("%s: error %d %q, want -32600 with %q", name, code, msg, tc.want)
		}
	}
	big := `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"pad":"` + strings.Repeat("x", 2048) + `"}}`
	for _, v := range []string{"2025-11-25", "2026-07-28"} {
		status, _, body := postMCP(t, ts.URL+"/", big, map[string]string{"MCP-Protocol-Version": v})
		if status != http.StatusRequestEntityTooLarge || !strings.Contains(body, "max_request_body_bytes") {
			t.Errorf("%s oversize: status %d, body %s", v, status, body)
		}
	}
}

// TestDiscoverCacheHint: server/discover may be kept an hour, privately.
func TestDiscoverCacheHint(t *testing.T) {
	t.Parallel()
	s, _ := newTestServer(t, policy.Supervised, true)
	ts := serveHTTP(t, s, nil)
	status, _, body := postMCP(t, ts.URL+"/", `{"jsonrpc":"2.0","id":1,"method":"server/discover","params":{"_meta":{`+
		`"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"c","version":"1"},`+
		`"io.modelcontextprotocol/clientCapabilities":{}}}}`,
		map[string]string{"MCP-Protocol-Version": "2026-07-28", "Mcp-Method": "server/discover"})
	body = sseData(body)
	var res struct {
		Result struct {
			TTLMs      int    `json:"ttlMs"`
			CacheScope string `json:"cacheScope"`
		} `json:"result"`
	}
	if err := json.Unmarshal([]byte(body), &res); status != http.StatusOK || err != nil ||
		res.Result.TTLMs != int(discoverTTL.Milliseconds()) || res.Result.CacheScope != "private" {
		t.Errorf("discover: status %d, %+v (%v); body %s", status, res.Result, err, body)
	}
}
