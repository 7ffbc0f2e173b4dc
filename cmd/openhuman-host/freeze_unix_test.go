//go:build unix

package main

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
