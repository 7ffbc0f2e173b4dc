package telemetry

import (
	"context"
	"net/http"
	"os"

	"go.opentelemetry.io/contrib/instrumentation/net/http/otelhttp"

	"go.opentelemetry.io/otel/propagation"
)

// Propagator reads and writes W3C Trace Context (traceparent,
// tracestate) and W3C Baggage; [Setup] also installs it as the global
// propagator.
var Propagator propagation.TextMapPropagator = propagation.NewCompositeTextMapPropagator(propagation.TraceContext{}, propagation.Baggage{})

// MetaCarrier reads and writes trace context in an MCP request's
// params._meta (MCP 2025-11-25 basic §_meta): the W3C keys traceparent,
// tracestate and baggage, unprefixed, as the OpenTelemetry semantic
// conventions for MCP ("Context propagation") and SEP-414 ask. Values
// that are not strings read as absent.
type MetaCarrier map[string]any

// Get returns the string value of key, or "".
func (m MetaCarrier) Get(key string) string {
	s, _ := m[key].(string)
	return s
}

// Set stores value under key.
func (m MetaCarrier) Set(key, value string) { m[key] = value }

// Keys lists the keys of m.
func (m MetaCarrier) Keys() []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	return keys
}

// ExtractMeta returns ctx with the remote span context found in meta, an
// MCP request's params._meta, by [Propagator]; ctx itself when meta holds
// none.
func ExtractMeta(ctx context.Context, meta map[string]any) context.Context {
	if len(meta) == 0 {
		return ctx
	}
	return Propagator.Extract(ctx, MetaCarrier(meta))
}

// InjectMeta writes ctx's span context into meta with [Propagator] and
// returns meta, allocated when nil and there is something to write. It
// writes nothing when ctx carries no valid span context.
func InjectMeta(ctx context.Context, meta map[string]any) map[string]any {
	carrier := MetaCarrier{}
	Propagator.Inject(ctx, carrier)
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
// its trace context in the traceparent header, when this process was
// asked to trace ([EnvTraces], which [FromEnv] reads); else it returns
// base. Provider processes use it for their outgoing HTTP (upstream MCP
// servers, model APIs).
func TraceHTTP(base http.RoundTripper) http.RoundTripper {
	if os.Getenv(EnvTraces) != "1" {
		return base
	}
	return TracedHTTP(base)
}

// TracedHTTP wraps base so that each request gets a CLIENT span and
// carries its trace context in the traceparent header, whatever the
// process's environment says: for a provider in the host's process, which
// learns whether to trace from its Configure request's environment.
func TracedHTTP(base http.RoundTripper) http.RoundTripper {
	return otelhttp.NewTransport(base, otelhttp.WithPropagators(Propagator),
		otelhttp.WithSpanNameFormatter(func(_ string, r *http.Request) string { return "HTTP " + r.Method }))
}
