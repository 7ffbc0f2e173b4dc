package sdk

import (
	"errors"
	"os"
	"time"

	"github.com/hashicorp/go-hclog"
	"golang.org/x/sys/windows"
)

// watchParent ends the process once its parent is gone. Windows never
// re-parents a process, so the parent's pid cannot be polled as on Unix:
// this waits on a handle to the parent process instead, which is signalled
// when the parent exits, and so needs no interval. A parent that is
// already gone, or whose pid now names a process younger than this one,
// ends the process at once.
func watchParent(log hclog.Logger, _ time.Duration) {
	parent, err := openParent()
	if err != nil {
		log.Warn("host process is gone; exiting", "reason", err)
		exitWithGroup(1)
	}
	if parent == 0 {
		return
	}
	defer windows.CloseHandle(parent)
	if _, err := windows.WaitForSingleObject(parent, windows.INFINITE); err != nil {
		log.Warn("cannot watch the host process; the host's job object still ends this one with it", "error", err)
		return
	}
	log.Warn("host process is gone; exiting")
	exitWithGroup(1)
}

// openParent returns a handle to the parent process that can be waited on,
// an error that says why when the parent has exited, or 0 and no error
// when it cannot tell (the parent is not accessible to this process).
func openParent() (windows.Handle, error) {
	ppid := uint32(os.Getppid())
	h, err := windows.OpenProcess(windows.SYNCHRONIZE|windows.PROCESS_QUERY_LIMITED_INFORMATION, false, ppid)
	if err == windows.ERROR_INVALID_PARAMETER {
		return 0, errors.New("no process has the parent's pid")
	}
	if err != nil {
		return 0, nil
	}
	// A pid is reused once its process has exited: a process that started
	// after this one cannot be its parent.
	var parentStart, selfStart, exit, kernel, user windows.Filetime
	if err := windows.GetProcessTimes(h, &parentStart, &exit, &kernel, &user); err != nil {
		return h, nil
	}
	if err := windows.GetProcessTimes(windows.CurrentProcess(), &selfStart, &exit, &kernel, &user); err != nil {
		return h, nil
	}
	if parentStart.Nanoseconds() > selfStart.Nanoseconds() {
		_ = windows.CloseHandle(h)
		return 0, errors.New("the parent's pid now names a younger process")
	}
	return h, nil
}
