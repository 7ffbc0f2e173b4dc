package upstream

import (
	"os/exec"
	"syscall"
)

// ownGroup starts cmd as the leader of a process group of its own, which
// gets SIGTERM when the process that started it dies (Pdeathsig), so that
// a stdio server of a provider run in the host's process neither outlives
// a host that was killed nor gets the signals of the host's terminal.
func ownGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGTERM}
}

// killGroup kills the process group cmd leads (see [ownGroup]): the
// server and whatever it started (npx's node, uvx's python).
func killGroup(cmd *exec.Cmd) {
	if cmd.Process != nil && cmd.Process.Pid > 0 {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	}
}
