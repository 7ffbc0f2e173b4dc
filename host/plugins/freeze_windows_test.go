package plugins

import (
	"testing"

	"golang.org/x/sys/windows"
)

// freeze would stop process pid; Windows has no signal for it.
func freeze(t *testing.T, _ int) {
	t.Helper()
	t.Skip("Windows has no SIGSTOP to make a provider hang")
}

// exists reports whether a process with this id exists.
func exists(pid int) bool {
	h, err := windows.OpenProcess(windows.SYNCHRONIZE, false, uint32(pid))
	if err != nil {
		return false
	}
	defer windows.CloseHandle(h)
	ev, err := windows.WaitForSingleObject(h, 0)
	return err == nil && ev == uint32(windows.WAIT_TIMEOUT)
}
