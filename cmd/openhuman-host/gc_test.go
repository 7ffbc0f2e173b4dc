package main

import (
	"runtime/debug"
	"testing"
)

// unsetGCSettings unsets GOGC and GOMEMLIMIT for the test, sets GOGC=100,
// and restores the process's GC percent, memory limit and inHostMemory
// when the test ends; it returns the memory limit in force.
func unsetGCSettings(t *testing.T) int64 {
	t.Setenv("GOGC", "")
	t.Setenv("GOMEMLIMIT", "")
	prevPercent := debug.SetGCPercent(100)
	prevLimit := debug.SetMemoryLimit(-1)
	t.Cleanup(func() {
		debug.SetGCPercent(prevPercent)
		debug.SetMemoryLimit(prevLimit)
		inHostMemory = 0
	})
	return prevLimit
}

func TestTuneGCForStdio(t *testing.T) {
	prevLimit := unsetGCSettings(t)
	for _, tc := range []struct {
		telemetry bool
		inHost    int
		limit     int64
	}{{false, 0, 24 << 20}, {true, 0, 30 << 20}, {false, 2, 56 << 20}, {true, 1, 46 << 20}} {
		tuneGCForStdio(tc.telemetry, tc.inHost)
		if got := debug.SetMemoryLimit(-1); got != tc.limit {
			t.Errorf("telemetry %v: memory limit %d, want %d", tc.telemetry, got, tc.limit)
		}
		if got := debug.SetGCPercent(-1); got != stdioGCPercent {
			t.Errorf("telemetry %v: GOGC %d, want %d", tc.telemetry, got, stdioGCPercent)
		}
		debug.SetGCPercent(100)
	}
	// Set by the user, the limit is theirs.
	t.Setenv("GOMEMLIMIT", "64MiB")
	debug.SetMemoryLimit(prevLimit)
	tuneGCForStdio(true, 1)
	if got := debug.SetMemoryLimit(-1); got != prevLimit {
		t.Errorf("with GOMEMLIMIT set: memory limit %d, want it untouched (%d)", got, prevLimit)
	}
}

func TestTuneGCForHTTP(t *testing.T) {
	prevLimit := unsetGCSettings(t)
	tuneGCForHTTP()
	if got := debug.SetGCPercent(100); got != httpGCPercent {
		t.Errorf("GOGC %d, want %d", got, httpGCPercent)
	}
	if got := debug.SetMemoryLimit(-1); got != prevLimit {
		t.Errorf("memory limit %d, want it untouched (%d)", got, prevLimit)
	}
	// Set by the user, GOGC is theirs.
	t.Setenv("GOGC", "150")
	tuneGCForHTTP()
	if got := debug.SetGCPercent(-1); got != 100 {
		t.Errorf("with GOGC set: GOGC %d, want it untouched (100)", got)
	}
}
