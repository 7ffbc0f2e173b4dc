package server

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/metric"
	semconv "go.opentelemetry.io/otel/semconv/v1.41.0"
	"go.opentelemetry.io/otel/semconv/v1.41.0/mcpconv"
	"go.opentelemetry.io/otel/trace"

	"github.com/openhuman/openhuman-host/sdk"
)

// instrumentationName names the host's tracer and meter.
const instrumentationName = "github.com/openhuman/openhuman-host/host/server"

// Attribute keys of the host's own, for what the semantic conventions do
// not name: the provider that serves a tool and the policy's decision
// (the audit log's decision column: "allowed", "denied:readonly", ...).
const (
	attrProvider = attribute.Key("openhuman.provider")
	attrDecision = attribute.Key("openhuman.decision")
	attrProfile  = attribute.Key("openhuman.profile")
)

// serverTelemetry holds the server's tracer and instruments; nil when
// neither traces nor metrics are on, and each part nil when its signal is
// off.
type serverTelemetry struct {
	tracer trace.Tracer
	// operation is mcp.server.operation.duration (s), by method, tool,
	// error type, transport and protocol version.
	operation *mcpconv.ServerOperationDuration
	// session is mcp.server.session.duration (s).
	session *mcpconv.ServerSessionDuration
	// calls counts tools/call pipeline runs (openhuman.tool.calls), and
	// callDuration times them (openhuman.tool.call.duration, s), by tool,
	// provider, decision and error type.
	calls        metric.Int64Counter
	callDuration metric.Float64Histogram
	// live is the number of open sessions (openhuman.sessions).
	live atomic.Int64
	// sets caches the attribute sets of the metrics by what they are
	// made of; every part comes from a bounded set (served tool names,
	// decisions, known methods and protocol versions), so it stays small.
	setsMu sync.RWMutex
	sets   map[seriesKey]metric.MeasurementOption
}

// seriesKey identifies one attribute set of the server's metrics: the
// instrument's kind and the values the set is made of.
type seriesKey struct {
	kind               byte // 'o' for mcp.server.operation.duration, 'c' for the tool call metrics
	v1, v2, v3, v4, v5 string
}

// measurement returns the cached option of the attribute set attrs, which
// key identifies.
func (t *serverTelemetry) measurement(key seriesKey, attrs func() []attribute.KeyValue) metric.MeasurementOption {
	t.setsMu.RLock()
	o, ok := t.sets[key]
	t.setsMu.RUnlock()
	if ok {
		return o
	}
	o = metric.WithAttributeSet(attribute.NewSet(attrs()...))
	t.setsMu.Lock()
	t.sets[key] = o
	t.setsMu.Unlock()
	return o
}

// knownVersions are the MCP protocol versions recorded as they are; a
// client that names another is recorded as "_OTHER", so that what a
// client sends cannot grow the number of series.
var knownVersions = map[string]bool{"2024-11-05": true, "2025-03-26": true, "2025-06-18": true, "2025-11-25": true, "2026-07-28": true}

// newServerTelemetry builds the server's tracer and instruments; nil
// providers turn their signal off.
func newServerTelemetry(tp trace.TracerProvider, mp metric.MeterProvider) (*serverTelemetry, error) {
	if tp == nil && mp == nil {
		return nil, nil
	}
	t := &serverTelemetry{sets: map[seriesKey]metric.MeasurementOption{}}
	if tp != nil {
		t.tracer = tp.Tracer(instrumentationName)
	}
	if mp == nil {
		return t, nil
	}
	m := mp.Meter(instrumentationName)
	op, err := mcpconv.NewServerOperationDuration(m)
	if err != nil {
		return nil, err
	}
	sess, err := mcpconv.NewServerSessionDuration(m)
	if err != nil {
		return nil, err
	}
	t.operation, t.session = &op, &sess
	if t.calls, err = m.Int64Counter("openhuman.tool.calls", metric.WithUnit("{call}"),
		metric.WithDescription("Tool calls through the host's pipeline (validation, policy, dispatch, audit), by tool, provider and decision.")); err != nil {
		return nil, err
	}
	if t.callDuration, err = m.Float64Histogram("openhuman.tool.call.duration", metric.WithUnit("s"),
		metric.WithDescription("Duration of tool calls through the host's pipeline."),
		metric.WithExplicitBucketBoundaries(0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300)); err != nil {
		return nil, err
	}
	if _, err = m.Int64ObservableUpDownCounter("openhuman.sessions", metric.WithUnit("{session}"),
		metric.WithDescription("MCP sessions open now."),
		metric.WithInt64Callback(func(_ context.Context, o metric.Int64Observer) error {
			o.Observe(t.live.Load())
			return nil
		})); err != nil {
		return nil, err
	}
	return t, nil
}

// telemetryMiddleware traces and times every MCP request the server
// receives: a SERVER span named "{mcp.method.name} {target}" (the tool or
// prompt) with the attributes of the OpenTelemetry semantic conventions
// for MCP, whose parent is the trace context of the request's
// params._meta, else of its HTTP headers; and
// mcp.server.operation.duration. Arguments and results are never
// recorded.
func (s *Server) telemetryMiddleware(next mcp.MethodHandler) mcp.MethodHandler {
	t := s.tel
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		start := time.Now()
		target := ""
		isCall := false
		switch p := req.GetParams().(type) {
		case *mcp.CallToolParamsRaw:
			if p != nil {
				target, isCall = p.Name, method == "tools/call"
			}
		case *mcp.GetPromptParams:
			if p != nil {
				target = p.Name
			}
		}
		transport := semconv.NetworkTransportPipe
		var header map[string][]string
		if extra := req.GetExtra(); extra != nil && extra.Header != nil {
			transport, header = semconv.NetworkTransportTCP, extra.Header
		}
		version := ""
		if cr, ok := req.(clientRequest); ok {
			version = cr.ProtocolVersion()
		}
		if version != "" && !knownVersions[version] {
			version = "_OTHER"
		}
		if target != "" && !s.knownTarget(method, target) {
			// A name the server does not serve is the client's own
			// text: it names neither the span nor a series.
			target, isCall = "", false
		}
		attrs := []attribute.KeyValue{semconv.McpMethodNameKey.String(method), transport}
		if version != "" {
			attrs = append(attrs, semconv.McpProtocolVersion(version))
		}
		if target != "" {
			if strings.HasPrefix(method, "prompts/") {
				attrs = append(attrs, semconv.GenAIPromptName(target))
			} else {
				attrs = append(attrs, semconv.GenAIToolName(target))
			}
		}
		if isCall {
			attrs = append(attrs, semconv.GenAIOperationNameExecuteTool)
		}
		var span trace.Span
		if t.tracer != nil {
			parent := ctx
			if p := req.GetParams(); p != nil {
				parent = sdk.ExtractTraceMeta(ctx, p.GetMeta())
			}
			if !trace.SpanContextFromContext(parent).IsValid() && header != nil {
				parent = sdk.TracePropagator().Extract(ctx, headerCarrier(header))
			}
			name := method
			if target != "" {
				name += " " + target
			}
			ctx, span = t.tracer.Start(parent, name, trace.WithSpanKind(trace.SpanKindServer), trace.WithAttributes(attrs...))
			if isCall {
				ctx = context.WithValue(ctx, requestSpanKey{}, requestSpan{span: span, tool: target})
			}
		}
		res, err := next(ctx, method, req)
		errType := ""
		var rpcErr *jsonrpc.Error
		switch {
		case errors.As(err, &rpcErr):
			errType = strconv.FormatInt(rpcErr.Code, 10)
		case err != nil:
			errType = "_OTHER"
		case isCall:
			if r, ok := res.(*mcp.CallToolResult); ok && r != nil && r.IsError {
				errType = "tool_error"
			}
		}
		if errType != "" {
			attrs = append(attrs, semconv.ErrorTypeKey.String(errType))
		}
		if span != nil {
			if errType != "" {
				if rpcErr != nil {
					span.SetAttributes(semconv.ErrorTypeKey.String(errType), semconv.RPCResponseStatusCode(errType))
				} else {
					span.SetAttributes(semconv.ErrorTypeKey.String(errType))
				}
				msg := errType
				if err != nil {
					msg = err.Error()
				}
				span.SetStatus(codes.Error, msg)
			}
			span.End()
		}
		if t.operation != nil {
			key := seriesKey{'o', method, target, version, errType, transport.Value.AsString()}
			t.operation.Inst().Record(ctx, time.Since(start).Seconds(), t.measurement(key, func() []attribute.KeyValue { return attrs }))
		}
		return res, err
	}
}

// knownTarget reports whether name is a tool (or, for prompts/ methods, a
// prompt) the server serves, under its advertised or declared name.
func (s *Server) knownTarget(method, name string) bool {
	v := s.view.Load()
	if strings.HasPrefix(method, "prompts/") {
		_, ok := v.prompt(name)
		return ok
	}
	if isMetaTool(name) {
		return true
	}
	_, ok := v.tool(name)
	return ok
}

// headerCarrier reads trace context from HTTP headers.
type headerCarrier map[string][]string

func (h headerCarrier) Get(key string) string {
	for k, v := range h {
		if strings.EqualFold(k, key) && len(v) > 0 {
			return v[0]
		}
	}
	return ""
}

func (h headerCarrier) Set(string, string) {}

func (h headerCarrier) Keys() []string {
	keys := make([]string, 0, len(h))
	for k := range h {
		keys = append(keys, k)
	}
	return keys
}

// requestSpanKey marks the context of a tools/call request with the
// request's SERVER span and the tool it names.
type requestSpanKey struct{}

// requestSpan is the value under requestSpanKey.
type requestSpan struct {
	span trace.Span
	tool string
}

// startCall traces one run of the tools/call pipeline; end closes it and
// counts the call. A client's tools/call already has its SERVER span,
// which the semantic conventions make the tool's execute_tool span too:
// it gets the provider and the decision. Any other run (a call a provider
// makes through the host, a tool called through tool_call) gets an
// INTERNAL span "execute_tool {tool}" of its own.
func (s *Server) startCall(ctx context.Context, tool, provider string) (context.Context, func(rec *callOutcome)) {
	t := s.tel
	if t == nil {
		return ctx, func(*callOutcome) {}
	}
	start := time.Now()
	var span trace.Span
	owned := false
	if rs, ok := ctx.Value(requestSpanKey{}).(requestSpan); ok && rs.span != nil && rs.tool == tool {
		span = rs.span
		// Calls the provider makes within this one are not this request.
		ctx = context.WithValue(ctx, requestSpanKey{}, requestSpan{})
	} else if t.tracer != nil {
		ctx, span = t.tracer.Start(ctx, "execute_tool "+tool, trace.WithSpanKind(trace.SpanKindInternal),
			trace.WithAttributes(semconv.GenAIOperationNameExecuteTool, semconv.GenAIToolName(tool)))
		owned = true
	}
	return ctx, func(o *callOutcome) {
		if span != nil {
			if o.profile != "" {
				span.SetAttributes(attrProvider.String(provider), attrDecision.String(o.decision), attrProfile.String(o.profile))
			} else {
				span.SetAttributes(attrProvider.String(provider), attrDecision.String(o.decision))
			}
			if owned {
				if o.isError {
					span.SetAttributes(semconv.ErrorTypeKey.String("tool_error"))
					span.SetStatus(codes.Error, o.decision)
				}
				span.End()
			}
		}
		if t.calls != nil {
			key := seriesKey{'c', tool, provider, o.decision, strconv.FormatBool(o.isError), ""}
			opt := t.measurement(key, func() []attribute.KeyValue {
				attrs := []attribute.KeyValue{semconv.GenAIToolName(tool), attrProvider.String(provider), attrDecision.String(o.decision)}
				if o.isError {
					attrs = append(attrs, semconv.ErrorTypeKey.String("tool_error"))
				}
				return attrs
			})
			t.calls.Add(ctx, 1, opt)
			t.callDuration.Record(ctx, time.Since(start).Seconds(), opt)
		}
	}
}

// callOutcome is what the end of a pipeline run reports to telemetry.
type callOutcome struct {
	decision string
	profile  string
	isError  bool
}

// sessionOpened and sessionClosed keep the open-session count and time
// sessions (mcp.server.session.duration).
func (s *Server) sessionOpened() {
	if s.tel != nil {
		s.tel.live.Add(1)
	}
}

func (s *Server) sessionEnded(opened time.Time, version string, transport attribute.KeyValue) {
	t := s.tel
	if t == nil {
		return
	}
	t.live.Add(-1)
	if t.session != nil {
		attrs := []attribute.KeyValue{transport}
		if version != "" && !knownVersions[version] {
			version = "_OTHER"
		}
		if version != "" {
			attrs = append(attrs, semconv.McpProtocolVersion(version))
		}
		t.session.Inst().Record(context.Background(), time.Since(opened).Seconds(), metric.WithAttributes(attrs...))
	}
}

// sessionTransport is network.transport of a session: stdio sessions have
// no id ("pipe"), Streamable HTTP ones do ("tcp").
func sessionTransport(ss *mcp.ServerSession) attribute.KeyValue {
	if ss.ID() == "" {
		return semconv.NetworkTransportPipe
	}
	return semconv.NetworkTransportTCP
}
