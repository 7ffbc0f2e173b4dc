package agent

import (
	_ "embed"

	"github.com/openhuman/openhuman-host/sdk"
)

// defaultConfig is the provider's [providers.agent] table of the host's
// documented default configuration ([sdk.Manifest].DefaultConfig).
//
//go:embed default.toml
var defaultConfig string

// Manifest returns what the host knows of the agent provider before it
// launches it ([sdk.Manifest]): its table of the host's default
// configuration, its tools' namespaces, the directory of user-defined
// sub-agents (agents_dir, else <config dir>/agents) whose changes a reload
// picks up, and the argument keys whose values audit rows keep. Each call
// returns a new value.
func Manifest() sdk.Manifest {
	return sdk.Manifest{
		Name:          "agent",
		DefaultConfig: defaultConfig,
		Namespaces:    []string{"agent_", "core_"},
		ConfigDir:     &sdk.ConfigDir{Setting: "agents_dir", Default: "agents", Holds: "the sub-agent definitions"},
		Audit:         sdk.AuditRules{Identifiers: []string{"agent_id"}},
	}
}
