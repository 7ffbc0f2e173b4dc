// Package host assembles a running openhuman-host from its effective
// config: the audit log, the SecurityPolicy, the provider processes, the
// merged catalog and the MCP server. The serve command and the one-shot
// CLI commands build the same Host, so both run the same pipeline.
package host

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/openhuman/openhuman-host/internal/embeddings"
	"github.com/openhuman/openhuman-host/internal/platform"
	"github.com/openhuman/openhuman-host/internal/upstreamwire"

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
	"github.com/openhuman/openhuman-host/sdk"
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

// StatusReport is what a serving host publishes about itself in its
// status file.
type StatusReport struct {
	// Pid is the host's process id.
	Pid int `json:"pid"`
	// Replica is the server's name among replicas ([server] replica, or
	// the host name and port); absent in reports written before it was
	// added.
	Replica string `json:"replica,omitempty"`
	// Started is when the host started.
	Started time.Time `json:"started"`
	// Updated is when the report was written.
	Updated time.Time `json:"updated"`
	// Providers lists every enabled provider, loaded or not, in config
	// order of loading.
	Providers []plugins.Status `json:"providers"`
	// Audit is the health of the audit log; nil in reports written before
	// it was added.
	Audit *AuditStatus `json:"audit,omitempty"`
	// Upstream is the state of each enabled upstream server, as the
	// upstream provider last reported it; empty without one.
	Upstream []upstreamwire.ServerStatus `json:"upstream,omitempty"`
}

// AuditStatus is the health of a host's audit log in its [StatusReport].
type AuditStatus struct {
	// Queued is how many rows wait for the writer.
	Queued int `json:"queued"`
	// Dropped counts the rows of reads and outcomes of acts not recorded
	// since start because the queue was full.
	Dropped uint64 `json:"dropped"`
	// FailingSince is when the current run of failed writes began; absent
	// when the last write succeeded. Acts are refused while their row
	// cannot be written.
	FailingSince *time.Time `json:"failing_since,omitempty"`
	// LastError is the last failed write's error while failing.
	LastError string `json:"last_error,omitempty"`
}

// auditStatus is h's audit health for its status report.
func (h *Host) auditStatus() *AuditStatus {
	if h.audit == nil {
		return nil
	}
	st := h.audit.Status()
	out := &AuditStatus{Queued: st.Queued, Dropped: st.Dropped, LastError: st.LastError}
	if !st.FailingSince.IsZero() {
		out.FailingSince = &st.FailingSince
	}
	return out
}

// auditWatchEvery is how often a serving host looks at its audit log's
// health to rewrite its status file when it changed.
const auditWatchEvery = 5 * time.Second

// watchAudit rewrites the status file whenever the audit log starts or
// stops failing or drops rows, until stop is closed.
func (h *Host) watchAudit(stop <-chan struct{}) {
	t := time.NewTicker(auditWatchEvery)
	defer t.Stop()
	var last audit.Status
	for {
		select {
		case <-stop:
			return
		case <-t.C:
		}
		st := h.audit.Status()
		ups := h.upstreamServers()
		h.changeMu.Lock()
		changed := !slices.Equal(ups, h.lastUpstream)
		h.lastUpstream = ups
		if changed || st.Dropped != last.Dropped || st.FailingSince != last.FailingSince {
			h.writeStatus()
		}
		h.changeMu.Unlock()
		last = st
	}
}

// Status returns the state of every enabled provider: those that loaded
// with their current state, then those that did not load as failed with
// the reason.
func (h *Host) Status() []plugins.Status {
	out := make([]plugins.Status, 0, len(h.Providers)+len(h.Failed))
	for _, p := range h.Providers {
		out = append(out, p.Status())
	}
	for _, f := range h.Failed {
		out = append(out, plugins.Status{Name: f.Name, State: plugins.StateFailed, Since: h.started, LastError: f.Err.Error()})
	}
	return out
}

// writeStatus replaces the status file, when there is one, atomically
// (a temporary file renamed over it), so readers never see half a report.
func (h *Host) writeStatus() {
	if h.statusFile == "" {
		return
	}
	var replica string
	if h.Server != nil {
		replica = h.Server.Replica()
	}
	report := StatusReport{Pid: os.Getpid(), Replica: replica, Started: h.started, Updated: time.Now(), Providers: h.Status(), Audit: h.auditStatus(),
		Upstream: h.lastUpstream}
	if err := writeJSONFile(h.statusFile, report); err != nil {
		h.log.Warn("provider status file not written", "path", h.statusFile, "error", err)
	}
}

func writeJSONFile(path string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), ".status-*")
	if err != nil {
		return err
	}
	_, werr := tmp.Write(append(b, '\n'))
	cerr := tmp.Close()
	if werr != nil || cerr != nil {
		_ = os.Remove(tmp.Name())
		return errors.Join(werr, cerr)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		_ = os.Remove(tmp.Name())
		return err
	}
	return nil
}

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
	var names []string
	for n := range cfg.Profiles {
		names = append(names, n)
	}
	slices.Sort(names)
	if len(names) == 0 {
		return []string{"(none)"}
	}
	return names
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

// hostService is the host service providers reach through go-plugin's
// broker: their tool calls go through the server's full pipeline.
type hostService struct {
	srv atomic.Pointer[server.Server]
}

func (s *hostService) CallTool(ctx context.Context, req *sdk.HostCallToolRequest) (*sdk.CallToolResult, error) {
	srv := s.srv.Load()
	if srv == nil {
		return nil, errors.New("host is still starting")
	}
	caller := req.Caller
	caller.Depth++
	if req.Actor != "" {
		caller.SourceType = caller.SourceType + "/" + req.Actor
	}
	caller.ProgressToken = nil
	// The result goes to the provider (an agent's model reads its text),
	// not to the client whose call this serves.
	caller.ReadsStructuredContent = false
	res, err := srv.Call(ctx, server.Call{Tool: req.Name, Arguments: req.Arguments, Caller: caller})
	if errors.Is(err, server.ErrUnknownTool) {
		return sdk.ErrorResult("unknown tool %q", req.Name), nil
	}
	return res, err
}

// ListTools returns the tools the server serves now, as clients are told
// about them ([server.Server.Tools]): a sub-agent's model reads the same
// curated descriptions. Tools the policy always refuses stay in the list,
// so that a sub-agent's attempt at one is refused with the policy's reason
// and audited rather than taken for a typo.
func (s *hostService) ListTools(context.Context) ([]sdk.Tool, error) {
	srv := s.srv.Load()
	if srv == nil {
		return nil, errors.New("host is still starting")
	}
	tools := srv.Tools()
	out := make([]sdk.Tool, 0, len(tools))
	for _, t := range tools {
		out = append(out, t.Tool)
	}
	return out, nil
}

// CreateMessage relays a provider's sampling request to the client whose
// call it serves.
func (s *hostService) CreateMessage(ctx context.Context, req *sdk.CreateMessageRequest) (*sdk.CreateMessageResult, error) {
	srv := s.srv.Load()
	if srv == nil {
		return nil, errors.New("host is still starting")
	}
	return srv.CreateMessage(ctx, req)
}

// RequestClient relays a provider's request to the client of its
// caller's session (provider protocol 2).
func (s *hostService) RequestClient(ctx context.Context, req *sdk.ClientRequest) ([]byte, error) {
	srv := s.srv.Load()
	if srv == nil {
		return nil, fmt.Errorf("%w: the host is still starting", sdk.ErrClientUnavailable)
	}
	return srv.RequestClient(ctx, req)
}

// NotifyCatalogChanged is answered per provider by host/plugins, which
// calls the provider's Describe again; nothing reaches this one.
func (s *hostService) NotifyCatalogChanged(context.Context) error { return nil }

// NotifyResourceUpdated tells the sessions subscribed to uri.
func (s *hostService) NotifyResourceUpdated(ctx context.Context, uri string) error {
	srv := s.srv.Load()
	if srv == nil {
		return nil
	}
	return srv.NotifyResourceUpdated(ctx, uri)
}

// NotifyLog sends a provider's log message to its caller's session.
func (s *hostService) NotifyLog(ctx context.Context, caller sdk.Caller, m sdk.LogMessage) error {
	srv := s.srv.Load()
	if srv == nil {
		return nil
	}
	return srv.NotifyLog(ctx, caller, m)
}
