// Package host assembles a running openhuman-host from its effective
// config: the audit log, the SecurityPolicy, the provider processes, the
// merged catalog and the MCP server. The serve command and the one-shot
// CLI commands build the same Host, so both run the same pipeline.
package host

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/openhuman/openhuman-host/sdk/embeddings"

	"github.com/hashicorp/go-hclog"
	"go.opentelemetry.io/otel/metric"

	"github.com/openhuman/openhuman-host/host/audit"
	"github.com/openhuman/openhuman-host/host/builtin"
	"github.com/openhuman/openhuman-host/host/catalog"
	"github.com/openhuman/openhuman-host/host/config"
	"github.com/openhuman/openhuman-host/host/plugins"
	"github.com/openhuman/openhuman-host/host/policy"
	"github.com/openhuman/openhuman-host/host/server"
	"github.com/openhuman/openhuman-host/internal/telemetry"
	"github.com/openhuman/openhuman-host/providers/upstream/upstreamwire"
)

// Options configures [Start].
type Options struct {
	// Executable is the host binary that built-in providers are launched
	// from, as `<Executable> provider <name>`. Required when a built-in
	// provider is enabled.
	Executable string
	// Builtins are the built-in providers compiled into Executable, whose
	// manifests say how to launch them and which names are theirs. An
	// enabled built-in provider the registry lacks is logged and skipped.
	// Default nil: the process's registry, [builtin.Registered].
	Builtins *builtin.Registry
	// Version is the host's version string.
	Version string
	// Logger is the root logger. Default: a null logger.
	Logger hclog.Logger
	// StatusFile, when set, is where the host keeps a JSON [StatusReport]
	// of its providers and audit log, rewritten on every change and
	// removed by Close; `openhuman-host providers status` reads these
	// files. Only a serving host sets it, and such a host also repairs a
	// damaged audit database at start (audit.Options.Repair).
	StatusFile string
	// Restart overrides the provider restart policy; zero fields keep
	// plugins.DefaultRestartPolicy.
	Restart plugins.RestartPolicy
	// Profile, when set, is the [profiles.<name>] every client of this
	// host gets (serve --profile); Start fails when the config has no
	// such profile. Default "": each client's profile comes from the HTTP
	// path or its name.
	Profile string
	// Telemetry, when tracing or measuring, traces MCP requests and tool
	// calls into the providers (which it configures through their
	// environment) and records the host's metrics. Default nil: off.
	Telemetry *telemetry.Telemetry
	// ProviderEnv are KEY=VALUE entries every provider process gets on
	// top of its allow-listed environment, such as the host's GC settings
	// (GOGC, GOMEMLIMIT) so that providers collect garbage as the host
	// does. Default nil.
	ProviderEnv []string
	// DiscoveryEmbeddings lets tool_search fuse its keyword ranking with
	// embeddings when the config has a [discovery.embeddings] table and a
	// profile with discovery = true: the served tools are then embedded
	// in the background, and again when the catalog changes. Only a
	// serving host sets it; one-shot commands never search, and would
	// send every tool to the endpoint for nothing. Default false: keyword
	// ranking only.
	DiscoveryEmbeddings bool
}

// Host is a running host.
type Host struct {
	// Server is the MCP server with the merged catalog.
	Server *server.Server
	// Providers lists the providers that loaded, whatever their state
	// since (see [Host.Status]).
	Providers []*plugins.Provider
	// Failed lists the enabled providers that did not load, with the
	// reason.
	Failed []plugins.Failure
	// Config is the effective config the host was built from.
	Config *config.Config

	audit      *audit.Log
	manager    *plugins.Manager
	log        hclog.Logger
	started    time.Time
	statusFile string
	// changeMu serialises catalog rebuilds and status file writes.
	changeMu sync.Mutex
	// owners maps "tool:<name>" and "resource:<uri>" to the provider that
	// first served it, for the host's lifetime (guarded by changeMu).
	owners map[string]string
	// replayed maps a provider to the pid of its process last told the
	// sessions' state (Server.Replay), guarded by changeMu.
	replayed map[string]int
	opts     Options
	dataDir  string
	// policy is the policy in effect (guarded by changeMu).
	policy *policy.Policy
	// reloadMu serialises Reload.
	reloadMu sync.Mutex
	// lastUpstream is the upstream servers' state for the status file;
	// guarded by changeMu.
	lastUpstream []upstreamwire.ServerStatus
	// stopWatch ends watchAudit, which closes watchDone; nil without a
	// status file.
	stopWatch, watchDone chan struct{}
	// metrics is the registration of the host's observable metrics; nil
	// while metrics are off.
	metrics metric.Registration
	// closeOnce makes Close run once; later calls return closeErr.
	closeOnce sync.Once
	closeErr  error
	// embeddings is what tool_search fuses with, built from
	// embeddingsCfg and embeddingsKey and kept across reloads that change
	// neither, so the tools' vectors survive them; guarded by changeMu.
	embeddings    *server.Embeddings
	embeddingsCfg embeddings.Config
	embeddingsKey string
}

// instructions is the MCP instructions string of a host with builtins,
// enabled or not, in their registration order.
func instructions(builtins *builtin.Registry) string {
	var summaries, guidance []string
	for _, b := range builtins.Providers() {
		summaries = append(summaries, b.Manifest.Summary)
		guidance = append(guidance, b.Manifest.Instructions)
	}
	return server.Instructions(summaries, guidance)
}

// inNamespace reports whether name is in the built-in namespace prefix
// ("notes_"), as [sdk.Manifest].Namespaces describes. A second "_" right
// after the prefix leaves the namespace: built-in names never have one,
// and "notes__create" is what an upstream server named notes relays under
// its default prefix.
func inNamespace(name, prefix string) bool {
	return strings.HasPrefix(name, prefix) && !strings.HasPrefix(name[len(prefix):], "_")
}

// reservedURIPrefix marks resources only built-in providers serve.
const reservedURIPrefix = "openhuman://"

// claim implements catalog.Claim: a name stays with the provider that
// first served it, built-in namespaces and openhuman:// resources belong
// to built-in providers. h.changeMu must be held.
func (h *Host) claim(provider, kind, name string) error {
	if o, ok := h.owners[kind+":"+name]; ok && o != provider {
		return fmt.Errorf("%s %q belongs to provider %s, which served it first", kind, name, o)
	}
	// A provider configured by a section of its own (the upstream relay)
	// serves other servers' tools: it gets no built-in namespace either.
	if h.opts.Builtins.IsTabled(provider) {
		return nil
	}
	if kind == "tool" || kind == "prompt" {
		for _, b := range h.opts.Builtins.Providers() {
			for _, p := range b.Manifest.Namespaces {
				if inNamespace(name, p) {
					return fmt.Errorf("%s names starting with %q are reserved for the built-in provider %s", kind, p, b.Manifest.Name)
				}
			}
		}
	}
	if kind == "resource" && strings.HasPrefix(name, reservedURIPrefix) {
		return fmt.Errorf("resource URIs starting with %q are reserved for built-in providers", reservedURIPrefix)
	}
	return nil
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
	if o.Builtins == nil {
		o.Builtins = builtin.Registered()
	}
	dataDir, err := cfg.DataDir()
	if err != nil {
		return nil, fmt.Errorf("resolve data dir: %w", err)
	}
	if err := privateDataDir(dataDir, cfg.Server.DataDir != "", o.Logger); err != nil {
		return nil, err
	}
	if _, ok := cfg.Profiles[o.Profile]; o.Profile != "" && !ok {
		return nil, fmt.Errorf("profile %q is not in the config: add a [profiles.%s] table or choose one of: %s",
			o.Profile, o.Profile, strings.Join(profileNames(cfg), ", "))
	}
	pol, err := configPolicy(cfg)
	if err != nil {
		return nil, fmt.Errorf("security policy: %w", err)
	}
	var steps startSteps
	mark := steps.clock()
	auditLog, err := OpenAudit(ctx, cfg, dataDir, &audit.Options{
		QueueSize:  cfg.Audit.QueueSize,
		RetainDays: cfg.Audit.RetainDays,
		Repair:     o.StatusFile != "",
		// A server waits out a full disk; a replica whose shared database
		// does not answer exits instead, since it could not open the
		// requestStates the others seal, and its supervisor retries.
		Retry:  o.StatusFile != "" && cfg.Storage.Driver != config.StoragePostgres,
		Logger: o.Logger.Named("audit"),
	})
	if errors.Is(err, fs.ErrPermission) {
		return nil, fmt.Errorf("open audit log: %w; the data directory %s must be writable by this user: fix its permissions, "+
			"or choose another with --data-dir or OPENHUMAN_DATA_DIR", err, dataDir)
	}
	if err != nil {
		return nil, fmt.Errorf("open audit log: %w", err)
	}
	steps.audit = mark()
	h := &Host{Config: cfg, audit: auditLog, log: o.Logger, started: time.Now(), statusFile: o.StatusFile, opts: o, dataDir: dataDir}
	hostService := &hostService{}
	h.manager = plugins.NewManager(&plugins.Options{
		Logger:       o.Logger.Named("provider"),
		HostVersion:  o.Version,
		LogLevel:     cfg.Server.LogLevel,
		ConfigDir:    configDir(cfg),
		Host:         hostService,
		StartTimeout: cfg.Server.ProviderStartTimeout(),
		Restart:      o.Restart,
		OnChange:     h.providerChanged,

		ExtraEnv:        append(slices.Clone(o.ProviderEnv), o.Telemetry.ProviderEnv()...),
		GRPCDialOptions: providerDialOptions(o.Telemetry),
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
	steps.providers = mark()
	// Hold changeMu until the server exists: a provider that changes now
	// has its change applied right after.
	h.changeMu.Lock()
	h.replayed = map[string]int{}
	for _, p := range loaded {
		h.replayed[p.Name] = p.Pid()
	}
	cat, dispatchers, notLoaded := h.merge()
	steps.catalog = mark()
	key, err := sharedStateKey(ctx, cfg, dataDir, auditLog)
	if err != nil {
		h.changeMu.Unlock()
		_ = h.Close(ctx)
		return nil, err
	}
	steps.stateKey = mark()
	srvOpts := h.serverOptions(cfg, pol)
	srvOpts.Version = o.Version
	srvOpts.Logger = o.Logger
	srvOpts.Audit = auditLog
	srvOpts.NotLoaded = notLoaded
	srvOpts.StateKey = key
	srvOpts.Profile = o.Profile
	srvOpts.Replica = cfg.Server.Replica
	srvOpts.TracerProvider = tracerProvider(o.Telemetry)
	srvOpts.MeterProvider = meterProvider(o.Telemetry)
	srvOpts.Instructions = instructions(o.Builtins)
	srvOpts.AuditRules = o.Builtins.AuditRules()
	srv, err := server.New(cat, dispatchers, &srvOpts)
	if err != nil {
		h.changeMu.Unlock()
		_ = h.Close(ctx)
		return nil, err
	}
	steps.server = mark()
	h.Server = srv
	h.policy = pol
	hostService.srv.Store(srv)
	h.changeMu.Unlock()
	if h.metrics, err = h.registerMetrics(o.Telemetry); err != nil {
		o.Logger.Warn("the host's metrics are not recorded", "error", err)
	}
	warnUnmatchedPatterns(o.Logger, cat, "autonomy.allowed_tools", cfg.Autonomy.AllowedTools)
	warnUnmatchedPatterns(o.Logger, cat, "autonomy.denied_tools", cfg.Autonomy.DeniedTools)
	warnUnmatchedPatterns(o.Logger, cat, "tools", slices.Sorted(maps.Keys(cfg.Tools)))
	h.changeMu.Lock()
	if h.statusFile != "" {
		h.lastUpstream = h.upstreamServers()
	}
	h.writeStatus()
	h.changeMu.Unlock()
	if h.statusFile != "" {
		h.stopWatch = make(chan struct{})
		h.watchDone = make(chan struct{})
		go func() {
			defer close(h.watchDone)
			h.watchAudit(h.stopWatch)
		}()
	}
	steps.rest = mark()
	o.Logger.Debug("host started", steps.fields()...)
	return h, nil
}

// startSteps are the durations of [Start]'s steps, logged at debug level
// ("host started") so that a slow start can be broken down (the bench's
// cold start reads them).
type startSteps struct {
	audit, providers, catalog, stateKey, server, rest time.Duration
}

// clock returns a function that reports the time since its previous call
// (or since clock was called).
func (startSteps) clock() func() time.Duration {
	last := time.Now()
	return func() time.Duration {
		now := time.Now()
		d := now.Sub(last)
		last = now
		return d
	}
}

// fields are the steps as log fields.
func (s startSteps) fields() []any {
	return []any{"audit", s.audit, "providers", s.providers, "catalog", s.catalog, "state_key", s.stateKey,
		"server", s.server, "rest", s.rest}
}

// merge builds the catalog from the providers that are not failed, their
// dispatchers, and the reasons of those missing (failed at load or since).
func (h *Host) merge() (*catalog.Catalog, map[string]server.Dispatcher, map[string]string) {
	sources := make([]catalog.Source, 0, len(h.Providers))
	dispatchers := make(map[string]server.Dispatcher, len(h.Providers))
	notLoaded := make(map[string]string, len(h.Failed))
	for _, f := range h.Failed {
		notLoaded[f.Name] = f.Err.Error()
	}
	for _, p := range h.Providers {
		st := p.Status()
		if st.State == plugins.StateFailed {
			notLoaded[p.Name] = fmt.Sprintf("it crashed or stopped answering too often and is not restarted again; last error: %s; see openhuman-host providers status", st.LastError)
			continue
		}
		sources = append(sources, catalog.Source{Provider: p.Name, Catalog: p.Catalog()})
		dispatchers[p.Name] = p
	}
	cat := catalog.BuildWith(h.log.Named("catalog"), sources, h.claim)
	if h.owners == nil {
		h.owners = map[string]string{}
	}
	for _, t := range cat.Tools() {
		h.owners["tool:"+t.Name] = t.Provider
	}
	for _, r := range cat.Resources() {
		h.owners["resource:"+r.URI] = r.Provider
	}
	for _, p := range cat.Prompts() {
		h.owners["prompt:"+p.Name] = p.Provider
	}
	return cat, dispatchers, notLoaded
}

// providerChanged applies a provider's state change: a new catalog after a
// restart, or a provider that failed for good, changes what the server
// serves (and connected clients get list_changed); every change is written
// to the status file.
func (h *Host) providerChanged(p *plugins.Provider, catalogChanged bool) {
	h.changeMu.Lock()
	defer h.changeMu.Unlock()
	if h.Server == nil {
		return
	}
	st := p.Status()
	if catalogChanged || st.State == plugins.StateFailed {
		cat, dispatchers, notLoaded := h.merge()
		h.Server.Update(cat, dispatchers, notLoaded)
	}
	if st.State == plugins.StateRunning && st.Pid != h.replayed[p.Name] {
		// A new process knows nothing of the connected sessions: tell it
		// their logging levels and subscriptions again.
		h.replayed[p.Name] = st.Pid
		go h.Server.Replay(context.Background(), p.Name)
	}
	h.writeStatus()
}

// Close stops the providers, flushes the audit log and closes it. It
// waits at most until ctx is done for the flush; rows the audit log could
// not write by then are logged at error level, not returned (acts have
// their rows already). Later calls return the first call's result.
func (h *Host) Close(ctx context.Context) error {
	h.closeOnce.Do(func() { h.closeErr = h.close(ctx) })
	return h.closeErr
}

func (h *Host) close(ctx context.Context) error {
	if h.metrics != nil {
		_ = h.metrics.Unregister()
	}
	if h.stopWatch != nil {
		close(h.stopWatch)
		<-h.watchDone
		h.stopWatch = nil
	}
	if h.manager != nil {
		h.manager.Close()
	}
	if h.statusFile != "" {
		_ = os.Remove(h.statusFile)
	}
	if h.audit != nil {
		flushCtx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		if err := h.audit.Close(flushCtx); err != nil {
			// Every act already has its row, written before it ran; what is
			// lost here are rows of reads and outcomes, which the audit rule
			// lets go rather than fail the call or command that caused them.
			h.log.Error("audit rows not written before exit", "error", err)
		}
	}
	return nil
}
