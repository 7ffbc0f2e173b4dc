package main

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"golang.org/x/sys/windows"
)

// serverRunning reports whether pid is still the openhuman-host server
// whose status report says it started at started: the process must be
// running and must have been created no later than that (plus
// startSlack), since a later one got the pid after the server died.
func serverRunning(pid int, started time.Time) bool {
	created, ok := processCreated(pid)
	return ok && !created.After(started.Add(startSlack))
}

// processRunning reports whether a process with this id is running.
func processRunning(pid int) bool {
	_, ok := processCreated(pid)
	return ok
}

// stillActive is the exit code GetExitCodeProcess reports for a process
// that has not exited (STILL_ACTIVE).
const stillActive = 259

// processCreated returns when the running process pid was created; ok is
// false when no process with this id is running. A process this user may
// not query counts as running, created at the zero time.
func processCreated(pid int) (created time.Time, ok bool) {
	if pid <= 0 {
		return time.Time{}, false
	}
	h, err := windows.OpenProcess(windows.PROCESS_QUERY_LIMITED_INFORMATION, false, uint32(pid))
	if err == windows.ERROR_ACCESS_DENIED {
		return time.Time{}, true
	}
	if err != nil {
		return time.Time{}, false
	}
	defer windows.CloseHandle(h)
	var code uint32
	if err := windows.GetExitCodeProcess(h, &code); err != nil || code != stillActive {
		// An exited process whose handle someone still holds.
		return time.Time{}, false
	}
	var creation, exit, kernel, user windows.Filetime
	if err := windows.GetProcessTimes(h, &creation, &exit, &kernel, &user); err != nil {
		return time.Time{}, true
	}
	return time.Unix(0, creation.Nanoseconds()), true
}

// lockFile takes an exclusive lock on the file at path, created if
// missing, and returns what releases it. providers add holds this lock on
// the config's lock file from reading the config to replacing it, so that
// adds running at the same time apply one after the other instead of the
// last one writing over the others.
func lockFile(path string) (unlock func(), err error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, err
	}
	// The lock file holds no data: locking its whole possible range
	// excludes only other openhuman-host processes locking it the same way.
	var ol windows.Overlapped
	if err := windows.LockFileEx(windows.Handle(f.Fd()), windows.LOCKFILE_EXCLUSIVE_LOCK, 0, ^uint32(0), ^uint32(0), &ol); err != nil {
		_ = f.Close()
		return nil, err
	}
	// Closing the file releases the lock.
	return func() { _ = f.Close() }, nil
}

// runnable says why the file at path cannot be run as a provider: Windows
// has no execute permission, it runs files by their extension, and a
// provider must be a program (.exe or .com) or a script Windows runs
// (.bat, .cmd).
func runnable(path string, _ fs.FileInfo) error {
	ext := strings.ToLower(filepath.Ext(path))
	if !slices.Contains([]string{".exe", ".com", ".bat", ".cmd"}, ext) {
		return fmt.Errorf("%s is not a program Windows runs: its name must end in .exe (or .com, .bat, .cmd)", path)
	}
	return nil
}
