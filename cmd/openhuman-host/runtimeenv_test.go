package main

import (
	"runtime/debug"
	"slices"
	"testing"
)

func TestGCEnv(t *testing.T) {
	prevPercent := debug.SetGCPercent(400)
	prevLimit := debug.SetMemoryLimit(24 << 20)
	t.Cleanup(func() {
		debug.SetGCPercent(prevPercent)
		debug.SetMemoryLimit(prevLimit)
	})
	if got, want := gcEnv(), []string{"GOGC=400", "GOMEMLIMIT=25165824"}; !slices.Equal(got, want) {
		t.Errorf("gcEnv() = %q, want %q", got, want)
	}
	debug.SetGCPercent(-1)
	debug.SetMemoryLimit(1<<63 - 1)
	if got, want := gcEnv(), []string{"GOGC=off"}; !slices.Equal(got, want) {
		t.Errorf("gcEnv() with the GC off and no limit = %q, want %q", got, want)
	}
}
