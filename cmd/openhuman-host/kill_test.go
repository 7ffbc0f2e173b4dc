package main

import (
	"fmt"
	"os"
)

// killPID kills process pid at once: SIGKILL on Unix, TerminateProcess on
// Windows. It refuses pid 0 (on Unix, kill(0) would kill the test's whole
// process group) and the test's own pid, both what a provider running in
// the host's process reports.
func killPID(pid int) error {
	if pid <= 0 || pid == os.Getpid() {
		return fmt.Errorf("pid %d is not a provider process of its own", pid)
	}
	p, err := os.FindProcess(pid)
	if err != nil {
		return err
	}
	return p.Kill()
}
