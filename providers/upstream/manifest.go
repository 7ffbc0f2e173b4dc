package upstream

import (
	"runtime"

	"github.com/openhuman/openhuman-host/sdk"
)

// Name is the upstream provider's name, and the name of its data
// directory in the host's (<data dir>/upstream), which holds the stored
// sign-ins ([TokenDir]).
const Name = "upstream"

// Manifest returns what the host knows of the upstream provider before it
// launches it ([sdk.Manifest]): that its settings come from the host's
// [[upstream.servers]] entries rather than a [providers.upstream] table,
// and the environment its process needs to open a browser for an OAuth
// sign-in and to read the key of the stored sign-ins ([TokenKeyEnv]). It
// has no namespace: its tools are other servers'. It runs in the host's
// process unless [upstream] process = "plugin": every relayed call crosses
// it, and a plugin process's gRPC hop cost as much CPU as the relaying
// itself (docs/architecture.md, "The upstream relay"), while the servers
// it relays keep their isolation (a stdio server is a process, and a
// process group, of its own; an HTTP server another host's). On Windows
// it stays a plugin process: there its job object is what ends its stdio
// servers with the host. Each call returns a new value.
func Manifest() sdk.Manifest {
	return sdk.Manifest{
		Name:      Name,
		Section:   "[[upstream.servers]]",
		PassEnv:   []string{"BROWSER", "DISPLAY", "WAYLAND_DISPLAY", "DBUS_SESSION_BUS_ADDRESS", "XDG_RUNTIME_DIR", TokenKeyEnv},
		InProcess: runtime.GOOS != "windows",
	}
}
