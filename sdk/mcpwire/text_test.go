package mcpwire

import (
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func TestText(t *testing.T) {
	t.Parallel()
	for name, tc := range map[string]struct {
		res  *mcp.CallToolResult
		want string
	}{
		"nil":        {nil, ""},
		"no content": {&mcp.CallToolResult{}, ""},
		"one block":  {&mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "a"}}}, "a"},
		"text only, joined by newlines": {&mcp.CallToolResult{Content: []mcp.Content{
			&mcp.TextContent{Text: "a"}, &mcp.ImageContent{MIMEType: "image/png", Data: []byte{1}}, &mcp.TextContent{Text: "b"},
		}}, "a\nb"},
	} {
		if got := Text(tc.res); got != tc.want {
			t.Errorf("%s: Text() = %q, want %q", name, got, tc.want)
		}
	}
}
