// Command stdioserver is an MCP server over stdio with two tools for the
// upstream provider's tests: echo, and hang, which answers only when the
// call is cancelled.
//
// With STDIOSERVER_STARTS set to a folder, it records its start there as
// an empty file named by its process ID, and has two more tools: pid,
// which answers its process ID, and grow, which adds a tool named by its
// "text" argument (so that the server sends tools/list_changed).
package main

import (
	"context"
	"log"
	"os"
	"path/filepath"
	"strconv"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

type echoArgs struct {
	Text string `json:"text"`
}

func main() {
	s := mcp.NewServer(&mcp.Implementation{Name: "stdioserver", Version: "1"}, nil)
	mcp.AddTool(s, &mcp.Tool{Name: "echo", Description: "Echo the text back."},
		func(_ context.Context, _ *mcp.CallToolRequest, in echoArgs) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "stdio:" + in.Text}}}, nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "hang", Description: "Waits until the call is cancelled."},
		func(ctx context.Context, _ *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
			<-ctx.Done()
			return nil, nil, ctx.Err()
		})
	if dir := os.Getenv("STDIOSERVER_STARTS"); dir != "" {
		pid := strconv.Itoa(os.Getpid())
		if err := os.WriteFile(filepath.Join(dir, pid), nil, 0o600); err != nil {
			log.Fatal(err)
		}
		mcp.AddTool(s, &mcp.Tool{Name: "pid", Description: "Answer the server's process ID."},
			func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
				return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: pid}}}, nil, nil
			})
		mcp.AddTool(s, &mcp.Tool{Name: "grow", Description: "Add a tool."},
			func(_ context.Context, _ *mcp.CallToolRequest, in echoArgs) (*mcp.CallToolResult, any, error) {
				mcp.AddTool(s, &mcp.Tool{Name: in.Text, Description: "Added."},
					func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
						return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: in.Text}}}, nil, nil
					})
				return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "added " + in.Text}}}, nil, nil
			})
	}
	if err := s.Run(context.Background(), &mcp.StdioTransport{}); err != nil {
		log.Fatal(err)
	}
}
