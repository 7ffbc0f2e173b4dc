package mcpwire

import (
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Text returns the text of res's text content blocks (MCP 2025-11-25
// server/tools §Tool Result, content of type "text"), joined by newlines
// in their order, as sdk.CallToolResult.Text does for a provider's own
// results. Other content (images, audio, resources) is left out; a nil
// result, or one without text, gives "".
func Text(res *mcp.CallToolResult) string {
	if res == nil {
		return ""
	}
	var parts []string
	for _, c := range res.Content {
		if t, ok := c.(*mcp.TextContent); ok {
			parts = append(parts, t.Text)
		}
	}
	return strings.Join(parts, "\n")
}
