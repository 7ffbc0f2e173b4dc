//go:build unix && !linux

package upstream

import (
	"os/exec"
	"syscall"
)

// ownGroup starts cmd as the leader of a process group of its own, so that
// a stdio server of a provider run in the host's process does not get the
// signals of the host's terminal and can be killed with what it started.
// Unlike Linux these systems have no parent-death signal: a server whose
// host was killed ends when it reads the end of its stdin.
func ownGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
}

// killGroup kills the process group cmd leads (see [ownGroup]): the
// server and whatever it started (npx's node, uvx's python).
func killGroup(cmd *exec.Cmd) {
	if cmd.Process != nil && cmd.Process.Pid > 0 {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	}
}
