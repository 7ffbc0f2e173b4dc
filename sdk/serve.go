package sdk

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/signal"
	"slices"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/go-plugin"
	"google.golang.org/grpc"

	"github.com/openhuman/openhuman-host/sdk/internal/wire"
)

// ServeOption configures [Serve].
type ServeOption func(*serveConfig)

type serveConfig struct {
	logger     hclog.Logger
	parentPoll time.Duration
	// debug is the provider's name in debug mode, "" otherwise.
	debug    string
	debugOut io.Writer
}

// WithLogger sets the logger the plugin machinery and the provider share.
// The default writes JSON lines to stderr at debug level, which the host
// parses and re-emits under its own logger and level; a provider must never
// write to stdout.
func WithLogger(l hclog.Logger) ServeOption {
	return func(c *serveConfig) { c.logger = l }
}

// WithParentWatch sets how often Serve checks that the process that started
// it is still alive; when it is gone the provider exits, so a killed host
// leaves no orphans. Default 500ms; zero or negative disables the check.
// On Windows the check waits on the parent's process handle instead of
// polling, so only whether every is positive matters.
func WithParentWatch(every time.Duration) ServeOption {
	return func(c *serveConfig) { c.parentPoll = every }
}

// WithDebug makes [Serve] run the provider in debug mode, for a provider
// started by hand or under a debugger (dlv debug, an IDE) instead of by
// the host. The provider listens on a local socket and writes to out
// (os.Stderr when nil) the line that tells a host to use it, for name, the
// name of its [providers.<name>] table:
//
//	OPENHUMAN_REATTACH_PROVIDERS='{"hello":{"Protocol":"grpc",...}}'
//
// Run the host with that variable set (export it, or put it before the
// command) and the host, instead of starting the provider's command,
// connects to this process, without checking its sha256. Serve returns
// when that host stops the provider, or when the process is interrupted.
// The parent watch is off in debug mode. Setting the environment variable
// OPENHUMAN_PROVIDER_DEBUG to the name has the same effect without this
// option (in code, WithDebug wins), so a provider needs no change to be
// debugged.
func WithDebug(name string, out io.Writer) ServeOption {
	return func(c *serveConfig) { c.debug, c.debugOut = name, out }
}

// Logger returns the logger [Serve] creates by default, so a provider's own
// log lines reach the host the same way: JSON lines on stderr.
func Logger(name string) hclog.Logger {
	return hclog.New(&hclog.LoggerOptions{
		Name:       name,
		Level:      hclog.Debug,
		Output:     os.Stderr,
		JSONFormat: true,
	})
}

// Serve serves p as an openhuman-host provider over go-plugin's gRPC
// protocol and returns when the host closes the connection; a p that is
// an [io.Closer] has Close called first, so that it can release files and
// connections (an error is logged). It must be
// called from the provider's main function, in a process the host started:
// run by hand, it prints a message to stderr and exits with status 1.
//
// Stdout carries exactly one line, go-plugin's handshake. In a process the
// host started, this package points descriptor 1 (on Windows, the standard
// output handle) at stderr from its init function on (keeping the original
// for the handshake), and after the
// handshake go-plugin captures os.Stdout, so stray prints, from the
// provider's code, its child processes, or the init functions of packages
// initialised after this one (the main package and every package that
// imports sdk), never reach the handshake or the host's MCP stream; they
// end up in the provider's log, or dropped. Go initialises a dependency
// that does not import sdk before or after it by import path, so such a
// package must not print from its init function.
//
// The provider exits, taking its process group (its own child processes)
// with it, when it receives SIGTERM (which Linux sends when the host dies)
// or when its parent process is gone (checked every 500ms; see
// [WithParentWatch]), so a killed host leaves no orphans. On Windows,
// which has neither process groups nor SIGTERM from a dying parent, the
// provider waits on its parent's process handle and exits when the parent
// does; its children end through the job object the host puts every
// provider in, which Windows closes, killing its processes, when the host
// exits.
func Serve(p Provider, opts ...ServeOption) {
	cfg := serveConfig{parentPoll: 500 * time.Millisecond}
	for _, o := range opts {
		o(&cfg)
	}
	if cfg.logger == nil {
		cfg.logger = Logger("provider")
	}
	if cfg.debug == "" {
		cfg.debug = os.Getenv(wire.EnvDebug)
	}
	if cfg.debug != "" {
		serveDebug(p, &cfg)
		return
	}
	if cfg.parentPoll > 0 {
		go watchParent(cfg.logger, cfg.parentPoll)
	}
	onTerminate(cfg.logger)
	restoreHandshakeOut()
	plugin.Serve(serveConfigFor(p, &cfg))
	closeProvider(p, &cfg)
}

// serveConfigFor is go-plugin's configuration for serving p.
func serveConfigFor(p Provider, cfg *serveConfig) *plugin.ServeConfig {
	return &plugin.ServeConfig{
		HandshakeConfig:  wire.Handshake,
		VersionedPlugins: wire.VersionedPlugins(&levelFromHost{Provider: p, log: cfg.logger}, cfg.logger),
		GRPCServer: func(opts []grpc.ServerOption) *grpc.Server {
			return plugin.DefaultGRPCServer(slices.Concat(opts, wire.GRPCServerOptions(), tracingServerOptions()))
		},
		Logger: cfg.logger,
	}
}

// closeProvider lets p, once the host stopped it cleanly, release what it
// holds (close databases, so SQLite checkpoints and removes their WAL
// files).
func closeProvider(p Provider, cfg *serveConfig) {
	if c, ok := p.(io.Closer); ok {
		if err := c.Close(); err != nil {
			cfg.logger.Warn("closing the provider failed", "error", err)
		}
	}
}

// serveDebug serves p in go-plugin's test mode, which listens without the
// host's handshake and hands back the reattach config, printed for the
// host (see [WithDebug]).
func serveDebug(p Provider, cfg *serveConfig) {
	out := cfg.debugOut
	if out == nil {
		out = os.Stderr
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	reattach := make(chan *plugin.ReattachConfig, 1)
	closed := make(chan struct{})
	sc := serveConfigFor(p, cfg)
	// Without the host's handshake go-plugin would fall back to the oldest
	// version; a host that reattaches speaks the newest.
	sc.VersionedPlugins = map[int]plugin.PluginSet{wire.ProtocolVersion: sc.VersionedPlugins[wire.ProtocolVersion]}
	sc.Test = &plugin.ServeTestConfig{Context: ctx, ReattachConfigCh: reattach, CloseCh: closed}
	go plugin.Serve(sc)
	select {
	case rc := <-reattach:
		line, err := json.Marshal(map[string]wire.Reattach{cfg.debug: wire.ReattachOf(rc)})
		if err != nil {
			cfg.logger.Error("cannot print the reattach config", "error", err)
			stop()
			break
		}
		fmt.Fprintf(out, "Provider %s is serving in debug mode. Run the host with:\n%s='%s'\n", cfg.debug, wire.EnvReattach, line)
	case <-closed:
	}
	<-closed
	closeProvider(p, cfg)
}

// levelFromHost applies the host's log level, which arrives in Configure,
// to the provider's logger, so a provider does not produce debug lines the
// host would drop anyway.
type levelFromHost struct {
	Provider
	log hclog.Logger
}

// Unwrap returns the author's provider, whose optional interfaces
// (PromptProvider, Completer, ...) the gRPC server looks for.
func (l *levelFromHost) Unwrap() Provider { return l.Provider }

func (l *levelFromHost) Configure(ctx context.Context, req *ConfigureRequest) error {
	if level := hclog.LevelFromString(req.LogLevel); level != hclog.NoLevel {
		l.log.SetLevel(level)
	}
	return l.Provider.Configure(ctx, req)
}
