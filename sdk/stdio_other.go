//go:build !unix && !windows

package sdk

import (
	"os"
	"time"

	"github.com/hashicorp/go-hclog"
)

func restoreHandshakeOut() {}

func exitWithGroup(code int) { os.Exit(code) }

func onTerminate(hclog.Logger) {}

func watchParent(hclog.Logger, time.Duration) {}
