// Package testwait lets a test wait for something asynchronous (a value on
// a channel, a condition, a process exit) without a short fixed timeout of
// its own. A wait lasts until the event, or until shortly before the test
// binary's deadline (go test -timeout), and then fails the test saying what
// did not happen, before go test would panic with every goroutine's stack.
//
// This is how the project's tests stay correct on a loaded machine: how
// long something takes is a benchmark's business (bench/), never a test's.
package testwait

import (
	"context"
	"time"
)

// T is the part of *testing.T a wait uses.
type T interface {
	Helper()
	Fatalf(format string, args ...any)
	Deadline() (time.Time, bool)
	Context() context.Context
	Cleanup(func())
}

// noDeadline is how long a wait lasts when the test binary has no deadline
// (go test -timeout 0).
const noDeadline = 10 * time.Minute

// Deadline returns when waits in t give up: a little before the test
// binary's deadline (a tenth of the time left then, at most 30s), so that
// the failure names what was awaited.
func Deadline(t T) time.Time {
	d, ok := t.Deadline()
	if !ok {
		return time.Now().Add(noDeadline)
	}
	margin := min(time.Until(d)/10, 30*time.Second)
	return d.Add(-margin)
}

// Context returns t.Context() bounded by [Deadline], for calls that take a
// context and must not outlive the test's patience.
func Context(t T) context.Context {
	ctx, cancel := context.WithDeadline(t.Context(), Deadline(t))
	t.Cleanup(cancel)
	return ctx
}

// After returns a channel that receives at [Deadline]: the case of a
// select that gives up.
func After(t T) <-chan time.Time {
	return time.After(time.Until(Deadline(t)))
}

// Recv returns the next value on ch, failing the test if none arrives
// before [Deadline]. what says what the value stands for.
func Recv[V any](t T, ch <-chan V, what string) V {
	t.Helper()
	start := time.Now()
	select {
	case v := <-ch:
		return v
	case <-After(t):
		t.Fatalf("gave up waiting for %s after %s (the test's deadline is near)", what, time.Since(start).Round(time.Millisecond))
	}
	var zero V
	return zero
}

// Until polls cond, at first every millisecond and then less often (every
// 50ms at most), until it holds, failing the test if it still does not at
// [Deadline]. what says what cond stands for.
func Until(t T, what string, cond func() bool) {
	t.Helper()
	start, deadline := time.Now(), Deadline(t)
	for pause := time.Millisecond; !cond(); pause = min(2*pause, 50*time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("gave up waiting for %s after %s (the test's deadline is near)", what, time.Since(start).Round(time.Millisecond))
			return
		}
		time.Sleep(pause)
	}
}
