//go:build unix

package plugins

import (
	"syscall"
)

// exists reports whether a process with this id exists.
func exists(pid int) bool { return syscall.Kill(pid, 0) == nil }
