package main

import "os"

// reloadSignals returns nil, a channel that never receives: Windows has no
// SIGHUP, so there a running server reloads its config only with
// serve --watch, when the file is saved.
func reloadSignals() (<-chan os.Signal, func()) {
	return nil, func() {}
}

// endOfInputKey is what a user types to end a console's input.
func endOfInputKey() string { return "Ctrl-Z then Enter" }
