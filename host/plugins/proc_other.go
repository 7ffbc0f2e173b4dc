//go:build unix && !linux

package plugins

import "syscall"

// procAttr puts the provider in its own process group, so that stopping it
// also stops what it started.
func procAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}

// killGroup kills the process group led by pid.
func killGroup(pid int) {
	_ = syscall.Kill(-pid, syscall.SIGKILL)
}
