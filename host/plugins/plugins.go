// Package plugins launches providers as go-plugin subprocesses and holds
// their connections.
//
// Each provider runs isolated: gRPC only, AutoMTLS, an environment built
// from an explicit allow-list (go-plugin SkipHostEnv), its own process
// group, and /dev/null as stdin. After the handshake the manager calls
// Configure with the provider's config table, data dir and secrets, then
// Describe; all providers start in parallel and a provider that fails any
// step is logged and left out while the others are served.
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
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/go-plugin"

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
	// SHA256 is the expected lowercase hex SHA-256 of Path; empty skips the
	// check (built-ins, which are the running binary itself).
	SHA256 string
	// Config is the provider's config table as a JSON object.
	Config json.RawMessage
	// DataDir is created with mode 0700 if missing and passed to Configure.
	DataDir string
	// Secrets are passed to Configure.
	Secrets map[string]string
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
	// Host is offered to every provider as the host service; nil offers
	// none.
	Host sdk.Host
	// StartTimeout bounds a provider's handshake, Configure and Describe
	// together. Default 10s.
	StartTimeout time.Duration
	// Env lists the environment variable names passed through to providers
	// (values from the host's environment, when set). Default
	// [DefaultEnv].
	Env []string
}

// DefaultEnv is the environment allow-list providers get by default:
// enough to run programs and format text, nothing secret.
var DefaultEnv = []string{"PATH", "HOME", "TMPDIR", "LANG", "LC_ALL", "LC_CTYPE", "TZ", "SSL_CERT_FILE", "SSL_CERT_DIR"}

// ErrUnavailable is wrapped by errors of calls to a provider whose process
// has exited.
var ErrUnavailable = errors.New("provider is not running")

// Manager owns the provider processes.
type Manager struct {
	opts Options
	log  hclog.Logger

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
	m.log = m.opts.Logger
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
// is done or the manager is closed.
func (m *Manager) Start(ctx context.Context, specs []Spec) ([]*Provider, []Failure, error) {
	loaded := make([]*Provider, len(specs))
	errs := make([]error, len(specs))
	var wg sync.WaitGroup
	for i, spec := range specs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			p, err := m.start(ctx, spec)
			if err != nil {
				m.log.Error("provider failed to load; serving the others", "provider", spec.Name, "error", err)
				errs[i] = err
				return
			}
			loaded[i] = p
		}()
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
			p.kill()
			continue
		}
		m.providers = append(m.providers, p)
		out = append(out, p)
	}
	if m.closed {
		return nil, nil, errors.New("provider manager closed")
	}
	return out, failed, ctx.Err()
}

func (m *Manager) start(ctx context.Context, spec Spec) (*Provider, error) {
	ctx, cancel := context.WithTimeout(ctx, m.opts.StartTimeout)
	defer cancel()
	if spec.DataDir != "" {
		if err := os.MkdirAll(spec.DataDir, 0o700); err != nil {
			return nil, fmt.Errorf("create data dir: %w", err)
		}
	}
	cmd := exec.Command(spec.Path, spec.Args...)
	cmd.Env = m.environment()
	cmd.SysProcAttr = procAttr()
	var secure *plugin.SecureConfig
	if spec.SHA256 != "" {
		want, err := hex.DecodeString(spec.SHA256)
		if err != nil {
			return nil, fmt.Errorf("sha256 %q is not hex: %w", spec.SHA256, err)
		}
		secure = &plugin.SecureConfig{Checksum: want, Hash: sha256.New()}
	}
	log := m.log.Named(spec.Name)
	client := plugin.NewClient(&plugin.ClientConfig{
		HandshakeConfig:  sdk.Handshake,
		VersionedPlugins: sdk.VersionedPlugins(nil),
		Cmd:              cmd,
		SecureConfig:     secure,
		AllowedProtocols: []plugin.Protocol{plugin.ProtocolGRPC},
		AutoMTLS:         true,
		Managed:          true,
		SkipHostEnv:      true,
		StartTimeout:     m.opts.StartTimeout,
		Logger:           log,
		SyncStdout:       io.Discard,
		SyncStderr:       io.Discard,
		GRPCDialOptions:  sdk.GRPCDialOptions(),
	})
	p := &Provider{Name: spec.Name, client: client, log: log}
	fail := func(err error) (*Provider, error) {
		p.kill()
		return nil, err
	}
	rpc, err := client.Client()
	if err != nil {
		return fail(fmt.Errorf("start %s: %w", spec.Path, err))
	}
	raw, err := rpc.Dispense(sdk.PluginName)
	if err != nil {
		return fail(fmt.Errorf("dispense: %w", err))
	}
	impl, ok := raw.(sdk.Provider)
	if !ok {
		return fail(fmt.Errorf("plugin returned %T, not a provider", raw))
	}
	p.impl = impl
	config := spec.Config
	if len(config) == 0 {
		config = json.RawMessage("{}")
	}
	if err := impl.Configure(ctx, &sdk.ConfigureRequest{
		Config:      config,
		DataDir:     spec.DataDir,
		Secrets:     spec.Secrets,
		Host:        m.opts.Host,
		HostVersion: m.opts.HostVersion,
		LogLevel:    m.opts.LogLevel,
	}); err != nil {
		return fail(err)
	}
	cat, err := impl.Describe(ctx)
	if err != nil {
		return fail(err)
	}
	p.Catalog = cat
	log.Debug("provider loaded", "version", cat.Version, "tools", len(cat.Tools), "resources", len(cat.Resources))
	return p, nil
}

func (m *Manager) environment() []string {
	var env []string
	for _, k := range m.opts.Env {
		if v, ok := os.LookupEnv(k); ok {
			env = append(env, k+"="+v)
		}
	}
	return env
}

// Providers returns the loaded providers.
func (m *Manager) Providers() []*Provider {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]*Provider(nil), m.providers...)
}

// Close stops every provider process and waits for them to exit. It is
// safe to call more than once.
func (m *Manager) Close() {
	m.mu.Lock()
	m.closed = true
	ps := m.providers
	m.providers = nil
	m.mu.Unlock()
	var wg sync.WaitGroup
	for _, p := range ps {
		wg.Add(1)
		go func() {
			defer wg.Done()
			p.kill()
		}()
	}
	wg.Wait()
}

// Provider is one loaded provider.
type Provider struct {
	// Name is the provider's config name.
	Name string
	// Catalog is what the provider's Describe returned at load.
	Catalog *sdk.Catalog

	client *plugin.Client
	impl   sdk.Provider
	log    hclog.Logger
}

// Exited reports whether the provider's process has exited.
func (p *Provider) Exited() bool { return p.client.Exited() }

// Pid returns the provider's process id, 0 when it is not running.
func (p *Provider) Pid() int {
	if rc := p.client.ReattachConfig(); rc != nil {
		return rc.Pid
	}
	return 0
}

// CallTool forwards a call to the provider. A provider whose process has
// exited fails at once with an error wrapping [ErrUnavailable].
func (p *Provider) CallTool(ctx context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
	if p.client.Exited() {
		return nil, fmt.Errorf("provider %s: %w (its process exited)", p.Name, ErrUnavailable)
	}
	res, err := p.impl.CallTool(ctx, req)
	if err != nil && p.client.Exited() {
		return nil, fmt.Errorf("provider %s: %w (its process exited during the call)", p.Name, ErrUnavailable)
	}
	return res, err
}

// ReadResource forwards a resource read to the provider, failing at once
// when its process has exited.
func (p *Provider) ReadResource(ctx context.Context, req *sdk.ReadResourceRequest) (*sdk.ReadResourceResult, error) {
	if p.client.Exited() {
		return nil, fmt.Errorf("provider %s: %w (its process exited)", p.Name, ErrUnavailable)
	}
	return p.impl.ReadResource(ctx, req)
}

// killGrace is how long a provider gets to shut down cleanly before its
// process group is killed.
const killGrace = 2 * time.Second

// kill stops the provider: go-plugin's graceful shutdown first, bounded by
// killGrace because a hung provider never answers it, then SIGKILL for
// its whole process group, so its own children die too.
func (p *Provider) kill() {
	pid := p.Pid()
	done := make(chan struct{})
	go func() {
		defer close(done)
		p.client.Kill()
	}()
	select {
	case <-done:
	case <-time.After(killGrace):
		p.log.Warn("provider did not shut down in time; killing it", "grace", killGrace)
	}
	if pid > 0 {
		killGroup(pid)
	}
}
