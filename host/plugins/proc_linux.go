//go:build linux

package plugins

import "syscall"

// procAttr puts the provider in its own process group, so that stopping it
// also stops what it started, and has the kernel kill it if the host dies.
func procAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}

// killGroup kills the process group led by pid.
func killGroup(pid int) {
	_ = syscall.Kill(-pid, syscall.SIGKILL)
}
