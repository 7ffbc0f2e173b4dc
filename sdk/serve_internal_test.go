package sdk

import (
	"context"
	"testing"

	"github.com/hashicorp/go-hclog"
)

// prompter is a provider with prompts and nothing else.
type prompter struct{ Provider }

func (prompter) GetPrompt(context.Context, *GetPromptRequest) (*GetPromptResult, error) {
	return &GetPromptResult{Description: "found"}, nil
}

// Serve wraps the author's provider; its optional interfaces must still be
// found behind the wrapper, and not invented for providers without them.
func TestOptionalInterfacesBehindServesWrapper(t *testing.T) {
	wrapped := &levelFromHost{Provider: prompter{}, log: hclog.NewNullLogger()}
	pp, ok := optional[PromptProvider](wrapped)
	if !ok {
		t.Fatal("PromptProvider not found behind the wrapper")
	}
	if res, err := pp.GetPrompt(t.Context(), &GetPromptRequest{}); err != nil || res.Description != "found" {
		t.Errorf("GetPrompt through the wrapper: %+v %v", res, err)
	}
	if _, ok := optional[Completer](wrapped); ok {
		t.Error("Completer found on a provider without one")
	}
}
