//go:build unix

package sdk

import (
	"os"
	"time"

	"github.com/hashicorp/go-hclog"
)

// watchParent ends the process, with its group, once its parent is gone:
// the parent pid changes when the original parent dies and the process is
// re-parented. It checks every interval.
func watchParent(log hclog.Logger, every time.Duration) {
	parent := os.Getppid()
	t := time.NewTicker(every)
	defer t.Stop()
	for range t.C {
		if os.Getppid() != parent {
			log.Warn("host process is gone; exiting")
			exitWithGroup(1)
		}
	}
}
