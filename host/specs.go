package host

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"

	"github.com/openhuman/openhuman-host/host/builtin"
	"github.com/openhuman/openhuman-host/host/config"
	"github.com/openhuman/openhuman-host/host/plugins"
	"github.com/openhuman/openhuman-host/sdk"
)

// configDirRevision fingerprints the directory of files a built-in
// provider reads (d.Setting of its table, or <config dir>/<d.Default>):
// names, sizes and modification times, so that a reload notices edited
// files.
func configDirRevision(cfg *config.Config, p config.ProviderConfig, d *sdk.ConfigDir) string {
	dir, _ := p.Settings[d.Setting].(string)
	if dir == "" {
		if cd := configDir(cfg); cd != "" {
			dir = filepath.Join(cd, d.Default)
		}
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return ""
	}
	h := sha256.New()
	for _, e := range entries {
		info, err := os.Stat(filepath.Join(dir, e.Name()))
		if err != nil {
			continue
		}
		fmt.Fprintf(h, "%s\x00%d\x00%d\n", e.Name(), info.Size(), info.ModTime().UnixNano())
	}
	return hex.EncodeToString(h.Sum(nil))
}

func providerSpecs(cfg *config.Config, dataDir string, o Options, failed *[]plugins.Failure) ([]plugins.Spec, error) {
	var specs []plugins.Spec
	for _, p := range cfg.EnabledProviders() {
		settings, err := p.SettingsJSON()
		if err != nil {
			return nil, fmt.Errorf("providers.%s: %w", p.Name, err)
		}
		spec := plugins.Spec{
			Name:         p.Name,
			Config:       settings,
			DataDir:      filepath.Join(dataDir, p.Name),
			Secrets:      p.ResolveSecrets(os.Getenv),
			StartTimeout: p.StartTimeout(),
		}
		if config.IsBuiltin(p.Name) {
			b, ok := o.Builtins.Lookup(p.Name)
			if !ok {
				err := fmt.Errorf("built-in provider %s is not part of this build; set [providers.%s] enabled = false", p.Name, p.Name)
				o.Logger.Error("provider failed to load; serving the others", "provider", p.Name, "error", err)
				*failed = append(*failed, plugins.Failure{Name: p.Name, Err: err})
				continue
			}
			if o.Executable == "" {
				return nil, errors.New("no host executable to launch built-in providers from")
			}
			spec.Path, spec.Args, spec.Env = o.Executable, []string{"provider", p.Name}, slices.Clone(b.Manifest.PassEnv)
			if inHost(b, p.Process) {
				spec.InProcess = b.New
			}
			if b.Manifest.SharedStorage {
				// Only a built-in that asks for it gets the shared
				// database's connection string.
				if spec.Secrets, err = SharedStorageSecrets(cfg, spec.Secrets); err != nil {
					return nil, fmt.Errorf("providers.%s: %w", p.Name, err)
				}
			}
			if d := b.Manifest.ConfigDir; d != nil {
				spec.Revision = configDirRevision(cfg, p, d)
			}
		} else {
			spec.Path, spec.Args, spec.SHA256, spec.Verify = p.Command, p.Args, p.SHA256, true
		}
		specs = append(specs, spec)
	}
	if spec, ok, err := upstreamSpec(cfg, dataDir, o); err != nil {
		o.Logger.Error("upstream servers not loaded", "error", err)
		*failed = append(*failed, plugins.Failure{Name: upstreamName(o.Builtins), Err: err})
	} else if ok {
		specs = append(specs, spec)
	}
	return specs, nil
}

// upstreamName is the name of the built-in provider that serves
// [[upstream.servers]], or the section itself when the build has none.
func upstreamName(builtins *builtin.Registry) string {
	if b, ok := builtins.BySection(config.UpstreamSection); ok {
		return b.Manifest.Name
	}
	return config.UpstreamSection
}

// upstreamSpec is the spec of the provider that serves the enabled
// [[upstream.servers]], with their auth resolved into headers (and query
// parameters) from the environment; ok is false when none is enabled.
func upstreamSpec(cfg *config.Config, dataDir string, o Options) (plugins.Spec, bool, error) {
	type server struct {
		config.UpstreamServer
		Headers map[string]string `json:"headers,omitempty"`
		// Unavailable is why the server cannot be started (a variable its
		// auth or env needs is unset): the provider reports it, and the
		// other servers run.
		Unavailable string `json:"unavailable,omitempty"`
		// OAuth is how to sign in to the server, for the oauth kinds.
		OAuth *config.OAuthSettings `json:"oauth,omitempty"`
	}
	var servers []server
	for _, s := range cfg.Upstream.Checked {
		if !s.Enabled {
			continue
		}
		entry := server{UpstreamServer: s}
		headers, endpoint, err := s.ResolveAuth(os.Getenv)
		if err == nil {
			entry.Headers, entry.Endpoint = headers, endpoint
			entry.Env, err = s.ResolveEnv(os.LookupEnv)
		}
		if err == nil {
			entry.OAuth, err = s.ResolveOAuth(os.Getenv)
		}
		if err != nil {
			entry.Headers, entry.Env, entry.OAuth, entry.Unavailable = nil, nil, nil, err.Error()
		}
		servers = append(servers, entry)
	}
	if len(servers) == 0 {
		return plugins.Spec{}, false, nil
	}
	b, ok := o.Builtins.BySection(config.UpstreamSection)
	if !ok {
		return plugins.Spec{}, false, errors.New("this build has no upstream provider; remove the [[upstream.servers]] entries")
	}
	name := b.Manifest.Name
	if o.Executable == "" {
		return plugins.Spec{}, false, errors.New("no host executable to launch the upstream provider from")
	}
	// A one-shot command (no status file) needs the servers before it can
	// call a tool; a server may announce late ones with list_changed.
	raw, err := json.Marshal(map[string]any{"servers": servers, "wait_for_servers": o.StatusFile == ""})
	if err != nil {
		return plugins.Spec{}, false, fmt.Errorf("upstream servers as JSON: %w", err)
	}
	spec := plugins.Spec{
		Name:    name,
		Path:    o.Executable,
		Args:    []string{"provider", name},
		Config:  raw,
		DataDir: filepath.Join(dataDir, name),
		// [providers.upstream] is no table of the config: the provider's
		// start is bounded by the server's setting.
		TimeoutKey: "[server] provider_start_timeout_secs",
		// Such as what opening a browser for an OAuth sign-in needs.
		Env: slices.Clone(b.Manifest.PassEnv),
	}
	if inHost(b, cfg.Upstream.Process) {
		spec.InProcess = b.New
	}
	return spec, true, nil
}

// inHost reports whether built-in b runs in the host's process: as the
// operator's setting says (config.ProcessHost or config.ProcessPlugin),
// else as its manifest does.
func inHost(b builtin.Provider, setting string) bool {
	switch setting {
	case config.ProcessHost:
		return true
	case config.ProcessPlugin:
		return false
	}
	return b.Manifest.InProcess
}

// InHostBuiltins returns the names of the built-in providers that cfg
// enables and that run in the host's process: those whose process
// setting or manifest says so ([sdk.Manifest].InProcess), in the order of
// cfg's providers, then the upstream relay when it runs in the host and
// cfg enables at least one upstream server. A nil reg means
// [builtin.Registered]. serve uses it to size the stdio server's memory
// limit, since such a provider's heap is the host's.
func InHostBuiltins(cfg *config.Config, reg *builtin.Registry) []string {
	if reg == nil {
		reg = builtin.Registered()
	}
	var names []string
	for _, p := range cfg.EnabledProviders() {
		if b, ok := reg.Lookup(p.Name); ok && config.IsBuiltin(p.Name) && inHost(b, p.Process) {
			names = append(names, p.Name)
		}
	}
	if b, ok := reg.BySection(config.UpstreamSection); ok && inHost(b, cfg.Upstream.Process) &&
		slices.ContainsFunc(cfg.Upstream.Checked, func(s config.UpstreamServer) bool { return s.Enabled }) {
		names = append(names, b.Manifest.Name)
	}
	return names
}
