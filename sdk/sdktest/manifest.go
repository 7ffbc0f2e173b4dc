package sdktest

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/openhuman/openhuman-host/sdk"
)

// CheckManifest reports the first way a built-in provider's manifest
// disagrees with the catalog its Describe returns: a catalog name other
// than m.Name; with m.Namespaces set, an advertised tool or prompt name
// ([sdk.ClientName]) outside every namespace (a namespace's prefix
// followed by a second "_" is outside it, as the host reads it); an
// m.Audit identifier or list key no tool takes as a top-level argument;
// or an m.Audit result key no tool's output schema has. It returns nil
// when they agree.
func CheckManifest(m sdk.Manifest, cat *sdk.Catalog) error {
	if cat.Name != "" && cat.Name != m.Name {
		return fmt.Errorf("manifest name %q, catalog name %q", m.Name, cat.Name)
	}
	var names []string
	for _, t := range cat.Tools {
		names = append(names, sdk.ClientName(t.Name))
	}
	for _, p := range cat.Prompts {
		names = append(names, sdk.ClientName(p.Name))
	}
	if len(m.Namespaces) > 0 {
		for _, n := range names {
			if !slices.ContainsFunc(m.Namespaces, func(ns string) bool {
				return strings.HasPrefix(n, ns) && !strings.HasPrefix(n[len(ns):], "_")
			}) {
				return fmt.Errorf("%q is in none of the manifest's namespaces %v", n, m.Namespaces)
			}
		}
	}
	var inputs, outputs []string
	for _, t := range cat.Tools {
		inputs = append(inputs, properties(t.InputSchema)...)
		outputs = append(outputs, properties(t.OutputSchema)...)
	}
	for _, k := range slices.Concat(m.Audit.Identifiers, m.Audit.Lists) {
		if !slices.Contains(inputs, k) {
			return fmt.Errorf("audit rule key %q is an argument of no tool", k)
		}
	}
	for _, k := range m.Audit.ResultRefs {
		if !slices.Contains(outputs, k) {
			return fmt.Errorf("audit result key %q is in no tool's output schema", k)
		}
	}
	return nil
}

// properties lists the top-level properties of an object schema; none for
// an empty or unreadable one.
func properties(schema json.RawMessage) []string {
	var s struct {
		Properties map[string]json.RawMessage `json:"properties"`
	}
	if len(schema) == 0 || json.Unmarshal(schema, &s) != nil {
		return nil
	}
	var out []string
	for k := range s.Properties {
		out = append(out, k)
	}
	return out
}
