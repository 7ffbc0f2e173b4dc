// Package fakeclock is a clock for tests that moves only when the test
// moves it, so that time-dependent code is checked without sleeping or
// reading the wall clock.
package fakeclock

import (
	"sync"
	"time"
)

// Clock is a settable clock, safe for concurrent use. Its Now method fits
// the Now func() time.Time fields of the host's options. The zero value
// reads the zero time; New starts it elsewhere.
type Clock struct {
	mu  sync.Mutex
	now time.Time
}

// New returns a clock that reads start until it is set or advanced.
func New(start time.Time) *Clock {
	return &Clock{now: start}
}

// Now returns the clock's current time.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// Set moves the clock to t, forwards or backwards.
func (c *Clock) Set(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = t
}

// Advance moves the clock on by d (back for a negative d).
func (c *Clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}
