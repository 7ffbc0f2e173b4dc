package main

import (
	"fmt"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/openhuman/openhuman-host/sdk/mcpwire"
	"github.com/openhuman/openhuman-host/sdk/testwait"
)

// bearerTransport adds a bearer token to every request.
type bearerTransport struct{ token string }

func (b bearerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return http.DefaultTransport.RoundTrip(r)
}

// TestManyHTTPClientsOnOneStdioUpstream connects 32 client sessions over
// HTTP to the built server, twice the upstream sessions kept while unused
// (maxClientSessions), and has each call a stdio upstream server's tool at
// once: each client gets a session (and process) of its own with the
// server, and no call fails.
func TestManyHTTPClientsOnOneStdioUpstream(t *testing.T) {
	t.Parallel()
	const (
		clients = 32
		calls   = 5
	)
	url := serveUpstreamForTest(t, "read_only_tools = [\"echo\"]\n")

	// fail reports the first five failures, of any client; the count of
	// them all comes last.
	var failed atomic.Int64
	fail := func(err error) {
		if failed.Add(1) <= 5 {
			t.Error(err)
		}
	}
	var wg sync.WaitGroup
	for c := range clients {
		wg.Go(func() {
			client := mcp.NewClient(&mcp.Implementation{Name: fmt.Sprintf("load-%d", c), Version: "1"}, nil)
			cs, err := client.Connect(testwait.Context(t), &mcp.StreamableClientTransport{Endpoint: url,
				HTTPClient: &http.Client{Transport: bearerTransport{testToken}}}, nil)
			if err != nil {
				fail(fmt.Errorf("client %d: connect: %w", c, err))
				return
			}
			defer cs.Close()
			for i := range calls {
				res, err := cs.CallTool(testwait.Context(t), &mcp.CallToolParams{Name: "local__echo", Arguments: map[string]any{"text": fmt.Sprintf("%d-%d", c, i)}})
				switch {
				case err != nil:
					fail(fmt.Errorf("client %d call %d: %w", c, i, err))
				case res.IsError:
					fail(fmt.Errorf("client %d call %d: isError: %s", c, i, mcpwire.Text(res)))
				case mcpwire.Text(res) != fmt.Sprintf("echo:%d-%d", c, i):
					fail(fmt.Errorf("client %d call %d: %q", c, i, mcpwire.Text(res)))
				}
			}
		})
	}
	wg.Wait()
	if n := failed.Load(); n > 0 {
		t.Errorf("%d of %d calls failed", n, clients*calls)
	}
}
