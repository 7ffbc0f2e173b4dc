//go:build unix

package sdk

import (
	"os"
	"syscall"

	"github.com/openhuman/openhuman-host/sdk/internal/wire"
)

// handshakeOut is the process's original stdout when the host launched it,
// kept for go-plugin's handshake line; nil otherwise.
var handshakeOut *os.File

// init keeps stdout for the handshake alone when the host launched this
// process (its magic cookie is in the environment): it moves the original
// stdout to a new descriptor and points descriptor 1 at stderr. A print
// from a package's init function, from code that writes to descriptor 1
// directly, or from a child process then lands in the provider's log
// instead of corrupting the handshake. Package init functions run after
// those of the packages they import, so this precedes the provider's own
// (its main package's and those of packages importing sdk); packages that
// do not import sdk may be initialised earlier.
func init() {
	if os.Getenv(wire.Handshake.MagicCookieKey) != wire.Handshake.MagicCookieValue {
		return
	}
	fd, err := syscall.Dup(1)
	if err != nil {
		return
	}
	syscall.CloseOnExec(fd)
	if err := dupTo(2, 1); err != nil {
		_ = syscall.Close(fd)
		return
	}
	handshakeOut = os.NewFile(uintptr(fd), "handshake")
	stdoutFile = os.NewFile(1, "/dev/stdout")
	os.Stdout = stdoutFile
}

// stdoutFile is the *os.File for descriptor 1 that init made os.Stdout.
// Held here because go-plugin replaces os.Stdout: unreferenced, the file's
// finalizer would close descriptor 1, and the next file the provider opens
// could get that number, where stray prints would then land.
var stdoutFile *os.File

// restoreHandshakeOut gives go-plugin the original stdout for its
// handshake line; go-plugin then replaces os.Stdout with a pipe of its own.
func restoreHandshakeOut() {
	if handshakeOut != nil {
		os.Stdout = handshakeOut
	}
}

// exitWithGroup ends the provider and, when it leads its process group (the
// host starts every provider in a group of its own), everything it
// started: SIGKILL to the group, which includes this process.
func exitWithGroup(code int) {
	if pgid := syscall.Getpgrp(); pgid == os.Getpid() {
		_ = syscall.Kill(-pgid, syscall.SIGKILL)
	}
	os.Exit(code)
}
