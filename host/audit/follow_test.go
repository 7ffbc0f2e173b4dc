package audit

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/openhuman/openhuman-host/sdk/storage"
	"github.com/openhuman/openhuman-host/sdk/testwait"
)

// follow runs l.Follow with q and o in the background, polling as often as
// it may; the records it reports arrive on the returned channel, and stop
// ends it, returning Follow's error.
func follow(t *testing.T, l *Log, q Query, o FollowOptions) (<-chan Record, func() error) {
	t.Helper()
	ctx, cancel := context.WithCancel(t.Context())
	got := make(chan Record, 64)
	done := make(chan error, 1)
	o.Every = MinFollowEvery
	go func() {
		done <- l.Follow(ctx, q, o, func(r Record) error {
			select {
			case got <- r:
				return nil
			case <-ctx.Done():
				return ctx.Err()
			}
		})
	}()
	stop := sync.OnceValue(func() error {
		cancel()
		return testwait.Recv(t, done, "Follow to return")
	})
	t.Cleanup(func() { _ = stop() })
	return got, stop
}

// TestFollow: new rows arrive oldest first, rows committed before After do
// not, an act's row arrives pending and again with its outcome, filters
// apply, and cancelling ends it, on both drivers.
func TestFollow(t *testing.T) {
	t.Parallel()
	eachDriver(t, func(t *testing.T, driver string) {
		l, _ := openLog(t, driver, nil)
		mustRecord(t, l, Record{Tool: "notes_search", Class: "read", Decision: DecisionAllowed, Success: true})
		mustFlush(t, l)
		last, err := l.LastID(t.Context())
		if err != nil || last == 0 {
			t.Fatalf("LastID() = %d, %v", last, err)
		}
		all, stopAll := follow(t, l, Query{}, FollowOptions{After: last})
		failed, _ := follow(t, l, Query{Tool: "notes_store", FailedOnly: true}, FollowOptions{After: last})

		mustRecord(t, l,
			Record{Tool: "notes_search", Class: "read", Decision: DecisionAllowed, Success: true, SourceType: "cli"},
			Record{Tool: "notes.store", Class: ClassAct, Decision: DecisionDenied("readonly")},
		)
		mustFlush(t, l)
		if r := testwait.Recv(t, all, "the first new row"); r.Tool != "notes_search" || r.ID != last+1 {
			t.Errorf("first row = %+v, want notes_search with id %d", r, last+1)
		}
		if r := testwait.Recv(t, all, "the second new row"); r.Tool != "notes.store" {
			t.Errorf("second row = %+v", r)
		}
		if r := testwait.Recv(t, failed, "the denied act (old dotted name)"); r.Tool != "notes.store" || r.Success {
			t.Errorf("failed-only follower got %+v", r)
		}

		id, err := l.Begin(t.Context(), Record{Tool: "notes_store", Class: ClassAct, Decision: DecisionAllowed}, -1, -1)
		if err != nil {
			t.Fatal(err)
		}
		if r := testwait.Recv(t, all, "the pending act"); r.ID != id || !r.Pending {
			t.Errorf("act row = %+v, want pending id %d", r, id)
		}
		if err := l.Complete(id, Record{Tool: "notes_store", Decision: DecisionAllowed, Error: "disk full"}); err != nil {
			t.Fatal(err)
		}
		mustFlush(t, l)
		if r := testwait.Recv(t, all, "the act's outcome"); r.ID != id || r.Pending || r.Error != "disk full" {
			t.Errorf("completed act = %+v", r)
		}
		if r := testwait.Recv(t, failed, "the failed act, once complete"); r.ID != id || r.Pending {
			t.Errorf("failed-only follower got %+v, want the completed act %d", r, id)
		}
		if err := stopAll(); !errors.Is(err, context.Canceled) {
			t.Errorf("Follow() after cancel = %v, want context.Canceled", err)
		}
		select {
		case r := <-all:
			t.Errorf("unexpected row %+v", r)
		default:
		}
	})
}

// TestFollowLateCommit: on PostgreSQL a row whose transaction commits
// after one with a greater ID still arrives.
func TestFollowLateCommit(t *testing.T) {
	t.Parallel()
	l, _ := openLog(t, storage.DriverPostgres, nil)
	mustRecord(t, l, Record{Tool: "first"})
	mustFlush(t, l)
	got, _ := follow(t, l, Query{}, FollowOptions{})
	if r := testwait.Recv(t, got, "the first row"); r.Tool != "first" {
		t.Fatalf("got %+v", r)
	}
	tx := l.db.Begin()
	if err := tx.Exec(insertSQL(1), insertArgs([]Record{{Tool: "late", TimeMs: 1}})...).Error; err != nil {
		t.Fatal(err)
	}
	mustRecord(t, l, Record{Tool: "early"})
	mustFlush(t, l)
	if r := testwait.Recv(t, got, "the row committed first"); r.Tool != "early" {
		t.Fatalf("got %+v", r)
	}
	if err := tx.Commit().Error; err != nil {
		t.Fatal(err)
	}
	if r := testwait.Recv(t, got, "the row committed late"); r.Tool != "late" {
		t.Fatalf("got %+v", r)
	}
}

func TestFollowOptions(t *testing.T) {
	t.Parallel()
	l, _ := openLog(t, storage.DriverSQLite, nil)
	for _, every := range []time.Duration{MinFollowEvery - 1, MaxFollowEvery + 1} {
		err := l.Follow(t.Context(), Query{}, FollowOptions{Every: every}, func(Record) error { return nil })
		if err == nil {
			t.Errorf("Follow(Every %s) accepted", every)
		}
	}
	stop := errors.New("stop")
	mustRecord(t, l, Record{Tool: "x"})
	mustFlush(t, l)
	if err := l.Follow(t.Context(), Query{}, FollowOptions{}, func(Record) error { return stop }); !errors.Is(err, stop) {
		t.Errorf("Follow() = %v, want fn's error", err)
	}
	if err := l.Close(t.Context()); err != nil {
		t.Fatal(err)
	}
	if err := l.Follow(t.Context(), Query{}, FollowOptions{}, func(Record) error { return nil }); !errors.Is(err, ErrClosed) {
		t.Errorf("Follow() after Close = %v, want ErrClosed", err)
	}
	if _, err := l.LastID(t.Context()); !errors.Is(err, ErrClosed) {
		t.Errorf("LastID() after Close = %v, want ErrClosed", err)
	}
}

// TestCheck: a working log passes on both drivers; a closed one does not;
// a SQLite file whose write lock another process holds fails.
func TestCheck(t *testing.T) {
	t.Parallel()
	eachDriver(t, func(t *testing.T, driver string) {
		l, target := openLog(t, driver, nil)
		if err := l.Check(t.Context()); err != nil {
			t.Fatalf("Check() = %v", err)
		}
		if driver == storage.DriverSQLite {
			if l.Where() != target {
				t.Errorf("Where() = %q, want %q", l.Where(), target)
			}
			side := sideDB(t, target)
			conn, err := side.Conn(t.Context())
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			if _, err := conn.ExecContext(t.Context(), "BEGIN IMMEDIATE"); err != nil {
				t.Fatal(err)
			}
			// The check waits for the lock until ctx ends.
			ctx, cancel := context.WithTimeout(t.Context(), 200*time.Millisecond)
			err = l.Check(ctx)
			cancel()
			if err == nil {
				t.Error("Check() passed while another connection holds the write lock")
			}
			if _, err := conn.ExecContext(t.Context(), "ROLLBACK"); err != nil {
				t.Fatal(err)
			}
		} else if !strings.HasPrefix(l.Where(), "PostgreSQL ") || strings.Contains(l.Where(), "@") {
			t.Errorf("Where() = %q", l.Where())
		}
		if err := l.Close(t.Context()); err != nil {
			t.Fatal(err)
		}
		if err := l.Check(t.Context()); !errors.Is(err, ErrClosed) {
			t.Errorf("Check() after Close = %v, want ErrClosed", err)
		}
	})
}
