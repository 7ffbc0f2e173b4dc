package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/spf13/cobra"

	"github.com/openhuman/openhuman-host/host"
	"github.com/openhuman/openhuman-host/host/config"
	"github.com/openhuman/openhuman-host/internal/telemetry"
)

// load loads the effective config: the file (--config, or the default),
// the environment's overrides, then --data-dir.
func (g *globalFlags) load() (*config.Config, error) {
	cfg, err := config.Load(g.configPath)
	if err != nil {
		return nil, err
	}
	if g.dataDir != "" {
		dir := g.dataDir
		if dir != "~" && !strings.HasPrefix(dir, "~/") && !strings.HasPrefix(dir, "~"+string(filepath.Separator)) {
			if dir, err = filepath.Abs(dir); err != nil {
				return nil, fmt.Errorf("--data-dir %s: %w", g.dataDir, err)
			}
		}
		cfg.Server.DataDir = dir
	}
	return cfg, nil
}

// loadConfig loads the effective config and builds the root logger.
func loadConfig(g *globalFlags) (*config.Config, hclog.Logger, error) {
	cfg, err := g.load()
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

// runOptions are what a command sets on the host it runs.
type runOptions struct {
	// statusFile, when not empty, is kept up to date with the providers'
	// state (servers set one, one-shot commands do not).
	statusFile string
	// profile is the profile every client gets (serve --profile).
	profile string
	// serving is set by serve: only a server embeds its tools for
	// tool_search ([discovery.embeddings]).
	serving bool
	// telemetry is the server's OpenTelemetry set-up; nil when off.
	telemetry *telemetry.Telemetry
}

// startHost starts the host with o.
func startHost(ctx context.Context, cfg *config.Config, log hclog.Logger, o runOptions) (*host.Host, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("find the host executable: %w", err)
	}
	return host.Start(ctx, cfg, &host.Options{
		Executable: exe,
		Version:    hostVersion(),
		Logger:     log,
		StatusFile: o.statusFile,
		Profile:    o.profile,

		ProviderEnv:         runtimeEnv(),
		DiscoveryEmbeddings: o.serving,
		Telemetry:           o.telemetry,
	})
}

// configured returns a cobra RunE that loads the effective config and the
// root logger (see loadConfig) and runs run with them; a config that does
// not load is the command's error, and run is not called.
func configured(g *globalFlags, run func(cmd *cobra.Command, args []string, cfg *config.Config, log hclog.Logger) error) func(*cobra.Command, []string) error {
	return func(cmd *cobra.Command, args []string) error {
		cfg, log, err := loadConfig(g)
		if err != nil {
			return err
		}
		return run(cmd, args, cfg, log)
	}
}

// withHost runs fn with an in-process host built from the effective config
// and closes it afterwards, flushing the audit log before the process
// exits.
func withHost(g *globalFlags, fn func(context.Context, *host.Host) error) error {
	cfg, log, err := loadConfig(g)
	if err != nil {
		return err
	}
	return runHost(cfg, log, runOptions{}, func(ctx context.Context, _ *os.File, h *host.Host) error { return fn(ctx, h) })
}

// withHostFor is withHost for calling the tool named tool: of the upstream
// servers, only those that may own it are started (see onlyOwners), so a
// command does not wait for every server the config lists.
func withHostFor(g *globalFlags, tool string, fn func(context.Context, *host.Host) error) error {
	cfg, log, err := loadConfig(g)
	if err != nil {
		return err
	}
	onlyOwners(cfg, tool)
	return runHost(cfg, log, runOptions{}, func(ctx context.Context, _ *os.File, h *host.Host) error { return fn(ctx, h) })
}

// onlyOwners disables the upstream servers of cfg that cannot own tool: a
// server's tools are named with its prefix (by default "<name>__"), so one
// whose prefix tool does not start with is left out. A server with the
// empty prefix may own any name and stays.
func onlyOwners(cfg *config.Config, tool string) {
	for i, s := range cfg.Upstream.Checked {
		if s.ToolPrefix() != "" && !s.NamedByPrefix(tool) {
			cfg.Upstream.Checked[i].Enabled = false
		}
	}
}

// signalContext returns a context derived from parent (Background when
// nil) that SIGINT and SIGTERM cancel (on Windows, Ctrl-C and Ctrl-Break),
// and the function that cancels it and stops the signals' delivery. While
// it runs, the signals no longer end the process: a command cleans up and
// returns instead.
func signalContext(parent context.Context) (context.Context, context.CancelFunc) {
	if parent == nil {
		parent = context.Background()
	}
	return signal.NotifyContext(parent, os.Interrupt, syscall.SIGTERM)
}

// processStart is when the Go program began, near enough to the process's
// start: package variables are set before main. The startup log lines
// report time since it, where a cold start goes.
var processStart = time.Now()

// runHost starts the host, runs fn until it returns or SIGINT/SIGTERM
// cancels its context, then stops the providers and flushes the audit log.
// fn gets the process's stdin; child processes get /dev/null.
// o is passed to the host (see startHost).
func runHost(cfg *config.Config, log hclog.Logger, o runOptions, fn func(ctx context.Context, stdin *os.File, h *host.Host) error) (err error) {
	ctx, stop := signalContext(context.Background())
	defer stop()
	// Providers never see this stdin: the host starts them with /dev/null
	// (host/plugins' runner), so on stdio the MCP stream is the host's
	// alone.
	stdin := os.Stdin
	log.Debug("starting the host", "since_start", time.Since(processStart))
	h, err := startHost(ctx, cfg, log, o)
	if err != nil {
		return err
	}
	defer func() {
		closeCtx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
		defer cancel()
		if cerr := h.Close(closeCtx); cerr != nil {
			log.Error("shutdown", "error", cerr)
			if err == nil {
				err = cerr
			}
		}
	}()
	log.Info("providers loaded", "count", len(h.Providers), "failed", len(h.Failed), "tools", len(h.Server.Catalog().Tools()),
		"since_start", time.Since(processStart))
	return fn(ctx, stdin, h)
}
