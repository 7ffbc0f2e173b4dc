package sdk

import (
	"context"
	"os"
	"strings"
	"sync"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/codes"
	semconv "go.opentelemetry.io/otel/semconv/v1.41.0"
	"go.opentelemetry.io/otel/trace"
	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/openhuman/openhuman-host/sdk/internal/wire"
)

// tracingName names the SDK's tracer.
const tracingName = "github.com/openhuman/openhuman-host/sdk"

// callTracer is the SDK's tracer from OpenTelemetry's global tracer
// provider, which forwards to the provider a program installs later.
var callTracer = sync.OnceValue(func() trace.Tracer { return otel.Tracer(tracingName) })

// tracingServerOptions are the gRPC server options that continue the
// host's trace context: none unless the host traces (sdk/plugin.EnvTraces). They
// are interceptors rather than a stats handler: one span per call and
// nothing per message, which is all a provider's calls need.
func tracingServerOptions() []grpc.ServerOption {
	if os.Getenv(wire.EnvTraces) != "1" {
		return nil
	}
	return []grpc.ServerOption{grpc.ChainUnaryInterceptor(traceUnary), grpc.ChainStreamInterceptor(traceStream)}
}

// traceUnary runs a unary call inside its SERVER span.
func traceUnary(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
	ctx, span := startCallSpan(ctx, info.FullMethod)
	resp, err := handler(ctx, req)
	endCallSpan(span, err)
	return resp, err
}

// traceStream runs a streaming call inside its SERVER span.
func traceStream(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
	ctx, span := startCallSpan(ss.Context(), info.FullMethod)
	err := handler(srv, &tracedStream{ServerStream: ss, ctx: ctx})
	endCallSpan(span, err)
	return err
}

// startCallSpan starts the SERVER span of one gRPC call, the child of the
// trace context (W3C trace context and baggage, by [TracePropagator]) the
// host puts in the call's incoming metadata.
func startCallSpan(ctx context.Context, fullMethod string) (context.Context, trace.Span) {
	if md, ok := metadata.FromIncomingContext(ctx); ok {
		ctx = tracePropagator.Extract(ctx, metadataCarrier(md))
	}
	method := strings.TrimPrefix(fullMethod, "/")
	return callTracer().Start(ctx, method, trace.WithSpanKind(trace.SpanKindServer),
		trace.WithAttributes(semconv.RPCSystemNameGRPC, semconv.RPCMethod(method)))
}

// endCallSpan ends span with the call's gRPC status.
func endCallSpan(span trace.Span, err error) {
	if err != nil && span.IsRecording() {
		s := status.Convert(err)
		span.SetAttributes(semconv.RPCResponseStatusCode(s.Code().String()))
		span.SetStatus(codes.Error, s.Message())
	}
	span.End()
}

// tracedStream is a server stream whose context carries the call's span.
type tracedStream struct {
	grpc.ServerStream
	ctx context.Context
}

func (s *tracedStream) Context() context.Context { return s.ctx }

// metadataCarrier reads trace context from gRPC metadata, whose keys are
// lower case.
type metadataCarrier metadata.MD

func (m metadataCarrier) Get(key string) string {
	if v := metadata.MD(m).Get(key); len(v) > 0 {
		return v[0]
	}
	return ""
}

func (m metadataCarrier) Set(key, value string) { metadata.MD(m).Set(key, value) }

func (m metadataCarrier) Keys() []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	return keys
}
