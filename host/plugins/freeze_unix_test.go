//go:build unix

package plugins

import (
	"syscall"
	"testing"
)

// freeze stops process pid (SIGSTOP), so that it answers nothing until it
// is killed.
func freeze(t *testing.T, pid int) {
	t.Helper()
	if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
}

// exists reports whether a process with this id exists.
func exists(pid int) bool { return syscall.Kill(pid, 0) == nil }
