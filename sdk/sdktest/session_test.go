package sdktest_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/openhuman/openhuman-host/sdk"
	"github.com/openhuman/openhuman-host/sdk/sdktest"
)

// greeter serves one prompt with completion and a subscribable resource,
// the protocol 2 interfaces, over the real gRPC plumbing.
type greeter struct {
	shout
	mu   sync.Mutex
	subs []string
}

func (g *greeter) Describe(context.Context) (*sdk.Catalog, error) {
	return &sdk.Catalog{Name: "greeter", Version: "1", Tools: shoutTools, Prompts: []sdk.Prompt{{
		Name: "greeter.greet", Description: "Greets someone.", Arguments: []sdk.PromptArgument{{Name: "who", Required: true}},
	}}}, nil
}

func (g *greeter) GetPrompt(_ context.Context, req *sdk.GetPromptRequest) (*sdk.GetPromptResult, error) {
	if req.Name != "greeter.greet" {
		return nil, fmt.Errorf("%w: %s", sdk.ErrPromptNotFound, req.Name)
	}
	who := req.Arguments["who"]
	if who == "" {
		return nil, fmt.Errorf("%w: argument who is required", sdk.ErrInvalidParams)
	}
	return &sdk.GetPromptResult{Description: "a greeting", Messages: []sdk.PromptMessage{
		{Role: "user", Content: sdk.TextContent("Greet " + who)},
		{Role: "assistant", Content: sdk.Content{Type: "image", Data: []byte{1, 2, 3}, MIMEType: "image/png"}},
	}}, nil
}

func (g *greeter) Complete(_ context.Context, req *sdk.CompleteRequest) (*sdk.CompleteResult, error) {
	return &sdk.CompleteResult{Values: []string{req.RefName + ":" + req.ArgumentName + "=" + req.ArgumentValue + "x"}, Total: 7, HasMore: true}, nil
}

func (g *greeter) Subscribe(_ context.Context, req *sdk.SubscribeRequest) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	if req.URI == "greeter://missing" {
		return fmt.Errorf("%w: %s", sdk.ErrResourceNotFound, req.URI)
	}
	g.subs = append(g.subs, "+"+req.URI)
	return nil
}

func (g *greeter) Unsubscribe(_ context.Context, req *sdk.SubscribeRequest) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.subs = append(g.subs, "-"+req.URI)
	return nil
}

func TestProtocol2Methods(t *testing.T) {
	t.Parallel()
	g := &greeter{}
	h := sdktest.Start(t, g, nil)
	res, err := h.Prompt(t.Context(), "greeter.greet", map[string]string{"who": "Ada"})
	if err != nil {
		t.Fatal(err)
	}
	want := &sdk.GetPromptResult{Description: "a greeting", Messages: []sdk.PromptMessage{
		{Role: "user", Content: sdk.Content{Type: "text", Text: "Greet Ada"}},
		{Role: "assistant", Content: sdk.Content{Type: "image", Data: []byte{1, 2, 3}, MIMEType: "image/png"}},
	}}
	if d := cmp.Diff(want, res); d != "" {
		t.Errorf("prompt (-want +got):\n%s", d)
	}
	if _, err := h.Prompt(t.Context(), "greeter.nope", nil); !errors.Is(err, sdk.ErrPromptNotFound) {
		t.Errorf("unknown prompt: %v", err)
	}
	if _, err := h.Prompt(t.Context(), "greeter.greet", nil); !errors.Is(err, sdk.ErrInvalidParams) || !strings.HasSuffix(err.Error(), "argument who is required") {
		t.Errorf("missing argument: %v", err)
	}
	c, err := h.Complete(t.Context(), sdk.CompleteRequest{RefType: sdk.RefPrompt, RefName: "greeter.greet", ArgumentName: "who", ArgumentValue: "A"})
	if err != nil || fmt.Sprint(c.Values) != "[greeter.greet:who=Ax]" || c.Total != 7 || !c.HasMore {
		t.Errorf("complete: %+v %v", c, err)
	}
	sub := h.Provider.(sdk.Subscriber)
	if err := sub.Subscribe(t.Context(), &sdk.SubscribeRequest{URI: "greeter://a"}); err != nil {
		t.Fatal(err)
	}
	if err := sub.Unsubscribe(t.Context(), &sdk.SubscribeRequest{URI: "greeter://a"}); err != nil {
		t.Fatal(err)
	}
	if err := sub.Subscribe(t.Context(), &sdk.SubscribeRequest{URI: "greeter://missing"}); !errors.Is(err, sdk.ErrResourceNotFound) {
		t.Errorf("subscribe to a missing resource: %v", err)
	}
	g.mu.Lock()
	if fmt.Sprint(g.subs) != "[+greeter://a -greeter://a]" {
		t.Errorf("subscriptions seen: %v", g.subs)
	}
	g.mu.Unlock()
	// greeter does not observe sessions: the method says so.
	err = h.Provider.(sdk.SessionObserver).SessionClosed(t.Context(), sdk.Caller{SessionToken: "t"})
	if !errors.Is(err, sdk.ErrNotImplemented) {
		t.Errorf("SessionClosed on a provider without it: %v", err)
	}
}

func TestProtocol2NotImplemented(t *testing.T) {
	t.Parallel()
	h := sdktest.Start(t, &shout{}, nil)
	if _, err := h.Prompt(t.Context(), "x", nil); !errors.Is(err, sdk.ErrNotImplemented) {
		t.Errorf("prompt from a provider without prompts: %v", err)
	}
	if _, err := h.Complete(t.Context(), sdk.CompleteRequest{RefType: sdk.RefPrompt, RefName: "x"}); !errors.Is(err, sdk.ErrNotImplemented) {
		t.Errorf("complete from a provider without completion: %v", err)
	}
}

func TestCheckCatalogPrompts(t *testing.T) {
	t.Parallel()
	err := sdktest.CheckCatalog(&sdk.Catalog{Prompts: []sdk.Prompt{
		{Name: "ok"}, {Name: "ok"}, {Name: "bad name"}, {Name: "args", Arguments: []sdk.PromptArgument{{Name: "a"}, {Name: "a"}}},
	}})
	want := `prompt "ok" is listed twice; the host keeps the first
prompt "bad name" would be refused by the host: invalid prompt spec: name "bad name" must match [A-Za-z0-9_.-]{1,128}
prompt "args" would be refused by the host: invalid prompt spec: args: argument names must be non-empty and distinct, got "a" twice or empty`
	if err == nil || err.Error() != want {
		t.Errorf("CheckCatalog:\n%v\nwant:\n%s", err, want)
	}
}
