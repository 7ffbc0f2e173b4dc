package sdk

import (
	"os"

	"go.opentelemetry.io/contrib/instrumentation/google.golang.org/grpc/otelgrpc"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/metric/noop"
	"go.opentelemetry.io/otel/propagation"
	"google.golang.org/grpc"
)

// EnvTraces is the environment variable the host sets to "1" in a
// provider's environment when it traces its calls with OpenTelemetry
// ([telemetry] traces = true in its config). The host then also sets the
// standard OTEL_EXPORTER_OTLP_ENDPOINT and OTEL_EXPORTER_OTLP_PROTOCOL
// (and passes OTEL_EXPORTER_OTLP_HEADERS on when it has it).
//
// While it is "1", [Serve] continues the host's W3C trace context: the
// ctx of every [Provider] method carries the span of the host's gRPC
// call, recorded with OpenTelemetry's global tracer provider. A provider
// that installs one (otel.SetTracerProvider, with an OTLP exporter that
// reads those variables) before calling Serve exports its spans into the
// host's traces; without one, nothing is recorded and the context still
// reaches outgoing requests that propagate it.
const EnvTraces = "OPENHUMAN_OTEL_TRACES"

// tracingServerOptions are the gRPC server options that continue the
// host's trace context: none unless the host traces ([EnvTraces]).
func tracingServerOptions() []grpc.ServerOption {
	if os.Getenv(EnvTraces) != "1" {
		return nil
	}
	return []grpc.ServerOption{grpc.StatsHandler(otelgrpc.NewServerHandler(
		otelgrpc.WithTracerProvider(otel.GetTracerProvider()),
		otelgrpc.WithPropagators(propagation.NewCompositeTextMapPropagator(propagation.TraceContext{}, propagation.Baggage{})),
		otelgrpc.WithMeterProvider(noop.NewMeterProvider()),
	))}
}
