// Command profhost serves MCP over stdio exactly like `openhuman-host serve`
// (same config loading, provider launch, pipeline and stdio transport) while
// recording a CPU profile and, on exit, a heap profile. The benchmark uses it
// for its -cpuprofile pass. It launches the built-in providers as serve does:
// in its own process, or as `profhost provider NAME`, which serves one the
// way `openhuman-host provider NAME` does (without its telemetry).
// [telemetry] is set up as serve sets it up.
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
	// The built-in providers, as in the binary.
	_ "github.com/openhuman/openhuman-host/internal/builtins"
	"github.com/openhuman/openhuman-host/internal/telemetry"
	"github.com/openhuman/openhuman-host/sdk"
)

func main() {
	if len(os.Args) == 3 && os.Args[1] == "provider" {
		b, ok := builtin.Registered().Lookup(os.Args[2])
		if !ok {
			fmt.Fprintf(os.Stderr, "profhost: no built-in provider %q\n", os.Args[2])
			os.Exit(1)
		}
		log := sdk.Logger("provider." + os.Args[2])
		sdk.Serve(b.New(log), sdk.WithLogger(log))
		return
	}
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
	exe, err := os.Executable()
	if err != nil {
		return fmt.Errorf("find the executable to launch built-in providers from: %w", err)
	}
	h, err := host.Start(ctx, cfg, &host.Options{Executable: exe, Version: "bench", Logger: log, Telemetry: tel})
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
