package sdk

import (
	"context"
	"fmt"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/go-plugin"
	"google.golang.org/grpc"

	"github.com/openhuman/openhuman-host/sdk/internal/providerv1"
)

// ProtocolVersion is the newest provider protocol version this package
// speaks; it also speaks every earlier one (see [VersionedPlugins]).
//
// The provider protocol is the gRPC contract between the host and its
// providers (sdk/proto), numbered 1, 2, ...; go-plugin's handshake settles
// on a version (the handshake line's second field, see
// docs/provider-protocol.md). It is unrelated to the MCP protocol revision
// a client speaks ("2025-11-25", "2026-07-28"), which a provider sees as
// [Caller.ProtocolVersion]. Comments in this module say "provider protocol
// 2" for the former and name MCP revisions by their date.
const ProtocolVersion = 2

// PluginName is the key of the provider plugin in go-plugin's plugin set.
const PluginName = "provider"

// Handshake is the go-plugin handshake shared by the host and providers. The
// magic cookie keeps a provider binary from being run by hand by mistake; it
// is not a security measure.
var Handshake = plugin.HandshakeConfig{
	// go-plugin uses this only without VersionedPlugins: the oldest
	// version, which every host and provider speaks.
	ProtocolVersion:  1,
	MagicCookieKey:   "OPENHUMAN_PROVIDER",
	MagicCookieValue: "8d1f3c0e6b2a4f59a7c4e2d18b3f6a90",
}

// VersionedPlugins returns go-plugin's protocol-version → plugin-set map
// for impl: the provider side passes its implementation, the host side nil.
// Both sides offer versions 1 and 2 and go-plugin's handshake picks the
// highest they share, so a provider written for protocol 1 (in any
// language) still loads, and a provider built with this package still
// runs under a host that speaks only version 1. Version 2 adds RPCs
// (prompts, completion, subscriptions, session events, requests to the
// client, notifications); nothing in version 1 changed.
func VersionedPlugins(impl Provider) map[int]plugin.PluginSet {
	return map[int]plugin.PluginSet{
		1: {PluginName: &GRPCProviderPlugin{Impl: impl}},
		2: {PluginName: &GRPCProviderPlugin{Impl: impl}},
	}
}

// GRPCProviderPlugin is the go-plugin [plugin.GRPCPlugin] for providers. On
// the provider side Impl is served; on the host side GRPCClient returns a
// [Provider] backed by the gRPC connection.
type GRPCProviderPlugin struct {
	plugin.NetRPCUnsupportedPlugin

	// Impl is the provider to serve; nil on the host side.
	Impl Provider
	// Logger receives, on the provider side, the stack of every panic
	// recovered from Impl's methods; nil drops them. [Serve] sets it to
	// its logger.
	Logger hclog.Logger
}

// MaxMessageBytes bounds one gRPC message between the host and a provider
// in either direction, in bytes: 64 MiB, well above the largest tool call
// or result an MCP client can send through the host (a 16 MiB stdio line),
// so the transport is never what refuses an argument. gRPC's own default,
// 4 MiB, would refuse a 1 MB notes_store whose text JSON-escapes to more.
const MaxMessageBytes = 64 << 20

// GRPCServerOptions are the server options the SDK and the host use for
// every gRPC server between them (message size limits).
func GRPCServerOptions() []grpc.ServerOption {
	return []grpc.ServerOption{grpc.MaxRecvMsgSize(MaxMessageBytes), grpc.MaxSendMsgSize(MaxMessageBytes)}
}

// GRPCDialOptions are the dial options the SDK and the host use for every
// gRPC connection between them (message size limits).
func GRPCDialOptions() []grpc.DialOption {
	return []grpc.DialOption{grpc.WithDefaultCallOptions(
		grpc.MaxCallRecvMsgSize(MaxMessageBytes), grpc.MaxCallSendMsgSize(MaxMessageBytes))}
}

// GRPCServer registers the provider service; it implements
// [plugin.GRPCPlugin].
func (p *GRPCProviderPlugin) GRPCServer(broker *plugin.GRPCBroker, s *grpc.Server) error {
	if p.Impl == nil {
		return fmt.Errorf("no provider implementation to serve")
	}
	providerv1.RegisterProviderServer(s, &grpcProviderServer{impl: p.Impl, broker: broker, log: p.Logger})
	return nil
}

// GRPCClient returns a [Provider] that calls the plugin over c; it
// implements [plugin.GRPCPlugin].
func (p *GRPCProviderPlugin) GRPCClient(_ context.Context, broker *plugin.GRPCBroker, c *grpc.ClientConn) (any, error) {
	return &grpcProviderClient{client: providerv1.NewProviderClient(c), broker: broker}, nil
}

var _ plugin.GRPCPlugin = (*GRPCProviderPlugin)(nil)
