// Package plugin is the go-plugin and gRPC side of openhuman-host
// providers that a host, or a harness such as sdktest, needs: the
// handshake, the plugin set that dispenses a provider as an
// [sdk.Provider], the connection's gRPC options and its errors. Provider
// authors need none of it: package sdk's Serve speaks this protocol.
package plugin

import (
	"context"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/go-plugin"
	"google.golang.org/grpc"

	"github.com/openhuman/openhuman-host/sdk"
	"github.com/openhuman/openhuman-host/sdk/internal/wire"
)

// ProtocolVersion is the newest provider protocol version this module
// speaks; it also speaks every earlier one (see [VersionedPlugins]).
//
// The provider protocol is the gRPC contract between the host and its
// providers (sdk/proto), numbered 1, 2, ...; go-plugin's handshake settles
// on a version (the handshake line's second field, see
// docs/provider-protocol.md). It is unrelated to the MCP protocol revision
// a client speaks ("2025-11-25", "2026-07-28"), which a provider sees as
// [sdk.Caller].ProtocolVersion. Comments in this module say "provider
// protocol 2" for the former and name MCP revisions by their date.
const ProtocolVersion = wire.ProtocolVersion

// PluginName is the key of the provider plugin in go-plugin's plugin set.
const PluginName = wire.PluginName

// Handshake is the go-plugin handshake shared by the host and providers. The
// magic cookie (OPENHUMAN_PROVIDER) keeps a provider binary from being run
// by hand by mistake; it is not a security measure.
var Handshake = wire.Handshake

// MaxMessageBytes bounds one gRPC message between the host and a provider
// in either direction, in bytes: 64 MiB, well above the largest tool call
// or result an MCP client can send through the host (a 16 MiB stdio line),
// so the transport is never what refuses an argument. gRPC's own default,
// 4 MiB, would refuse a 1 MB notes_store whose text JSON-escapes to more.
const MaxMessageBytes = wire.MaxMessageBytes

// GRPCServerOptions are the server options the SDK and the host use for
// every gRPC server between them (message size limits).
func GRPCServerOptions() []grpc.ServerOption { return wire.GRPCServerOptions() }

// GRPCDialOptions are the dial options the SDK and the host use for every
// gRPC connection between them (message size limits).
func GRPCDialOptions() []grpc.DialOption { return wire.GRPCDialOptions() }

// EnvTraces is the environment variable the host sets to "1" in a
// provider's environment when it traces its calls with OpenTelemetry
// ([telemetry] traces = true in its config). The host then also sets the
// standard OTEL_EXPORTER_OTLP_ENDPOINT and OTEL_EXPORTER_OTLP_PROTOCOL
// (and passes OTEL_EXPORTER_OTLP_HEADERS on when it has it).
//
// While it is "1", sdk.Serve continues the host's W3C trace context: the
// ctx of every [sdk.Provider] method carries a SERVER span of the host's
// gRPC call (named by the gRPC method, with rpc.system.name and
// rpc.method), recorded with OpenTelemetry's global tracer provider. A
// provider that installs one (otel.SetTracerProvider, with an OTLP
// exporter that reads those variables) before calling Serve exports its
// spans into the host's traces; without one, nothing is recorded and the
// context still reaches outgoing requests that propagate it.
const EnvTraces = wire.EnvTraces

// ErrUnavailable is wrapped by errors from an [sdk.Provider] or [sdk.Host]
// that crosses the connection when the other process cannot be reached,
// for example because it exited: the gRPC connection itself failed
// (codes.Unavailable). The host's own plugins.ErrUnavailable is a
// different error: the host wraps it when it does not even try, because
// the provider is not running (restarting, failed or stopped).
var ErrUnavailable = wire.ErrUnavailable

// ErrPanicked is wrapped by the error of a call whose implementation
// panicked on the other side of the connection. The panic was recovered,
// so that process still serves; the host counts such calls as provider
// failures (see host/plugins).
var ErrPanicked = wire.ErrPanicked

// VersionedPlugins returns go-plugin's protocol-version → plugin-set map
// for impl: the provider side passes its implementation, the host side nil.
// Both sides offer versions 1 and 2 and go-plugin's handshake picks the
// highest they share, so a provider written for protocol 1 (in any
// language) still loads, and a provider built with this module still
// runs under a host that speaks only version 1. Version 2 adds RPCs
// (prompts, completion, subscriptions, session events, requests to the
// client, notifications); nothing in version 1 changed.
func VersionedPlugins(impl sdk.Provider) map[int]plugin.PluginSet {
	return map[int]plugin.PluginSet{
		1: {PluginName: &GRPCProviderPlugin{Impl: impl}},
		2: {PluginName: &GRPCProviderPlugin{Impl: impl}},
	}
}

// GRPCProviderPlugin is the go-plugin [plugin.GRPCPlugin] for providers. On
// the provider side Impl is served; on the host side GRPCClient returns an
// [sdk.Provider] backed by the gRPC connection, which also implements the
// optional interfaces of provider protocol 2 ([sdk.PromptProvider], ...),
// answering with errors wrapping [sdk.ErrNotImplemented] when the provider
// does not.
type GRPCProviderPlugin struct {
	plugin.NetRPCUnsupportedPlugin

	// Impl is the provider to serve; nil on the host side.
	Impl sdk.Provider
	// Logger receives, on the provider side, the stack of every panic
	// recovered from Impl's methods; nil drops them.
	Logger hclog.Logger
}

// GRPCServer registers the provider service; it implements
// [plugin.GRPCPlugin]. It fails when Impl is nil.
func (p *GRPCProviderPlugin) GRPCServer(broker *plugin.GRPCBroker, s *grpc.Server) error {
	w := &wire.Plugin{Logger: p.Logger}
	if p.Impl != nil {
		w.Impl = p.Impl
	}
	return w.GRPCServer(broker, s)
}

// GRPCClient returns an [sdk.Provider] that calls the plugin over c; it
// implements [plugin.GRPCPlugin].
func (p *GRPCProviderPlugin) GRPCClient(ctx context.Context, broker *plugin.GRPCBroker, c *grpc.ClientConn) (any, error) {
	return (&wire.Plugin{}).GRPCClient(ctx, broker, c)
}

var _ plugin.GRPCPlugin = (*GRPCProviderPlugin)(nil)

// EnvReattach is the environment variable through which a host uses
// providers that are running already, such as one started under a
// debugger with sdk.WithDebug: a JSON object that maps each provider's
// name (its [providers.<name>] table) to go-plugin's reattach config, in
// the form terraform's TF_REATTACH_PROVIDERS uses:
//
//	{"hello": {"Protocol": "grpc", "ProtocolVersion": 2, "Pid": 4242, "Test": true,
//	  "Addr": {"Network": "unix", "String": "/tmp/plugin123456"}}}
//
// A provider in debug mode prints the whole assignment to stderr.
const EnvReattach = wire.EnvReattach

// ParseReattach reads a value of [EnvReattach] into go-plugin's reattach
// configs by provider name. It fails, naming the provider, on a value that
// is not such a JSON object, a protocol other than grpc, or an address
// whose network is neither unix nor tcp.
func ParseReattach(value string) (map[string]*plugin.ReattachConfig, error) {
	return wire.ParseReattach(value)
}
