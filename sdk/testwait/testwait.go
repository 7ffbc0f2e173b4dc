// Package testwait lets a test wait for something asynchronous (a value on
// a channel, a condition, a process exit) without a short fixed timeout of
// its own. A wait lasts until the event, or until shortly before the test
// binary's deadline (go test -timeout), and then fails the test saying what
// did not happen, before go test would panic with every goroutine's stack.
//
// It is for tests only, a provider's included: with it a test stays
// correct on a loaded machine, where anything may take far longer than
// usual. How long something takes is a benchmark's business, never a
// test's.
package testwait

import (
	"context"
	"errors"
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

// RecvRepeating is [Recv] for a value that trigger brings about but may
// not, with no event to wait for instead (a notification sent before the
// other side listens is lost): it calls trigger at once and again every
// interval until a value arrives on ch.
func RecvRepeating[V any](t T, ch <-chan V, what string, every time.Duration, trigger func()) V {
	t.Helper()
	start, giveUp := time.Now(), After(t)
	tick := time.NewTicker(every)
	defer tick.Stop()
	for trigger(); ; {
		select {
		case v := <-ch:
			return v
		case <-tick.C:
			trigger()
		case <-giveUp:
			t.Fatalf("gave up waiting for %s after %s (the test's deadline is near)", what, time.Since(start).Round(time.Millisecond))
			var zero V
			return zero
		}
	}
}

// Until polls cond, at first every millisecond and then less often (every
// 50ms at most), until it holds, failing the test if it still does not at
// [Deadline]. what says what cond stands for.
func Until(t T, what string, cond func() bool) {
	t.Helper()
	if polled, err := poll(t, func() error {
		if cond() {
			return nil
		}
		return errNotYet
	}); err != nil {
		t.Fatalf("gave up waiting for %s after %s (the test's deadline is near)", what, polled)
	}
}

// Retry calls f, as [Until] polls, until it succeeds, failing the test
// with f's last error if it still fails at [Deadline]: for something that
// fails until another process is ready (listening on a port, done with a
// file). what says what f does.
func Retry(t T, what string, f func() error) {
	t.Helper()
	if polled, err := poll(t, f); err != nil {
		t.Fatalf("gave up trying to %s after %s (the test's deadline is near): %v", what, polled, err)
	}
}

// errNotYet is what Until's condition returns to poll while it does not
// hold.
var errNotYet = errors.New("not yet")

// poll calls f, at first every millisecond and then less often (every
// 50ms at most), until it returns nil or [Deadline] passes, and returns
// how long it polled and f's last error.
func poll(t T, f func() error) (time.Duration, error) {
	start, deadline := time.Now(), Deadline(t)
	for pause := time.Millisecond; ; pause = min(2*pause, 50*time.Millisecond) {
		err := f()
		if err == nil || time.Now().After(deadline) {
			return time.Since(start).Round(time.Millisecond), err
		}
		time.Sleep(pause)
	}
}
