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

func ExampleTextResult() {
	res := sdk.TextResult("3 notes found")
	fmt.Println(res.IsError, res.Content[0].Type, res.Content[0].Text, res.StructuredContent == nil)
	// Output: false text 3 notes found true
}

func ExampleCallToolResult_Text() {
	res := &sdk.CallToolResult{Content: []sdk.Content{
		sdk.TextContent("2 notes found:"),
		{Type: "image", MIMEType: "image/png", Data: []byte{0x89, 'P', 'N', 'G'}},
		sdk.TextContent("Lisbon trip; Oslo trip"),
	}}
	fmt.Printf("%q %q\n", res.Text(), (*sdk.CallToolResult)(nil).Text())
	// Output: "2 notes found:\nLisbon trip; Oslo trip" ""
}

func ExampleStructuredResult() {
	type weather struct {
		City    string  `json:"city"`
		Celsius float64 `json:"celsius"`
	}
	res, err := sdk.StructuredResult("Oslo: 4.5 °C", weather{City: "Oslo", Celsius: 4.5})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(res.Content[0].Text)
	fmt.Println(string(res.StructuredContent))

	// Structured content must be a JSON object.
	_, err = sdk.StructuredResult("", []string{"Oslo"})
	fmt.Println(err)
	// Output:
	// Oslo: 4.5 °C
	// {"city":"Oslo","celsius":4.5}
	// structured content must be a JSON object, got ["Oslo"]
}

// printSink prints the events it receives.
type printSink struct{}

func (printSink) Progress(_ context.Context, p sdk.Progress) error {
	fmt.Printf("progress %g/%g %s\n", p.Progress, p.Total, p.Message)
	return nil
}

func (printSink) Log(_ context.Context, m sdk.LogMessage) error {
	fmt.Printf("log %s %s %v\n", m.Level, m.Logger, m.Data)
	return nil
}

// A tool reports progress with req.Progress. The host relays the events to
// the client that made the call; here WithEvents sends them to a sink
// instead.
func ExampleCallToolRequest_Progress() {
	ctx := context.Background()
	tool := func(ctx context.Context, req *sdk.CallToolRequest) {
		for i := 1; i <= 2; i++ {
			_ = req.Progress(ctx, sdk.Progress{Progress: float64(i), Total: 2, Message: fmt.Sprintf("page %d", i)})
		}
		_ = req.Log(ctx, sdk.LogMessage{Level: "info", Logger: "pages", Data: "2 pages read"})
	}

	// The client asked for progress: its request carried a progress token.
	req := &sdk.CallToolRequest{Name: "pages.read", Caller: sdk.Caller{ProgressToken: json.RawMessage(`"tok-1"`)}}
	tool(ctx, req.WithEvents(printSink{}))

	// Without a token, Progress does nothing; log messages still go out.
	fmt.Println("-- no progress token")
	tool(ctx, (&sdk.CallToolRequest{Name: "pages.read"}).WithEvents(printSink{}))
	// Output:
	// progress 1/2 page 1
	// progress 2/2 page 2
	// log info pages 2 pages read
	// -- no progress token
	// log info pages 2 pages read
}

// Annotations are hints for clients; a nil field leaves the hint out, so
// the MCP default applies. sdk.Bool makes the pointers.
func ExampleBool() {
	a := sdk.Annotations{
		Title:           "Delete a note",
		ReadOnlyHint:    sdk.Bool(false),
		DestructiveHint: sdk.Bool(true),
		IdempotentHint:  sdk.Bool(true),
		OpenWorldHint:   sdk.Bool(false),
	}
	fmt.Println(*a.ReadOnlyHint, *a.DestructiveHint, *a.IdempotentHint, *a.OpenWorldHint)
	// Output: false true true false
}

// A tool that changes state is of class ClassAct; its annotations tell
// clients how careful to be with it.
func ExampleAnnotations() {
	tool := sdk.Tool{
		Name:        "notes.append",
		Description: "Appends a line to a note.",
		InputSchema: json.RawMessage(`{"type":"object","properties":{"line":{"type":"string","minLength":1}},"required":["line"],"additionalProperties":false}`),
		Annotations: sdk.Annotations{
			ReadOnlyHint:    sdk.Bool(false), // it writes
			DestructiveHint: sdk.Bool(false), // it only adds
			IdempotentHint:  sdk.Bool(false), // a second call appends again
			OpenWorldHint:   sdk.Bool(false), // it stays on this machine
		},
		Class: sdk.ClassAct,
	}
	fmt.Println(tool.Name, tool.Class, *tool.Annotations.DestructiveHint, tool.Annotations.Title == "")
	// Output: notes.append act false true
}
