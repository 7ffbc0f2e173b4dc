package host

import (
	"strings"
	"testing"
)

// TestClaimKeepsBuiltinNamespaces checks which advertised names a
// third-party provider or the upstream relay may serve.
func TestClaimKeepsBuiltinNamespaces(t *testing.T) {
	t.Parallel()
	h := &Host{owners: map[string]string{"tool:kit_ping": "kit"}}
	tests := map[string]struct {
		provider, kind, name string
		wantErr              string
	}{
		"built-in serves its own":           {"memory", "tool", "memory_store", ""},
		"third party in memory_":            {"kit", "tool", "memory_delete", `tool names starting with "memory_" are reserved for the built-in provider memory`},
		"third party in tree_":              {"kit", "tool", "tree_prune", `starting with "tree_"`},
		"prompt in agent_":                  {"kit", "prompt", "agent_plan", `prompt names starting with "agent_"`},
		"upstream in core_":                 {"upstream", "tool", "core_list_tools", `starting with "core_"`},
		"upstream server named memory":      {"upstream", "tool", "memory__create_entities", ""},
		"searxng_ reserved":                 {"kit", "tool", "searxng_images", `starting with "searxng_"`},
		"other names free":                  {"kit", "tool", "kit_extra", ""},
		"first provider keeps a name":       {"kit2", "tool", "kit_ping", `tool "kit_ping" belongs to provider kit, which served it first`},
		"openhuman URIs for built-ins only": {"kit", "resource", "openhuman://agents", `resource URIs starting with "openhuman://"`},
		"built-in may serve openhuman URIs": {"agent", "resource", "openhuman://agents", ""},
		"resources are not name-spaced":     {"kit", "resource", "memory_x://a", ""},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			err := h.claim(tc.provider, tc.kind, tc.name)
			switch {
			case tc.wantErr == "" && err != nil:
				t.Fatalf("claim(%s, %s, %s) = %v, want nil", tc.provider, tc.kind, tc.name, err)
			case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
				t.Fatalf("claim(%s, %s, %s) = %v, want an error containing %q", tc.provider, tc.kind, tc.name, err, tc.wantErr)
			}
		})
	}
}
