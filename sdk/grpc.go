package sdk

import (
	"fmt"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/go-plugin"
	"google.golang.org/grpc"

	"github.com/openhuman/openhuman-host/sdk/internal/providerv1"
	"github.com/openhuman/openhuman-host/sdk/internal/wire"
)

// The gRPC services of the provider protocol are implemented in this
// package, next to the types they carry; sdk/plugin hands them to hosts
// through the hooks of package wire, set here.
func init() {
	wire.Server = func(impl any, log hclog.Logger, broker *plugin.GRPCBroker, s *grpc.Server) error {
		p, ok := impl.(Provider)
		if !ok {
			return fmt.Errorf("%T is not an sdk.Provider", impl)
		}
		providerv1.RegisterProviderServer(s, &grpcProviderServer{impl: p, broker: broker, log: log})
		return nil
	}
	wire.Client = func(broker *plugin.GRPCBroker, c *grpc.ClientConn) any {
		return &grpcProviderClient{client: providerv1.NewProviderClient(c), broker: broker}
	}
}
