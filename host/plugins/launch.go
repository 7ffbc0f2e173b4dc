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
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/go-plugin"
	"github.com/hashicorp/go-plugin/runner"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/openhuman/openhuman-host/sdk"
	sdkplugin "github.com/openhuman/openhuman-host/sdk/plugin"
)

// instance is one process of a provider.
type instance struct {
	client *plugin.Client
	run    *procRunner
	rpc    plugin.ClientProtocol
	impl   sdk.Provider
	// local is set, as impl, for a provider run in the host's process
	// ([Spec].InProcess); client, run and rpc are nil then.
	local *local
	// pid is the provider's process id: the host's own for a provider
	// run in the host's process.
	pid int
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
	case <-i.gone():
		return true
	default:
		return false
	}
}

// neverGone is the exit channel of a process the host did not start: the
// health checks find out when it is gone.
var neverGone = make(chan struct{})

// gone is closed once the instance's process has exited; it never is for
// a process the host reattached to.
func (i *instance) gone() <-chan struct{} {
	if i.run == nil {
		return neverGone
	}
	return i.run.Exited()
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
	if rc, ok := m.opts.Reattach[spec.Name]; ok {
		log.Info("connecting to the provider's running process instead of starting it", "pid", rc.Pid, "address", rc.Addr.String())
		client := plugin.NewClient(&plugin.ClientConfig{
			HandshakeConfig: sdkplugin.Handshake,
			// A reattached client takes the plugin set of the version
			// the provider serves from Plugins, not VersionedPlugins.
			Plugins:          sdkplugin.VersionedPlugins(nil)[rc.ProtocolVersion],
			Reattach:         rc,
			AllowedProtocols: []plugin.Protocol{plugin.ProtocolGRPC},
			Logger:           log,
			GRPCDialOptions:  slices.Concat(sdkplugin.GRPCDialOptions(), m.opts.GRPCDialOptions),
		})
		rpc, err := client.Client()
		if err != nil {
			client.Kill()
			return nil, nil, fmt.Errorf("reattach to the provider process %d at %s (%s): %w", rc.Pid, rc.Addr, sdkplugin.EnvReattach, err)
		}
		inst := &instance{client: client, rpc: rpc, pid: rc.Pid, version: rc.ProtocolVersion, answered: new(atomic.Uint64)}
		return m.configure(ctx, p, inst, spec, log, startSteps{})
	}
	if spec.InProcess != nil {
		return m.launchInProcess(parent, p)
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
	t0 := time.Now()
	secure, err := verify(verified)
	if err != nil {
		return nil, nil, err
	}
	// Each step's duration is logged with "provider loaded": where a
	// cold start goes.
	tChecksum := time.Now()
	var started atomic.Pointer[procRunner]
	answered := new(atomic.Uint64)
	client := plugin.NewClient(&plugin.ClientConfig{
		HandshakeConfig:  sdkplugin.Handshake,
		VersionedPlugins: sdkplugin.VersionedPlugins(nil),
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
		GRPCDialOptions:  slices.Concat(sdkplugin.GRPCDialOptions(), answeredCounter(answered), m.opts.GRPCDialOptions),
	})
	rpc, err := handshake(ctx, client, &started)
	tHandshake := time.Now()
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
	return m.configure(ctx, p, inst, spec, log, startSteps{checksum: tChecksum.Sub(t0), handshake: tHandshake.Sub(tChecksum)})
}

// startSteps are how long a launch's steps before Configure took, logged
// with "provider loaded"; zero for a provider the host attached to.
type startSteps struct {
	// checksum is hashing the executable against its sha256.
	checksum time.Duration
	// handshake is starting the process through go-plugin's handshake
	// (automatic mTLS included).
	handshake time.Duration
}

// configure dispenses the provider of inst, whose connection is up, and
// runs Configure and Describe under ctx's deadline (the spec's start
// timeout); on failure inst is stopped.
func (m *Manager) configure(ctx context.Context, p *Provider, inst *instance, spec Spec, log hclog.Logger, steps startSteps) (*instance, *sdk.Catalog, error) {
	tStart := time.Now()
	timeout := spec.StartTimeout
	if timeout <= 0 {
		timeout = m.opts.StartTimeout
	}
	fail := func(err error) (*instance, *sdk.Catalog, error) {
		inst.kill(log)
		return nil, nil, err
	}
	if inst.impl == nil {
		raw, err := inst.rpc.Dispense(sdkplugin.PluginName)
		if err != nil {
			return fail(fmt.Errorf("dispense: %w", err))
		}
		impl, ok := raw.(sdk.Provider)
		if !ok {
			return fail(fmt.Errorf("plugin returned %T, not a provider", raw))
		}
		inst.impl = impl
	}
	impl := inst.impl
	config := spec.Config
	if len(config) == 0 {
		config = json.RawMessage("{}")
	}
	req := &sdk.ConfigureRequest{
		Config:      config,
		DataDir:     spec.DataDir,
		Secrets:     spec.Secrets,
		Host:        p.host(),
		HostVersion: m.opts.HostVersion,
		LogLevel:    m.opts.LogLevel,
		ConfigDir:   m.opts.ConfigDir,
	}
	if inst.local != nil {
		// What its process would have had: in the host's process,
		// os.Environ is the host's.
		req.Env = append([]string{}, m.environment(spec.Env)...)
	}
	if err := impl.Configure(ctx, req); err != nil {
		return fail(timeoutError(ctx, "configure", timeout, spec.timeoutKey(), err))
	}
	tConfigure := time.Now()
	cat, err := impl.Describe(ctx)
	if err != nil {
		return fail(timeoutError(ctx, "describe", timeout, spec.timeoutKey(), err))
	}
	log.Debug("provider loaded", "pid", inst.pid, "protocol", inst.version, "version", cat.Version, "tools", len(cat.Tools), "resources", len(cat.Resources),
		"checksum", steps.checksum, "handshake", steps.handshake, "configure", tConfigure.Sub(tStart), "describe", time.Since(tConfigure))
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

// killGrace is how long a provider gets to shut down cleanly before its
// group is killed.
const killGrace = 2 * time.Second

// kill stops the instance: go-plugin's graceful shutdown first, bounded
// by killGrace because a hung provider never answers it, then a kill of
// its whole group (SIGKILL to its process group, or its job object
// terminated), so its own children die too. A provider run in the host's
// process is closed instead (io.Closer), for at most killGrace.
func (i *instance) kill(log hclog.Logger) {
	if i == nil {
		return
	}
	if i.local != nil {
		i.local.close(killGrace)
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
		if i.run == nil && i.rpc != nil {
			// A reattached process: go-plugin's Kill leaves it alone, so
			// closing the connection is what asks it to shut down.
			_ = i.rpc.Close()
		}
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
