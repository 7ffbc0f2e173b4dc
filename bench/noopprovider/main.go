// Command noopprovider is an openhuman-host provider with one read tool,
// bench.noop, that does nothing. The benchmark builds it and loads it as a
// third-party provider.
//
// The host starts providers with an allow-listed environment plus its own
// effective GOGC and GOMEMLIMIT; the flags -gogc, -memlimit (bytes) and
// -maxprocs override those runtime knobs from the provider's args in the
// config.
package main

import (
	"flag"
	"os"
	"runtime"
	"runtime/debug"

	"github.com/openhuman/openhuman-host/bench/internal/noop"
	"github.com/openhuman/openhuman-host/sdk"
)

func main() {
	fs := flag.NewFlagSet("noopprovider", flag.ExitOnError)
	gogc := fs.Int("gogc", 0, "GC percent (0 keeps the runtime's setting; negative turns the GC off)")
	memlimit := fs.Int64("memlimit", 0, "soft memory limit in bytes (0 keeps the runtime's setting)")
	maxprocs := fs.Int("maxprocs", 0, "GOMAXPROCS (0 keeps the runtime's setting)")
	_ = fs.Parse(os.Args[1:])
	if *gogc != 0 {
		debug.SetGCPercent(*gogc)
	}
	if *memlimit > 0 {
		debug.SetMemoryLimit(*memlimit)
	}
	if *maxprocs > 0 {
		runtime.GOMAXPROCS(*maxprocs)
	}
	sdk.Serve(noop.Provider{})
}
