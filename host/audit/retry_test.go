package audit

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/openhuman/openhuman-host/sdk/testwait"
)

// TestRetryOpensWhenTheDatabaseCanBeOpened starts a log whose database
// cannot be opened yet (its path is taken by a folder, as a full disk or a
// failing device would stop it being created): acts are refused, reads are
// queued, and once the path is free the log opens by itself and writes
// what waited.
func TestRetryOpensWhenTheDatabaseCanBeOpened(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "audit.db")
	if err := os.Mkdir(path, 0o700); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(t.Context(), path, &Options{Repair: true}); err == nil {
		t.Fatal("Open without Retry succeeded on a path that is a folder")
	}
	l := mustOpen(t, path, &Options{Repair: true, Retry: true})
	st := l.Status()
	if st.FailingSince.IsZero() || !strings.Contains(st.LastError, path) {
		t.Errorf("Status() before the database opens = %+v, want the failure", st)
	}
	if _, err := l.Begin(t.Context(), Record{Tool: "notes_store", Class: ClassAct, Decision: DecisionAllowed}, -1, -1); err == nil ||
		!strings.Contains(err.Error(), "could not be opened") {
		t.Fatalf("Begin() before the database opens = %v, want a refusal naming the failure", err)
	}
	if _, err := l.List(t.Context(), Query{}); err == nil {
		t.Error("List() before the database opens succeeded")
	}
	if err := l.Record(t.Context(), Record{TimeMs: ms(0), Tool: "notes_search", Class: "read", Decision: DecisionAllowed, Success: true}); err != nil {
		t.Fatalf("Record() before the database opens: %v", err)
	}

	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	testwait.Until(t, "the log to open its database", func() bool { return l.Status().FailingSince.IsZero() })
	id, err := l.Begin(t.Context(), Record{TimeMs: ms(time.Second), Tool: "notes_store", Class: ClassAct, Decision: DecisionAllowed}, -1, -1)
	if err != nil {
		t.Fatalf("Begin() once the database opened: %v", err)
	}
	mustFlush(t, l)
	got := mustList(t, l, Query{})
	if len(got) != 2 || got[0].ID != id || got[1].Tool != "notes_search" || !got[1].Success {
		t.Errorf("rows once the database opened = %+v, want the act's pending row and the queued read", got)
	}
}

// TestRetryCloseBeforeOpen: closing a log that never opened reports the
// rows it could not write, and does not wait for the database.
func TestRetryCloseBeforeOpen(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "audit.db")
	if err := os.Mkdir(path, 0o700); err != nil {
		t.Fatal(err)
	}
	l, err := Open(t.Context(), path, &Options{Retry: true})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		if err := l.Record(t.Context(), Record{TimeMs: ms(0), Tool: "t", Class: "read", Decision: DecisionAllowed}); err != nil {
			t.Fatalf("Record %d: %v", i, err)
		}
	}
	err = l.Close(context.Background())
	if err == nil || !strings.Contains(err.Error(), "discarded 3 unwritten records") || !strings.Contains(err.Error(), path) {
		t.Errorf("Close() of a log that never opened = %v, want the 3 rows reported with the cause", err)
	}
}
