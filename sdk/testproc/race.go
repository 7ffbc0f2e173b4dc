package testproc

import (
	"os"
	"strings"
)

// QuickRaceExit makes the race-built processes a test binary starts (the
// test binary itself as a command, a provider or a server, and theirs in
// turn when they pass GORACE on) exit as soon as they are done: by
// default the race detector holds every such process for 1 s at exit
// (GORACE's atexit_sleep_ms), which, over the hundreds of processes a
// package's tests start, adds minutes. A race found is still reported,
// and still makes the process exit with status 66. Settings already in
// GORACE, atexit_sleep_ms among them, win. Call it from TestMain, before
// m.Run and any test starts a process; it changes the environment of the
// whole test binary.
func QuickRaceExit() {
	_ = os.Setenv("GORACE", strings.TrimSpace("atexit_sleep_ms=0 "+os.Getenv("GORACE")))
}
