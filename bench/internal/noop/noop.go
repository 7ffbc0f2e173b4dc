// Package noop holds the two do-nothing tools the benchmark compares: one
// served by the go-sdk directly (the floor) and one served by an
// openhuman-host provider. Both take an empty object and return the same
// short text, so a difference in cost is the cost of the path, not of the
// tool.
package noop

import (
	"context"
	"encoding/json"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/openhuman/openhuman-host/sdk"
)

// Reply is the text both tools return.
const Reply = "ok"

// FloorTool is the floor server's tool name.
const FloorTool = "noop"

// ProviderTool is the provider's tool name.
const ProviderTool = "bench.noop"

// Args is the floor tool's input: an empty object.
type Args struct{}

// NewFloorServer returns a go-sdk server with the one tool FloorTool.
func NewFloorServer() *mcp.Server {
	s := mcp.NewServer(&mcp.Implementation{Name: "bench-floor", Version: "1"}, nil)
	mcp.AddTool(s, &mcp.Tool{Name: FloorTool, Description: "Does nothing and returns a short text."},
		func(context.Context, *mcp.CallToolRequest, Args) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: Reply}}}, nil, nil
		})
	return s
}

// Provider is an openhuman-host provider with the one read tool
// ProviderTool.
type Provider struct{}

var providerSchema = json.RawMessage(`{"type":"object","properties":{},"additionalProperties":false}`)

// Configure accepts any config.
func (Provider) Configure(context.Context, *sdk.ConfigureRequest) error { return nil }

// Describe lists ProviderTool.
func (Provider) Describe(context.Context) (*sdk.Catalog, error) {
	return &sdk.Catalog{
		Name:    "bench",
		Version: "1",
		Tools: []sdk.Tool{{
			Name:        ProviderTool,
			Description: "Does nothing and returns a short text.",
			InputSchema: providerSchema,
			Annotations: sdk.Annotations{ReadOnlyHint: sdk.Bool(true)},
			Class:       sdk.ClassRead,
		}},
	}, nil
}

// CallTool returns Reply.
func (Provider) CallTool(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
	return sdk.TextResult(Reply), nil
}

// ReadResource serves no resources.
func (Provider) ReadResource(context.Context, *sdk.ReadResourceRequest) (*sdk.ReadResourceResult, error) {
	return nil, sdk.ErrResourceNotFound
}
