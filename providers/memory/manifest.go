package memory

import (
	_ "embed"

	"github.com/openhuman/openhuman-host/sdk"
)

// defaultConfig is the provider's [providers.memory] table of the host's
// documented default configuration ([sdk.Manifest].DefaultConfig).
//
//go:embed default.toml
var defaultConfig string

// Manifest returns what the host knows of the memory provider before it
// launches it ([sdk.Manifest]): its table of the host's default
// configuration, its tools' namespaces, that it keeps its data in the
// host's shared database on PostgreSQL, the argument keys whose values
// audit rows keep, how the host's instructions introduce it, and that it
// runs in the host's process unless [providers.memory] process = "plugin"
// (docs/architecture.md, "Where the memory provider runs"). Each call
// returns a new value.
func Manifest() sdk.Manifest {
	return sdk.Manifest{
		Name:          "memory",
		DefaultConfig: defaultConfig,
		Summary:       "a personal memory store",
		Instructions: "Use memory_search to find what the user stored before, tree_read_chunk to read a hit in full, " +
			"and memory_store to save something worth remembering.",
		Namespaces:    []string{"memory_", "tree_"},
		SharedStorage: true,
		InProcess:     true,
		Audit: sdk.AuditRules{
			Identifiers: []string{"namespace", "chunk_id", "document_id", "kind", "k", "offset", "since_ms", "until_ms"},
			Lists:       []string{"tags", "source_kinds", "source_ids", "entity_ids"},
			ResultRefs:  []string{"document_id", "chunk_id"},
		},
	}
}
