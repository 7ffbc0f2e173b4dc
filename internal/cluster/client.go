package cluster

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/openhuman/openhuman-host/host/server"
)

// Protocol revisions the clients speak.
const (
	// Stateless is MCP 2026-07-28: no session, any replica.
	Stateless = "2026-07-28"
	// Sessions is MCP 2025-11-25: a session pinned to one replica.
	Sessions = "2025-11-25"
)

// Client is one MCP client of the cluster, through its proxy, that knows
// which replica answered each of its requests (the Openhuman-Replica
// header).
type Client struct {
	// ID numbers the client; its calls carry it as "client".
	ID int
	// Version is the protocol revision it speaks.
	Version string

	endpoint string
	http     *http.Client
	seen     *replicaSeen
	cs       *mcp.ClientSession
	pinned   string
}

// replicaSeen records the replica that answered the last POST.
type replicaSeen struct {
	next http.RoundTripper
	mu   sync.Mutex
	last string
}

func (r *replicaSeen) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := r.next.RoundTrip(req)
	if err == nil && req.Method == http.MethodPost {
		r.mu.Lock()
		r.last = resp.Header.Get(server.ReplicaHeader)
		r.mu.Unlock()
	}
	return resp, err
}

func (r *replicaSeen) take() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	last := r.last
	r.last = ""
	return last
}

// Dial connects a client to endpoint (the proxy's URL).
func Dial(ctx context.Context, endpoint string, id int, version string) (*Client, error) {
	seen := &replicaSeen{next: &http.Transport{MaxIdleConnsPerHost: 4, IdleConnTimeout: time.Minute}}
	c := &Client{ID: id, Version: version, endpoint: endpoint, http: &http.Client{Transport: seen}, seen: seen}
	if err := c.connect(ctx); err != nil {
		return nil, err
	}
	return c, nil
}

func (c *Client) connect(ctx context.Context) error {
	_ = c.seen.take()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "replica-load", Version: "1"}, nil).
		Connect(ctx, &mcp.StreamableClientTransport{Endpoint: c.endpoint, HTTPClient: c.http},
			&mcp.ClientSessionOptions{ProtocolVersion: c.Version})
	if err != nil {
		return fmt.Errorf("client %d (%s): connect: %w", c.ID, c.Version, err)
	}
	c.cs = cs
	c.pinned = ""
	if c.Version < Stateless {
		c.pinned = c.seen.take()
	}
	return nil
}

// Reconnect closes the client's session and opens a new one, as a client
// of a session-based revision does when its session is gone.
func (c *Client) Reconnect(ctx context.Context) error {
	if c.cs != nil {
		_ = c.cs.Close()
	}
	return c.connect(ctx)
}

// Pinned is the replica that owns the client's session (the one that
// answered its initialize); empty on 2026-07-28.
func (c *Client) Pinned() string { return c.pinned }

// Call calls tool with {"client": ID, "seq": seq} and returns its result,
// the replica that answered ("" when none did) and the error.
func (c *Client) Call(ctx context.Context, tool string, seq int) (*mcp.CallToolResult, string, error) {
	_ = c.seen.take()
	res, err := c.cs.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: map[string]any{"client": c.ID, "seq": seq}})
	return res, c.seen.take(), err
}

// CallArgs calls tool with args and returns its result, the replica that
// answered and the error.
func (c *Client) CallArgs(ctx context.Context, tool string, args map[string]any) (*mcp.CallToolResult, string, error) {
	_ = c.seen.take()
	res, err := c.cs.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: args})
	return res, c.seen.take(), err
}

// Close ends the client's session.
func (c *Client) Close() {
	if c.cs != nil {
		_ = c.cs.Close()
	}
}

// Want is the text rep_read and rep_write answer for client id's call seq.
func Want(id, seq int) string { return fmt.Sprintf("client %d seq %d", id, seq) }
