//go:build linux

package plugins

import "syscall"

// sysProcAttr puts the provider in its own process group, so that stopping
// it also stops what it started, and has the kernel send it SIGTERM when
// the host dies: providers built with the sdk then kill their whole group,
// and any other provider ends by SIGTERM's default action. (SIGKILL would
// end the provider but orphan its children.)
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGTERM}
}
