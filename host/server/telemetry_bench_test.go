package server

import (
	"context"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
)

// BenchmarkCallTelemetry is one tools/call of a read tool through a
// client session, with telemetry off and on (spans batched to an exporter
// that keeps nothing, metrics collected by a reader nobody reads).
func BenchmarkCallTelemetry(b *testing.B) {
	for _, on := range []bool{false, true} {
		name := "off"
		opts := &Options{Audit: &memAudit{}}
		if on {
			name = "on"
			opts.TracerProvider = sdktrace.NewTracerProvider(sdktrace.WithBatcher(tracetest.NewNoopExporter()))
			opts.MeterProvider = sdkmetric.NewMeterProvider(sdkmetric.WithReader(sdkmetric.NewManualReader()))
		}
		b.Run(name, func(b *testing.B) {
			s, err := New(testCatalog(), map[string]Dispatcher{"fake": defaultProvider()}, opts)
			if err != nil {
				b.Fatal(err)
			}
			cs := connectVersion(b, s, "bench", &mcp.ClientOptions{}, "2025-11-25")
			params := &mcp.CallToolParams{Name: "fake_search", Arguments: map[string]any{"query": "x"}}
			b.ReportAllocs()
			for b.Loop() {
				if _, err := cs.CallTool(context.Background(), params); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
