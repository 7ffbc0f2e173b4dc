//go:build unix

package plugins

import (
	"os/exec"
	"syscall"
)

// procGroup is a provider's process group: the provider leads it, so its
// id is the provider's pid, and the processes it starts belong to it
// unless they leave.
type procGroup struct{}

// prepare sets cmd up to start in a process group of its own.
func (g *procGroup) prepare(cmd *exec.Cmd) {
	cmd.SysProcAttr = sysProcAttr()
}

// started is called right after cmd started; a process group needs
// nothing more.
func (g *procGroup) started(*exec.Cmd) error { return nil }

// kill sends SIGKILL to the group led by pid.
func (g *procGroup) kill(pid int) {
	if pid > 0 {
		_ = syscall.Kill(-pid, syscall.SIGKILL)
	}
}

// exited is called once the provider has exited and been reaped. The
// group may outlive its leader; kill still reaches it.
func (g *procGroup) exited() {}
