// Package wire holds what the provider side (package sdk) and the host
// side (package sdk/plugin) of the go-plugin connection share without
// importing each other: the handshake, the plugin set, the gRPC options and
// the errors of the connection. Package sdk implements the gRPC services
// and installs them in [Server] and [Client] from its init function;
// package sdk/plugin exports what hosts and harnesses need.
package wire

import (
	"context"
	"errors"
	"fmt"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/go-plugin"
	"google.golang.org/grpc"
)

// ProtocolVersion is the newest provider protocol version; see
// sdk/plugin.ProtocolVersion.
const ProtocolVersion = 2

// PluginName is the key of the provider plugin in go-plugin's plugin set.
const PluginName = "provider"

// Handshake is the go-plugin handshake shared by the host and providers.
var Handshake = plugin.HandshakeConfig{
	// go-plugin uses this only without VersionedPlugins: the oldest
	// version, which every host and provider speaks.
	ProtocolVersion:  1,
	MagicCookieKey:   "OPENHUMAN_PROVIDER",
	MagicCookieValue: "8d1f3c0e6b2a4f59a7c4e2d18b3f6a90",
}

// MaxMessageBytes bounds one gRPC message in either direction.
const MaxMessageBytes = 64 << 20

// GRPCServerOptions are the options of every gRPC server between the host
// and a provider (message size limits).
func GRPCServerOptions() []grpc.ServerOption {
	return []grpc.ServerOption{grpc.MaxRecvMsgSize(MaxMessageBytes), grpc.MaxSendMsgSize(MaxMessageBytes)}
}

// GRPCDialOptions are the options of every gRPC connection between the
// host and a provider (message size limits).
func GRPCDialOptions() []grpc.DialOption {
	return []grpc.DialOption{grpc.WithDefaultCallOptions(
		grpc.MaxCallRecvMsgSize(MaxMessageBytes), grpc.MaxCallSendMsgSize(MaxMessageBytes))}
}

// EnvTraces is the environment variable the host sets to "1" when it
// traces a provider's calls.
const EnvTraces = "OPENHUMAN_OTEL_TRACES"

// ErrUnavailable is wrapped by errors of calls whose connection failed.
var ErrUnavailable = errors.New("plugin connection unavailable")

// ErrPanicked is wrapped by errors of calls whose implementation panicked
// on the other side of the connection.
var ErrPanicked = errors.New("panicked")

// Server registers the provider service for impl (an sdk.Provider) on s;
// package sdk sets it.
var Server func(impl any, log hclog.Logger, broker *plugin.GRPCBroker, s *grpc.Server) error

// Client returns an sdk.Provider that calls the provider over c; package
// sdk sets it.
var Client func(broker *plugin.GRPCBroker, c *grpc.ClientConn) any

// Plugin is the go-plugin [plugin.GRPCPlugin] for providers: on the
// provider side Impl (an sdk.Provider) is served, on the host side
// GRPCClient returns an sdk.Provider.
type Plugin struct {
	plugin.NetRPCUnsupportedPlugin

	// Impl is the provider to serve; nil on the host side.
	Impl any
	// Logger receives the stack of every panic recovered from Impl.
	Logger hclog.Logger
}

// GRPCServer implements [plugin.GRPCPlugin].
func (p *Plugin) GRPCServer(broker *plugin.GRPCBroker, s *grpc.Server) error {
	if p.Impl == nil {
		return fmt.Errorf("no provider implementation to serve")
	}
	return Server(p.Impl, p.Logger, broker, s)
}

// GRPCClient implements [plugin.GRPCPlugin].
func (p *Plugin) GRPCClient(_ context.Context, broker *plugin.GRPCBroker, c *grpc.ClientConn) (any, error) {
	return Client(broker, c), nil
}

// VersionedPlugins returns go-plugin's protocol-version → plugin-set map
// for impl (nil on the host side), offering versions 1 and 2.
func VersionedPlugins(impl any, log hclog.Logger) map[int]plugin.PluginSet {
	return map[int]plugin.PluginSet{
		1: {PluginName: &Plugin{Impl: impl, Logger: log}},
		2: {PluginName: &Plugin{Impl: impl, Logger: log}},
	}
}

var _ plugin.GRPCPlugin = (*Plugin)(nil)
