package memory

import (
	"context"
	"testing"

	"github.com/openhuman/openhuman-host/sdk/sdktest"
)

// TestManifest checks the manifest against the catalog, and the words the
// host's instructions introduce the memory store with.
func TestManifest(t *testing.T) {
	t.Parallel()
	m := Manifest()
	if m.Summary != "a personal memory store" ||
		m.Instructions != "Use memory_search to find what the user stored before, tree_read_chunk to read a hit in full, "+
			"and memory_store to save something worth remembering." {
		t.Errorf("summary %q, instructions %q", m.Summary, m.Instructions)
	}
	if !m.SharedStorage {
		t.Error("the manifest does not ask for the shared storage")
	}
	cat, err := New(nil).Describe(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if err := sdktest.CheckManifest(m, cat); err != nil {
		t.Error(err)
	}
}
