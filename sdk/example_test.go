package sdk_test

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/openhuman/openhuman-host/sdk"
)

// greeter is the smallest useful provider: one read tool.
type greeter struct{}

func (greeter) Configure(context.Context, *sdk.ConfigureRequest) error { return nil }

func (greeter) Describe(context.Context) (*sdk.Catalog, error) {
	return &sdk.Catalog{Name: "greeter", Version: "0.1.0", Tools: []sdk.Tool{{
		Name:        "greeter.hello",
		Description: "Greets someone by name.",
		InputSchema: json.RawMessage(`{"type":"object","properties":{"name":{"type":"string"}},"required":["name"],"additionalProperties":false}`),
		Annotations: sdk.Annotations{ReadOnlyHint: sdk.Bool(true)},
		Class:       sdk.ClassRead,
	}}}, nil
}

func (greeter) CallTool(_ context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
	var args struct{ Name string }
	if err := json.Unmarshal(req.Arguments, &args); err != nil {
		return sdk.ErrorResult("arguments: %v", err), nil
	}
	return sdk.StructuredResult("Hello, "+args.Name+"!", map[string]string{"greeting": "Hello, " + args.Name + "!"})
}

func (greeter) ReadResource(_ context.Context, req *sdk.ReadResourceRequest) (*sdk.ReadResourceResult, error) {
	return nil, fmt.Errorf("%w: %s", sdk.ErrResourceNotFound, req.URI)
}

// A provider's main function hands its implementation to Serve:
//
//	func main() { sdk.Serve(greeter{}) }
//
// Here the provider is called directly to show the result it builds.
func ExampleServe() {
	res, _ := greeter{}.CallTool(context.Background(), &sdk.CallToolRequest{
		Name: "greeter.hello", Arguments: json.RawMessage(`{"name":"Ada"}`),
	})
	fmt.Println(res.Content[0].Text)
	fmt.Println(string(res.StructuredContent))
	// Output:
	// Hello, Ada!
	// {"greeting":"Hello, Ada!"}
}

func ExampleErrorResult() {
	res := sdk.ErrorResult("k must be between 1 and 50; got %d", 51)
	fmt.Println(res.IsError, res.Content[0].Text)
	// Output: true k must be between 1 and 50; got 51
}
