//go:build unix

package main

import (
	"os"
	"os/signal"
	"syscall"
)

// reloadSignals returns a channel that receives SIGHUP, which reloads the
// config, and what stops the delivery. Registering replaces SIGHUP's
// default action, which would end the process.
func reloadSignals() (<-chan os.Signal, func()) {
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	return hup, func() { signal.Stop(hup) }
}

// endOfInputKey is what a user types to end a terminal's input.
func endOfInputKey() string { return "Ctrl-D" }
