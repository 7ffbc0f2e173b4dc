package sdk

import (
	"context"
	"testing"

	"go.opentelemetry.io/otel"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
	"google.golang.org/grpc"
	grpccodes "google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
)

func TestTraceUnaryContinuesTheHostsTrace(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	prev := otel.GetTracerProvider()
	otel.SetTracerProvider(sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec)))
	t.Cleanup(func() { otel.SetTracerProvider(prev) })

	const traceID, parentID = "4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7"
	ctx := metadata.NewIncomingContext(context.Background(), metadata.Pairs("traceparent", "00-"+traceID+"-"+parentID+"-01"))
	info := &grpc.UnaryServerInfo{FullMethod: "/openhuman.provider.v1.Provider/CallTool"}
	var inner trace.SpanContext
	_, err := traceUnary(ctx, nil, info, func(ctx context.Context, _ any) (any, error) {
		inner = trace.SpanContextFromContext(ctx)
		return nil, status.Error(grpccodes.NotFound, "no such tool")
	})
	if status.Code(err) != grpccodes.NotFound {
		t.Fatalf("traceUnary returned %v, want the handler's NotFound", err)
	}
	if got := inner.TraceID().String(); got != traceID {
		t.Errorf("the handler's trace = %s, want the host's %s", got, traceID)
	}
	spans := rec.Ended()
	if len(spans) != 1 {
		t.Fatalf("%d spans ended, want 1", len(spans))
	}
	s := spans[0]
	if s.Name() != "openhuman.provider.v1.Provider/CallTool" || s.SpanKind() != trace.SpanKindServer ||
		s.Parent().SpanID().String() != parentID || s.SpanContext().SpanID() != inner.SpanID() {
		t.Errorf("span %q kind %v parent %s, want the CallTool SERVER span under %s that the handler saw", s.Name(), s.SpanKind(), s.Parent().SpanID(), parentID)
	}
	attrs := map[string]string{}
	for _, a := range s.Attributes() {
		attrs[string(a.Key)] = a.Value.String()
	}
	if attrs["rpc.system.name"] != "grpc" || attrs["rpc.method"] != "openhuman.provider.v1.Provider/CallTool" || attrs["rpc.response.status_code"] != "NotFound" {
		t.Errorf("span attributes = %v, want rpc.system.name grpc, rpc.method and status NotFound", attrs)
	}
	if s.Status().Description != "no such tool" {
		t.Errorf("span status = %+v, want the call's error", s.Status())
	}
}

func TestTraceUnaryWithoutTracerProviderKeepsTheContext(t *testing.T) {
	// No tracer provider installed: nothing is recorded, yet the handler's
	// context carries the host's span context for outgoing requests.
	const traceID = "4bf92f3577b34da6a3ce929d0e0e4736"
	ctx := metadata.NewIncomingContext(context.Background(), metadata.Pairs("traceparent", "00-"+traceID+"-00f067aa0ba902b7-01"))
	var inner trace.SpanContext
	if _, err := traceUnary(ctx, nil, &grpc.UnaryServerInfo{FullMethod: "/p.S/M"}, func(ctx context.Context, _ any) (any, error) {
		inner = trace.SpanContextFromContext(ctx)
		return nil, nil
	}); err != nil {
		t.Fatal(err)
	}
	if inner.TraceID().String() != traceID {
		t.Errorf("the handler's trace = %s, want %s", inner.TraceID(), traceID)
	}
}
