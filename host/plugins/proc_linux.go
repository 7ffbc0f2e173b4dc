//go:build linux

package plugins

import "syscall"

// procAttr puts the provider in its own process group, so that stopping it
// also stops what it started, and has the kernel send it SIGTERM when the
// host dies: providers built with the sdk then kill their whole group, and
// any other provider ends by SIGTERM's default action. (SIGKILL would end
// the provider but orphan its children.)
func procAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGTERM}
}

// killGroup kills the process group led by pid.
func killGroup(pid int) {
	_ = syscall.Kill(-pid, syscall.SIGKILL)
}
