// Package telemetry sets up OpenTelemetry for openhuman-host and its
// built-in providers: a tracer provider exporting spans over OTLP, a meter
// provider exporting metrics over OTLP and serving them to Prometheus, and
// the SDK's propagator (sdk.TracePropagator: W3C Trace Context and
// Baggage) as the global one. Everything is off unless configured
// ([telemetry] in the host's config); while off the global providers stay
// OpenTelemetry's no-op ones and nothing is exported.
//
// Provider processes are configured by the host through their environment
// ([Telemetry.ProviderEnv]): the standard OTEL_EXPORTER_OTLP_* variables
// and [EnvTraces], read back by [FromEnv].
package telemetry

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/exporters/otlp/otlpmetric/otlpmetricgrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlpmetric/otlpmetrichttp"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	otelprom "go.opentelemetry.io/otel/exporters/prometheus"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/exemplar"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.41.0"

	"github.com/openhuman/openhuman-host/sdk"
	"github.com/openhuman/openhuman-host/sdk/plugin"
)

// OTLP protocols, as OTEL_EXPORTER_OTLP_PROTOCOL names them.
const (
	// ProtocolHTTP is OTLP over HTTP with protobuf bodies (port 4318).
	ProtocolHTTP = "http/protobuf"
	// ProtocolGRPC is OTLP over gRPC (port 4317).
	ProtocolGRPC = "grpc"
)

// Environment variables a provider process reads in [FromEnv].
const (
	// EnvTraces is "1" when the host traces and the provider should too.
	EnvTraces = plugin.EnvTraces
	// EnvSampleRatio is the sampling ratio of spans that start a trace
	// in the provider (rare: a provider's spans have the host's as
	// parent, whose sampling decision they follow).
	EnvSampleRatio = "OPENHUMAN_OTEL_SAMPLE_RATIO"
	envEndpoint    = "OTEL_EXPORTER_OTLP_ENDPOINT"
	envProtocol    = "OTEL_EXPORTER_OTLP_PROTOCOL"
	envHeaders     = "OTEL_EXPORTER_OTLP_HEADERS"
	// envExemplarFilter is the standard variable that turns metric
	// exemplars on (trace_based, always_on); they are off otherwise.
	envExemplarFilter = "OTEL_METRICS_EXEMPLAR_FILTER"
)

// Config says what to export and where.
type Config struct {
	// Traces exports spans over OTLP.
	Traces bool
	// Metrics exports metrics over OTLP every MetricInterval.
	Metrics bool
	// Prometheus keeps metrics for a Prometheus scrape
	// ([Telemetry.PrometheusHandler]).
	Prometheus bool
	// Endpoint is the OTLP receiver's base URL, such as
	// http://127.0.0.1:4318; spans go to <Endpoint>/v1/traces and
	// metrics to <Endpoint>/v1/metrics over HTTP, or to Endpoint itself
	// over gRPC. Empty leaves it to OTEL_EXPORTER_OTLP_ENDPOINT and the
	// exporters' default (localhost:4318 or localhost:4317). Headers,
	// such as an API key, come only from OTEL_EXPORTER_OTLP_HEADERS.
	Endpoint string
	// Protocol is [ProtocolHTTP] (default when empty) or [ProtocolGRPC].
	Protocol string
	// SampleRatio is the fraction of traces started here that are
	// recorded, 0 to 1; traces continued from a caller's sampled span
	// are always recorded. Default 1 when zero and Traces is set.
	SampleRatio float64
	// MetricInterval is how often metrics are exported over OTLP;
	// default 60 s.
	MetricInterval time.Duration
	// ServiceName is the resource's service.name.
	ServiceName string
	// ServiceVersion is the resource's service.version.
	ServiceVersion string
}

// Enabled reports whether c turns anything on.
func (c Config) Enabled() bool { return c.Traces || c.Metrics || c.Prometheus }

// Telemetry is the process's OpenTelemetry set-up. The zero value and nil
// are the disabled set-up: Shutdown does nothing and there is no
// Prometheus handler.
type Telemetry struct {
	cfg  Config
	tp   *sdktrace.TracerProvider
	mp   *sdkmetric.MeterProvider
	prom http.Handler
}

// Setup builds the exporters of cfg and installs its tracer provider,
// meter provider and the W3C Trace Context and Baggage propagator as
// OpenTelemetry's globals. With nothing enabled it installs nothing and
// returns a disabled Telemetry. It fails on an invalid endpoint or
// protocol; exporters connect lazily, so an OTLP receiver that is down
// costs dropped batches (logged by OpenTelemetry's error handler), never a
// failed start.
func Setup(ctx context.Context, cfg Config) (*Telemetry, error) {
	t := &Telemetry{cfg: cfg}
	if !cfg.Enabled() {
		return t, nil
	}
	if err := cfg.check(); err != nil {
		return nil, err
	}
	// Schemaless: resource.Default carries the SDK's own schema URL,
	// which a different one would conflict with.
	res, err := resource.Merge(resource.Default(), resource.NewSchemaless(
		semconv.ServiceName(cfg.ServiceName), semconv.ServiceVersion(cfg.ServiceVersion), semconv.ProcessPID(os.Getpid())))
	if err != nil {
		return nil, fmt.Errorf("telemetry: resource: %w", err)
	}
	if cfg.Traces {
		exp, err := traceExporter(ctx, cfg)
		if err != nil {
			return nil, err
		}
		ratio := cfg.SampleRatio
		if ratio == 0 {
			ratio = 1
		}
		t.tp = sdktrace.NewTracerProvider(
			sdktrace.WithBatcher(exp),
			sdktrace.WithResource(res),
			sdktrace.WithSampler(sdktrace.ParentBased(sdktrace.TraceIDRatioBased(ratio))),
		)
		otel.SetTracerProvider(t.tp)
		otel.SetTextMapPropagator(sdk.TracePropagator())
	}
	var readers []sdkmetric.Option
	if cfg.Metrics {
		exp, err := metricExporter(ctx, cfg)
		if err != nil {
			_ = t.Shutdown(ctx)
			return nil, err
		}
		interval := cfg.MetricInterval
		if interval <= 0 {
			interval = time.Minute
		}
		readers = append(readers, sdkmetric.WithReader(sdkmetric.NewPeriodicReader(exp, sdkmetric.WithInterval(interval))))
	}
	if cfg.Prometheus {
		reg := prometheus.NewRegistry()
		exp, err := otelprom.New(otelprom.WithRegisterer(reg), otelprom.WithoutScopeInfo())
		if err != nil {
			_ = t.Shutdown(ctx)
			return nil, fmt.Errorf("telemetry: prometheus exporter: %w", err)
		}
		readers = append(readers, sdkmetric.WithReader(exp))
		t.prom = promhttp.HandlerFor(reg, promhttp.HandlerOpts{})
	}
	if len(readers) > 0 {
		opts := append(readers, sdkmetric.WithResource(res))
		if _, set := os.LookupEnv(envExemplarFilter); !set {
			// Exemplars cost every measurement a reservoir offer and
			// Prometheus' classic format drops them: off unless asked
			// for with OTEL_METRICS_EXEMPLAR_FILTER.
			opts = append(opts, sdkmetric.WithExemplarFilter(exemplar.AlwaysOffFilter))
		}
		t.mp = sdkmetric.NewMeterProvider(opts...)
		otel.SetMeterProvider(t.mp)
	}
	return t, nil
}

// check validates the endpoint and protocol.
func (c Config) check() error {
	switch c.Protocol {
	case "", ProtocolHTTP, ProtocolGRPC:
	default:
		return fmt.Errorf("telemetry: protocol must be %q or %q, got %q", ProtocolHTTP, ProtocolGRPC, c.Protocol)
	}
	if c.SampleRatio < 0 || c.SampleRatio > 1 {
		return fmt.Errorf("telemetry: sample_ratio must be between 0 and 1, got %g", c.SampleRatio)
	}
	if c.Endpoint == "" {
		return nil
	}
	return CheckEndpoint(c.Endpoint)
}

// CheckEndpoint validates an OTLP endpoint: an http or https URL with a
// host, no user information (headers carry credentials, from the
// environment), no query or fragment.
func CheckEndpoint(raw string) error {
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("telemetry: endpoint must be an http or https URL such as http://127.0.0.1:4318")
	}
	if u.User != nil {
		return fmt.Errorf("telemetry: endpoint must not contain a user name or password; put credentials in OTEL_EXPORTER_OTLP_HEADERS")
	}
	if u.RawQuery != "" || u.Fragment != "" {
		return fmt.Errorf("telemetry: endpoint must not have a query or fragment")
	}
	return nil
}

func traceExporter(ctx context.Context, cfg Config) (sdktrace.SpanExporter, error) {
	return otlpExporter(cfg, "trace", "/v1/traces",
		func(url string) (sdktrace.SpanExporter, error) {
			return newAt(ctx, url, otlptracegrpc.New, otlptracegrpc.WithEndpointURL)
		},
		func(url string) (sdktrace.SpanExporter, error) {
			return newAt(ctx, url, otlptracehttp.New, otlptracehttp.WithEndpointURL)
		})
}

func metricExporter(ctx context.Context, cfg Config) (sdkmetric.Exporter, error) {
	return otlpExporter(cfg, "metric", "/v1/metrics",
		func(url string) (sdkmetric.Exporter, error) {
			return newAt(ctx, url, otlpmetricgrpc.New, otlpmetricgrpc.WithEndpointURL)
		},
		func(url string) (sdkmetric.Exporter, error) {
			return newAt(ctx, url, otlpmetrichttp.New, otlpmetrichttp.WithEndpointURL)
		})
}

// otlpExporter makes the OTLP exporter of signal ("trace", "metric") for
// cfg.Protocol: newGRPC gets cfg.Endpoint as it is, newHTTP gets it with
// the signal's path (such as "/v1/traces") appended; both get "" when
// the endpoint is unset, for the SDK to read its OTEL_EXPORTER_OTLP_*
// variables.
func otlpExporter[E any](cfg Config, signal, path string, newGRPC, newHTTP func(url string) (E, error)) (E, error) {
	var (
		exp E
		err error
	)
	switch {
	case cfg.Protocol == ProtocolGRPC:
		exp, err = newGRPC(cfg.Endpoint)
	case cfg.Endpoint != "":
		exp, err = newHTTP(strings.TrimRight(cfg.Endpoint, "/") + path)
	default:
		exp, err = newHTTP("")
	}
	if err != nil {
		var none E
		return none, fmt.Errorf("telemetry: OTLP %s exporter: %w", signal, err)
	}
	return exp, nil
}

// newAt makes an exporter with newExporter, sending to url by the option
// withURL, or where the SDK's variables say for "".
func newAt[O, E any](ctx context.Context, url string, newExporter func(context.Context, ...O) (E, error), withURL func(string) O) (E, error) {
	if url == "" {
		return newExporter(ctx)
	}
	return newExporter(ctx, withURL(url))
}

// Tracing reports whether spans are recorded and exported.
func (t *Telemetry) Tracing() bool { return t != nil && t.tp != nil }

// Measuring reports whether metrics are recorded.
func (t *Telemetry) Measuring() bool { return t != nil && t.mp != nil }

// PrometheusHandler serves the metrics in Prometheus's text format; nil
// unless Config.Prometheus is set.
func (t *Telemetry) PrometheusHandler() http.Handler {
	if t == nil {
		return nil
	}
	return t.prom
}

// ProviderEnv returns the environment, as KEY=VALUE entries, that makes a
// provider process trace as this one does ([FromEnv]): nil when tracing
// is off. OTEL_EXPORTER_OTLP_HEADERS is passed on when it is set here, so
// credentials stay in environment variables.
func (t *Telemetry) ProviderEnv() []string {
	if !t.Tracing() {
		return nil
	}
	env := []string{EnvTraces + "=1"}
	if t.cfg.Endpoint != "" {
		env = append(env, envEndpoint+"="+t.cfg.Endpoint)
	} else if v, ok := os.LookupEnv(envEndpoint); ok {
		env = append(env, envEndpoint+"="+v)
	}
	if t.cfg.Protocol != "" {
		env = append(env, envProtocol+"="+t.cfg.Protocol)
	} else if v, ok := os.LookupEnv(envProtocol); ok {
		env = append(env, envProtocol+"="+v)
	}
	if t.cfg.SampleRatio > 0 {
		env = append(env, EnvSampleRatio+"="+strconv.FormatFloat(t.cfg.SampleRatio, 'g', -1, 64))
	}
	if v, ok := os.LookupEnv(envHeaders); ok {
		env = append(env, envHeaders+"="+v)
	}
	return env
}

// FromEnv sets up tracing in a provider process as the host asked through
// [Telemetry.ProviderEnv]; it returns a disabled Telemetry when the host
// does not trace.
func FromEnv(ctx context.Context, serviceName, serviceVersion string) (*Telemetry, error) {
	if os.Getenv(EnvTraces) != "1" {
		return &Telemetry{}, nil
	}
	cfg := Config{Traces: true, Protocol: os.Getenv(envProtocol), ServiceName: serviceName, ServiceVersion: serviceVersion}
	if r := os.Getenv(EnvSampleRatio); r != "" {
		v, err := strconv.ParseFloat(r, 64)
		if err != nil {
			return nil, fmt.Errorf("telemetry: %s: %w", EnvSampleRatio, err)
		}
		cfg.SampleRatio = v
	}
	return Setup(ctx, cfg)
}

// Shutdown flushes what is buffered and stops the exporters, within ctx.
func (t *Telemetry) Shutdown(ctx context.Context) error {
	if t == nil {
		return nil
	}
	var errs []error
	if t.tp != nil {
		errs = append(errs, t.tp.Shutdown(ctx))
	}
	if t.mp != nil {
		errs = append(errs, t.mp.Shutdown(ctx))
	}
	return errors.Join(errs...)
}
