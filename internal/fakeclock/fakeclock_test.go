package fakeclock

import (
	"sync"
	"testing"
	"time"
)

func TestClock(t *testing.T) {
	t.Parallel()
	start := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	c := New(start)
	if got := c.Now(); !got.Equal(start) {
		t.Fatalf("Now() = %v, want %v", got, start)
	}
	c.Advance(90 * time.Second)
	if got, want := c.Now(), start.Add(90*time.Second); !got.Equal(want) {
		t.Errorf("Now() after Advance(90s) = %v, want %v", got, want)
	}
	c.Set(start.Add(-time.Hour))
	if got, want := c.Now(), start.Add(-time.Hour); !got.Equal(want) {
		t.Errorf("Now() after Set = %v, want %v", got, want)
	}
	var zero Clock
	if got := zero.Now(); !got.IsZero() {
		t.Errorf("zero Clock Now() = %v, want the zero time", got)
	}
}

// TestConcurrentAdvance: advances from many goroutines all count.
func TestConcurrentAdvance(t *testing.T) {
	t.Parallel()
	c := New(time.Unix(0, 0))
	var wg sync.WaitGroup
	for range 16 {
		wg.Go(func() {
			for range 100 {
				c.Advance(time.Millisecond)
				_ = c.Now()
			}
		})
	}
	wg.Wait()
	if got, want := c.Now(), time.Unix(0, 0).Add(1600*time.Millisecond); !got.Equal(want) {
		t.Errorf("Now() = %v, want %v", got, want)
	}
}
