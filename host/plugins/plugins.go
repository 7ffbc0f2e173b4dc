// Package plugins launches providers as go-plugin subprocesses, holds
// their connections and keeps them running.
//
// Each provider runs isolated: gRPC only (over a Unix socket, or loopback
// TCP on Windows), AutoMTLS, an environment built from an explicit
// allow-list (go-plugin SkipHostEnv), a group of its own (a process group
// on Unix, a job object on Windows that dies with the host), and the null
// device as stdin, never the host's. A third-party provider's executable is
// checksum-verified before every start: the host copies it into a private
// folder (<data dir>/.exec), hashing the bytes it copies, and runs the
// copy, so the file checked is the file run; a script ("#!") is checked
// just before it starts, where it is. After the handshake the manager
// calls Configure with the provider's config table, data dir and secrets,
// then Describe; all providers start in parallel and a provider that fails
// any step is logged and left out while the others are served.
//
// A supervisor per provider watches its process and pings its gRPC health
// service; a provider that exits or stops answering is restarted with
// capped exponential backoff (a new go-plugin client each time), and its
// catalog re-read. Calls during the outage fail at once with an error
// wrapping [ErrUnavailable]. A provider that fails [RestartPolicy]
// MaxFailures times within Window is marked [StateFailed] and not
// restarted again.
package plugins

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/openhuman/openhuman-host/internal/platform"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/go-plugin"
	"github.com/hashicorp/go-plugin/runner"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"

	"github.com/openhuman/openhuman-host/sdk"
)

// Spec says how to launch and configure one provider.
type Spec struct {
	// Name is the provider's name from the config ([providers.<name>]).
	Name string
	// Path is the executable. For built-in providers it is the host's own
	// binary.
	Path string
	// Args are the arguments after the executable; a built-in's are
	// exactly ["provider", <name>].
	Args []string
	// SHA256 is the expected lowercase hex SHA-256 of Path. Empty skips
	// the check unless Verify is set.
	SHA256 string
	// Verify requires a checksum: with Verify set and SHA256 empty the
	// provider is refused, and the error gives the file's actual SHA-256.
	// Third-party providers set it; built-ins, which are the running
	// binary itself, do not.
	Verify bool
	// Config is the provider's config table as a JSON object.
	Config json.RawMessage
	// DataDir is created with mode 0700 if missing and passed to Configure.
	DataDir string
	// Secrets are passed to Configure.
	Secrets map[string]string
	// StartTimeout bounds the provider's handshake, Configure and Describe
	// together, at every start and restart; zero uses
	// [Options.StartTimeout].
	StartTimeout time.Duration
	// TimeoutKey is the config key that raises StartTimeout, named in
	// start errors; empty means "[providers.<Name>] start_timeout_secs".
	TimeoutKey string
	// Env names environment variables passed through to this provider on
	// top of [Options.Env] (the upstream provider gets those a browser
	// needs to open for an OAuth sign-in).
	Env []string
	// Revision stands for files the provider reads at Configure outside
	// its config table (the agent provider's definition files); a config
	// reload restarts the provider when it changes. Opaque.
	Revision string
}

// RestartPolicy says how a crashed provider is restarted. Zero fields take
// the defaults of [DefaultRestartPolicy].
type RestartPolicy struct {
	// MaxFailures is how many failures (exits, failed health checks,
	// failed restarts) within Window mark the provider failed. Default 5.
	MaxFailures int
	// Window is the sliding window MaxFailures counts in. Default 60s.
	Window time.Duration
	// FirstBackoff is the delay before the second restart within Window;
	// the first is immediate and each later one doubles it. Default 250ms.
	FirstBackoff time.Duration
	// MaxBackoff caps the delay between restarts. Default 30s.
	MaxBackoff time.Duration
}

// DefaultRestartPolicy is the policy a zero [RestartPolicy] stands for.
var DefaultRestartPolicy = RestartPolicy{MaxFailures: 5, Window: time.Minute, FirstBackoff: 250 * time.Millisecond, MaxBackoff: 30 * time.Second}

func (r RestartPolicy) withDefaults() RestartPolicy {
	d := DefaultRestartPolicy
	if r.MaxFailures > 0 {
		d.MaxFailures = r.MaxFailures
	}
	if r.Window > 0 {
		d.Window = r.Window
	}
	if r.FirstBackoff > 0 {
		d.FirstBackoff = r.FirstBackoff
	}
	if r.MaxBackoff > 0 {
		d.MaxBackoff = r.MaxBackoff
	}
	return d
}

// backoff is the delay before the restart that follows the n-th failure
// in the window (n ≥ 1): none for the first, then FirstBackoff doubling
// up to MaxBackoff.
func (r RestartPolicy) backoff(n int) time.Duration {
	if n <= 1 {
		return 0
	}
	d := r.FirstBackoff
	for i := 2; i < n && d < r.MaxBackoff; i++ {
		d *= 2
	}
	return min(d, r.MaxBackoff)
}

// Options configures a [Manager]; a nil *Options uses every default.
type Options struct {
	// Logger is the parent logger; providers log under "<name>". Default:
	// a null logger.
	Logger hclog.Logger
	// HostVersion is passed to Configure.
	HostVersion string
	// LogLevel is the level name passed to Configure. Default "warn".
	LogLevel string
	// ConfigDir is passed to Configure: the directory of the host's config
	// file, where providers may keep files of their own.
	ConfigDir string
	// Host is offered to every provider as the host service; nil offers
	// none.
	Host sdk.Host
	// StartTimeout bounds a provider's handshake, Configure and Describe
	// together when its [Spec] sets none. Default 10s.
	StartTimeout time.Duration
	// Env lists the environment variable names passed through to providers
	// (values from the host's environment, when set). Default
	// [DefaultEnv].
	Env []string
	// ExtraEnv are KEY=VALUE entries every provider gets on top of Env,
	// such as the OpenTelemetry settings of telemetry.ProviderEnv.
	ExtraEnv []string
	// GRPCDialOptions are added to the connection to every provider,
	// such as OpenTelemetry's stats handler that carries the trace
	// context into the provider.
	GRPCDialOptions []grpc.DialOption
	// Restart says how crashed providers are restarted.
	Restart RestartPolicy
	// HealthInterval is how often a running provider's gRPC health service
	// is checked; two failed checks in a row (each bounded by
	// HealthTimeout) count as a crash. Default 5s.
	HealthInterval time.Duration
	// HealthTimeout bounds one health check. Default 2s.
	HealthTimeout time.Duration
	// OnChange, when set, is called after every state change of a provider
	// that loaded (restarting, running again, failed), from that
	// provider's supervisor goroutine, one call at a time per provider.
	// catalogChanged is true when a restart brought a catalog that differs
	// from the one before. It must not block for long.
	OnChange func(p *Provider, catalogChanged bool)
}

// DefaultEnv is the environment allow-list providers get by default:
// enough to run programs and format text, nothing secret. On Windows it
// also holds what programs there need to start, find files and use the
// network (windowsEnv).
var DefaultEnv = defaultEnv()

// baseEnv is the part of [DefaultEnv] on every system.
var baseEnv = []string{"PATH", "HOME", "TMPDIR", "LANG", "LC_ALL", "LC_CTYPE", "TZ", "SSL_CERT_FILE", "SSL_CERT_DIR"}

// ErrUnavailable is wrapped by errors of calls to a provider that is not
// running: restarting after a crash, failed, or stopped. The call was not
// sent. It is not [sdk.ErrUnavailable], which the sdk wraps when a call
// that was sent finds the connection broken.
var ErrUnavailable = errors.New("provider is not running")

// ErrChecksum is wrapped by the error of a provider whose executable's
// SHA-256 is missing from the config or differs from it.
var ErrChecksum = errors.New("provider checksum")

// Manager owns the provider processes.
type Manager struct {
	opts Options
	log  hclog.Logger
	// ctx is cancelled by Close; restarts run under it.
	ctx    context.Context
	cancel context.CancelFunc

	mu        sync.Mutex
	providers []*Provider
	closed    bool
}

// NewManager returns a Manager with no providers.
func NewManager(opts *Options) *Manager {
	m := &Manager{}
	if opts != nil {
		m.opts = *opts
	}
	if m.opts.Logger == nil {
		m.opts.Logger = hclog.NewNullLogger()
	}
	if m.opts.LogLevel == "" {
		m.opts.LogLevel = "warn"
	}
	if m.opts.StartTimeout <= 0 {
		m.opts.StartTimeout = 10 * time.Second
	}
	if m.opts.Env == nil {
		m.opts.Env = DefaultEnv
	}
	if m.opts.HealthInterval <= 0 {
		m.opts.HealthInterval = 5 * time.Second
	}
	if m.opts.HealthTimeout <= 0 {
		m.opts.HealthTimeout = 2 * time.Second
	}
	m.opts.Restart = m.opts.Restart.withDefaults()
	m.log = m.opts.Logger
	m.ctx, m.cancel = context.WithCancel(context.Background())
	return m
}

// Failure is a provider that did not load.
type Failure struct {
	// Name is the provider's config name.
	Name string
	// Err says why, in words for the operator.
	Err error
}

// Start launches every spec in parallel and returns the providers that
// loaded and the ones that did not, both in the order of specs. A provider
// that fails to start, configure or describe is logged at error level with
// the reason and its process is stopped; Start itself fails only when ctx
// is done or the manager is closed. Every loaded provider gets a
// supervisor that restarts it when it crashes, until [Manager.Close].
//
// Providers get the null device as stdin, never the host's: the manager starts
// them through its own go-plugin runner, so a host serving MCP on stdin
// keeps that stream to itself.
func (m *Manager) Start(ctx context.Context, specs []Spec) ([]*Provider, []Failure, error) {
	loaded := make([]*Provider, len(specs))
	errs := make([]error, len(specs))
	var wg sync.WaitGroup
	for i, spec := range specs {
		wg.Go(func() {
			p := m.newProvider(spec)
			inst, cat, err := m.launch(ctx, p)
			if err != nil {
				m.log.Error("provider failed to load; serving the others", "provider", spec.Name, "error", err)
				errs[i] = err
				return
			}
			p.inst, p.catalog, p.state, p.since = inst, cat, StateRunning, time.Now()
			loaded[i] = p
		})
	}
	wg.Wait()
	var failed []Failure
	for i, err := range errs {
		if err != nil {
			failed = append(failed, Failure{Name: specs[i].Name, Err: err})
		}
	}
	var out []*Provider
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, p := range loaded {
		if p == nil {
			continue
		}
		if m.closed {
			p.inst.kill(p.log)
			continue
		}
		m.providers = append(m.providers, p)
		out = append(out, p)
		go p.supervise()
	}
	if m.closed {
		return nil, nil, errors.New("provider manager closed")
	}
	return out, failed, ctx.Err()
}

func (m *Manager) newProvider(spec Spec) *Provider {
	return &Provider{
		Name:  spec.Name,
		spec:  spec,
		m:     m,
		log:   m.log.Named(spec.Name),
		state: StateStarting,
		kick:  make(chan struct{}, 1),
		stop:  make(chan struct{}),
		done:  make(chan struct{}),
	}
}

// instance is one process of a provider.
type instance struct {
	client *plugin.Client
	run    *procRunner
	rpc    plugin.ClientProtocol
	impl   sdk.Provider
	pid    int
	// version is the provider protocol version the handshake agreed on.
	version int
	// answered counts the RPCs the provider answered, whatever their
	// outcome: a provider that answers calls is alive even when a health
	// check times out behind them on a loaded machine.
	answered *atomic.Uint64
}

// exited reports whether the instance's process has exited.
func (i *instance) exited() bool {
	select {
	case <-i.run.Exited():
		return true
	default:
		return false
	}
}

// launch starts one process for p's spec and runs the handshake,
// Configure and Describe, within the spec's start timeout.
func (m *Manager) launch(ctx context.Context, p *Provider) (*instance, *sdk.Catalog, error) {
	spec, log := p.spec, p.log
	timeout := spec.StartTimeout
	if timeout <= 0 {
		timeout = m.opts.StartTimeout
	}
	parent := ctx
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	if spec.DataDir != "" {
		if err := os.MkdirAll(spec.DataDir, 0o700); err != nil {
			return nil, nil, fmt.Errorf("create data dir: %w", err)
		}
	}
	// Hash and run the same file: the one exec would find for the
	// command as written.
	path, err := exec.LookPath(spec.Path)
	if err != nil {
		return nil, nil, fmt.Errorf("provider executable %q: %w", spec.Path, err)
	}
	if path, err = filepath.Abs(path); err != nil {
		return nil, nil, fmt.Errorf("provider executable %q: %w", spec.Path, err)
	}
	verified := spec
	verified.Path = path
	secure, err := verify(verified)
	if err != nil {
		return nil, nil, err
	}
	var started atomic.Pointer[procRunner]
	answered := new(atomic.Uint64)
	client := plugin.NewClient(&plugin.ClientConfig{
		HandshakeConfig:  sdk.Handshake,
		VersionedPlugins: sdk.VersionedPlugins(nil),
		RunnerFunc: func(_ hclog.Logger, cmd *exec.Cmd, _ string) (runner.Runner, error) {
			r, err := newProcRunner(path, spec.Args, m.environment(spec.Env), cmd, secure, copyDir(spec))
			if err == nil {
				started.Store(r)
			}
			return r, err
		},
		AllowedProtocols: []plugin.Protocol{plugin.ProtocolGRPC},
		AutoMTLS:         true,
		SkipHostEnv:      true,
		StartTimeout:     timeout,
		Logger:           stderrParsingOff{Logger: log, executable: filepath.Base(path)},
		Stderr:           &stderrLog{log: log},
		SyncStdout:       io.Discard,
		SyncStderr:       io.Discard,
		GRPCDialOptions:  slices.Concat(sdk.GRPCDialOptions(), answeredCounter(answered), m.opts.GRPCDialOptions),
	})
	rpc, err := handshake(ctx, client, &started)
	inst := &instance{client: client, run: started.Load(), answered: answered}
	fail := func(err error) (*instance, *sdk.Catalog, error) {
		inst.kill(log)
		return nil, nil, err
	}
	if inst.run == nil {
		client.Kill()
		return nil, nil, fmt.Errorf("start %s: %w", path, err)
	}
	inst.pid = inst.run.Pid()
	if err != nil && parent.Err() != nil {
		return fail(fmt.Errorf("start %s: stopped before its handshake: %w", path, parent.Err()))
	}
	if err != nil {
		return fail(startError(ctx, spec, inst.run, err))
	}
	inst.rpc = rpc
	inst.version = client.NegotiatedVersion()
	raw, err := rpc.Dispense(sdk.PluginName)
	if err != nil {
		return fail(fmt.Errorf("dispense: %w", err))
	}
	impl, ok := raw.(sdk.Provider)
	if !ok {
		return fail(fmt.Errorf("plugin returned %T, not a provider", raw))
	}
	inst.impl = impl
	config := spec.Config
	if len(config) == 0 {
		config = json.RawMessage("{}")
	}
	if err := impl.Configure(ctx, &sdk.ConfigureRequest{
		Config:      config,
		DataDir:     spec.DataDir,
		Secrets:     spec.Secrets,
		Host:        p.host(),
		HostVersion: m.opts.HostVersion,
		LogLevel:    m.opts.LogLevel,
		ConfigDir:   m.opts.ConfigDir,
	}); err != nil {
		return fail(timeoutError(ctx, "configure", timeout, spec.timeoutKey(), err))
	}
	cat, err := impl.Describe(ctx)
	if err != nil {
		return fail(timeoutError(ctx, "describe", timeout, spec.timeoutKey(), err))
	}
	log.Debug("provider loaded", "pid", inst.pid, "protocol", inst.version, "version", cat.Version, "tools", len(cat.Tools), "resources", len(cat.Resources))
	return inst, cat, nil
}

// handshake runs go-plugin's start and handshake, which do not heed ctx:
// when ctx ends first, the provider's group is killed, which ends them.
func handshake(ctx context.Context, client *plugin.Client, started *atomic.Pointer[procRunner]) (plugin.ClientProtocol, error) {
	type result struct {
		rpc plugin.ClientProtocol
		err error
	}
	done := make(chan result, 1)
	go func() {
		rpc, err := client.Client()
		done <- result{rpc, err}
	}()
	select {
	case r := <-done:
		return r.rpc, r.err
	case <-ctx.Done():
	}
	for {
		if r := started.Load(); r != nil {
			_ = r.Kill(context.Background())
		}
		select {
		case r := <-done:
			if r.err == nil {
				r.err = errors.New("the handshake finished too late")
			}
			return nil, fmt.Errorf("%w (%w)", context.Cause(ctx), r.err)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// startError explains go-plugin's start errors that do not explain
// themselves.
func startError(ctx context.Context, spec Spec, run *procRunner, err error) error {
	msg := err.Error()
	// A process that ended makes go-plugin fail before the process is
	// reaped: it sees the process's stdout close first. Wait for the
	// reaper, so the exit status can be told; on a loaded machine that can
	// take longer than any fixed moment, and ctx (the start timeout)
	// bounds it. Other failures leave a process running: give the reaper
	// only a moment.
	closed := strings.Contains(msg, "Failed to read any lines from plugin's stdout") || strings.Contains(msg, "plugin exited before we could connect")
	switch {
	case errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled):
	case closed:
		select {
		case <-run.Exited():
		case <-ctx.Done():
		}
	default:
		select {
		case <-run.Exited():
		case <-time.After(time.Second):
		}
	}
	select {
	case <-run.Exited():
		if st := run.cmd.ProcessState; st != nil && !errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, context.Canceled) {
			return fmt.Errorf("start %s: the provider exited before its handshake (%s); run it from the host to see why, or check its log above", spec.Path, st)
		}
	default:
	}
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		return fmt.Errorf("start %s: no handshake within the start timeout; raise %s if it is slow to start", spec.Path, spec.timeoutKey())
	case errors.Is(err, context.Canceled):
		return fmt.Errorf("start %s: cancelled: %w", spec.Path, err)
	case strings.Contains(msg, "Unrecognized remote plugin message"):
		return fmt.Errorf("start %s: %w (the provider wrote to stdout before its handshake line; providers must write nothing to stdout: log to stderr)", spec.Path, err)
	case strings.Contains(msg, "timeout while waiting for plugin to start"):
		return fmt.Errorf("start %s: %w (no handshake within the start timeout; raise %s if it is slow to start)", spec.Path, err, spec.timeoutKey())
	}
	return fmt.Errorf("start %s: %w", spec.Path, err)
}

// timeoutKey is the config key that raises the spec's start timeout.
func (s Spec) timeoutKey() string {
	if s.TimeoutKey != "" {
		return s.TimeoutKey
	}
	return "[providers." + s.Name + "] start_timeout_secs"
}

// timeoutError names the start timeout, and key, which raises it, when
// ctx ran out during step.
func timeoutError(ctx context.Context, step string, timeout time.Duration, key string, err error) error {
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return fmt.Errorf("%s did not finish within the start timeout (%s; %s raises it): %w", step, timeout, key, err)
	}
	return err
}

// verify checks spec's executable against its configured SHA-256 and
// returns go-plugin's SecureConfig, whose Checksum the runner compares
// with the copy it executes ([verifiedCopy]). The error gives both hashes in lowercase hex, since go-plugin's
// own error names neither.
func verify(spec Spec) (*plugin.SecureConfig, error) {
	if spec.SHA256 == "" && !spec.Verify {
		return nil, nil
	}
	actual, err := FileSHA256(spec.Path)
	if err != nil {
		return nil, fmt.Errorf("%w: cannot hash %s: %w", ErrChecksum, spec.Path, err)
	}
	if spec.SHA256 == "" {
		return nil, fmt.Errorf("%w: refused to run %s: [providers.%s] has no sha256; the file's sha256 is %s: if you trust this file, set sha256 = %q or run: openhuman-host providers add --force %s",
			ErrChecksum, spec.Path, spec.Name, actual, actual, spec.Path)
	}
	if actual != spec.SHA256 {
		return nil, fmt.Errorf("%w mismatch: refused to run %s: the config expects sha256 %s but the file's sha256 is %s; if you replaced it on purpose, run: openhuman-host providers add --force %s",
			ErrChecksum, spec.Path, spec.SHA256, actual, spec.Path)
	}
	want, err := hex.DecodeString(spec.SHA256)
	if err != nil {
		return nil, fmt.Errorf("%w: sha256 %q is not hex: %w", ErrChecksum, spec.SHA256, err)
	}
	return &plugin.SecureConfig{Checksum: want, Hash: sha256.New()}, nil
}

// copyDir is where a provider's verified executable is copied before each
// start: a folder in its data directory, which only this user may enter,
// or the system's temporary folder when it has none.
func copyDir(spec Spec) string {
	if spec.DataDir == "" {
		return ""
	}
	return filepath.Join(spec.DataDir, ".exec")
}

// FileSHA256 returns the SHA-256 of the file at path as 64 lowercase hex
// digits, the form sha256sum prints and [providers.<name>] sha256 takes.
func FileSHA256(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// environment is the allow-listed part of the host's environment, with the
// variables extra names too.
func (m *Manager) environment(extra []string) []string {
	var env []string
	for _, k := range append(slices.Clone(m.opts.Env), extra...) {
		if v, ok := os.LookupEnv(k); ok {
			env = append(env, k+"="+v)
		}
	}
	return append(env, m.opts.ExtraEnv...)
}

// Providers returns the loaded providers, whatever their state.
func (m *Manager) Providers() []*Provider {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]*Provider(nil), m.providers...)
}

// Close stops every supervisor and provider process and waits for them to
// exit. It is safe to call more than once.
func (m *Manager) Close() {
	m.mu.Lock()
	m.closed = true
	ps := m.providers
	m.providers = nil
	m.mu.Unlock()
	m.cancel()
	var wg sync.WaitGroup
	for _, p := range ps {
		wg.Go(func() { p.close(0) })
	}
	wg.Wait()
}

// Stop stops one provider and removes it from the manager, as a config
// reload does: new calls to it fail at once with an error wrapping
// [ErrUnavailable], calls already running get up to grace to finish, then
// its group is killed. It returns once the process is gone.
func (m *Manager) Stop(p *Provider, grace time.Duration) {
	m.mu.Lock()
	m.providers = slices.DeleteFunc(m.providers, func(q *Provider) bool { return q == p })
	m.mu.Unlock()
	p.close(grace)
}

// State is a loaded provider's state.
type State string

// States of a provider.
const (
	// StateStarting is a provider whose first start has not finished.
	StateStarting State = "starting"
	// StateRunning is a provider whose process answers calls.
	StateRunning State = "running"
	// StateRestarting is a provider whose process exited or stopped
	// answering and is being started again; its calls fail at once.
	StateRestarting State = "restarting"
	// StateFailed is a provider that failed too often to be restarted
	// again (see [RestartPolicy]); it stays failed until the host restarts.
	StateFailed State = "failed"
	// StateStopped is a provider the host stopped.
	StateStopped State = "stopped"
)

// Status is a snapshot of one provider, for `providers status`.
type Status struct {
	// Name is the provider's config name.
	Name string `json:"name"`
	// State is the provider's state.
	State State `json:"state"`
	// Pid is the process id of its running process, 0 when none.
	Pid int `json:"pid,omitempty"`
	// Restarts counts the restarts that succeeded since the host started.
	Restarts int `json:"restarts"`
	// Since is when the provider entered State.
	Since time.Time `json:"since"`
	// Tools is how many tools its current catalog lists.
	Tools int `json:"tools"`
	// LastError says why it last stopped or failed to start; empty when it
	// never did.
	LastError string `json:"last_error,omitempty"`
}

// Provider is one loaded provider. Its methods are safe for concurrent use.
type Provider struct {
	// Name is the provider's config name.
	Name string

	spec Spec
	m    *Manager
	log  hclog.Logger

	mu       sync.Mutex
	inst     *instance
	catalog  *sdk.Catalog
	state    State
	since    time.Time
	restarts int
	lastErr  string
	failures []time.Time
	// giveUp, when set, tells the supervisor to mark the provider failed
	// with this reason (too many panics).
	giveUp string

	// inflight counts calls running in the provider; close waits for them
	// (up to its grace) before stopping the process.
	inflight sync.WaitGroup

	kick chan struct{} // wakes the supervisor after a failed call
	// refresh asks the supervisor to call Describe again: the provider
	// said its catalog changed (protocol 2).
	refresh atomic.Bool
	stop    chan struct{} // closed by close
	done    chan struct{} // closed when the supervisor returns
	once    sync.Once
}

// Spec returns the spec the provider was started from.
func (p *Provider) Spec() Spec { return p.spec }

// Catalog returns what the provider's Describe returned at its last
// (re)start.
func (p *Provider) Catalog() *sdk.Catalog {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.catalog
}

// Status returns a snapshot of the provider's state.
func (p *Provider) Status() Status {
	p.mu.Lock()
	defer p.mu.Unlock()
	s := Status{Name: p.Name, State: p.state, Restarts: p.restarts, Since: p.since, LastError: p.lastErr}
	if p.inst != nil {
		s.Pid = p.inst.pid
	}
	if p.catalog != nil {
		s.Tools = len(p.catalog.Tools)
	}
	return s
}

// Exited reports whether the provider has no running process: it exited
// and was not restarted yet, failed, or was stopped.
func (p *Provider) Exited() bool {
	inst, _ := p.current()
	return inst == nil || inst.exited()
}

// Pid returns the provider's current process id, 0 when it is not
// running.
func (p *Provider) Pid() int {
	inst, _ := p.current()
	if inst == nil {
		return 0
	}
	return inst.pid
}

// wake asks the supervisor to look at the process now.
func (p *Provider) wake() {
	select {
	case p.kick <- struct{}{}:
	default:
	}
}

// running returns the instance that serves calls, or an error wrapping
// [ErrUnavailable]. An instance whose process has exited and which the
// supervisor has not replaced yet counts as gone.
func (p *Provider) running() (*instance, error) {
	inst, err := p.current()
	if err != nil {
		return nil, err
	}
	if inst.exited() {
		p.wake()
		return nil, fmt.Errorf("provider %s: %w: its process exited; it is being restarted, try again in a moment", p.Name, ErrUnavailable)
	}
	return inst, nil
}

// enter returns the running instance and counts a call in, under p.mu so
// that close, which stops new calls under the same lock, never misses
// one; the caller must call p.inflight.Done.
func (p *Provider) enter() (*instance, error) {
	inst, err := p.running()
	if err != nil {
		return nil, err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.state == StateStopped {
		return nil, fmt.Errorf("provider %s: %w: it was stopped", p.Name, ErrUnavailable)
	}
	p.inflight.Add(1)
	return inst, nil
}

// current returns the instance the supervisor holds, or an error wrapping
// [ErrUnavailable] that says why there is none.
func (p *Provider) current() (*instance, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.inst != nil {
		return p.inst, nil
	}
	switch p.state {
	case StateFailed:
		return nil, fmt.Errorf("provider %s: %w: it failed %d times within %s and is not restarted again (last error: %s); fix it, then %s",
			p.Name, ErrUnavailable, p.m.opts.Restart.MaxFailures, p.m.opts.Restart.Window, p.lastErr, platform.ReloadAdvice)
	case StateStopped:
		return nil, fmt.Errorf("provider %s: %w: it was stopped", p.Name, ErrUnavailable)
	}
	return nil, fmt.Errorf("provider %s: %w: it is restarting after %s; try again in a moment", p.Name, ErrUnavailable, p.lastErr)
}

// CallTool forwards a call to the provider. A provider that is not
// running fails at once with an error wrapping [ErrUnavailable]; one whose
// process dies during the call fails the call the same way and is
// restarted.
func (p *Provider) CallTool(ctx context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
	inst, err := p.enter()
	if err != nil {
		return nil, err
	}
	defer p.inflight.Done()
	res, err := inst.impl.CallTool(ctx, req)
	if err != nil && ctx.Err() == nil && p.lost(inst, err) {
		return nil, p.endedError("call")
	}
	if errors.Is(err, sdk.ErrPanicked) {
		p.panicked(err)
	}
	return res, err
}

// panicked counts a recovered panic as a failure: a provider that panics
// MaxFailures times within Window is marked failed like one that crashes.
func (p *Provider) panicked(err error) {
	p.mu.Lock()
	n := p.recordFailureLocked(time.Now())
	p.lastErr = err.Error()
	limit := n >= p.m.opts.Restart.MaxFailures && p.giveUp == ""
	if limit {
		p.giveUp = "a tool panicked: " + err.Error()
	}
	p.mu.Unlock()
	p.log.Error("provider call panicked", "failures", n, "error", err)
	if limit {
		p.wake()
	}
}

// recordFailureLocked adds a failure at now to the sliding window and
// returns how many it holds. p.mu must be held.
func (p *Provider) recordFailureLocked(now time.Time) int {
	kept := p.failures[:0]
	for _, t := range p.failures {
		if now.Sub(t) < p.m.opts.Restart.Window {
			kept = append(kept, t)
		}
	}
	p.failures = append(kept, now)
	return len(p.failures)
}

// ReadResource forwards a resource read to the provider, failing at once
// when it is not running.
func (p *Provider) ReadResource(ctx context.Context, req *sdk.ReadResourceRequest) (*sdk.ReadResourceResult, error) {
	inst, err := p.enter()
	if err != nil {
		return nil, err
	}
	defer p.inflight.Done()
	res, err := inst.impl.ReadResource(ctx, req)
	if err != nil && ctx.Err() == nil && p.lost(inst, err) {
		return nil, p.endedError("read")
	}
	return res, err
}

// endedError explains a call (or read) whose process ended under it: the
// provider was stopped (a config reload, or shutdown), or it is being
// restarted.
func (p *Provider) endedError(what string) error {
	p.mu.Lock()
	stopped := p.state == StateStopped
	p.mu.Unlock()
	if stopped {
		return fmt.Errorf("provider %s: %w: it was stopped during the %s (a config reload or shutdown)", p.Name, ErrUnavailable, what)
	}
	return fmt.Errorf("provider %s: %w: its process ended during the %s; it is being restarted", p.Name, ErrUnavailable, what)
}

// lost reports whether err means inst's process is gone, waking the
// supervisor if so. A broken connection (sdk.ErrUnavailable) shows up
// slightly before go-plugin notices the exit, so that is waited for
// briefly.
func (p *Provider) lost(inst *instance, err error) bool {
	if !inst.exited() && !errors.Is(err, sdk.ErrUnavailable) && status.Code(err) != codes.Unavailable {
		return false
	}
	select {
	case <-inst.run.Exited():
	case <-time.After(500 * time.Millisecond):
	}
	p.wake()
	return true
}

// supervise watches the running instance and restarts it when it exits or
// fails two health checks in a row, until close or a permanent failure.
func (p *Provider) supervise() {
	defer close(p.done)
	health := time.NewTicker(p.m.opts.HealthInterval)
	defer health.Stop()
	misses := 0
	var answered uint64 // inst.answered at the last health check
	for {
		inst, err := p.current()
		if err != nil {
			return
		}
		p.mu.Lock()
		giveUp := p.giveUp
		p.mu.Unlock()
		if giveUp != "" {
			p.fail(inst, giveUp)
			return
		}
		var reason string
		select {
		case <-p.stop:
			return
		case <-p.kick:
			if p.refresh.Swap(false) {
				p.describeAgain(inst)
			}
			continue
		case <-inst.run.Exited():
			reason = "its process exited"
		case <-health.C:
			err := p.healthCheck(inst)
			now := inst.answered.Load()
			progressed := now != answered
			answered = now
			switch {
			case err != nil && progressed:
				// Busy, not dead: it answered calls since the last check.
				p.log.Debug("health check failed while the provider answers calls; not counted", "pid", inst.pid, "error", err)
				misses = 0
			case err != nil:
				misses++
				p.log.Warn("health check failed", "pid", inst.pid, "misses", misses, "error", err)
				if misses >= 2 {
					reason = fmt.Sprintf("it failed two health checks and answered nothing in between (%v)", err)
				}
			default:
				misses = 0
			}
		}
		if reason == "" {
			continue
		}
		misses = 0
		if !p.restart(inst, reason) {
			return
		}
		health.Reset(p.m.opts.HealthInterval)
	}
}

// healthCheck asks the provider's gRPC health service (which go-plugin
// serves in every Go plugin) whether it serves.
func (p *Provider) healthCheck(inst *instance) error {
	g, ok := inst.rpc.(*plugin.GRPCClient)
	if !ok {
		return inst.rpc.Ping()
	}
	ctx, cancel := context.WithTimeout(p.m.ctx, p.m.opts.HealthTimeout)
	defer cancel()
	res, err := grpc_health_v1.NewHealthClient(g.Conn).Check(ctx, &grpc_health_v1.HealthCheckRequest{Service: plugin.GRPCServiceName})
	if err != nil {
		return err
	}
	if res.GetStatus() != grpc_health_v1.HealthCheckResponse_SERVING {
		return fmt.Errorf("health status %s", res.GetStatus())
	}
	return nil
}

// restart replaces the dead instance old, retrying with backoff. It
// returns false when the provider is marked failed or the manager closes.
func (p *Provider) restart(old *instance, reason string) bool {
	p.mu.Lock()
	if p.state == StateStopped {
		p.mu.Unlock()
		return false
	}
	p.mu.Unlock()
	p.log.Error("provider stopped; restarting it", "pid", old.pid, "reason", reason)
	p.mu.Lock()
	if p.inst == old {
		p.inst = nil
	}
	p.state, p.since, p.lastErr = StateRestarting, time.Now(), reason
	p.mu.Unlock()
	p.notify(false)
	old.kill(p.log)
	policy := p.m.opts.Restart
	for {
		now := time.Now()
		p.mu.Lock()
		n := p.recordFailureLocked(now)
		if n >= policy.MaxFailures {
			p.state, p.since = StateFailed, now
			last := p.lastErr
			p.mu.Unlock()
			p.log.Error("provider failed too often; not restarting it again", "failures", n, "window", policy.Window, "last_error", last)
			p.notify(false)
			return false
		}
		p.mu.Unlock()
		if d := policy.backoff(n); d > 0 {
			p.log.Info("restarting provider after backoff", "delay", d, "failures", n)
			select {
			case <-time.After(d):
			case <-p.stop:
				return false
			}
		}
		inst, cat, err := p.m.launch(p.m.ctx, p)
		if err != nil {
			select {
			case <-p.stop:
				return false
			default:
			}
			p.log.Error("provider restart failed", "error", err)
			p.mu.Lock()
			p.lastErr = "restart failed: " + err.Error()
			p.mu.Unlock()
			continue
		}
		p.mu.Lock()
		if p.state == StateStopped {
			p.mu.Unlock()
			inst.kill(p.log)
			return false
		}
		changed := !reflect.DeepEqual(p.catalog, cat)
		p.inst, p.catalog, p.state, p.since = inst, cat, StateRunning, time.Now()
		p.restarts++
		p.mu.Unlock()
		p.log.Info("provider restarted", "pid", inst.pid, "catalog_changed", changed)
		p.notify(changed)
		return true
	}
}

// fail marks the provider failed for reason and stops inst.
func (p *Provider) fail(inst *instance, reason string) {
	p.mu.Lock()
	if p.inst == inst {
		p.inst = nil
	}
	p.state, p.since, p.lastErr = StateFailed, time.Now(), reason
	p.mu.Unlock()
	p.log.Error("provider failed too often; stopping it", "reason", reason)
	inst.kill(p.log)
	p.notify(false)
}

func (p *Provider) notify(catalogChanged bool) {
	if p.m.opts.OnChange != nil {
		p.m.opts.OnChange(p, catalogChanged)
	}
}

// close stops the provider: new calls fail at once, calls already
// running get up to grace to finish, then the supervisor and the process
// stop.
func (p *Provider) close(grace time.Duration) {
	p.once.Do(func() {
		p.mu.Lock()
		p.state, p.since = StateStopped, time.Now()
		inst := p.inst
		p.mu.Unlock()
		if grace > 0 {
			done := make(chan struct{})
			go func() {
				p.inflight.Wait()
				close(done)
			}()
			select {
			case <-done:
			case <-time.After(grace):
				p.log.Warn("calls still running when the provider was stopped", "grace", grace)
			}
		}
		p.mu.Lock()
		p.inst = nil
		p.mu.Unlock()
		close(p.stop)
		<-p.done
		if inst != nil {
			inst.kill(p.log)
		}
	})
}

// killGrace is how long a provider gets to shut down cleanly before its
// group is killed.
const killGrace = 2 * time.Second

// kill stops the instance: go-plugin's graceful shutdown first, bounded
// by killGrace because a hung provider never answers it, then a kill of
// its whole group (SIGKILL to its process group, or its job object
// terminated), so its own children die too.
func (i *instance) kill(log hclog.Logger) {
	if i == nil {
		return
	}
	pid := i.pid
	if pid == 0 && i.run != nil {
		pid = i.run.Pid()
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		i.client.Kill()
	}()
	select {
	case <-done:
	case <-time.After(killGrace):
		log.Warn("provider did not shut down in time; killing it", "grace", killGrace)
	}
	if pid > 0 && i.run != nil {
		i.run.group.kill(pid)
	}
}

// answeredCounter returns the dial options that count, in n, the RPCs of
// a provider connection that got an answer from the provider: any
// outcome but a deadline or an unavailable connection, which is what a
// hung or dead provider gives.
func answeredCounter(n *atomic.Uint64) []grpc.DialOption {
	count := func(err error) {
		switch status.Code(err) {
		case codes.DeadlineExceeded, codes.Unavailable, codes.Canceled:
		default:
			n.Add(1)
		}
	}
	return []grpc.DialOption{
		grpc.WithChainUnaryInterceptor(func(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
			err := invoker(ctx, method, req, reply, cc, opts...)
			count(err)
			return err
		}),
		// Tool calls stream their events: every message the provider
		// sends, and the stream's end, is an answer.
		grpc.WithChainStreamInterceptor(func(ctx context.Context, desc *grpc.StreamDesc, cc *grpc.ClientConn, method string, streamer grpc.Streamer, opts ...grpc.CallOption) (grpc.ClientStream, error) {
			cs, err := streamer(ctx, desc, cc, method, opts...)
			if err != nil {
				count(err)
				return nil, err
			}
			return &answeredStream{ClientStream: cs, count: count}, nil
		}),
	}
}

// answeredStream counts each message received, and the end of the stream.
type answeredStream struct {
	grpc.ClientStream
	count func(error)
}

func (s *answeredStream) RecvMsg(m any) error {
	err := s.ClientStream.RecvMsg(m)
	if errors.Is(err, io.EOF) {
		s.count(nil)
	} else {
		s.count(err)
	}
	return err
}
