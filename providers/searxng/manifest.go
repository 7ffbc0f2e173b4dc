package searxng

import (
	_ "embed"

	"github.com/openhuman/openhuman-host/sdk"
)

// defaultConfig is the provider's [providers.searxng] table of the host's
// documented default configuration ([sdk.Manifest].DefaultConfig).
//
//go:embed default.toml
var defaultConfig string

// Manifest returns what the host knows of the searxng provider before it
// launches it ([sdk.Manifest]): its table of the host's default
// configuration, its tool's namespace, the environment variables that
// override its settings (OPENHUMAN_SEARXNG_ENABLED, _URL, _MAX_RESULTS,
// _TIMEOUT_SECS and _DEFAULT_LANGUAGE), and the argument keys whose values
// audit rows keep. Each call returns a new value.
func Manifest() sdk.Manifest {
	return sdk.Manifest{
		Name:          "searxng",
		DefaultConfig: defaultConfig,
		Namespaces:    []string{"searxng_"},
		Env: []sdk.EnvOverride{
			{Var: "OPENHUMAN_SEARXNG_ENABLED", Key: "enabled", Kind: sdk.EnvBool},
			{Var: "OPENHUMAN_SEARXNG_URL", Key: keyBaseURL, Kind: sdk.EnvURL, Example: "http://127.0.0.1:8888"},
			{Var: "OPENHUMAN_SEARXNG_MAX_RESULTS", Key: keyMaxResults, Kind: sdk.EnvInt},
			{Var: "OPENHUMAN_SEARXNG_TIMEOUT_SECS", Key: keyTimeoutSecs, Kind: sdk.EnvInt},
			{Var: "OPENHUMAN_SEARXNG_DEFAULT_LANGUAGE", Key: keyDefaultLanguage},
		},
		Audit: sdk.AuditRules{Identifiers: []string{"language", "max_results"}, Lists: []string{"categories"}},
	}
}
