package host

import (
	"fmt"
	"maps"
	"os"
	"path"
	"path/filepath"
	"slices"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/openhuman/openhuman-host/host/builtin"
	"github.com/openhuman/openhuman-host/host/catalog"
	"github.com/openhuman/openhuman-host/host/config"
	"github.com/openhuman/openhuman-host/host/policy"
	"github.com/openhuman/openhuman-host/host/server"
	"github.com/openhuman/openhuman-host/internal/platform"
	"github.com/openhuman/openhuman-host/sdk"
	"github.com/openhuman/openhuman-host/sdk/embeddings"
)

// configDir is the directory of the config file in effect, or of the
// default config file when the embedded defaults are in effect; empty when
// neither is known.
func configDir(cfg *config.Config) string {
	if cfg.Source != "" && cfg.Source != config.DefaultSource && filepath.IsAbs(cfg.Source) {
		return filepath.Dir(cfg.Source)
	}
	if cfg.Source != "" && cfg.Source != config.DefaultSource {
		if abs, err := filepath.Abs(cfg.Source); err == nil {
			return filepath.Dir(abs)
		}
	}
	if p, err := config.DefaultPath(); err == nil {
		return filepath.Dir(p)
	}
	return ""
}

// configPolicy is the security policy cfg's [autonomy] table asks for.
func configPolicy(cfg *config.Config) (*policy.Policy, error) {
	return policy.New(policy.Options{
		Level:             policy.Level(cfg.Autonomy.Level),
		MaxActionsPerHour: cfg.Autonomy.MaxActionsPerHour,
		AllowedTools:      cfg.Autonomy.AllowedTools,
		DeniedTools:       cfg.Autonomy.DeniedTools,
		// The audit log counts the acts of every process on the data dir.
		SharedBudget: true,
	})
}

// serverOptions are the server options cfg asks for that a reload can
// change ([server.Server.Reconfigure]).
func (h *Host) serverOptions(cfg *config.Config, pol *policy.Policy) server.Options {
	timeouts := map[string]time.Duration{}
	for _, p := range cfg.EnabledProviders() {
		if d := p.ToolTimeout(); d > 0 {
			timeouts[p.Name] = d
		}
	}
	return server.Options{
		Policy:               pol,
		ToolTimeout:          cfg.Server.ToolTimeout(),
		ProviderToolTimeouts: timeouts,
		ConfirmActs:          cfg.Autonomy.ConfirmActs,
		RecordReads:          cfg.Audit.RecordReads,
		DisabledHint:         h.unknownHint(cfg),
		Profiles:             profiles(cfg, pol, h.log),
		ToolOverrides:        toolOverrides(cfg),
		Embeddings:           h.discoveryEmbeddings(cfg),

		StructuredContentClients: cfg.Server.StructuredContentClients,
	}
}

// discoveryEmbeddings returns what tool_search fuses with under cfg: nil
// unless Options.DiscoveryEmbeddings is set, cfg has [discovery.embeddings]
// and some profile uses discovery. The same value is returned while the
// table and the API key stay the same. An unset api_key_env variable is
// logged and requests go without a key, as for the memory provider; the
// endpoint's refusal then shows in tool_search's fallback reason. The
// caller holds changeMu.
func (h *Host) discoveryEmbeddings(cfg *config.Config) *server.Embeddings {
	e := cfg.Discovery.Embeddings
	discovery := false
	for _, p := range cfg.Profiles {
		discovery = discovery || p.Discovery
	}
	if !h.opts.DiscoveryEmbeddings || e == nil || !discovery {
		h.embeddings, h.embeddingsCfg, h.embeddingsKey = nil, embeddings.Config{}, ""
		return nil
	}
	key, err := cfg.Discovery.EmbeddingsAPIKey(os.Getenv)
	if err != nil {
		h.log.Warn("tool_search embeddings will be requested without an API key", "error", err)
	}
	if h.embeddings != nil && h.embeddingsCfg == *e && h.embeddingsKey == key {
		return h.embeddings
	}
	client, err := embeddings.New(*e, config.DiscoveryEmbeddingsTable, key, nil)
	if err != nil {
		// The config was validated; this is a bug, not a user error.
		h.log.Error("tool_search ranks by keywords only: the embeddings client could not be built", "error", err)
		h.embeddings, h.embeddingsCfg, h.embeddingsKey = nil, embeddings.Config{}, ""
		return nil
	}
	h.embeddings = &server.Embeddings{Embedder: client, QueryTimeout: client.Config().Timeout()}
	h.embeddingsCfg, h.embeddingsKey = *e, key
	return h.embeddings
}

// toolOverrides are cfg's [tools.<name>] tables as the server applies
// them; nil when there are none.
func toolOverrides(cfg *config.Config) map[string]server.ToolOverride {
	if len(cfg.Tools) == 0 {
		return nil
	}
	out := make(map[string]server.ToolOverride, len(cfg.Tools))
	for name, o := range cfg.Tools {
		out[name] = server.ToolOverride{Title: o.Title, Description: o.Description, ReadOnlyHint: o.ReadOnlyHint,
			DestructiveHint: o.DestructiveHint, IdempotentHint: o.IdempotentHint, OpenWorldHint: o.OpenWorldHint}
	}
	return out
}

// profiles builds the server's profiles from cfg's [profiles.<name>]
// tables on top of pol. The config was validated, so a profile that
// cannot be built is logged and left out, and its clients are refused.
func profiles(cfg *config.Config, pol *policy.Policy, log hclog.Logger) map[string]*server.Profile {
	if len(cfg.Profiles) == 0 {
		return nil
	}
	out := make(map[string]*server.Profile, len(cfg.Profiles))
	for name, pc := range cfg.Profiles {
		p, err := pol.ForProfile(policy.Profile{
			Name: name, Level: policy.Level(pc.Level), Tools: pc.Tools, ExcludeTools: pc.ExcludeTools,
			MaxActionsPerHour: pc.MaxActionsPerHour,
		})
		if err != nil {
			log.Error("profile left out: its clients are refused", "profile", name, "error", err)
			continue
		}
		out[name] = &server.Profile{Policy: p, ConfirmActs: pc.ConfirmActs, Clients: pc.Clients, Discovery: pc.Discovery, Pinned: pc.PinnedTools,
			Resources: pc.Resources, ExcludeResources: pc.ExcludeResources}
	}
	return out
}

// profileNames lists cfg's profiles, sorted; "(none)" when it has none.
func profileNames(cfg *config.Config) []string {
	if len(cfg.Profiles) == 0 {
		return []string{"(none)"}
	}
	return slices.Sorted(maps.Keys(cfg.Profiles))
}

// disabledHint says, for a tool in the namespace of a built-in provider
// that cfg disables, which key enables it.
func disabledHint(cfg *config.Config, builtins *builtin.Registry) func(string) string {
	where := "the config file"
	if cfg.Source != config.DefaultSource && cfg.Source != "" {
		where = cfg.Source
	}
	return func(tool string) string {
		tool = sdk.ClientName(tool)
		for _, b := range builtins.Providers() {
			name := b.Manifest.Name
			p, ok := cfg.Providers[name]
			if ok && p.Enabled {
				continue
			}
			for _, prefix := range b.Manifest.Namespaces {
				if inNamespace(tool, prefix) {
					return fmt.Sprintf("it belongs to the %s provider, which is disabled; set [providers.%s] enabled = true in %s, then %s",
						name, name, where, platform.ReloadAdvice)
				}
			}
		}
		return ""
	}
}

// warnUnmatchedPatterns logs allow/deny entries that match no tool: a typo
// in a deny list would otherwise fail open without a sign. Patterns match
// advertised names after [sdk.ClientNameGlob], as the policy's do.
func warnUnmatchedPatterns(log hclog.Logger, cat *catalog.Catalog, key string, patterns []string) {
	for _, pat := range patterns {
		matched := false
		for _, t := range cat.Tools() {
			if ok, _ := path.Match(sdk.ClientNameGlob(pat), t.Name); ok {
				matched = true
				break
			}
		}
		if !matched {
			log.Warn("pattern matches no tool of the loaded providers (tool names are case-sensitive)", "key", key, "pattern", pat)
		}
	}
}
