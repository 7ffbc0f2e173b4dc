package sdk

import (
	"os"

	"golang.org/x/sys/windows"

	"github.com/openhuman/openhuman-host/sdk/internal/wire"
)

// handshakeOut is the process's original standard output when the host
// launched it, kept for go-plugin's handshake line; nil otherwise.
var handshakeOut *os.File

// init keeps standard output for the handshake alone when the host
// launched this process (its magic cookie is in the environment): the
// process's standard output handle becomes its standard error handle, and
// os.Stdout becomes os.Stderr. A print from a package's init function, or
// from a child process that inherits the standard handles, then lands in
// the provider's log instead of corrupting the handshake. (C code that
// writes to the C runtime's descriptor 1 keeps the original handle.)
func init() {
	if os.Getenv(wire.Handshake.MagicCookieKey) != wire.Handshake.MagicCookieValue {
		return
	}
	out, err := windows.GetStdHandle(windows.STD_OUTPUT_HANDLE)
	if err != nil || out == 0 || out == windows.InvalidHandle {
		return
	}
	errh, err := windows.GetStdHandle(windows.STD_ERROR_HANDLE)
	if err != nil || errh == 0 || errh == windows.InvalidHandle {
		return
	}
	if err := windows.SetStdHandle(windows.STD_OUTPUT_HANDLE, errh); err != nil {
		return
	}
	handshakeOut = os.NewFile(uintptr(out), "handshake")
	// Not a second *os.File for the same handle: when go-plugin replaces
	// os.Stdout, that file's finalizer would close standard error.
	os.Stdout = os.Stderr
}

// restoreHandshakeOut gives go-plugin the original standard output for its
// handshake line; go-plugin then replaces os.Stdout with a pipe of its own.
func restoreHandshakeOut() {
	if handshakeOut != nil {
		os.Stdout = handshakeOut
	}
}

// exitWithGroup ends the provider. Windows has no process groups to kill:
// the host puts every provider in a job object that ends the provider's
// children when the provider exits and when the host exits.
func exitWithGroup(code int) { os.Exit(code) }
