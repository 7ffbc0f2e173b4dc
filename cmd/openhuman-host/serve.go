package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"runtime/debug"
	"strconv"
	"strings"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/spf13/cobra"
	"golang.org/x/net/netutil"

	"github.com/openhuman/openhuman-host/host"
	"github.com/openhuman/openhuman-host/host/config"
	"github.com/openhuman/openhuman-host/host/server"
	"github.com/openhuman/openhuman-host/internal/logonce"
)

type serveFlags struct {
	transport    string
	host         string
	port         int
	authToken    string
	insecureBind bool
	watch        bool
	profile      string
}

func newServeCmd(g *globalFlags) *cobra.Command {
	f := &serveFlags{}
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Serve MCP over stdio (default) or Streamable HTTP",
		Long: "serve starts every enabled provider, then serves MCP.\n\n" +
			"stdio: stdout carries protocol messages only; logs go to stderr. When the client closes stdin,\n" +
			"       calls still running get [server] stdio_close_grace_secs (10) to finish, then they are\n" +
			"       cancelled; SIGINT and SIGTERM (Ctrl-C or Ctrl-Break on Windows) cancel them at once.\n" +
			"       Once they are cancelled, the server exits within stdio_exit_timeout_secs (10).\n" +
			"http:  Streamable HTTP + SSE at http://HOST:PORT/ (default 127.0.0.1:9300). A bearer token\n" +
			"       from --auth-token or OPENHUMAN_MCP_TOKEN is required by clients when set.\n\n" +
			"SIGHUP, and with --watch any change to the config file, reloads the config: providers are\n" +
			"started and stopped to match, the policy is replaced, and connected clients are told when their\n" +
			"tool lists change. An invalid file changes nothing; its errors are logged. Windows has no\n" +
			"SIGHUP: there, use --watch.",
		Args: cobra.NoArgs,
		RunE: configured(g, func(cmd *cobra.Command, _ []string, cfg *config.Config, log hclog.Logger) error {
			return runServe(cmd, g, f, cfg, log)
		}),
	}
	cmd.Flags().StringVar(&f.transport, "transport", "", "stdio or http (default from [server] transport: stdio)")
	cmd.Flags().StringVar(&f.host, "host", "", "http listen address (default from [server] host: 127.0.0.1)")
	cmd.Flags().IntVar(&f.port, "port", 0, "http listen port (default from [server] port: 9300)")
	cmd.Flags().StringVar(&f.authToken, "auth-token", "", "bearer token http clients must send (default $OPENHUMAN_MCP_TOKEN)")
	cmd.Flags().BoolVar(&f.insecureBind, "insecure-bind", false, "allow a non-loopback http address without a token")
	cmd.Flags().StringVar(&f.profile, "profile", "", "give every client the [profiles.NAME] table NAME (default: over http by path /profile/NAME, else by client name)")
	cmd.Flags().BoolVar(&f.watch, "watch", false, "reload the config whenever its file changes (SIGHUP always reloads it, except on Windows)")
	return cmd
}

// runServe serves MCP with cfg, the effective config g loaded, and its root
// logger log, as f and the environment select; g reloads the config.
func runServe(cmd *cobra.Command, g *globalFlags, f *serveFlags, cfg *config.Config, log hclog.Logger) error {
	transport := cfg.Server.Transport
	if f.transport != "" {
		transport = f.transport
	}
	if transport != "stdio" && transport != "http" {
		return fmt.Errorf("--transport %q: must be stdio or http", transport)
	}
	token, tokenSource := f.authToken, "--auth-token"
	if !cmd.Flags().Changed("auth-token") {
		token, tokenSource = os.Getenv("OPENHUMAN_MCP_TOKEN"), "OPENHUMAN_MCP_TOKEN"
	}
	if token != "" && strings.TrimSpace(token) == "" {
		return fmt.Errorf("%s is blank; set a real token (for example: openssl rand -hex 32) or leave it unset", tokenSource)
	}
	if token != "" {
		if err := server.CheckToken(token); err != nil {
			return fmt.Errorf("%s: %w", tokenSource, err)
		}
	}
	listenHost, port := cfg.Server.Host, cfg.Server.Port
	if f.host != "" {
		listenHost = f.host
	}
	if cmd.Flags().Changed("port") {
		if f.port < 0 || f.port > 65535 {
			return fmt.Errorf("--port %d: must be between 0 and 65535", f.port)
		}
		port = f.port
	}
	// A reload reads the file again: what serve derived at start (the
	// replica's name, --verbose's level) is carried over, so that it does
	// not show as a change.
	configured := cfg.Server.Replica
	if transport == "http" {
		if err := server.CheckBind(listenHost, token, f.insecureBind); err != nil {
			return err
		}
		cfg.Server.Replica = cfg.Server.ReplicaName(port)
		tuneGCForHTTP()
	} else {
		tuneGCForStdio(host.TelemetrySettings(cfg.Telemetry, "", "").Enabled(), len(host.InHostBuiltins(cfg, nil)))
		cfg.Server.Replica = cfg.Server.ReplicaName(0)
	}

	dataDir, err := cfg.DataDir()
	if err != nil {
		return fmt.Errorf("resolve data dir: %w", err)
	}
	// Where this server reads and writes, for a user who needs the same
	// paths in a client's config (openhuman-host config paths prints them).
	configFile := cfg.Source
	if configFile == config.DefaultSource {
		configFile, _ = config.DefaultPath()
		configFile += " (missing: embedded defaults)"
	}
	log.Info("config and data paths", "config_file", configFile, "data_dir", dataDir, "replica", cfg.Server.Replica)
	// Registered before the providers start: SIGHUP's default action
	// would end the process.
	hup, stopHup := reloadSignals()
	defer stopHup()
	reloadConfig := func() (*config.Config, error) {
		next, err := g.load()
		if err != nil {
			return nil, err
		}
		if g.verbose && os.Getenv(config.EnvLogLevel) == "" {
			next.Server.LogLevel = "debug"
		}
		if next.Server.Replica == configured {
			next.Server.Replica = cfg.Server.Replica
		}
		return next, nil
	}
	// Warnings that every reload or provider restart repeats are written
	// once per window, then with how often they were held back.
	log = logonce.Wrap(log, nil)
	tel, stopTelemetry, err := startTelemetry(cfg, log)
	if err != nil {
		return err
	}
	defer stopTelemetry()
	if cfg.Telemetry.Prometheus && cfg.Telemetry.PrometheusListen == "" && transport != "http" {
		log.Warn("[telemetry] prometheus = true serves /metrics on the http transport only; set prometheus_listen = \"127.0.0.1:9464\" to scrape a stdio server")
	}
	opts := runOptions{statusFile: statusFile(dataDir, os.Getpid()), profile: f.profile, serving: true, telemetry: tel}
	return runHost(cfg, log, opts, func(ctx context.Context, stdin *os.File, h *host.Host) error {
		if err := reloadOnSignals(ctx, h, log, reloadConfig, g.configPath, f.watch, hup, stopHup); err != nil {
			return err
		}
		if addr := cfg.Telemetry.PrometheusListen; addr != "" {
			if err := serveMetrics(ctx, log, addr, tel.PrometheusHandler()); err != nil {
				return err
			}
		}
		var metrics http.Handler
		if cfg.Telemetry.Prometheus && cfg.Telemetry.PrometheusListen == "" {
			metrics = tel.PrometheusHandler()
		}
		return serveTransport(ctx, h, log, stdin, transport, net.JoinHostPort(listenHost, strconv.Itoa(port)), token, metrics)
	})
}

func serveTransport(ctx context.Context, h *host.Host, log hclog.Logger, stdin *os.File, transport, addr, token string, metrics http.Handler) error {
	if transport == "stdio" {
		if fi, err := stdin.Stat(); err == nil && fi.Mode()&os.ModeCharDevice != 0 {
			fmt.Fprintf(os.Stderr, "openhuman-host: serving MCP on stdio and waiting for a client's JSON-RPC messages (%s stops);\n"+
				"  add this command to an MCP client's config, or try: openhuman-host tools list\n", endOfInputKey())
		}
		// On SIGINT/SIGTERM, and the close grace after the client closes
		// stdin, running calls are cancelled so that the server exits
		// promptly.
		grace, exit := h.Config.Server.StdioCloseGrace(), h.Config.Server.StdioExitTimeout()
		defer context.AfterFunc(ctx, h.Server.CancelCalls)()
		// A client that stops reading stdout leaves writes blocked, which
		// no cancellation reaches: past the exit timeout the server stops
		// its providers and exits anyway.
		defer context.AfterFunc(ctx, func() { forceExit(h, log, exit, "a signal") })()
		onEOF := func() {
			time.AfterFunc(grace, h.Server.CancelCalls)
			forceExit(h, log, grace+exit, "the end of its input")
		}
		// Halfway through the exit timeout, the transport stops waiting
		// for the answers of cancelled calls, so that a request that is
		// never answered cannot keep the server running.
		err := h.Server.MCP().Run(ctx, &server.LineTransport{In: stdin, Out: os.Stdout, OnEOF: onEOF, DrainTimeout: grace + exit/2})
		if err != nil && !errors.Is(err, context.Canceled) {
			return fmt.Errorf("stdio session: %w", err)
		}
		return nil
	}
	return serveHTTP(ctx, h, log, addr, token, metrics)
}

// listen listens on the TCP address addr, holding at most max connections
// at once: beyond them, new clients wait in the kernel's accept queue.
func listen(addr string, max int) (net.Listener, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("listen on %s: %w", addr, err)
	}
	return netutil.LimitListener(ln, max), nil
}

func serveHTTP(ctx context.Context, h *host.Host, log hclog.Logger, addr, token string, metrics http.Handler) error {
	ln, err := listen(addr, h.Config.Server.MaxConnections)
	if err != nil {
		return err
	}
	srv := &http.Server{
		Handler: h.Server.HTTPHandler(&server.HTTPOptions{
			Token:              token,
			AllowedOrigins:     h.Config.Server.AllowedOrigins,
			MaxBodyBytes:       h.Config.Server.MaxRequestBodyBytes,
			SessionIdleTimeout: h.Config.Server.SessionIdleTimeout(),
			MaxSessions:        h.Config.Server.MaxSessions,
			Metrics:            metrics,
			Ready:              h.Ready,
		}),
		ReadHeaderTimeout: 10 * time.Second,
		// Keep-alive connections with no request in flight.
		IdleTimeout:    2 * time.Minute,
		MaxHeaderBytes: 64 << 10,
	}
	// The address line is the one thing serve prints in http mode, so
	// scripts using port 0 can find the port.
	fmt.Fprintf(os.Stderr, "openhuman-host: MCP endpoint http://%s/\n", ln.Addr())
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return fmt.Errorf("http server: %w", err)
	case <-ctx.Done():
	}
	log.Info("shutting down")
	h.Server.CancelCalls()
	shutdownCtx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := srv.Shutdown(shutdownCtx); err != nil {
		_ = srv.Close()
	}
	return nil
}

// forceExit exits the process with status 1 after d unless it has exited
// by then, first stopping the providers and closing the audit log (each
// given a few seconds), with an error line naming what began the
// shutdown.
func forceExit(h *host.Host, log hclog.Logger, d time.Duration, cause string) {
	time.AfterFunc(d, func() {
		log.Error("still running "+d.String()+" after "+cause+", probably because the client stopped reading stdout; exiting", "limit", d)
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		defer cancel()
		_ = h.Close(ctx)
		os.Exit(1)
	})
}

// Garbage-collector settings for a stdio server, used when GOGC and
// GOMEMLIMIT are not set. The MCP SDK allocates a fresh buffer for every
// message, so the default GOGC=100 spends much of a busy host's CPU in GC;
// a stdio server holds one session, so its live heap stays small and a
// soft 24 MiB limit keeps memory bounded while GC runs a quarter as often.
// docs/performance.md has the measurements behind the numbers. An HTTP
// server, which allocates more per request (the go-sdk's Streamable HTTP
// handler builds a connection for each stateless request), runs with
// GOGC=400 too, but with no limit, since its live heap grows with its
// sessions and a limit below it would make the GC run without pause: its
// heap may grow to five times what is live.
//
// Telemetry keeps state of its own on the heap (the span queue, export
// buffers, the aggregations of each metric reader), a few MiB under load.
// Taken from a fixed limit, that would shrink the room the calls' garbage
// has between collections and make every call pay for more GC; so with
// [telemetry] on, the limit grows by stdioTelemetryMemory instead. For
// the same reason it grows by stdioInHostMemory for each built-in run in
// the host's process (host.InHostBuiltins: by default memory and, but on
// Windows, the upstream relay when servers are configured), whose state
// (caches, sessions) is on the host's heap; as plugin processes each had
// a limit of its own.
const (
	httpGCPercent        = 400
	stdioGCPercent       = 400
	stdioMemoryLimit     = 24 << 20
	stdioTelemetryMemory = 6 << 20
	stdioInHostMemory    = 16 << 20
)

// tuneGCForStdio applies the stdio server's GC settings; telemetry says
// whether [telemetry] turns any signal on, and inHost how many built-in
// providers run in the host's process.
func tuneGCForStdio(telemetry bool, inHost int) {
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(stdioGCPercent)
	}
	if os.Getenv("GOMEMLIMIT") == "" {
		inHostMemory = int64(inHost) * stdioInHostMemory
		limit := int64(stdioMemoryLimit) + inHostMemory
		if telemetry {
			limit += stdioTelemetryMemory
		}
		debug.SetMemoryLimit(limit)
	}
}

// tuneGCForHTTP applies the HTTP server's GC setting, GOGC=httpGCPercent,
// unless GOGC is set; the memory limit is left alone.
func tuneGCForHTTP() {
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(httpGCPercent)
	}
}

// inHostMemory is what tuneGCForStdio added to the memory limit for the
// built-ins in the host's process: runtimeEnv leaves it out of the limit
// that plugin processes get.
var inHostMemory int64
