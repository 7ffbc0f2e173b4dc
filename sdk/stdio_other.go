//go:build !unix

package sdk

import (
	"os"

	"github.com/hashicorp/go-hclog"
)

func restoreHandshakeOut() {}

func exitWithGroup(code int) { os.Exit(code) }

func onTerminate(hclog.Logger) {}
