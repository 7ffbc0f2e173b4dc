//go:build unix && !linux

package plugins

import "syscall"

// sysProcAttr puts the provider in its own process group, so that stopping
// it also stops what it started. These systems have no parent-death
// signal: providers built with the sdk watch their parent instead.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}
