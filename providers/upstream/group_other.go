//go:build !unix

package upstream

import "os/exec"

// ownGroup does nothing here: Windows has no process groups to kill, and
// the upstream provider runs in a plugin process there by default, whose
// job object ends its stdio servers with the host ([Manifest]).
func ownGroup(*exec.Cmd) {}

// killGroup does nothing; see [ownGroup].
func killGroup(*exec.Cmd) {}
