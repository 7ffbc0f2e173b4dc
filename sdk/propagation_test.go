package sdk_test

import (
	"testing"

	"go.opentelemetry.io/otel/trace"

	"github.com/openhuman/openhuman-host/sdk"
)

// Trace context goes through params._meta and back.
func TestTraceMetaRoundTrip(t *testing.T) {
	t.Parallel()
	const tp = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	ctx := sdk.ExtractTraceMeta(t.Context(), map[string]any{"traceparent": tp, "other": 1})
	sc := trace.SpanContextFromContext(ctx)
	if sc.TraceID().String() != "4bf92f3577b34da6a3ce929d0e0e4736" || sc.SpanID().String() != "00f067aa0ba902b7" || !sc.IsRemote() {
		t.Fatalf("ExtractTraceMeta = %v, want trace 4bf92f3577b34da6a3ce929d0e0e4736, span 00f067aa0ba902b7, remote", sc)
	}
	meta := sdk.InjectTraceMeta(ctx, map[string]any{"k": "v"})
	if meta["traceparent"] != tp || meta["k"] != "v" || len(meta) != 2 {
		t.Errorf("InjectTraceMeta = %v, want k and traceparent %s", meta, tp)
	}
	if m := sdk.InjectTraceMeta(t.Context(), nil); m != nil {
		t.Errorf("InjectTraceMeta without a span = %v, want nil", m)
	}
	if ctx := sdk.ExtractTraceMeta(t.Context(), map[string]any{"traceparent": 7}); trace.SpanContextFromContext(ctx).IsValid() {
		t.Errorf("a non-string traceparent was read")
	}
}
