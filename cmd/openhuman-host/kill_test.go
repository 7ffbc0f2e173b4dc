package main

import "os"

// killPID kills process pid at once: SIGKILL on Unix, TerminateProcess on
// Windows.
func killPID(pid int) error {
	p, err := os.FindProcess(pid)
	if err != nil {
		return err
	}
	return p.Kill()
}
