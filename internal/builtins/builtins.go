// Package builtins registers the providers compiled into openhuman-host
// with the host's registry ([builtin.Registered]) when it is initialised:
// the binary imports it for that effect, and so do the tests of packages
// that read the registry. The order here is the order the built-ins are
// started and listed in. A new built-in takes one import and one line.
package builtins

import (
	"github.com/hashicorp/go-hclog"

	"github.com/openhuman/openhuman-host/host/builtin"
	"github.com/openhuman/openhuman-host/providers/agent"
	"github.com/openhuman/openhuman-host/providers/memory"
	"github.com/openhuman/openhuman-host/providers/searxng"
	"github.com/openhuman/openhuman-host/providers/upstream"
	"github.com/openhuman/openhuman-host/sdk"
)

func init() {
	builtin.MustRegister(
		builtin.Provider{Manifest: memory.Manifest(), New: func(log hclog.Logger) sdk.Provider { return memory.New(&memory.Options{Logger: log}) }},
		builtin.Provider{Manifest: agent.Manifest(), New: func(log hclog.Logger) sdk.Provider { return agent.New(&agent.Options{Logger: log}) }},
		builtin.Provider{Manifest: searxng.Manifest(), New: func(log hclog.Logger) sdk.Provider { return searxng.New(&searxng.Options{Logger: log}) }},
		builtin.Provider{Manifest: upstream.Manifest(), New: func(log hclog.Logger) sdk.Provider { return upstream.New(&upstream.Options{Logger: log}) }},
	)
}
