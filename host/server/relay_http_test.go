package server

//lint:file-ignore SA1019 the client answers sampling, deprecated from protocol 2026-07-28 (SEP-2577) and still relayed for earlier versions.

import (
	"context"
	"encoding/json"
	"net/http/httptest"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/openhuman/openhuman-host/host/catalog"
	"github.com/openhuman/openhuman-host/sdk"
	"github.com/openhuman/openhuman-host/sdk/testwait"
)

// askingDispatcher's one tool asks the calling client to sample through
// srv and waits for the answer.
type askingDispatcher struct {
	plainFake
	srv *Server
}

func (d *askingDispatcher) CallTool(ctx context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
	out, err := d.srv.RequestClient(ctx, &sdk.ClientRequest{Caller: req.Caller, Method: sdk.MethodCreateMessage,
		Params: []byte(`{"messages":[{"role":"user","content":{"type":"text","text":"hi"}}],"maxTokens":5}`)})
	if err != nil {
		return nil, err
	}
	return sdk.TextResult(string(out)), nil
}

// Over Streamable HTTP a relayed request travels on the call's stream, and
// when the client cancels the call the client's handler for that request
// is cancelled too: the go-sdk's notifications/cancelled must not be sent
// on the call's stream, which is gone by then.
func TestRelayedRequestCancelledWithTheCall(t *testing.T) {
	obj := json.RawMessage(`{"type":"object"}`)
	cat := catalog.Build(nil, []catalog.Source{{Provider: "ask", Catalog: &sdk.Catalog{Name: "ask",
		Tools: []sdk.Tool{{Name: "ask.model", Description: "asks the client's model", InputSchema: obj, Class: sdk.ClassRead}}}}})
	d := &askingDispatcher{}
	srv, err := New(cat, map[string]Dispatcher{"ask": d}, nil)
	if err != nil {
		t.Fatal(err)
	}
	d.srv = srv
	web := httptest.NewServer(srv.HTTPHandler(nil))
	t.Cleanup(web.Close)

	asked, cancelled, release := make(chan struct{}), make(chan struct{}), make(chan struct{})
	client := mcp.NewClient(&mcp.Implementation{Name: "cancel-test", Version: "1"}, &mcp.ClientOptions{
		CreateMessageHandler: func(ctx context.Context, _ *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
			close(asked)
			select {
			case <-ctx.Done():
				close(cancelled)
			case <-release:
			}
			return nil, ctx.Err()
		},
	})
	cs, err := client.Connect(t.Context(), &mcp.StreamableClientTransport{Endpoint: web.URL + "/"}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cs.Close() })
	// Runs first: a handler that was never cancelled must not hold up
	// the session's close.
	t.Cleanup(func() { close(release) })
	ctx, cancel := context.WithCancel(t.Context())
	go func() {
		select {
		case <-asked:
			cancel()
		case <-testwait.After(t):
			t.Error("the client was not asked to sample by the test's deadline")
			cancel()
		}
	}()
	if _, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "ask.model", Arguments: map[string]any{}}); err == nil {
		t.Fatal("the cancelled call returned no error")
	}
	testwait.Recv(t, cancelled, "the client's sampling handler to be cancelled after the call's cancellation")
}
