package host

import (
	"context"
	"errors"
	"fmt"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"

	"github.com/openhuman/openhuman-host/host/config"
	"github.com/openhuman/openhuman-host/internal/telemetry"
	"github.com/openhuman/openhuman-host/sdk"
)

// Attributes of the host's own metrics.
const (
	attrProvider = attribute.Key("openhuman.provider")
	attrState    = attribute.Key("openhuman.state")
	attrUpstream = attribute.Key("openhuman.upstream.server")
)

// TelemetrySettings is the telemetry set-up that c ([telemetry]) asks
// for, for the process named service (OpenTelemetry's service.name) at
// version. prometheus_listen implies the Prometheus registry.
func TelemetrySettings(c config.TelemetryConfig, service, version string) telemetry.Config {
	return telemetry.Config{
		Traces:         c.Traces,
		Metrics:        c.Metrics,
		Prometheus:     c.Prometheus || c.PrometheusListen != "",
		Endpoint:       c.OTLPEndpoint,
		Protocol:       c.OTLPProtocol,
		SampleRatio:    c.SampleRatio,
		MetricInterval: time.Duration(c.MetricIntervalSecs) * time.Second,
		ServiceName:    service,
		ServiceVersion: version,
	}
}

// metricsReadTimeout bounds what one collection of the host's observable
// metrics may wait for (the upstream provider's state, a count of acts).
const metricsReadTimeout = 2 * time.Second

// providerDialOptions are the gRPC options that carry a call's trace
// context into provider processes, in the gRPC metadata where the SDK's
// stats handler finds it: nil while tracing is off. They record no span
// of their own: the execute_tool span already covers the call.
func providerDialOptions(t *telemetry.Telemetry) []grpc.DialOption {
	if !t.Tracing() {
		return nil
	}
	return []grpc.DialOption{
		grpc.WithChainUnaryInterceptor(func(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
			return invoker(withTraceMetadata(ctx), method, req, reply, cc, opts...)
		}),
		grpc.WithChainStreamInterceptor(func(ctx context.Context, desc *grpc.StreamDesc, cc *grpc.ClientConn, method string, streamer grpc.Streamer, opts ...grpc.CallOption) (grpc.ClientStream, error) {
			return streamer(withTraceMetadata(ctx), desc, cc, method, opts...)
		}),
	}
}

// withTraceMetadata adds ctx's span context to its outgoing gRPC
// metadata (traceparent, tracestate, baggage).
func withTraceMetadata(ctx context.Context) context.Context {
	if !trace.SpanContextFromContext(ctx).IsValid() {
		return ctx
	}
	carrier := propagation.MapCarrier{}
	sdk.TracePropagator().Inject(ctx, carrier)
	md, _ := metadata.FromOutgoingContext(ctx)
	md = md.Copy()
	for k, v := range carrier {
		md.Set(k, v)
	}
	return metadata.NewOutgoingContext(ctx, md)
}

// registerMetrics reports, at each collection, the state of every
// provider (openhuman.provider.state, 1 for the state it is in) and its
// restarts (openhuman.provider.restarts), the state of every upstream
// server (openhuman.upstream.server.state), the audit writer's queue
// (openhuman.audit.queue.depth), dropped rows (openhuman.audit.dropped)
// and failed writes (openhuman.audit.write.failures), and the acts of
// the sliding hour against max_actions_per_hour
// (openhuman.act_budget.used and openhuman.act_budget.limit). It returns
// nil while metrics are off.
func (h *Host) registerMetrics(t *telemetry.Telemetry) (metric.Registration, error) {
	if !t.Measuring() {
		return nil, nil
	}
	m := otel.Meter("github.com/openhuman/openhuman-host/host")
	var errs []error
	gauge := func(name, unit, description string) metric.Int64ObservableGauge {
		g, err := m.Int64ObservableGauge(name, metric.WithUnit(unit), metric.WithDescription(description))
		errs = append(errs, err)
		return g
	}
	counter := func(name, unit, description string) metric.Int64ObservableCounter {
		c, err := m.Int64ObservableCounter(name, metric.WithUnit(unit), metric.WithDescription(description))
		errs = append(errs, err)
		return c
	}
	state := gauge("openhuman.provider.state", "",
		"1 for the state each provider is in (starting, running, restarting, failed, stopped).")
	restarts := counter("openhuman.provider.restarts", "{restart}",
		"Provider restarts since the host started.")
	upstreamState := gauge("openhuman.upstream.server.state", "",
		"1 for the state each upstream MCP server is in, as the upstream provider reports it.")
	queue := gauge("openhuman.audit.queue.depth", "{row}",
		"Audit rows and outcomes waiting for the writer.")
	dropped := counter("openhuman.audit.dropped", "{row}",
		"Audit rows of reads and outcomes dropped because the queue was full.")
	failures := counter("openhuman.audit.write.failures", "{write}",
		"Failed writes of the audit writer (each retry counts).")
	used := gauge("openhuman.act_budget.used", "{act}",
		"Acts allowed in the sliding hour, across every process on the audit log.")
	limit := gauge("openhuman.act_budget.limit", "{act}",
		"[autonomy] max_actions_per_hour; absent when unlimited.")
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("create the host's metrics: %w", err)
	}
	return m.RegisterCallback(func(ctx context.Context, o metric.Observer) error {
		ctx, cancel := context.WithTimeout(ctx, metricsReadTimeout)
		defer cancel()
		h.changeMu.Lock()
		statuses, maxActs := h.Status(), h.Config.Autonomy.MaxActionsPerHour
		h.changeMu.Unlock()
		for _, st := range statuses {
			p := attrProvider.String(st.Name)
			o.ObserveInt64(state, 1, metric.WithAttributes(p, attrState.String(string(st.State))))
			o.ObserveInt64(restarts, int64(st.Restarts), metric.WithAttributes(p))
		}
		for _, s := range h.upstreamServers() {
			o.ObserveInt64(upstreamState, 1, metric.WithAttributes(attrUpstream.String(s.Name), attrState.String(s.State)))
		}
		if h.audit != nil {
			st := h.audit.Status()
			o.ObserveInt64(queue, int64(st.Queued))
			o.ObserveInt64(dropped, int64(st.Dropped))
			o.ObserveInt64(failures, int64(st.WriteFailures))
			if n, err := h.audit.ActsInWindow(ctx); err == nil {
				o.ObserveInt64(used, n)
			}
		}
		if maxActs != nil {
			o.ObserveInt64(limit, int64(*maxActs))
		}
		return nil
	}, state, restarts, upstreamState, queue, dropped, failures, used, limit)
}

// tracerProvider is the global tracer provider while t traces, else nil.
func tracerProvider(t *telemetry.Telemetry) trace.TracerProvider {
	if !t.Tracing() {
		return nil
	}
	return otel.GetTracerProvider()
}

// meterProvider is the global meter provider while t measures, else nil.
func meterProvider(t *telemetry.Telemetry) metric.MeterProvider {
	if !t.Measuring() {
		return nil
	}
	return otel.GetMeterProvider()
}
