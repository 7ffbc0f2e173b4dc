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
	"encoding/json"
	"errors"
	"os"
	"slices"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/go-plugin"
	"google.golang.org/grpc"

	"github.com/openhuman/openhuman-host/sdk"
	sdkplugin "github.com/openhuman/openhuman-host/sdk/plugin"
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
	// InProcess, when set, runs the provider in the host's own process
	// instead of starting Path: the manager makes it with InProcess,
	// given the provider's logger, and calls it directly, without
	// go-plugin, gRPC or a process of its own. Only for a built-in, whose
	// code is the host's anyway. Its calls are as over gRPC: a panic in a
	// method is an error of that call (counted as over gRPC), it gets the
	// environment a process would get (sdk.ConfigureRequest.Env), and
	// stopping it calls its Close (when it is an io.Closer). What it
	// cannot have is the process's isolation: a panic in a goroutine of
	// its own, or a crash, ends the host, and the host's memory is its
	// memory. It must not keep or change a result once returned. Nil (the
	// default) starts Path as a plugin process.
	InProcess func(log hclog.Logger) sdk.Provider
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
	// Reattach maps provider names to providers that run already, such as
	// one under a debugger (sdk.WithDebug): the host connects to the
	// process instead of starting the spec's command, and checks no
	// checksum. Nil reads the host's environment variable
	// OPENHUMAN_REATTACH_PROVIDERS (sdk/plugin.EnvReattach); a value that
	// does not parse is logged and ignored.
	Reattach map[string]*plugin.ReattachConfig
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
// sent. It is not sdk/plugin.ErrUnavailable, which the SDK wraps when a call
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
	if m.opts.Reattach == nil {
		if v := os.Getenv(sdkplugin.EnvReattach); v != "" {
			r, err := sdkplugin.ParseReattach(v)
			if err != nil {
				m.opts.Logger.Warn("ignoring the providers to reattach to", "error", err)
			}
			m.opts.Reattach = r
		}
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
