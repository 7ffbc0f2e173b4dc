package server

import (
	"context"
	"strings"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/openhuman/openhuman-host/host/policy"
	"github.com/openhuman/openhuman-host/sdk"
)

// TestTelemetry: a tools/call continues the trace context of its
// params._meta in a SERVER span named after the method and tool, which
// is also the tool's execute_tool span: it carries the provider and the
// policy's decision, and the provider is called within it; the call
// counter and the semantic-convention histogram count each call by
// decision. Arguments appear in no span.
func TestTelemetry(t *testing.T) {
	t.Parallel()
	for _, v := range []string{"2025-11-25", "2026-07-28"} {
		t.Run(v, func(t *testing.T) {
			t.Parallel()
			spans := tracetest.NewSpanRecorder()
			tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(spans))
			reader := sdkmetric.NewManualReader()
			mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
			pol := testPolicy(t, policy.Options{Level: policy.ReadOnly})
			var (
				mu         sync.Mutex
				providerSC trace.SpanContext
			)
			prov := defaultProvider()
			inner := prov.call
			prov.call = func(ctx context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
				mu.Lock()
				providerSC = trace.SpanContextFromContext(ctx)
				mu.Unlock()
				return inner(ctx, req)
			}
			s, err := New(testCatalog(), map[string]Dispatcher{"fake": prov}, &Options{
				Policy: pol, Audit: &memAudit{}, TracerProvider: tp, MeterProvider: mp,
			})
			if err != nil {
				t.Fatal(err)
			}
			cs := connectVersion(t, s, "Claude Desktop", &mcp.ClientOptions{}, v)
			const traceID = "4bf92f3577b34da6a3ce929d0e0e4736"
			res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{
				Name: "fake_search", Arguments: map[string]any{"query": "secret words"},
				Meta: mcp.Meta{"traceparent": "00-" + traceID + "-00f067aa0ba902b7-01"},
			})
			if err != nil || res.IsError {
				t.Fatalf("fake_search = %+v, %v", res, err)
			}
			res, err = cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "fake_store", Arguments: map[string]any{"title": "t"}})
			if err != nil || !res.IsError {
				t.Fatalf("fake_store under readonly = %+v, %v; want a refusal", res, err)
			}
			// A name the server does not serve names neither a span nor
			// a series: it is the client's own text.
			if _, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "no_such_tool_4711", Arguments: map[string]any{}}); err == nil {
				t.Fatalf("an unknown tool was called")
			}

			byName := map[string]sdktrace.ReadOnlySpan{}
			for _, sp := range spans.Ended() {
				byName[sp.Name()] = sp
				for _, kv := range sp.Attributes() {
					if kv.Value.Type() == attribute.STRING && strings.Contains(kv.Value.AsString(), "secret words") {
						t.Errorf("span %s carries the arguments in %s", sp.Name(), kv.Key)
					}
				}
			}
			call, ok := byName["tools/call fake_search"]
			if !ok {
				t.Fatalf("no tools/call fake_search span among %v", spanNames(spans.Ended()))
			}
			if got := call.SpanContext().TraceID().String(); got != traceID || call.Parent().SpanID().String() != "00f067aa0ba902b7" || call.SpanKind() != trace.SpanKindServer {
				t.Errorf("tools/call span: trace %s, parent %s, kind %v; want the client's trace and span, kind server", got, call.Parent().SpanID(), call.SpanKind())
			}
			wantAttrs(t, call, map[string]string{"mcp.method.name": "tools/call", "gen_ai.tool.name": "fake_search",
				"gen_ai.operation.name": "execute_tool", "network.transport": "pipe", "mcp.protocol.version": v,
				"openhuman.provider": "fake", "openhuman.decision": "allowed"})
			for name := range byName {
				if strings.HasPrefix(name, "execute_tool") {
					t.Errorf("a client's call has a span %s besides its tools/call span", name)
				}
			}
			mu.Lock()
			if providerSC.SpanID() != call.SpanContext().SpanID() {
				t.Errorf("the provider was called in span %s, want the tools/call span %s", providerSC.SpanID(), call.SpanContext().SpanID())
			}
			mu.Unlock()
			wantAttrs(t, byName["tools/call fake_store"], map[string]string{"openhuman.decision": "denied:readonly", "error.type": "tool_error"})

			var rm metricdata.ResourceMetrics
			if err := reader.Collect(t.Context(), &rm); err != nil {
				t.Fatal(err)
			}
			calls := map[string]int64{}
			ops := uint64(0)
			for _, sm := range rm.ScopeMetrics {
				for _, m := range sm.Metrics {
					switch m.Name {
					case "openhuman.tool.calls":
						for _, dp := range m.Data.(metricdata.Sum[int64]).DataPoints {
							tool, _ := dp.Attributes.Value("gen_ai.tool.name")
							dec, _ := dp.Attributes.Value("openhuman.decision")
							calls[tool.AsString()+" "+dec.AsString()] += dp.Value
						}
					case "mcp.server.operation.duration":
						for _, dp := range m.Data.(metricdata.Histogram[float64]).DataPoints {
							if tool, _ := dp.Attributes.Value("gen_ai.tool.name"); strings.Contains(tool.AsString(), "4711") {
								t.Errorf("a series is labelled with an unknown tool: %v", dp.Attributes)
							}
							if method, _ := dp.Attributes.Value("mcp.method.name"); method.AsString() == "tools/call" {
								ops += dp.Count
							}
						}
					}
				}
			}
			if calls["fake_search allowed"] != 1 || calls["fake_store denied:readonly"] != 1 || len(calls) != 2 {
				t.Errorf("openhuman.tool.calls = %v, want one allowed fake_search and one denied:readonly fake_store", calls)
			}
			if ops != 3 {
				t.Errorf("mcp.server.operation.duration counts %d tools/call, want 3", ops)
			}
			for _, sp := range spans.Ended() {
				if strings.Contains(sp.Name(), "4711") {
					t.Errorf("a span is named after an unknown tool: %s", sp.Name())
				}
			}
			if _, ok := byName["tools/call"]; !ok {
				t.Errorf("no span named tools/call for the unknown tool among %v", spanNames(spans.Ended()))
			}
		})
	}
}

// A server without providers records nothing and adds no middleware.
func TestTelemetryOff(t *testing.T) {
	t.Parallel()
	s := newFakeServer(t, nil)
	if s.tel != nil {
		t.Errorf("telemetry is set up without providers")
	}
}

func wantAttrs(t *testing.T, sp sdktrace.ReadOnlySpan, want map[string]string) {
	t.Helper()
	if sp == nil {
		t.Errorf("no span")
		return
	}
	got := map[string]string{}
	for _, kv := range sp.Attributes() {
		got[string(kv.Key)] = kv.Value.String()
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("span %s: %s = %q, want %q (all: %v)", sp.Name(), k, got[k], v, got)
		}
	}
}

func spanNames(spans []sdktrace.ReadOnlySpan) []string {
	var out []string
	for _, s := range spans {
		out = append(out, s.Name())
	}
	return out
}

// A call that is not a client's request of its own (one a provider makes
// through the host) gets an execute_tool span.
func TestTelemetryNestedCall(t *testing.T) {
	t.Parallel()
	spans := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(spans))
	s := newFakeServer(t, &Options{TracerProvider: tp})
	res, err := s.Call(t.Context(), Call{Tool: "fake_search", Arguments: []byte(`{"query":"x"}`), Caller: sdk.Caller{SourceType: "mcp:x/agent:a", Depth: 1}})
	if err != nil || res.IsError {
		t.Fatalf("Call = %+v, %v", res, err)
	}
	ended := spans.Ended()
	if len(ended) != 1 || ended[0].Name() != "execute_tool fake_search" || ended[0].SpanKind() != trace.SpanKindInternal {
		t.Fatalf("spans = %v, want one INTERNAL execute_tool fake_search", spanNames(ended))
	}
	wantAttrs(t, ended[0], map[string]string{"openhuman.provider": "fake", "openhuman.decision": "allowed", "gen_ai.tool.name": "fake_search"})
}
