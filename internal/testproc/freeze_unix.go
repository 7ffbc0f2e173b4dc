//go:build unix

package testproc

import "syscall"

// Freeze stops process pid with SIGSTOP, so that it answers nothing until
// it is killed, failing the test if the signal cannot be sent.
func Freeze(t T, pid int) {
	t.Helper()
	if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
		t.Fatalf("stop process %d: %v", pid, err)
	}
}
