package builtin

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/pelletier/go-toml/v2"

	"github.com/openhuman/openhuman-host/sdk"
)

// checkDefaultConfig reports why m's DefaultConfig cannot join the host's
// defaults: it belongs to a provider configured by a section of its own,
// does not end in a newline, is not TOML, or holds anything but the
// [providers.<name>] table of m.Name. nil for a valid or empty one.
func checkDefaultConfig(m sdk.Manifest) error {
	if m.DefaultConfig == "" {
		return nil
	}
	if m.Section != "" {
		return fmt.Errorf("built-in provider %s: DefaultConfig is set, but its settings come from %s", m.Name, m.Section)
	}
	if !strings.HasSuffix(m.DefaultConfig, "\n") {
		return fmt.Errorf("built-in provider %s: DefaultConfig must end in a newline", m.Name)
	}
	var doc map[string]any
	if err := toml.Unmarshal([]byte(m.DefaultConfig), &doc); err != nil {
		return fmt.Errorf("built-in provider %s: DefaultConfig is not TOML: %w", m.Name, err)
	}
	want := "[providers." + m.Name + "]"
	providers, ok := doc["providers"].(map[string]any)
	if len(doc) != 1 || !ok || len(providers) != 1 {
		return fmt.Errorf("built-in provider %s: DefaultConfig must hold only its %s table; it has %s", m.Name, want, tables(doc))
	}
	if _, ok := providers[m.Name].(map[string]any); !ok {
		return fmt.Errorf("built-in provider %s: DefaultConfig must hold only its %s table; it has %s", m.Name, want, tables(doc))
	}
	return nil
}

// tables lists doc's top-level keys and those of its providers table, for
// messages: "[providers.notes], [server]", or "nothing".
func tables(doc map[string]any) string {
	var out []string
	for _, k := range slices.Sorted(maps.Keys(doc)) {
		if sub, ok := doc[k].(map[string]any); ok && k == "providers" {
			for _, name := range slices.Sorted(maps.Keys(sub)) {
				out = append(out, "[providers."+name+"]")
			}
			continue
		}
		out = append(out, "["+k+"]")
	}
	if len(out) == 0 {
		return "nothing"
	}
	return strings.Join(out, ", ")
}
