// Command profhost serves MCP over stdio exactly like `openhuman-host serve`
// (same config loading, provider launch, pipeline and stdio transport) while
// recording a CPU profile and, on exit, a heap profile. The benchmark uses it
// for its -cpuprofile pass; built-in providers are not part of it, so give it
// a config with only third-party providers enabled. [telemetry] is set up as
// serve sets it up.
//
//	profhost -config FILE -cpuprofile cpu.pprof [-memprofile heap.pprof]
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"runtime"
	"runtime/pprof"
	"syscall"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/openhuman/openhuman-host/host"
	"github.com/openhuman/openhuman-host/host/builtin"
	"github.com/openhuman/openhuman-host/host/config"
	"github.com/openhuman/openhuman-host/host/server"
	// The config's defaults name the built-in providers.
	_ "github.com/openhuman/openhuman-host/internal/builtins"
	"github.com/openhuman/openhuman-host/internal/telemetry"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "profhost:", err)
		os.Exit(1)
	}
}

func run() error {
	configPath := flag.String("config", "", "config file")
	cpuProfile := flag.String("cpuprofile", "", "write a CPU profile of the whole session here")
	memProfile := flag.String("memprofile", "", "write a heap profile here on exit")
	flag.Parse()

	cfg, err := config.Load(*configPath)
	if err != nil {
		return err
	}
	log := hclog.New(&hclog.LoggerOptions{Name: "profhost", Level: hclog.LevelFromString(cfg.Server.LogLevel), Output: os.Stderr})

	if *cpuProfile != "" {
		f, err := os.Create(*cpuProfile)
		if err != nil {
			return err
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return err
		}
		defer pprof.StopCPUProfile()
	}

	// As in serve: the providers get /dev/null, the MCP stream stays ours.
	stdin := os.Stdin
	devNull, err := os.Open(os.DevNull)
	if err != nil {
		return err
	}
	os.Stdin = devNull

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	// As in serve: [telemetry] traces and measures the pipeline.
	var tel *telemetry.Telemetry
	if tc := host.TelemetrySettings(cfg.Telemetry, "openhuman-host", "bench"); tc.Enabled() {
		if tel, err = telemetry.Setup(ctx, tc); err != nil {
			return fmt.Errorf("[telemetry]: %w", err)
		}
		defer func() {
			shutdownCtx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			_ = tel.Shutdown(shutdownCtx)
		}()
	}
	// No executable to launch built-ins from: enabled ones are logged and
	// skipped, as in a build without them.
	h, err := host.Start(ctx, cfg, &host.Options{Version: "bench", Logger: log, Telemetry: tel, Builtins: &builtin.Registry{}})
	if err != nil {
		return err
	}
	runErr := h.Server.MCP().Run(ctx, &server.LineTransport{In: stdin, Out: os.Stdout})
	closeCtx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	if err := h.Close(closeCtx); err != nil {
		log.Error("shutdown", "error", err)
	}
	if *memProfile != "" {
		f, err := os.Create(*memProfile)
		if err != nil {
			return err
		}
		defer f.Close()
		runtime.GC()
		if err := pprof.WriteHeapProfile(f); err != nil {
			return err
		}
	}
	if runErr != nil && !errors.Is(runErr, context.Canceled) {
		return runErr
	}
	return nil
}
