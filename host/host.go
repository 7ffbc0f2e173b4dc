// Package host assembles a running openhuman-host from its effective
// config: the audit log, the SecurityPolicy, the provider processes, the
// merged catalog and the MCP server. The serve command and the one-shot
// CLI commands build the same Host, so both run the same pipeline.
package host

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/openhuman/openhuman-host/host/audit"
	"github.com/openhuman/openhuman-host/host/catalog"
	"github.com/openhuman/openhuman-host/host/config"
	"github.com/openhuman/openhuman-host/host/plugins"
	"github.com/openhuman/openhuman-host/host/policy"
	"github.com/openhuman/openhuman-host/host/server"
	"github.com/openhuman/openhuman-host/sdk"
)

// Options configures [Start].
type Options struct {
	// Executable is the host binary that built-in providers are launched
	// from, as `<Executable> provider <name>`. Required when a built-in
	// provider is enabled.
	Executable string
	// Builtins lists the built-in providers compiled into Executable. An
	// enabled built-in provider that is not in the list is logged and
	// skipped.
	Builtins []string
	// Version is the host's version string.
	Version string
	// Logger is the root logger. Default: a null logger.
	Logger hclog.Logger
}

// Host is a running host.
type Host struct {
	// Server is the MCP server with the merged catalog.
	Server *server.Server
	// Providers lists the providers that loaded.
	Providers []*plugins.Provider
	// Failed lists the enabled providers that did not load, with the
	// reason.
	Failed []plugins.Failure
	// Config is the effective config the host was built from.
	Config *config.Config

	audit   *audit.Log
	manager *plugins.Manager
	log     hclog.Logger
}

// Start builds the host: it opens the audit log in the data dir, builds
// the policy, launches every enabled provider (handshake, Configure,
// Describe, all in parallel) and merges their catalogs. It returns when
// every provider has loaded or failed, so the first tools/list is
// complete. A provider that fails is logged and left out; Start fails only
// for host faults (an unusable data dir or audit log, an invalid policy).
func Start(ctx context.Context, cfg *config.Config, opts *Options) (*Host, error) {
	var o Options
	if opts != nil {
		o = *opts
	}
	if o.Logger == nil {
		o.Logger = hclog.NewNullLogger()
	}
	dataDir, err := cfg.DataDir()
	if err != nil {
		return nil, fmt.Errorf("resolve data dir: %w", err)
	}
	if err := os.MkdirAll(dataDir, 0o700); err != nil {
		return nil, fmt.Errorf("create data dir %s: %w", dataDir, err)
	}
	pol, err := policy.New(policy.Options{
		Level:             policy.Level(cfg.Autonomy.Level),
		MaxActionsPerHour: cfg.Autonomy.MaxActionsPerHour,
		AllowedTools:      cfg.Autonomy.AllowedTools,
		DeniedTools:       cfg.Autonomy.DeniedTools,
	})
	if err != nil {
		return nil, fmt.Errorf("security policy: %w", err)
	}
	auditLog, err := audit.Open(ctx, filepath.Join(dataDir, "audit.db"), &audit.Options{
		QueueSize:  cfg.Audit.QueueSize,
		RetainDays: cfg.Audit.RetainDays,
		Logger:     o.Logger.Named("audit"),
	})
	if err != nil {
		return nil, fmt.Errorf("open audit log: %w", err)
	}
	h := &Host{Config: cfg, audit: auditLog, log: o.Logger}
	hostService := &hostService{}
	h.manager = plugins.NewManager(&plugins.Options{
		Logger:       o.Logger.Named("provider"),
		HostVersion:  o.Version,
		LogLevel:     cfg.Server.LogLevel,
		Host:         hostService,
		StartTimeout: cfg.Server.ProviderStartTimeout(),
	})
	specs, err := providerSpecs(cfg, dataDir, o, &h.Failed)
	if err != nil {
		_ = h.Close(ctx)
		return nil, err
	}
	loaded, failed, err := h.manager.Start(ctx, specs)
	if err != nil {
		_ = h.Close(ctx)
		return nil, fmt.Errorf("start providers: %w", err)
	}
	h.Providers, h.Failed = loaded, append(h.Failed, failed...)
	sources := make([]catalog.Source, 0, len(loaded))
	dispatchers := make(map[string]server.Dispatcher, len(loaded))
	for _, p := range loaded {
		sources = append(sources, catalog.Source{Provider: p.Name, Catalog: p.Catalog})
		dispatchers[p.Name] = p
	}
	cat := catalog.Build(o.Logger.Named("catalog"), sources)
	notLoaded := make(map[string]string, len(h.Failed))
	for _, f := range h.Failed {
		notLoaded[f.Name] = f.Err.Error()
	}
	srv, err := server.New(cat, dispatchers, &server.Options{
		NotLoaded:   notLoaded,
		ConfirmActs: cfg.Autonomy.ConfirmActs,
		Version:     o.Version,
		Logger:      o.Logger,
		Policy:      pol,
		Audit:       auditLog,
		RecordReads: cfg.Audit.RecordReads,
		ToolTimeout: cfg.Server.ToolTimeout(),
	})
	if err != nil {
		_ = h.Close(ctx)
		return nil, err
	}
	h.Server = srv
	hostService.srv = srv
	warnUnmatchedPatterns(o.Logger, cat, "autonomy.allowed_tools", cfg.Autonomy.AllowedTools)
	warnUnmatchedPatterns(o.Logger, cat, "autonomy.denied_tools", cfg.Autonomy.DeniedTools)
	return h, nil
}

// warnUnmatchedPatterns logs allow/deny entries that match no tool: a typo
// in a deny list would otherwise fail open without a sign.
func warnUnmatchedPatterns(log hclog.Logger, cat *catalog.Catalog, key string, patterns []string) {
	for _, pat := range patterns {
		matched := false
		for _, t := range cat.Tools() {
			if ok, _ := path.Match(pat, t.Name); ok {
				matched = true
				break
			}
		}
		if !matched {
			log.Warn("pattern matches no tool of the loaded providers (tool names are case-sensitive)", "key", key, "pattern", pat)
		}
	}
}

func providerSpecs(cfg *config.Config, dataDir string, o Options, failed *[]plugins.Failure) ([]plugins.Spec, error) {
	builtin := map[string]bool{}
	for _, b := range o.Builtins {
		builtin[b] = true
	}
	var specs []plugins.Spec
	for _, p := range cfg.EnabledProviders() {
		settings, err := p.SettingsJSON()
		if err != nil {
			return nil, fmt.Errorf("providers.%s: %w", p.Name, err)
		}
		spec := plugins.Spec{
			Name:    p.Name,
			Config:  settings,
			DataDir: filepath.Join(dataDir, p.Name),
			Secrets: p.ResolveSecrets(os.Getenv),
		}
		if config.IsBuiltin(p.Name) {
			if !builtin[p.Name] {
				err := fmt.Errorf("built-in provider %s is not part of this build; set [providers.%s] enabled = false", p.Name, p.Name)
				o.Logger.Error("provider failed to load; serving the others", "provider", p.Name, "error", err)
				*failed = append(*failed, plugins.Failure{Name: p.Name, Err: err})
				continue
			}
			if o.Executable == "" {
				return nil, errors.New("no host executable to launch built-in providers from")
			}
			spec.Path, spec.Args = o.Executable, []string{"provider", p.Name}
		} else {
			spec.Path, spec.Args, spec.SHA256 = p.Command, p.Args, p.SHA256
		}
		specs = append(specs, spec)
	}
	return specs, nil
}

// Close stops the providers, flushes the audit log and closes it. It
// waits at most until ctx is done for the flush.
func (h *Host) Close(ctx context.Context) error {
	if h.manager != nil {
		h.manager.Close()
	}
	if h.audit != nil {
		flushCtx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		if err := h.audit.Close(flushCtx); err != nil {
			return fmt.Errorf("close audit log: %w", err)
		}
	}
	return nil
}

// hostService is the host service providers reach through go-plugin's
// broker: their tool calls go through the server's full pipeline.
type hostService struct {
	srv *server.Server
}

func (s *hostService) CallTool(ctx context.Context, req *sdk.HostCallToolRequest) (*sdk.CallToolResult, error) {
	if s.srv == nil {
		return nil, errors.New("host is still starting")
	}
	caller := req.Caller
	caller.Depth++
	if req.Actor != "" {
		caller.SourceType = caller.SourceType + "/" + req.Actor
	}
	caller.ProgressToken = nil
	res, err := s.srv.Call(ctx, server.Call{Tool: req.Name, Arguments: req.Arguments, Caller: caller})
	if errors.Is(err, server.ErrUnknownTool) {
		return sdk.ErrorResult("unknown tool %q", req.Name), nil
	}
	return res, err
}
