package sdk

import (
	"context"
	"net/http"
	"os"

	"go.opentelemetry.io/contrib/instrumentation/net/http/otelhttp"
	"go.opentelemetry.io/otel/propagation"

	"github.com/openhuman/openhuman-host/sdk/internal/wire"
)

// tracePropagator is the one propagator behind [TracePropagator].
var tracePropagator propagation.TextMapPropagator = propagation.NewCompositeTextMapPropagator(propagation.TraceContext{}, propagation.Baggage{})

// TracePropagator returns the propagator the host and the SDK carry trace
// context with: W3C Trace Context (the traceparent and tracestate keys)
// and W3C Baggage (baggage). The SDK reads it from the gRPC metadata of
// each call the host makes, and [InjectTraceMeta], [ExtractTraceMeta] and
// [TraceHTTP] use it; a provider that passes trace context through some
// other carrier of its own uses it too, so that every hop agrees. It is
// safe for concurrent use.
func TracePropagator() propagation.TextMapPropagator { return tracePropagator }

// MetaCarrier reads and writes trace context in an MCP request's
// params._meta (MCP 2025-11-25 basic §_meta): the W3C keys traceparent,
// tracestate and baggage, unprefixed, as the OpenTelemetry semantic
// conventions for MCP ("Context propagation") and SEP-414 ask. Values
// that are not strings read as absent. It is a
// propagation.TextMapCarrier for [TracePropagator].
type MetaCarrier map[string]any

// Get returns the string value of key, or "" when key is absent or its
// value is not a string.
func (m MetaCarrier) Get(key string) string {
	s, _ := m[key].(string)
	return s
}

// Set stores value under key.
func (m MetaCarrier) Set(key, value string) { m[key] = value }

// Keys lists the keys of m, in no particular order.
func (m MetaCarrier) Keys() []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	return keys
}

// ExtractTraceMeta returns ctx with the remote span context (and baggage)
// found in meta, an MCP request's params._meta, by [TracePropagator]; ctx
// itself when meta holds none. A server of MCP uses it to continue its
// client's trace.
func ExtractTraceMeta(ctx context.Context, meta map[string]any) context.Context {
	if len(meta) == 0 {
		return ctx
	}
	return tracePropagator.Extract(ctx, MetaCarrier(meta))
}

// InjectTraceMeta writes ctx's span context (and baggage) into meta, an
// MCP request's params._meta, with [TracePropagator], and returns meta:
// allocated when nil and there is something to write, else meta itself.
// It writes nothing when ctx carries no valid span context or baggage. A
// provider that calls an MCP server on a tool call's behalf uses it, so
// that the server's spans join the host's trace.
func InjectTraceMeta(ctx context.Context, meta map[string]any) map[string]any {
	carrier := MetaCarrier{}
	tracePropagator.Inject(ctx, carrier)
	if len(carrier) == 0 {
		return meta
	}
	if meta == nil {
		meta = map[string]any{}
	}
	for k, v := range carrier {
		meta[k] = v
	}
	return meta
}

// TraceHTTP wraps base so that each request gets a CLIENT span and carries
// its trace context in the traceparent header, when the host asked this
// process to trace (it sets sdk/plugin.EnvTraces to "1" in the provider's
// environment); else it returns base unchanged. A provider uses it for
// its outgoing HTTP (servers it relays to, model APIs), with spans going
// to OpenTelemetry's global tracer provider, which the provider sets up.
func TraceHTTP(base http.RoundTripper) http.RoundTripper {
	if os.Getenv(wire.EnvTraces) != "1" {
		return base
	}
	return TracedHTTP(base)
}

// TracedHTTP wraps base as [TraceHTTP] does, whatever the process's
// environment says: for a provider that learns whether to trace some
// other way, such as one the host runs in its own process, which reads
// its Configure request's environment. A nil base stands for
// http.DefaultTransport.
func TracedHTTP(base http.RoundTripper) http.RoundTripper {
	return otelhttp.NewTransport(base, otelhttp.WithPropagators(tracePropagator),
		otelhttp.WithSpanNameFormatter(func(_ string, r *http.Request) string { return "HTTP " + r.Method }))
}
