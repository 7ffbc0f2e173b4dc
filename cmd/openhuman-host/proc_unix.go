//go:build unix

package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"runtime"
	"syscall"
	"time"
)

// serverRunning reports whether pid is still the openhuman-host server
// whose status report says it started at started. On Linux the process
// must be running "serve" and must have started no later than that: a
// later start means the server died and its pid went to another process.
// On other Unix systems it is enough that a process with this pid exists.
func serverRunning(pid int, started time.Time) bool {
	if runtime.GOOS == "linux" {
		if _, err := os.Stat("/proc/self/stat"); err == nil {
			return procServerRunning("/proc", pid, started)
		}
	}
	return processRunning(pid)
}

// processRunning reports whether a process with this id exists.
func processRunning(pid int) bool {
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
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
	for {
		err = syscall.Flock(int(f.Fd()), syscall.LOCK_EX)
		if !errors.Is(err, syscall.EINTR) {
			break
		}
	}
	if err != nil {
		_ = f.Close()
		return nil, err
	}
	// Closing the file releases the lock.
	return func() { _ = f.Close() }, nil
}

// runnable says why the file at path, described by fi, cannot be run as a
// provider: no execute permission.
func runnable(path string, fi fs.FileInfo) error {
	if fi.Mode().Perm()&0o111 == 0 {
		return fmt.Errorf("%s is not executable; run: chmod +x %s", path, path)
	}
	return nil
}
