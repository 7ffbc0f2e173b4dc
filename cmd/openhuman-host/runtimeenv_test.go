package main

import (
	"os"
	"runtime/debug"
	"slices"
	"testing"
)

func TestRuntimeEnv(t *testing.T) {
	prevPercent := debug.SetGCPercent(400)
	prevLimit := debug.SetMemoryLimit(24 << 20)
	t.Cleanup(func() {
		debug.SetGCPercent(prevPercent)
		debug.SetMemoryLimit(prevLimit)
	})
	t.Setenv("GORACE", "atexit_sleep_ms=0 halt_on_error=1")
	if got, want := runtimeEnv(), []string{"GOGC=400", "GOMEMLIMIT=25165824", "GORACE=atexit_sleep_ms=0 halt_on_error=1"}; !slices.Equal(got, want) {
		t.Errorf("runtimeEnv() = %q, want %q", got, want)
	}
	// Plugin processes do not get the share of the built-ins in the
	// host's process.
	inHostMemory = 16 << 20
	debug.SetMemoryLimit(40 << 20)
	if got, want := runtimeEnv(), []string{"GOGC=400", "GOMEMLIMIT=25165824", "GORACE=atexit_sleep_ms=0 halt_on_error=1"}; !slices.Equal(got, want) {
		t.Errorf("runtimeEnv() with 16 MiB for built-ins in the host = %q, want %q", got, want)
	}
	inHostMemory = 0
	debug.SetGCPercent(-1)
	debug.SetMemoryLimit(1<<63 - 1)
	os.Unsetenv("GORACE") // t.Setenv above restores it afterwards
	if got, want := runtimeEnv(), []string{"GOGC=off"}; !slices.Equal(got, want) {
		t.Errorf("runtimeEnv() with the GC off, no limit and no GORACE = %q, want %q", got, want)
	}
}
