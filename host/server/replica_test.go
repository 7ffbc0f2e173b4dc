package server

//lint:file-ignore SA1019 the parked call asks the client to sample, which 2026-07-28 deprecates (SEP-2577) and still carries in multi-round-trip results.

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/openhuman/openhuman-host/host/catalog"
	"github.com/openhuman/openhuman-host/sdk"
)

// TestHealthzNamesReplica: GET /healthz answers without a token, naming
// the replica and counting its tools, and every answer (here a 401 and
// the health check) carries the Openhuman-Replica header.
func TestHealthzNamesReplica(t *testing.T) {
	t.Parallel()
	s := newFakeServer(t, &Options{Replica: "web2:9301"})
	ts := serveHTTP(t, s, &HTTPOptions{Token: strings.Repeat("0123456789abcdef", 4)})

	resp, body := fetch(t, http.MethodGet, ts.URL+HealthPath, "")
	var h Health
	if resp.StatusCode != http.StatusOK || json.Unmarshal([]byte(body), &h) != nil {
		t.Fatalf("GET %s = %d %s, want 200 and a health body", HealthPath, resp.StatusCode, body)
	}
	if want := (Health{Status: "ok", Replica: "web2:9301", Tools: len(testCatalog().Tools())}); h != want {
		t.Errorf("health = %+v, want %+v", h, want)
	}
	if got := resp.Header.Get(ReplicaHeader); got != "web2:9301" {
		t.Errorf("%s on the health check = %q", ReplicaHeader, got)
	}

	resp, _ = fetch(t, http.MethodPost, ts.URL+"/", `{"jsonrpc":"2.0","id":1,"method":"ping"}`)
	if resp.StatusCode != http.StatusUnauthorized || resp.Header.Get(ReplicaHeader) != "web2:9301" {
		t.Errorf("unauthenticated POST = %d with %s %q, want 401 naming the replica", resp.StatusCode, ReplicaHeader, resp.Header.Get(ReplicaHeader))
	}

	if resp, _ := fetch(t, http.MethodPost, ts.URL+HealthPath, ""); resp.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("POST %s = %d, want 405", HealthPath, resp.StatusCode)
	}
}

// TestUnnamedServerSendsNoReplicaHeader: without a name, no header.
func TestUnnamedServerSendsNoReplicaHeader(t *testing.T) {
	t.Parallel()
	s, _ := newTestServer(t, "", false)
	ts := serveHTTP(t, s, nil)
	resp, _ := fetch(t, http.MethodGet, ts.URL+HealthPath, "")
	if _, ok := resp.Header[ReplicaHeader]; ok || resp.StatusCode != http.StatusOK {
		t.Errorf("unnamed server: status %d, header %v", resp.StatusCode, resp.Header)
	}
}

// TestContinuationOnAnotherReplica: replicas share the key that seals
// requestStates, not parked calls. A 2026-07-28 retry that answers a
// running call's question and reaches another replica is refused at once
// with -32602 naming both replicas, instead of waiting; the same retry on
// the replica that asked completes the call.
func TestContinuationOnAnotherReplica(t *testing.T) {
	t.Parallel()
	obj := json.RawMessage(`{"type":"object"}`)
	key := []byte(strings.Repeat("k", 32))
	replica := func(name string) string {
		cat := catalog.Build(nil, []catalog.Source{{Provider: "ask", Catalog: &sdk.Catalog{Name: "ask",
			Tools: []sdk.Tool{{Name: "ask.model", Description: "asks the client's model", InputSchema: obj, Class: sdk.ClassRead}}}}})
		d := &askingDispatcher{}
		srv, err := New(cat, map[string]Dispatcher{"ask": d}, &Options{Replica: name, StateKey: key})
		if err != nil {
			t.Fatal(err)
		}
		d.srv = srv
		t.Cleanup(srv.CancelCalls)
		web := httptest.NewServer(srv.HTTPHandler(nil))
		t.Cleanup(web.Close)
		return web.URL + "/"
	}
	a, b := replica("a"), replica("b")
	connect := func(endpoint string) *mcp.ClientSession {
		cs, err := mcp.NewClient(&mcp.Implementation{Name: "Claude Desktop", Version: "1"}, &mcp.ClientOptions{
			MultiRoundTrip: &mcp.MultiRoundTripOptions{Disabled: true},
			CreateMessageHandler: func(context.Context, *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
				return nil, errors.New("not asked this way")
			},
		}).Connect(t.Context(), &mcp.StreamableClientTransport{Endpoint: endpoint}, &mcp.ClientSessionOptions{ProtocolVersion: "2026-07-28"})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = cs.Close() })
		return cs
	}
	onA, onB := connect(a), connect(b)
	ctx := t.Context()
	first, err := onA.CallTool(ctx, &mcp.CallToolParams{Name: "ask.model", Arguments: map[string]any{}})
	if err != nil || !first.NeedsInput() || len(first.InputRequests) != 1 {
		t.Fatalf("first call = %+v, %v; want an InputRequiredResult with one question", first, err)
	}
	answers := mcp.InputResponseMap{}
	for k := range first.InputRequests {
		answers[k] = &mcp.CreateMessageResult{Model: "m", Role: "assistant", Content: &mcp.TextContent{Text: "the answer"}}
	}
	retry := &mcp.CallToolParams{Name: "ask.model", Arguments: map[string]any{}, InputResponses: answers, RequestState: first.RequestState}

	res, err := onB.CallTool(ctx, retry)
	var werr *jsonrpc.Error
	if !errors.As(err, &werr) || werr.Code != jsonrpc.CodeInvalidParams ||
		!strings.Contains(werr.Message, `invalid requestState (elsewhere)`) ||
		!strings.Contains(werr.Message, `runs on replica "a", not on this one ("b")`) {
		t.Fatalf("retry on the other replica = %+v, %v; want -32602 naming replicas a and b", res, err)
	}

	res, err = onA.CallTool(ctx, retry)
	if err != nil || res.IsError || res.NeedsInput() || !strings.Contains(textOf(res), "the answer") {
		t.Fatalf("retry on the replica that asked = %+v, %v; want the call's result", res, err)
	}
}
