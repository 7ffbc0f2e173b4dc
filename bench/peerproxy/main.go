// Command peerproxy is the bench's peer row: a plain MCP proxy, the way a
// gateway without policy, audit or plugins relays one server, built on
// github.com/mark3labs/mcp-go (the library under TBXark/mcp-proxy) from
// the Go module proxy.
//
// It serves MCP on stdio. At start it launches the stdio MCP server whose
// command line is its arguments, lists that server's tools and serves
// each one under the same name, passing every tools/call to the server
// on one client session and its result back unchanged:
//
//	peerproxy /path/to/server [args...]
//
// It is its own module so the host module does not depend on mcp-go; the
// bench builds it with `go build` in this directory, which fetches the
// module from the proxy on first use, and leaves its row out, saying
// why, when that fails.
package main

import (
	"context"
	"fmt"
	"os"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "peerproxy:", err)
		os.Exit(1)
	}
}

func run() error {
	if len(os.Args) < 2 {
		return fmt.Errorf("usage: peerproxy COMMAND [ARG...]")
	}
	ctx := context.Background()
	upstream, err := client.NewStdioMCPClient(os.Args[1], os.Environ(), os.Args[2:]...)
	if err != nil {
		return fmt.Errorf("start %s: %w", os.Args[1], err)
	}
	defer upstream.Close()

	var init mcp.InitializeRequest
	init.Params.ProtocolVersion = mcp.LATEST_PROTOCOL_VERSION
	init.Params.ClientInfo = mcp.Implementation{Name: "peerproxy", Version: "bench"}
	if _, err := upstream.Initialize(ctx, init); err != nil {
		return fmt.Errorf("initialize %s: %w", os.Args[1], err)
	}
	tools, err := upstream.ListTools(ctx, mcp.ListToolsRequest{})
	if err != nil {
		return fmt.Errorf("list the tools of %s: %w", os.Args[1], err)
	}

	s := server.NewMCPServer("peerproxy", "bench", server.WithToolCapabilities(false))
	relay := func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return upstream.CallTool(ctx, req)
	}
	for _, t := range tools.Tools {
		s.AddTool(t, relay)
	}
	return server.ServeStdio(s)
}
