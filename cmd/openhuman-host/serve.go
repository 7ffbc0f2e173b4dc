package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/spf13/cobra"

	"github.com/openhuman/openhuman-host/host"
	"github.com/openhuman/openhuman-host/host/config"
	"github.com/openhuman/openhuman-host/host/server"
)

// minTokenBytes is the token length below which serve warns.
const minTokenBytes = 16

type serveFlags struct {
	transport    string
	host         string
	port         int
	authToken    string
	insecureBind bool
}

func newServeCmd(g *globalFlags) *cobra.Command {
	f := &serveFlags{}
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Serve MCP over stdio (default) or Streamable HTTP",
		Long: "serve starts every enabled provider, then serves MCP.\n\n" +
			"stdio: stdout carries protocol messages only; logs go to stderr.\n" +
			"http:  Streamable HTTP + SSE at http://HOST:PORT/ (default 127.0.0.1:9300). A bearer token\n" +
			"       from --auth-token or OPENHUMAN_MCP_TOKEN is required by clients when set.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runServe(cmd, g, f)
		},
	}
	cmd.Flags().StringVar(&f.transport, "transport", "", "stdio or http (default from [server] transport: stdio)")
	cmd.Flags().StringVar(&f.host, "host", "", "http listen address (default from [server] host: 127.0.0.1)")
	cmd.Flags().IntVar(&f.port, "port", 0, "http listen port (default from [server] port: 9300)")
	cmd.Flags().StringVar(&f.authToken, "auth-token", "", "bearer token http clients must send (default $OPENHUMAN_MCP_TOKEN)")
	cmd.Flags().BoolVar(&f.insecureBind, "insecure-bind", false, "allow a non-loopback http address without a token")
	return cmd
}

// loadConfig loads the effective config and builds the root logger.
func loadConfig(g *globalFlags) (*config.Config, hclog.Logger, error) {
	cfg, err := config.Load(g.configPath)
	if err != nil {
		return nil, nil, err
	}
	level := cfg.Server.LogLevel
	if g.verbose && os.Getenv("OPENHUMAN_LOG_LEVEL") == "" {
		level = "debug"
		cfg.Server.LogLevel = level
	}
	log := hclog.New(&hclog.LoggerOptions{
		Name:   "openhuman-host",
		Level:  hclog.LevelFromString(level),
		Output: os.Stderr,
	})
	if level == "off" {
		log = hclog.NewNullLogger()
	}
	return cfg, log, nil
}

// detachStdin gives child processes /dev/null as stdin and returns the
// real stdin for the host's own use: go-plugin hands os.Stdin to every
// plugin it starts, and on stdio the MCP stream must reach the host alone.
func detachStdin() (*os.File, error) {
	real := os.Stdin
	devNull, err := os.Open(os.DevNull)
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", os.DevNull, err)
	}
	os.Stdin = devNull
	return real, nil
}

func startHost(ctx context.Context, cfg *config.Config, log hclog.Logger) (*host.Host, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("find the host executable: %w", err)
	}
	return host.Start(ctx, cfg, &host.Options{
		Executable: exe,
		Builtins:   builtinNames(),
		Version:    hostVersion(),
		Logger:     log,
	})
}

func runServe(cmd *cobra.Command, g *globalFlags, f *serveFlags) error {
	cfg, log, err := loadConfig(g)
	if err != nil {
		return err
	}
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
	if token != "" && len(token) < minTokenBytes {
		log.Warn("the bearer token is short; use at least 32 random characters", "source", tokenSource)
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
	if transport == "http" {
		if err := server.CheckBind(listenHost, token, f.insecureBind); err != nil {
			return err
		}
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	stdin, err := detachStdin()
	if err != nil {
		return err
	}
	h, err := startHost(ctx, cfg, log)
	if err != nil {
		return err
	}
	defer func() {
		closeCtx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
		defer cancel()
		if err := h.Close(closeCtx); err != nil {
			log.Error("shutdown", "error", err)
		}
	}()
	log.Info("providers loaded", "count", len(h.Providers), "tools", len(h.Server.Catalog().Tools()))

	if transport == "stdio" {
		if fi, err := stdin.Stat(); err == nil && fi.Mode()&os.ModeCharDevice != 0 {
			fmt.Fprintln(os.Stderr, "openhuman-host: serving MCP on stdio and waiting for a client's JSON-RPC messages (Ctrl-D stops);\n"+
				"  add this command to an MCP client's config, or try: openhuman-host tools list")
		}
		err := h.Server.MCP().Run(ctx, &server.LineTransport{In: stdin, Out: os.Stdout})
		if err != nil && !errors.Is(err, context.Canceled) {
			return fmt.Errorf("stdio session: %w", err)
		}
		return nil
	}
	return serveHTTP(ctx, h, log, net.JoinHostPort(listenHost, strconv.Itoa(port)), token)
}

func serveHTTP(ctx context.Context, h *host.Host, log hclog.Logger, addr, token string) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", addr, err)
	}
	srv := &http.Server{
		Handler: h.Server.HTTPHandler(&server.HTTPOptions{
			Token:              token,
			AllowedOrigins:     h.Config.Server.AllowedOrigins,
			MaxBodyBytes:       h.Config.Server.MaxRequestBodyBytes,
			SessionIdleTimeout: h.Config.Server.SessionIdleTimeout(),
		}),
		ReadHeaderTimeout: 10 * time.Second,
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
	shutdownCtx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := srv.Shutdown(shutdownCtx); err != nil {
		_ = srv.Close()
	}
	return nil
}
