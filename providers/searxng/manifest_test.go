package searxng

import (
	"context"
	"testing"

	"github.com/openhuman/openhuman-host/sdk/sdktest"
)

func TestManifest(t *testing.T) {
	t.Parallel()
	cat, err := New(nil).Describe(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if err := sdktest.CheckManifest(Manifest(), cat); err != nil {
		t.Error(err)
	}
}
