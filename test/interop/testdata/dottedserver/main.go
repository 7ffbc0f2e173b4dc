// Command dottedserver is an MCP server on stdio whose tool and prompt
// names have dots, as many real servers' do ("notes.find"); the interop
// tests relay it through openhuman-host to check the names clients see.
package main

import (
	"context"
	"log"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

type findArgs struct {
	Query string `json:"query"`
}

func main() {
	s := mcp.NewServer(&mcp.Implementation{Name: "dottedserver", Version: "1.0.0"}, nil)
	mcp.AddTool(s, &mcp.Tool{Name: "notes.find", Description: "Finds notes.", Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}},
		func(_ context.Context, _ *mcp.CallToolRequest, in findArgs) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "found notes about " + in.Query}}}, nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "notes.archive.all", Description: "Archives every note."},
		func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "archived"}}}, nil, nil
		})
	s.AddPrompt(&mcp.Prompt{Name: "notes.brief", Description: "Briefs on the notes."},
		func(context.Context, *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
			return &mcp.GetPromptResult{Messages: []*mcp.PromptMessage{{Role: "user", Content: &mcp.TextContent{Text: "Brief me."}}}}, nil
		})
	if err := s.Run(context.Background(), &mcp.StdioTransport{}); err != nil {
		log.Fatal(err)
	}
}
