package main

import (
	"strings"
	"testing"

	"github.com/openhuman/openhuman-host/sdk/sdktest"
	"github.com/openhuman/openhuman-host/sdk/testproc"
)

// TestStartExecutable runs the built test provider through
// sdktest.StartExecutable: the handshake the host performs, with output
// on stdout before it.
func TestStartExecutable(t *testing.T) {
	t.Parallel()
	bin := testproc.Build(t, "github.com/openhuman/openhuman-host/test/testprovider")
	// The test provider prints to stdout before its handshake.
	h := sdktest.StartExecutable(t, bin, nil, nil)
	if h.Catalog.Name != "kit" || len(h.Catalog.Tools) != 12 {
		t.Fatalf("catalog %q with %d tools", h.Catalog.Name, len(h.Catalog.Tools))
	}
	res, err := h.Call(t.Context(), "kit.print", nil)
	if err != nil || res.Content[0].Text != "printed" {
		t.Fatalf("kit.print: %v %+v", err, res)
	}
	res, events, err := h.CallWithEvents(t.Context(), "kit.progress", nil)
	if err != nil || res.Content[0].Text != "done" || len(events.Progress) != 3 || events.Progress[2].Message != "step 3" {
		t.Fatalf("kit.progress: %v %+v %+v", err, res, events)
	}
	if _, err := h.Call(t.Context(), "kit.ping", map[string]any{"x": 1}); err == nil || !strings.Contains(err.Error(), `unknown argument "x"`) {
		t.Errorf("kit.ping with an unknown argument: %v", err)
	}
}
