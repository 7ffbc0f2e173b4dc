package agent_test

import (
	"testing"

	"github.com/openhuman/openhuman-host/providers/agent"
	"github.com/openhuman/openhuman-host/sdk/sdktest"
)

func TestManifest(t *testing.T) {
	h := startAgent(t, &fakeHost{}, nil, nil)
	if err := sdktest.CheckManifest(agent.Manifest(), h.Catalog); err != nil {
		t.Error(err)
	}
}
