package wire

import (
	"encoding/json"
	"fmt"
	"net"

	"github.com/hashicorp/go-plugin"
)

// EnvReattach is the environment variable through which a host finds
// providers that run already, under a debugger: a JSON object of
// Reattach by provider name.
const EnvReattach = "OPENHUMAN_REATTACH_PROVIDERS"

// EnvDebug is the environment variable that makes sdk.Serve serve in
// debug mode, for the provider name it holds.
const EnvDebug = "OPENHUMAN_PROVIDER_DEBUG"

// Reattach is the JSON form of go-plugin's ReattachConfig, as
// terraform's TF_REATTACH_PROVIDERS writes it.
type Reattach struct {
	Protocol        string
	ProtocolVersion int
	Pid             int
	Test            bool
	Addr            struct{ Network, String string }
}

// ReattachOf is the JSON form of rc.
func ReattachOf(rc *plugin.ReattachConfig) Reattach {
	r := Reattach{Protocol: string(rc.Protocol), ProtocolVersion: rc.ProtocolVersion, Pid: rc.Pid, Test: rc.Test}
	r.Addr.Network, r.Addr.String = rc.Addr.Network(), rc.Addr.String()
	return r
}

// Config turns r back into go-plugin's ReattachConfig.
func (r Reattach) Config() (*plugin.ReattachConfig, error) {
	var addr net.Addr
	var err error
	switch r.Addr.Network {
	case "unix":
		addr, err = net.ResolveUnixAddr("unix", r.Addr.String)
	case "tcp":
		addr, err = net.ResolveTCPAddr("tcp", r.Addr.String)
	default:
		err = fmt.Errorf("address network %q is neither unix nor tcp", r.Addr.Network)
	}
	if err != nil {
		return nil, err
	}
	if r.Protocol != string(plugin.ProtocolGRPC) {
		return nil, fmt.Errorf("protocol %q is not grpc", r.Protocol)
	}
	return &plugin.ReattachConfig{Protocol: plugin.ProtocolGRPC, ProtocolVersion: r.ProtocolVersion, Addr: addr, Pid: r.Pid, Test: r.Test}, nil
}

// ParseReattach reads the value of [EnvReattach].
func ParseReattach(value string) (map[string]*plugin.ReattachConfig, error) {
	var byName map[string]Reattach
	if err := json.Unmarshal([]byte(value), &byName); err != nil {
		return nil, fmt.Errorf("%s is not a JSON object of reattach configs by provider name: %v", EnvReattach, err)
	}
	out := make(map[string]*plugin.ReattachConfig, len(byName))
	for name, r := range byName {
		rc, err := r.Config()
		if err != nil {
			return nil, fmt.Errorf("%s: provider %q: %v", EnvReattach, name, err)
		}
		out[name] = rc
	}
	return out, nil
}
