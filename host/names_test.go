package host

import (
	"strings"
	"testing"

	"github.com/hashicorp/go-hclog"

	"github.com/openhuman/openhuman-host/host/builtin"
	"github.com/openhuman/openhuman-host/sdk"
)

// testBuiltins is a registry of test built-ins: notes and clock with
// namespaces, and relay, which serves a config section of its own.
func testBuiltins(t *testing.T) *builtin.Registry {
	t.Helper()
	mk := func(m sdk.Manifest) builtin.Provider {
		return builtin.Provider{Manifest: m, New: func(hclog.Logger) sdk.Provider { return nil }}
	}
	r, err := builtin.NewRegistry(
		mk(sdk.Manifest{Name: "notes", Namespaces: []string{"notes_", "page_"}}),
		mk(sdk.Manifest{Name: "clock", Namespaces: []string{"clock_", "alarm_"}}),
		mk(sdk.Manifest{Name: "relay", Section: "[[relay.servers]]"}),
	)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// TestClaimKeepsBuiltinNamespaces checks which advertised names a
// third-party provider or the upstream relay may serve.
func TestClaimKeepsBuiltinNamespaces(t *testing.T) {
	t.Parallel()
	h := &Host{owners: map[string]string{"tool:kit_ping": "kit"}, opts: Options{Builtins: testBuiltins(t)}}
	tests := map[string]struct {
		provider, kind, name string
		wantErr              string
	}{
		"built-in serves its own":           {"notes", "tool", "notes_store", ""},
		"third party in notes_":             {"kit", "tool", "notes_delete", `tool names starting with "notes_" are reserved for the built-in provider notes`},
		"third party in page_":              {"kit", "tool", "page_prune", `starting with "page_"`},
		"prompt in clock_":                  {"kit", "prompt", "clock_plan", `prompt names starting with "clock_"`},
		"relay in alarm_":                   {"relay", "tool", "alarm_list", `starting with "alarm_"`},
		"upstream server named notes":       {"relay", "tool", "notes__create_entities", ""},
		"other names free":                  {"kit", "tool", "kit_extra", ""},
		"first provider keeps a name":       {"kit2", "tool", "kit_ping", `tool "kit_ping" belongs to provider kit, which served it first`},
		"openhuman URIs for built-ins only": {"kit", "resource", "openhuman://agents", `resource URIs starting with "openhuman://"`},
		"built-in may serve openhuman URIs": {"clock", "resource", "openhuman://agents", ""},
		"resources are not name-spaced":     {"kit", "resource", "notes_x://a", ""},
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
