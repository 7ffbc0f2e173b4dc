package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
	"go.opentelemetry.io/otel"

	"github.com/openhuman/openhuman-host/host"
	"github.com/openhuman/openhuman-host/host/config"
	"github.com/openhuman/openhuman-host/host/server"
	"github.com/openhuman/openhuman-host/internal/telemetry"
)

// telemetryWarnEvery is the least time between two log lines about
// failed exports: a receiver that is down fails every batch.
const telemetryWarnEvery = time.Minute

// logTelemetryErrors sends OpenTelemetry's own errors (a failed export)
// to log at warn, at most one line a minute with the count of those left
// out, instead of the standard logger.
func logTelemetryErrors(log hclog.Logger) {
	var (
		mu      sync.Mutex
		last    time.Time
		skipped int
	)
	otel.SetErrorHandler(otel.ErrorHandlerFunc(func(err error) {
		mu.Lock()
		defer mu.Unlock()
		if now := time.Now(); now.Sub(last) >= telemetryWarnEvery {
			log.Warn("telemetry export failed", "error", err, "similar_errors_not_logged", skipped)
			last, skipped = now, 0
			return
		}
		skipped++
	}))
}

// startTelemetry sets up what [telemetry] asks for in this process; the
// returned stop flushes and ends it within 5 s.
func startTelemetry(cfg *config.Config, log hclog.Logger) (*telemetry.Telemetry, func(), error) {
	tc := host.TelemetrySettings(cfg.Telemetry, "openhuman-host", hostVersion())
	if !tc.Enabled() {
		return nil, func() {}, nil
	}
	logTelemetryErrors(log.Named("telemetry"))
	t, err := telemetry.Setup(context.Background(), tc)
	if err != nil {
		return nil, nil, fmt.Errorf("[telemetry]: %w", err)
	}
	log.Info("telemetry on", "traces", tc.Traces, "otlp_metrics", tc.Metrics, "prometheus", tc.Prometheus)
	return t, func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := t.Shutdown(ctx); err != nil {
			log.Warn("telemetry not flushed before exit", "error", err)
		}
	}, nil
}

// serveMetrics serves GET /metrics on the loopback address addr
// ([telemetry] prometheus_listen) until ctx ends.
func serveMetrics(ctx context.Context, log hclog.Logger, addr string, metrics http.Handler) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("[telemetry] prometheus_listen: listen on %s: %w", addr, err)
	}
	srv := &http.Server{Handler: server.MetricsHandler(metrics), ReadHeaderTimeout: 10 * time.Second, MaxHeaderBytes: 64 << 10}
	fmt.Fprintf(os.Stderr, "openhuman-host: metrics at http://%s%s\n", ln.Addr(), server.MetricsPath)
	go func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Error("metrics listener stopped", "error", err)
		}
	}()
	context.AfterFunc(ctx, func() {
		shutdownCtx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		_ = srv.Shutdown(shutdownCtx)
	})
	return nil
}

// startProviderTelemetry sets up tracing in a built-in provider process as
// the host asked through its environment; the returned stop flushes it.
func startProviderTelemetry(name string, log hclog.Logger) func() {
	t, err := telemetry.FromEnv(context.Background(), "openhuman-host."+name, hostVersion())
	if err != nil {
		log.Warn("tracing is off in this provider", "error", err)
		return func() {}
	}
	if t.Tracing() {
		logTelemetryErrors(log.Named("telemetry"))
	}
	return func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = t.Shutdown(ctx)
	}
}
