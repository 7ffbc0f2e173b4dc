package audit

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/openhuman/openhuman-host/sdk/storage/pgtest"
	"github.com/openhuman/openhuman-host/sdk/testwait"
)

// TestPostgresOutage: while the shared database is down an act is refused
// at once with an error, reads queue instead of blocking, and once the
// server is back the queued rows are written and acts run again, without
// reopening the log.
func TestPostgresOutage(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	srv := pgtest.NewServer(t)
	dsn, err := pgtest.CreateDatabase(ctx, srv.DSN, "outage")
	if err != nil {
		t.Fatal(err)
	}
	var logs testwait.Buffer
	l := mustOpen(t, dsn, &Options{Retry: true, Logger: testLogger(&logs)})
	act := Record{Tool: "notes_store", Class: ClassAct, Decision: DecisionAllowed}
	if _, err := l.Begin(ctx, act, 10, -1); err != nil {
		t.Fatalf("Begin() before the outage: %v", err)
	}

	if err := srv.Kill(ctx); err != nil {
		t.Fatal(err)
	}
	beginCtx, cancel := context.WithTimeout(ctx, time.Minute) // a guard against a hang, not a timing
	_, err = l.Begin(beginCtx, act, 10, -1)
	guard := beginCtx.Err()
	cancel()
	if err == nil || guard != nil || !strings.Contains(err.Error(), "PostgreSQL 127.0.0.1:") {
		t.Fatalf("Begin() during the outage = %v (context %v), want a prompt error naming the database", err, guard)
	}
	for i := range 5 {
		mustRecord(t, l, Record{TimeMs: ms(time.Duration(i) * time.Second), Tool: "notes_search", Class: "read", Decision: DecisionAllowed})
	}
	testwait.Until(t, "a failed write", func() bool { return !l.Status().FailingSince.IsZero() })

	if err := srv.Restart(ctx); err != nil {
		t.Fatal(err)
	}
	mustFlush(t, l)
	if st := l.Status(); !st.FailingSince.IsZero() || st.Dropped != 0 {
		t.Errorf("Status() after the outage = %+v, want healthy with nothing dropped", st)
	}
	if _, err := l.Begin(ctx, act, 10, -1); err != nil {
		t.Fatalf("Begin() after the outage: %v", err)
	}
	got := mustList(t, l, Query{})
	reads, acts := 0, 0
	for _, r := range got {
		switch r.Tool {
		case "notes_search":
			reads++
		case "notes_store":
			acts++
		}
	}
	if reads != 5 || acts != 2 {
		t.Errorf("after the outage the log holds %d reads and %d acts, want the 5 queued reads and the 2 acts that ran", reads, acts)
	}
	if strings.Contains(logs.String(), "password") || strings.Contains(logs.String(), dsn) {
		t.Errorf("the log quotes the connection string:\n%s", logs.String())
	}
}
