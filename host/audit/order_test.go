package audit

import (
	"testing"
	"time"
)

// A read recorded just before an act, in the same millisecond, is listed before it: the act's row,
// written at once by Begin, waits for the read's queued row, so their ids follow the calls' order.
func TestBeginFollowsQueuedReads(t *testing.T) {
	t.Parallel()
	eachDriver(t, func(t *testing.T, driver string) {
		l, _ := openLog(t, driver, nil)
		const rounds = 20
		for i := range rounds {
			at := ms(time.Duration(i) * time.Millisecond)
			if err := l.Record(t.Context(), Record{TimeMs: at, Tool: "notes_search", Class: "read", Decision: DecisionAllowed, Success: true}); err != nil {
				t.Fatalf("Record() error: %v", err)
			}
			id, err := l.Begin(t.Context(), Record{TimeMs: at, Tool: "notes_store", Class: ClassAct, Decision: DecisionAllowed}, -1, -1)
			if err != nil {
				t.Fatalf("Begin() error: %v", err)
			}
			if err := l.Complete(id, Record{Tool: "notes_store", Decision: DecisionAllowed, Success: true}); err != nil {
				t.Fatalf("Complete() error: %v", err)
			}
		}
		if err := l.Flush(t.Context()); err != nil {
			t.Fatalf("Flush() error: %v", err)
		}
		rows := mustList(t, l, Query{Limit: 2 * rounds})
		if len(rows) != 2*rounds {
			t.Fatalf("List() returned %d rows, want %d", len(rows), 2*rounds)
		}
		// Newest first: in each millisecond the act, then the read before it.
		for i, r := range rows {
			want, at := "notes_store", ms(time.Duration(rounds-1-i/2)*time.Millisecond)
			if i%2 == 1 {
				want = "notes_search"
			}
			if r.Tool != want || r.TimeMs != at {
				t.Fatalf("row %d is %s at %d, want %s at %d (ids must follow the calls' order)", i, r.Tool, r.TimeMs, want, at)
			}
		}
	})
}
