package builtin

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/hashicorp/go-hclog"

	"github.com/openhuman/openhuman-host/sdk"
)

// provider is a test built-in with the given manifest.
func provider(m sdk.Manifest) Provider {
	return Provider{Manifest: m, New: func(hclog.Logger) sdk.Provider { return nil }}
}

func TestRegistryKeepsOrderAndLooksUp(t *testing.T) {
	t.Parallel()
	r, err := NewRegistry(
		provider(sdk.Manifest{Name: "notes", Namespaces: []string{"notes_", "page_"}}),
		provider(sdk.Manifest{Name: "relay", Section: "[[relay.servers]]"}),
		provider(sdk.Manifest{Name: "clock", Namespaces: []string{"clock_"},
			DefaultConfig: "# The clock.\n[providers.clock]\nenabled = true\n\n# Sub-tables are its own.\n# [providers.clock.alarm]\n[providers.clock.zone]\nname = \"UTC\"\n"}),
	)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"notes", "relay", "clock"}, r.Names()); diff != "" {
		t.Errorf("Names (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"notes", "clock"}, r.Tabled()); diff != "" {
		t.Errorf("Tabled (-want +got):\n%s", diff)
	}
	if p, ok := r.Lookup("clock"); !ok || p.Manifest.Namespaces[0] != "clock_" {
		t.Errorf("Lookup(clock) = %+v, %v", p.Manifest, ok)
	}
	if _, ok := r.Lookup("weather"); ok {
		t.Error("Lookup(weather) found a provider that was never registered")
	}
	if !r.IsTabled("notes") || r.IsTabled("relay") || r.IsTabled("weather") {
		t.Errorf("IsTabled: notes %v, relay %v, weather %v; want true, false, false", r.IsTabled("notes"), r.IsTabled("relay"), r.IsTabled("weather"))
	}
	if p, ok := r.BySection("[[relay.servers]]"); !ok || p.Manifest.Name != "relay" {
		t.Errorf("BySection = %q, %v; want relay", p.Manifest.Name, ok)
	}
	if _, ok := r.BySection(""); ok {
		t.Error("BySection(\"\") found a provider")
	}
	var empty *Registry
	if empty.Names() != nil || empty.Providers() != nil {
		t.Error("a nil registry is not empty")
	}
}

func TestRegistryRefusesClashes(t *testing.T) {
	t.Parallel()
	newFn := func(hclog.Logger) sdk.Provider { return nil }
	tests := map[string]struct {
		providers []Provider
		wantErr   string
	}{
		"same name twice": {
			[]Provider{provider(sdk.Manifest{Name: "notes"}), provider(sdk.Manifest{Name: "notes"})},
			"built-in provider notes is registered twice",
		},
		"invalid name": {
			[]Provider{provider(sdk.Manifest{Name: "Notes"})},
			`built-in provider "Notes": the name must match`,
		},
		"no constructor": {
			[]Provider{{Manifest: sdk.Manifest{Name: "notes"}}},
			"built-in provider notes: New is nil",
		},
		"same namespace": {
			[]Provider{provider(sdk.Manifest{Name: "notes", Namespaces: []string{"notes_"}}), provider(sdk.Manifest{Name: "jot", Namespaces: []string{"notes_"}})},
			`built-in provider jot: namespace "notes_" overlaps "notes_" of built-in provider notes`,
		},
		"namespace inside another": {
			[]Provider{provider(sdk.Manifest{Name: "notes", Namespaces: []string{"notes_"}}), provider(sdk.Manifest{Name: "jot", Namespaces: []string{"notes_x_"}})},
			`namespace "notes_x_" overlaps "notes_"`,
		},
		"namespace without a trailing _": {
			[]Provider{provider(sdk.Manifest{Name: "notes", Namespaces: []string{"notes"}})},
			`namespace "notes" must be letters, digits, _ and - ending in _`,
		},
		"environment variable of another": {
			[]Provider{
				provider(sdk.Manifest{Name: "notes", Env: []sdk.EnvOverride{{Var: "NOTES_URL", Key: "url"}}}),
				provider(sdk.Manifest{Name: "jot", Env: []sdk.EnvOverride{{Var: "NOTES_URL", Key: "base_url"}}}),
			},
			"built-in provider jot: environment variable NOTES_URL already overrides a key of built-in provider notes",
		},
		"environment variable twice": {
			[]Provider{provider(sdk.Manifest{Name: "notes", Env: []sdk.EnvOverride{{Var: "NOTES_URL", Key: "url"}, {Var: "NOTES_URL", Key: "base_url"}}})},
			"environment variable NOTES_URL is listed twice",
		},
		"override without a key": {
			[]Provider{provider(sdk.Manifest{Name: "notes", Env: []sdk.EnvOverride{{Var: "NOTES_URL"}}})},
			`environment override "NOTES_URL" of key "" needs a variable name and a key`,
		},
		"name of another's config directory": {
			[]Provider{
				provider(sdk.Manifest{Name: "notes", ConfigDir: &sdk.ConfigDir{Setting: "pages_dir", Default: "pages", Holds: "the pages"}}),
				{Manifest: sdk.Manifest{Name: "pages"}, New: newFn},
			},
			"built-in provider pages: the name is reserved by another built-in's config directory",
		},
		"config directory named as a provider": {
			[]Provider{
				provider(sdk.Manifest{Name: "pages"}),
				provider(sdk.Manifest{Name: "notes", ConfigDir: &sdk.ConfigDir{Setting: "pages_dir", Default: "pages", Holds: "the pages"}}),
			},
			`built-in provider notes: its config directory name "pages" is the name of built-in provider pages`,
		},
		"incomplete config directory": {
			[]Provider{provider(sdk.Manifest{Name: "notes", ConfigDir: &sdk.ConfigDir{Setting: "pages_dir"}})},
			"built-in provider notes: ConfigDir needs Setting, Default and Holds",
		},
		"default config of another table": {
			[]Provider{provider(sdk.Manifest{Name: "notes", DefaultConfig: "[providers.notes]\nenabled = true\n\n[server]\nport = 1\n"})},
			"built-in provider notes: DefaultConfig must hold only its [providers.notes] table; it has [providers.notes], [server]",
		},
		"default config of another provider": {
			[]Provider{provider(sdk.Manifest{Name: "notes", DefaultConfig: "[providers.jot]\nenabled = true\n"})},
			"built-in provider notes: DefaultConfig must hold only its [providers.notes] table; it has [providers.jot]",
		},
		"default config of comments alone": {
			[]Provider{provider(sdk.Manifest{Name: "notes", DefaultConfig: "# nothing\n"})},
			"built-in provider notes: DefaultConfig must hold only its [providers.notes] table; it has nothing",
		},
		"default config setting the table to a value": {
			[]Provider{provider(sdk.Manifest{Name: "notes", DefaultConfig: "providers.notes = 1\n"})},
			"built-in provider notes: DefaultConfig must hold only its [providers.notes] table; it has [providers.notes]",
		},
		"default config that is not TOML": {
			[]Provider{provider(sdk.Manifest{Name: "notes", DefaultConfig: "[providers.notes\n"})},
			"built-in provider notes: DefaultConfig is not TOML: ",
		},
		"default config without a final newline": {
			[]Provider{provider(sdk.Manifest{Name: "notes", DefaultConfig: "[providers.notes]"})},
			"built-in provider notes: DefaultConfig must end in a newline",
		},
		"default config of a provider with a section": {
			[]Provider{provider(sdk.Manifest{Name: "relay", Section: "[[relay.servers]]", DefaultConfig: "[providers.relay]\n"})},
			"built-in provider relay: DefaultConfig is set, but its settings come from [[relay.servers]]",
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			r, err := NewRegistry(tc.providers...)
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("NewRegistry() = %v, %v; want an error containing %q", r, err, tc.wantErr)
			}
		})
	}
}

func TestAuditRulesJoinsProviders(t *testing.T) {
	t.Parallel()
	r, err := NewRegistry(
		provider(sdk.Manifest{Name: "notes", Audit: sdk.AuditRules{Identifiers: []string{"note_id", "kind"}, Lists: []string{"tags"}, ResultRefs: []string{"note_id"}}}),
		provider(sdk.Manifest{Name: "clock", Audit: sdk.AuditRules{Identifiers: []string{"zone", "kind"}, ResultRefs: []string{"alarm_id"}}}),
	)
	if err != nil {
		t.Fatal(err)
	}
	want := sdk.AuditRules{Identifiers: []string{"note_id", "kind", "zone"}, Lists: []string{"tags"}, ResultRefs: []string{"note_id", "alarm_id"}}
	if diff := cmp.Diff(want, r.AuditRules()); diff != "" {
		t.Errorf("AuditRules (-want +got):\n%s", diff)
	}
}

// TestRegisterAddsAllOrNone runs alone in this package's process
// registry, which no other test of the package touches.
func TestRegisterAddsAllOrNone(t *testing.T) {
	before := Registered()
	if err := Register(provider(sdk.Manifest{Name: "notes"}), provider(sdk.Manifest{Name: "clock"})); err != nil {
		t.Fatal(err)
	}
	if err := Register(provider(sdk.Manifest{Name: "jot"}), provider(sdk.Manifest{Name: "notes"})); err == nil {
		t.Fatal("Register of a name registered before succeeded")
	}
	if diff := cmp.Diff([]string{"notes", "clock"}, Registered().Names()); diff != "" {
		t.Errorf("Registered after a refused Register (-want +got):\n%s", diff)
	}
	if len(before.Names()) != 0 {
		t.Errorf("an earlier Registered() result changed: %v", before.Names())
	}
	defer func() {
		if recover() == nil {
			t.Error("MustRegister of a name registered before did not panic")
		}
	}()
	MustRegister(provider(sdk.Manifest{Name: "clock"}))
}
