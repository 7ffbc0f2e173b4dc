//go:build unix || windows

package sdk

import (
	"os"
	"os/signal"
	"syscall"

	"github.com/hashicorp/go-hclog"
)

// onTerminate exits through exitWithGroup on SIGTERM: on Linux the kernel
// sends it when the host dies (parent-death signal), supervisors send it to
// stop a process, and on Windows Go delivers the console's close, log-off
// and shut-down events as SIGTERM.
func onTerminate(log hclog.Logger) {
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, syscall.SIGTERM)
	go func() {
		<-ch
		log.Debug("terminated; stopping the provider and what it started")
		exitWithGroup(0)
	}()
}
