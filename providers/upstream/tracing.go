package upstream

import (
	"context"
	"errors"
	"strconv"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	semconv "go.opentelemetry.io/otel/semconv/v1.41.0"
	"go.opentelemetry.io/otel/trace"

	"github.com/openhuman/openhuman-host/sdk"
	"github.com/openhuman/openhuman-host/sdk/plugin"
)

// tracesEnv is the variable, in the provider's environment, that says
// whether the host traces calls ([plugin.EnvTraces]): when it is "1",
// every request to an upstream server gets a CLIENT span and carries its
// trace context, in params._meta (every transport) and, over Streamable
// HTTP, in the traceparent header too (server.trace).
const tracesEnv = plugin.EnvTraces

// attrServer is the attribute naming the upstream server of a span.
const attrServer = attribute.Key("openhuman.upstream.server")

// traceRequests is the client middleware of [tracesEnv]: a CLIENT span
// named "{mcp.method.name} {target}" per request to the server named
// name, following the OpenTelemetry semantic conventions for MCP, whose
// context is injected into the request's params._meta.
func traceRequests(name string) mcp.Middleware {
	tracer := otel.Tracer("github.com/openhuman/openhuman-host/providers/upstream")
	return func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			params := req.GetParams()
			if params == nil || method == "initialize" || method == "notifications/initialized" {
				return next(ctx, method, req)
			}
			target := ""
			attrs := []attribute.KeyValue{semconv.McpMethodNameKey.String(method), attrServer.String(name)}
			switch p := params.(type) {
			case *mcp.CallToolParams:
				target = p.Name
				attrs = append(attrs, semconv.GenAIToolName(p.Name), semconv.GenAIOperationNameExecuteTool)
			case *mcp.GetPromptParams:
				target = p.Name
				attrs = append(attrs, semconv.GenAIPromptName(p.Name))
			}
			spanName := method
			if target != "" {
				spanName += " " + target
			}
			ctx, span := tracer.Start(ctx, spanName, trace.WithSpanKind(trace.SpanKindClient), trace.WithAttributes(attrs...))
			defer span.End()
			params.SetMeta(sdk.InjectTraceMeta(ctx, params.GetMeta()))
			res, err := next(ctx, method, req)
			var rpcErr *jsonrpc.Error
			switch {
			case errors.As(err, &rpcErr):
				code := strconv.FormatInt(rpcErr.Code, 10)
				span.SetAttributes(semconv.ErrorTypeKey.String(code), semconv.RPCResponseStatusCode(code))
				span.SetStatus(codes.Error, rpcErr.Message)
			case err != nil:
				span.SetAttributes(semconv.ErrorTypeKey.String("_OTHER"))
				span.SetStatus(codes.Error, err.Error())
			default:
				if r, ok := res.(*mcp.CallToolResult); ok && r != nil && r.IsError {
					span.SetAttributes(semconv.ErrorTypeKey.String("tool_error"))
					span.SetStatus(codes.Error, "tool_error")
				}
			}
			return res, err
		}
	}
}
