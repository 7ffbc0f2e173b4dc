package testwait

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// fakeT is a test whose binary's deadline is the given one; it records
// Fatalf instead of stopping.
type fakeT struct {
	*testing.T
	deadline time.Time
	fatal    []string
}

func (f *fakeT) Deadline() (time.Time, bool) { return f.deadline, !f.deadline.IsZero() }

func (f *fakeT) Fatalf(format string, args ...any) {
	f.fatal = append(f.fatal, fmt.Sprintf(format, args...))
}

func TestDeadline(t *testing.T) {
	t.Parallel()
	tests := map[string]struct {
		left      time.Duration // until the binary's deadline; 0 for none
		wantEarly time.Duration // how much earlier the waits give up
	}{
		"far: 30s before it":             {left: 20 * time.Minute, wantEarly: 30 * time.Second},
		"near: a tenth of the time left": {left: 10 * time.Second, wantEarly: time.Second},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			deadline := time.Now().Add(tc.left)
			got := deadline.Sub(Deadline(&fakeT{T: t, deadline: deadline}))
			// A tenth of what is left when Deadline runs, which may be
			// a while later on a loaded machine.
			if got > tc.wantEarly || got < tc.wantEarly/2 {
				t.Errorf("Deadline() is %s before the binary's deadline, want %s", got, tc.wantEarly)
			}
		})
	}
	t.Run("none: ten minutes from now", func(t *testing.T) {
		t.Parallel()
		before := time.Now()
		got := Deadline(&fakeT{T: t})
		if got.Before(before.Add(noDeadline)) || got.After(time.Now().Add(noDeadline)) {
			t.Errorf("Deadline() without a deadline = %s from now, want %s", time.Until(got), noDeadline)
		}
	})
}

func TestRecv(t *testing.T) {
	t.Parallel()
	ch := make(chan int, 1)
	ch <- 7
	f := &fakeT{T: t, deadline: time.Now().Add(time.Hour)}
	if got := Recv(f, ch, "seven"); got != 7 || len(f.fatal) != 0 {
		t.Errorf("Recv() = %d, fatal %q; want 7 and no failure", got, f.fatal)
	}

	// A deadline already past gives up at once, naming what was awaited.
	past := &fakeT{T: t, deadline: time.Now().Add(-time.Second)}
	if got := Recv(past, make(chan int), "the answer"); got != 0 {
		t.Errorf("Recv() past the deadline = %d, want 0", got)
	}
	if len(past.fatal) != 1 || !containsAll(past.fatal[0], "gave up waiting for the answer", "the test's deadline is near") {
		t.Errorf("Recv() past the deadline reported %q", past.fatal)
	}
}

func TestUntil(t *testing.T) {
	t.Parallel()
	n := 0
	f := &fakeT{T: t, deadline: time.Now().Add(time.Hour)}
	Until(f, "three polls", func() bool { n++; return n == 3 })
	if diff := cmp.Diff([]string(nil), f.fatal); diff != "" || n != 3 {
		t.Errorf("Until() polled %d times, fatal (-want +got):\n%s", n, diff)
	}

	past := &fakeT{T: t, deadline: time.Now().Add(-time.Second)}
	Until(past, "never", func() bool { return false })
	if len(past.fatal) != 1 || !containsAll(past.fatal[0], "gave up waiting for never") {
		t.Errorf("Until() past the deadline reported %q", past.fatal)
	}
}

func TestContext(t *testing.T) {
	t.Parallel()
	ctx := Context(&fakeT{T: t, deadline: time.Now().Add(-time.Second)})
	if !errors.Is(ctx.Err(), context.DeadlineExceeded) {
		t.Errorf("Context() past the deadline: Err() = %v, want context.DeadlineExceeded", ctx.Err())
	}
}

func containsAll(s string, subs ...string) bool {
	for _, sub := range subs {
		if !strings.Contains(s, sub) {
			return false
		}
	}
	return true
}

func TestRetry(t *testing.T) {
	t.Parallel()
	n := 0
	f := &fakeT{T: t, deadline: time.Now().Add(time.Hour)}
	Retry(f, "succeed on the third try", func() error {
		if n++; n < 3 {
			return errors.New("not ready")
		}
		return nil
	})
	if len(f.fatal) != 0 || n != 3 {
		t.Errorf("Retry() tried %d times, fatal %q; want 3 and no failure", n, f.fatal)
	}

	past := &fakeT{T: t, deadline: time.Now().Add(-time.Second)}
	Retry(past, "listen", func() error { return errors.New("address in use") })
	if len(past.fatal) != 1 || !containsAll(past.fatal[0], "gave up trying to listen", "the test's deadline is near", "address in use") {
		t.Errorf("Retry() past the deadline reported %q", past.fatal)
	}
}

func TestRecvRepeating(t *testing.T) {
	t.Parallel()
	// The value comes on the third trigger: the first two are lost.
	ch := make(chan int, 1)
	n := 0
	f := &fakeT{T: t, deadline: time.Now().Add(time.Hour)}
	got := RecvRepeating(f, ch, "the third trigger's value", time.Millisecond, func() {
		if n++; n == 3 {
			ch <- n
		}
	})
	if got != 3 || len(f.fatal) != 0 {
		t.Errorf("RecvRepeating() = %d, fatal %q; want 3 and no failure", got, f.fatal)
	}

	past := &fakeT{T: t, deadline: time.Now().Add(-time.Second)}
	if got := RecvRepeating(past, make(chan int), "an update", time.Hour, func() {}); got != 0 {
		t.Errorf("RecvRepeating() past the deadline = %d, want 0", got)
	}
	if len(past.fatal) != 1 || !containsAll(past.fatal[0], "gave up waiting for an update") {
		t.Errorf("RecvRepeating() past the deadline reported %q", past.fatal)
	}
}
