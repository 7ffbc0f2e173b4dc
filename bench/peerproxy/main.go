// Command peerproxy is the bench's peer row: a plain MCP proxy, the way a
// gateway without policy, audit or plugins relays one server, built on
// github.com/mark3labs/mcp-go (the library under TBXark/mcp-proxy) from
// the Go module proxy.
//
// It serves MCP on stdio, or with -http ADDR over Streamable HTTP at
// http://ADDR/mcp. At start it launches the stdio MCP server whose
// command line is its arguments, lists that server's tools and serves
// each one under the same name, passing every tools/call to the server
// on one client session and its result back unchanged:
//
//	peerproxy [-http ADDR] /path/to/server [args...]
//
// It is its own module so the host module does not depend on mcp-go; the
// bench builds it with `go build` in this directory, which fetches the
// module from the proxy on first use, and leaves its row out, saying
// why, when that fails.
package main

import (
	"context"
	"flag"
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
	addr := flag.String("http", "", "serve Streamable HTTP on this loopback address instead of stdio")
	flag.Parse()
	args := flag.Args()
	if len(args) < 1 {
		return fmt.Errorf("usage: peerproxy [-http ADDR] COMMAND [ARG...]")
	}
	ctx := context.Background()
	upstream, err := client.NewStdioMCPClient(args[0], os.Environ(), args[1:]...)
	if err != nil {
		return fmt.Errorf("start %s: %w", args[0], err)
	}
	defer upstream.Close()

	var init mcp.InitializeRequest
	init.Params.ProtocolVersion = mcp.LATEST_PROTOCOL_VERSION
	init.Params.ClientInfo = mcp.Implementation{Name: "peerproxy", Version: "bench"}
	if _, err := upstream.Initialize(ctx, init); err != nil {
		return fmt.Errorf("initialize %s: %w", args[0], err)
	}
	tools, err := upstream.ListTools(ctx, mcp.ListToolsRequest{})
	if err != nil {
		return fmt.Errorf("list the tools of %s: %w", args[0], err)
	}

	s := server.NewMCPServer("peerproxy", "bench", server.WithToolCapabilities(false))
	relay := func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return upstream.CallTool(ctx, req)
	}
	for _, t := range tools.Tools {
		s.AddTool(t, relay)
	}
	if *addr != "" {
		return server.NewStreamableHTTPServer(s).Start(*addr)
	}
	return server.ServeStdio(s)
}
