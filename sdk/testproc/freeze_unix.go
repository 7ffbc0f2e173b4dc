//go:build unix

package testproc

import (
	"os"
	"syscall"
)

// Freeze stops process pid with SIGSTOP, so that it answers nothing until
// it is killed, failing the test if the signal cannot be sent.
func Freeze(t T, pid int) {
	t.Helper()
	if pid <= 0 || pid == os.Getpid() {
		// kill(0) would stop the test's whole process group.
		t.Fatalf("stop process %d: not a provider process of its own", pid)
	}
	if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
		t.Fatalf("stop process %d: %v", pid, err)
	}
}
