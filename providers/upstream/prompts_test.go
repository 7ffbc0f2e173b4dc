package upstream

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/openhuman/openhuman-host/sdk"
)

// promptUpstreams starts two servers: notes, with the prompts greet and
// "bad name" (relayed as notes__bad_name) and completions (recorded in *completions), and dup, with
// the prompts greet (taken by notes under the shared prefix) and
// farewell, without completions.
func promptUpstreams(t *testing.T, mu *sync.Mutex, completions *[]*mcp.CompleteParams) (notes, dup string) {
	t.Helper()
	s := mcp.NewServer(&mcp.Implementation{Name: "notes", Version: "1"}, &mcp.ServerOptions{
		CompletionHandler: func(_ context.Context, req *mcp.CompleteRequest) (*mcp.CompleteResult, error) {
			mu.Lock()
			*completions = append(*completions, req.Params)
			mu.Unlock()
			if req.Params.Ref.Type == "ref/resource" {
				return &mcp.CompleteResult{Completion: mcp.CompletionResultDetails{Values: []string{"1", "2"}, Total: 2}}, nil
			}
			var out []string
			for _, v := range []string{"formal", "friendly", "plain"} {
				if strings.HasPrefix(v, req.Params.Argument.Value) {
					out = append(out, v)
				}
			}
			return &mcp.CompleteResult{Completion: mcp.CompletionResultDetails{Values: out, HasMore: true}}, nil
		},
	})
	s.AddPrompt(&mcp.Prompt{Name: "greet", Title: "Greeting", Description: "Greets \x1b[31msomeone\u202e.",
		Arguments: []*mcp.PromptArgument{{Name: "name", Description: "Who to greet.", Required: true}, {Name: "style"}}},
		func(_ context.Context, req *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
			name := req.Params.Arguments["name"]
			if name == "" {
				return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "missing\x00 argument name"}
			}
			return &mcp.GetPromptResult{Description: "A greeting.", Messages: []*mcp.PromptMessage{
				{Role: "user", Content: &mcp.TextContent{Text: "Hello, " + name + " (" + req.Params.Arguments["style"] + ")"}},
				{Role: "assistant", Content: &mcp.ImageContent{Data: []byte{1, 2, 3}, MIMEType: "image/png"}},
				{Role: "user", Content: &mcp.EmbeddedResource{Resource: &mcp.ResourceContents{URI: "note://welcome", MIMEType: "text/plain", Text: "welcome"}}},
				{Role: "user", Content: &mcp.EmbeddedResource{Resource: &mcp.ResourceContents{URI: "note://logo", MIMEType: "image/png", Blob: []byte{9}}}},
				{Role: "user", Content: &mcp.AudioContent{Data: []byte{4}, MIMEType: "audio/wav"}},
				{Role: "user", Content: &mcp.ResourceLink{URI: "note://items/1", Name: "item1", Title: "Item 1", Description: "The first.", MIMEType: "text/plain"}},
			}}, nil
		})
	s.AddPrompt(&mcp.Prompt{Name: "bad name", Description: "Not a client-safe name."},
		func(_ context.Context, req *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
			return &mcp.GetPromptResult{Description: "asked for " + req.Params.Name}, nil
		})
	s.AddResourceTemplate(&mcp.ResourceTemplate{URITemplate: "note://items/{id}", Name: "item"},
		func(_ context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: req.Params.URI, Text: "item"}}}, nil
		})

	d := mcp.NewServer(&mcp.Implementation{Name: "dup", Version: "1"}, nil)
	for _, name := range []string{"greet", "farewell"} {
		d.AddPrompt(&mcp.Prompt{Name: name, Description: "From dup."},
			func(context.Context, *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
				return &mcp.GetPromptResult{Messages: []*mcp.PromptMessage{{Role: "user", Content: &mcp.TextContent{Text: "dup " + name}}}}, nil
			})
	}
	return serve(t, s, false, nil), serve(t, d, false, nil)
}

// Prompts are listed with the tools' prefix (first in config order wins a
// name), and GetPrompt fills them in on the caller's session with every
// kind of content converted.
func TestPromptsRelayed(t *testing.T) {
	var mu sync.Mutex
	var completions []*mcp.CompleteParams
	notes, dup := promptUpstreams(t, &mu, &completions)
	p, cat := configure(t, newFakeHost(),
		map[string]any{"name": "notes", "endpoint": notes, "allowed_tools": []string{"nothing"}},
		map[string]any{"name": "dup", "endpoint": dup, "prefix": "notes__"},
	)
	want := []sdk.Prompt{
		{Name: "notes__bad_name", Description: "Not a client-safe name."},
		{Name: "notes__greet", Title: "Greeting", Description: "Greets [31msomeone.",
			Arguments: []sdk.PromptArgument{{Name: "name", Description: "Who to greet.", Required: true}, {Name: "style"}}},
		{Name: "notes__farewell", Description: "From dup."},
	}
	if diff := cmp.Diff(want, cat.Prompts); diff != "" {
		t.Fatalf("prompts (-want +got):\n%s", diff)
	}

	ctx := context.Background()
	a := caller("A", "")
	res, err := p.GetPrompt(ctx, &sdk.GetPromptRequest{Name: "notes__greet", Arguments: map[string]string{"name": "Ann", "style": "formal"}, Caller: a})
	if err != nil {
		t.Fatal(err)
	}
	wantRes := &sdk.GetPromptResult{Description: "A greeting.", Messages: []sdk.PromptMessage{
		{Role: "user", Content: sdk.Content{Type: "text", Text: "Hello, Ann (formal)"}},
		{Role: "assistant", Content: sdk.Content{Type: "image", Data: []byte{1, 2, 3}, MIMEType: "image/png"}},
		{Role: "user", Content: sdk.Content{Type: "resource", URI: "note://welcome", MIMEType: "text/plain", Text: "welcome"}},
		{Role: "user", Content: sdk.Content{Type: "resource", URI: "note://logo", MIMEType: "image/png", Data: []byte{9}}},
		{Role: "user", Content: sdk.Content{Type: "audio", Data: []byte{4}, MIMEType: "audio/wav"}},
		{Role: "user", Content: sdk.Content{Type: "resource_link", URI: "note://items/1", Name: "item1", Title: "Item 1", Description: "The first.", MIMEType: "text/plain"}},
	}}
	if diff := cmp.Diff(wantRes, res); diff != "" {
		t.Errorf("greet (-want +got):\n%s", diff)
	}
	p.mu.RLock()
	_, own := p.clients["notes\x00A"]
	p.mu.RUnlock()
	if !own {
		t.Error("the prompt was not read on the caller's own session")
	}
	res, err = p.GetPrompt(ctx, &sdk.GetPromptRequest{Name: "notes__farewell"})
	if err != nil || len(res.Messages) != 1 || res.Messages[0].Content.Text != "dup farewell" {
		t.Errorf("farewell: %+v %v", res, err)
	}

	_, err = p.GetPrompt(ctx, &sdk.GetPromptRequest{Name: "notes__greet", Caller: a})
	if !errors.Is(err, sdk.ErrInvalidParams) || !strings.HasSuffix(err.Error(), "invalid params: missing argument name") {
		t.Errorf("greet without its argument: %v", err)
	}
	// A name clients cannot take is relayed under a client-safe one and
	// reaches the upstream prompt by its own name.
	if res, err := p.GetPrompt(ctx, &sdk.GetPromptRequest{Name: "notes__bad_name", Caller: a}); err != nil || res.Description != "asked for bad name" {
		t.Errorf("notes__bad_name: %+v %v", res, err)
	}
	for _, name := range []string{"notes__nope", "notes__bad name", "greet"} {
		if _, err := p.GetPrompt(ctx, &sdk.GetPromptRequest{Name: name}); !errors.Is(err, sdk.ErrPromptNotFound) {
			t.Errorf("GetPrompt(%q): %v, want ErrPromptNotFound", name, err)
		}
	}
}

// Complete asks the server of the prompt (by its upstream name) or of the
// resource template; a server without completions has none, and an
// unknown reference is invalid params.
func TestCompletionRelayed(t *testing.T) {
	var mu sync.Mutex
	var completions []*mcp.CompleteParams
	notes, dup := promptUpstreams(t, &mu, &completions)
	p, _ := configure(t, newFakeHost(),
		map[string]any{"name": "notes", "endpoint": notes},
		map[string]any{"name": "dup", "endpoint": dup, "prefix": "notes__"},
	)
	ctx := context.Background()
	a := caller("A", "")
	res, err := p.Complete(ctx, &sdk.CompleteRequest{RefType: sdk.RefPrompt, RefName: "notes__greet", ArgumentName: "style", ArgumentValue: "f",
		Context: map[string]string{"name": "Ann"}, Caller: a})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(&sdk.CompleteResult{Values: []string{"formal", "friendly"}, HasMore: true}, res); diff != "" {
		t.Errorf("prompt completion (-want +got):\n%s", diff)
	}
	res, err = p.Complete(ctx, &sdk.CompleteRequest{RefType: sdk.RefResource, RefURI: "note://items/{id}", ArgumentName: "id", Caller: a})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(&sdk.CompleteResult{Values: []string{"1", "2"}, Total: 2}, res); diff != "" {
		t.Errorf("template completion (-want +got):\n%s", diff)
	}
	mu.Lock()
	got := completions
	mu.Unlock()
	wantParams := []*mcp.CompleteParams{
		{Ref: &mcp.CompleteReference{Type: "ref/prompt", Name: "greet"}, Argument: mcp.CompleteParamsArgument{Name: "style", Value: "f"},
			Context: &mcp.CompleteContext{Arguments: map[string]string{"name": "Ann"}}},
		{Ref: &mcp.CompleteReference{Type: "ref/resource", URI: "note://items/{id}"}, Argument: mcp.CompleteParamsArgument{Name: "id"}},
	}
	if diff := cmp.Diff(wantParams, got); diff != "" {
		t.Errorf("upstream completion requests (-want +got):\n%s", diff)
	}

	res, err = p.Complete(ctx, &sdk.CompleteRequest{RefType: sdk.RefPrompt, RefName: "notes__farewell", ArgumentName: "x", Caller: a})
	if err != nil || len(res.Values) != 0 || res.Total != 0 || res.HasMore {
		t.Errorf("completion from a server without completions: %+v %v", res, err)
	}
	for _, req := range []*sdk.CompleteRequest{
		{RefType: sdk.RefPrompt, RefName: "nope"},
		{RefType: sdk.RefResource, RefURI: "other://{x}"},
		{RefType: "ref/other"},
	} {
		if _, err := p.Complete(ctx, req); !errors.Is(err, sdk.ErrInvalidParams) {
			t.Errorf("Complete(%+v): %v, want ErrInvalidParams", req, err)
		}
	}
	_, err = p.Complete(ctx, &sdk.CompleteRequest{RefType: sdk.RefPrompt, RefName: "nope"})
	if err == nil || err.Error() != `upstream provider: invalid params: no prompt "nope" to complete` {
		t.Errorf("unknown prompt: %v", err)
	}
}
