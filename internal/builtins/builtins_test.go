package builtins_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/openhuman/openhuman-host/host/builtin"
	"github.com/openhuman/openhuman-host/host/config"
	_ "github.com/openhuman/openhuman-host/internal/builtins"
)

// TestDefaultsConfigureEveryTabledBuiltin checks that the host's default
// configuration and the manifests agree: every built-in configured by a
// [providers.<name>] table brings that table, opened by a comment on what
// the provider does, and the parsed defaults have exactly those tables.
func TestDefaultsConfigureEveryTabledBuiltin(t *testing.T) {
	t.Parallel()
	var tabled []string
	for _, p := range builtin.Registered().Providers() {
		m := p.Manifest
		if m.Section != "" {
			if m.DefaultConfig != "" {
				t.Errorf("built-in provider %s has a default table, though its settings come from %s", m.Name, m.Section)
			}
			continue
		}
		tabled = append(tabled, m.Name)
		if head := "[providers." + m.Name + "]\n#"; !strings.HasPrefix(m.DefaultConfig, head) {
			t.Errorf("built-in provider %s: DefaultConfig does not open with [providers.%s] and a comment on what the provider does:\n%s", m.Name, m.Name, m.DefaultConfig)
		}
	}
	if len(tabled) == 0 {
		t.Fatal("no built-in provider configured by a table is registered")
	}
	var got []string
	for name := range config.Default().Providers {
		got = append(got, name)
	}
	slices.Sort(got)
	want := slices.Sorted(slices.Values(tabled))
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("tables of the parsed defaults (-built-ins configured by a table +got):\n%s", diff)
	}
}
