package server

import (
	"context"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/openhuman/openhuman-host/host/policy"
)

// TestToolOverrides: clients see a tool's overridden description, title
// and hints; a reload that changes them is announced; the policy class
// stays the provider's.
func TestToolOverrides(t *testing.T) {
	t.Parallel()
	pol := testPolicy(t, policy.Options{Level: policy.ReadOnly})
	desc, title, yes := "Plain search over the fake corpus.", "Fake search", true
	s := newFakeServer(t, &Options{
		Policy: pol, Audit: &memAudit{},
		ToolOverrides: map[string]ToolOverride{
			"fake_search": {Description: &desc, Title: &title},
			// An act that claims to be read-only is still an act.
			"fake_store": {ReadOnlyHint: &yes},
		},
	})
	changed := make(chan struct{}, 8)
	cs := connect(t, s, "Claude Desktop", &mcp.ClientOptions{
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) { changed <- struct{}{} },
	})
	tools := map[string]*mcp.Tool{}
	for tool, err := range cs.Tools(t.Context(), nil) {
		if err != nil {
			t.Fatal(err)
		}
		tools[tool.Name] = tool
	}
	if got := tools["fake_search"]; got == nil || got.Description != desc || got.Title != title || got.Annotations.Title != title {
		t.Errorf("fake_search as listed = %+v, want the overridden description and title", got)
	}
	if _, listed := tools["fake_store"]; listed {
		t.Error("fake_store, an act at level readonly, is listed though its override says read-only")
	}

	other := "Another description."
	s.Reconfigure(Options{Policy: pol, ToolOverrides: map[string]ToolOverride{"fake_search": {Description: &other}}})
	select {
	case <-changed:
	case <-time.After(time.Minute): // a guard against a hang, not a timing
		t.Fatal("no notifications/tools/list_changed after the override changed")
	}
	for tool, err := range cs.Tools(t.Context(), nil) {
		if err != nil {
			t.Fatal(err)
		}
		if tool.Name == "fake_search" && (tool.Description != other || tool.Title != "") {
			t.Errorf("fake_search after the reload = %+v, want the new description and the provider's (empty) title", tool)
		}
	}
}
