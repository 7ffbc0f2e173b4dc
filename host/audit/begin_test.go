package audit

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/openhuman/openhuman-host/internal/filedamage"
	"github.com/openhuman/openhuman-host/sdk/storage/pgtest"
	"github.com/openhuman/openhuman-host/sdk/testwait"
)

func TestBeginWritesPendingRowBeforeTheCall(t *testing.T) {
	t.Parallel()
	eachDriver(t, func(t *testing.T, driver string) {
		l, path := openLog(t, driver, nil)
		id, err := l.Begin(t.Context(), Record{TimeMs: ms(0), Tool: "notes_store", Class: ClassAct, Decision: DecisionAllowed,
			ArgsSummary: `{"title":"t"}`, Success: true, DurationUs: 9}, -1, -1)
		if err != nil {
			t.Fatalf("Begin() error: %v", err)
		}

		// Committed before Begin returns: another process sees it without a flush.
		other := mustOpen(t, path, nil)
		want := Record{ID: id, TimeMs: ms(0), Tool: "notes_store", Class: ClassAct, Decision: DecisionAllowed,
			ArgsSummary: `{"title":"t"}`, Pending: true}
		if diff := cmp.Diff([]Record{want}, mustList(t, other, Query{})); diff != "" {
			t.Errorf("row after Begin (-want +got):\n%s", diff)
		}
		stats, err := other.Stats(t.Context(), time.Time{})
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff([]ToolStats{{Tool: "notes_store", Calls: 1, Pending: 1}}, stats); diff != "" {
			t.Errorf("Stats() with a pending row (-want +got):\n%s", diff)
		}

		if err := l.Complete(id, Record{Tool: "notes_store", Decision: DecisionAllowed, Success: true, DurationUs: 1500,
			ResultRef: "mcp/doc-1", TimeMs: ms(time.Hour), ArgsSummary: "ignored"}); err != nil {
			t.Fatalf("Complete() error: %v", err)
		}
		mustFlush(t, l)
		want.Pending, want.Success, want.DurationUs, want.ResultRef = false, true, 1500, "mcp/doc-1"
		if diff := cmp.Diff([]Record{want}, mustList(t, other, Query{})); diff != "" {
			t.Errorf("row after Complete (-want +got):\n%s", diff)
		}
		if err := l.Complete(0, Record{}); err == nil {
			t.Error("Complete(0) succeeded, want an error")
		}
	})
}

func TestBeginSharesActBudgetAcrossProcesses(t *testing.T) {
	t.Parallel()
	eachDriver(t, func(t *testing.T, driver string) {
		l, path := openLog(t, driver, nil)
		other := mustOpen(t, path, nil) // a second process on the same data dir
		now := time.Now()
		// None of these count: a read, a denied act, and an act that left the hour.
		mustRecord(t, l,
			Record{TimeMs: now.UnixMilli(), Tool: "notes_search", Class: "read", Decision: DecisionAllowed},
			Record{TimeMs: now.UnixMilli(), Tool: "notes_store", Class: ClassAct, Decision: DecisionDenied("readonly")},
			Record{TimeMs: now.Add(-BudgetWindow - time.Second).UnixMilli(), Tool: "notes_store", Class: ClassAct, Decision: DecisionAllowed},
		)
		mustFlush(t, l)

		const limit = 3
		var (
			mu      sync.Mutex
			allowed []int64
			refused []*BudgetError
			wg      sync.WaitGroup
		)
		for i := range 16 {
			log := l
			if i%2 == 1 {
				log = other
			}
			wg.Go(func() {
				r := Record{TimeMs: now.Add(time.Duration(i) * time.Millisecond).UnixMilli(), Tool: "notes_store", Class: ClassAct, Decision: DecisionAllowed}
				_, err := log.Begin(t.Context(), r, limit, -1)
				mu.Lock()
				defer mu.Unlock()
				var be *BudgetError
				switch {
				case err == nil:
					allowed = append(allowed, r.TimeMs)
				case errors.As(err, &be):
					refused = append(refused, be)
				default:
					t.Errorf("Begin() error: %v", err)
				}
			})
		}
		wg.Wait()
		if len(allowed) != limit || len(refused) != 16-limit {
			t.Fatalf("Begin() allowed %d and refused %d of 16 acts, want %d and %d", len(allowed), len(refused), limit, 16-limit)
		}
		oldest := time.UnixMilli(min(allowed[0], allowed[1], allowed[2]))
		for _, be := range refused {
			if be.Limit != limit || !be.FreeAt.Equal(oldest.Add(BudgetWindow)) {
				t.Errorf("BudgetError = %+v, want limit %d freeing up at %s", be, limit, oldest.Add(BudgetWindow))
			}
		}
		// A negative limit is no budget.
		if _, err := other.Begin(t.Context(), Record{Tool: "notes_store", Class: ClassAct, Decision: DecisionAllowed}, -1, -1); err != nil {
			t.Errorf("Begin(limit -1) error: %v", err)
		}
	})
}

func TestBeginRefusesWhenTheRowCannotBeWritten(t *testing.T) {
	t.Parallel()
	var logs testwait.Buffer
	l, restore := tablelessLog(t, &logs)
	_, err := l.Begin(t.Context(), Record{Tool: "notes_store", Class: ClassAct, Decision: DecisionAllowed}, 5, -1)
	var be *BudgetError
	if err == nil || errors.As(err, &be) || !strings.Contains(err.Error(), "write the row of notes_store before it runs") {
		t.Fatalf("Begin() with no table = %v, want an error saying the row was not written", err)
	}

	// Meanwhile the writer fails, says so in Status, and recovers by itself.
	mustRecord(t, l, Record{TimeMs: ms(0), Tool: "notes_search"})
	testwait.Until(t, "Status to report the failure", func() bool { return !l.Status().FailingSince.IsZero() })
	if st := l.Status(); !strings.Contains(st.LastError, "no such table") {
		t.Errorf("Status().LastError = %q, want the database's error", st.LastError)
	}
	restore()
	mustFlush(t, l)
	if st := l.Status(); !st.FailingSince.IsZero() || st.LastError != "" {
		t.Errorf("Status() after recovery = %+v, want not failing", st)
	}
	testwait.Until(t, "the recovery to be logged", func() bool { return strings.Contains(logs.String(), "audit writes recovered") })
	if _, err := l.Begin(t.Context(), Record{Tool: "notes_store", Class: ClassAct, Decision: DecisionAllowed}, 5, -1); err != nil {
		t.Fatalf("Begin() after recovery error: %v", err)
	}
	mustFlush(t, l)
	if n := len(mustList(t, l, Query{})); n != 2 {
		t.Errorf("%d rows after recovery, want 2 (the read and the act)", n)
	}
}

func TestOpenRepairsDamagedDatabase(t *testing.T) {
	t.Parallel()
	notADatabase := bytes.Repeat([]byte("this is not a database\n"), 500)
	tests := map[string]func(t *testing.T, path string){
		"not a database": func(t *testing.T, path string) {
			if err := os.WriteFile(path, notADatabase, 0o600); err != nil {
				t.Fatal(err)
			}
		},
		"damaged pages": func(t *testing.T, path string) {
			l, err := Open(t.Context(), path, &Options{QueueSize: 4096})
			if err != nil {
				t.Fatal(err)
			}
			for i := range 2000 {
				mustRecord(t, l, Record{TimeMs: ms(time.Duration(i)), Tool: "notes_search", ArgsSummary: strings.Repeat("x", 200)})
			}
			if err := l.Close(t.Context()); err != nil {
				t.Fatal(err)
			}
			// Overwrite pages in the middle of the table's b-tree.
			filedamage.OverwriteMiddle(t, path, 0xA5, 16<<10)
		},
	}
	for name, damage := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			path := filepath.Join(dir, "audit.db")
			damage(t, path)
			before, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}

			_, err = Open(t.Context(), path, &Options{Repair: true, RetainDays: 0, QueueSize: 0, Logger: nil})
			if err != nil {
				t.Fatalf("Open(Repair) error: %v", err)
			}
			moved, _ := filepath.Glob(path + ".damaged-*")
			moved = filterOut(moved, "-wal", "-shm")
			if len(moved) != 1 {
				t.Fatalf("moved-aside files = %v, want one", moved)
			}
			after, err := os.ReadFile(moved[0])
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(before, after) {
				t.Errorf("%s differs from the damaged database", moved[0])
			}
		})
	}

	t.Run("refused without repair", func(t *testing.T) {
		t.Parallel()
		path := filepath.Join(t.TempDir(), "audit.db")
		if err := os.WriteFile(path, notADatabase, 0o600); err != nil {
			t.Fatal(err)
		}
		_, err := Open(t.Context(), path, nil)
		if !Damaged(err) || !strings.Contains(err.Error(), "moves a damaged audit log aside") {
			t.Fatalf("Open() on a damaged file = %v, want a Damaged error naming the recovery", err)
		}
		if moved, _ := filepath.Glob(path + ".damaged-*"); len(moved) != 0 {
			t.Errorf("Open without Repair moved %v aside", moved)
		}
	})

	t.Run("logged and recording", func(t *testing.T) {
		t.Parallel()
		var logs testwait.Buffer
		path := filepath.Join(t.TempDir(), "audit.db")
		if err := os.WriteFile(path, notADatabase, 0o600); err != nil {
			t.Fatal(err)
		}
		l := mustOpen(t, path, &Options{Repair: true, Logger: testLogger(&logs)})
		if out := logs.String(); !strings.Contains(out, "[ERROR] host.audit: audit database is damaged: moved it aside") ||
			!strings.Contains(out, "moved_to="+path+".damaged-") {
			t.Errorf("log does not report the move:\n%s", out)
		}
		id, err := l.Begin(t.Context(), Record{Tool: "notes_store", Class: ClassAct, Decision: DecisionAllowed}, -1, -1)
		if err != nil || id != 1 {
			t.Fatalf("Begin() on the fresh database = %d, %v; want row 1", id, err)
		}
		if diff := cmp.Diff([]Record{{ID: 1, Tool: "notes_store", Class: ClassAct, Decision: DecisionAllowed, Pending: true}},
			mustList(t, l, Query{}), cmpopts.IgnoreFields(Record{}, "TimeMs")); diff != "" {
			t.Errorf("rows (-want +got):\n%s", diff)
		}
	})
}

func filterOut(names []string, suffixes ...string) []string {
	var out []string
next:
	for _, n := range names {
		for _, s := range suffixes {
			if strings.HasSuffix(n, s) {
				continue next
			}
		}
		out = append(out, n)
	}
	return out
}

// TestBeginBudgetIsExactAcrossReplicas races many acts from several logs
// on one PostgreSQL database, as replicas behind a load balancer do: the
// budget allows exactly limit of them.
func TestBeginBudgetIsExactAcrossReplicas(t *testing.T) {
	t.Parallel()
	dsn := pgtest.NewDatabase(t)
	const replicas, acts, limit = 4, 240, 25
	logs := make([]*Log, replicas)
	for i := range logs {
		logs[i] = mustOpen(t, dsn, nil)
	}
	var (
		allowed, refused atomic.Int64
		start            = make(chan struct{})
		wg               sync.WaitGroup
	)
	now := time.Now()
	for i := range acts {
		wg.Go(func() {
			<-start
			r := Record{TimeMs: now.Add(time.Duration(i) * time.Microsecond).UnixMilli(), Tool: "notes_store", Class: ClassAct, Decision: DecisionAllowed}
			_, err := logs[i%replicas].Begin(t.Context(), r, limit, -1)
			var be *BudgetError
			switch {
			case err == nil:
				allowed.Add(1)
			case errors.As(err, &be):
				refused.Add(1)
			default:
				t.Errorf("Begin() error: %v", err)
			}
		})
	}
	close(start)
	wg.Wait()
	if allowed.Load() != limit || refused.Load() != acts-limit {
		t.Errorf("%d replicas allowed %d and refused %d of %d acts, want exactly %d allowed", replicas, allowed.Load(), refused.Load(), acts, limit)
	}
}

// TestBeginProfileBudget: a profile's own cap counts only its acts, the
// cap of all acts counts every profile's, on both drivers.
func TestBeginProfileBudget(t *testing.T) {
	t.Parallel()
	eachDriver(t, func(t *testing.T, driver string) {
		l, _ := openLog(t, driver, nil)
		now := time.Now()
		act := func(profile string, i int) Record {
			return Record{TimeMs: now.Add(time.Duration(i) * time.Millisecond).UnixMilli(), Tool: "notes_store", Class: ClassAct,
				Decision: DecisionAllowed, Profile: profile}
		}
		for i := range 2 {
			if _, err := l.Begin(t.Context(), act("agents", i), 10, 2); err != nil {
				t.Fatalf("act %d of agents: %v", i, err)
			}
		}
		var be *BudgetError
		if _, err := l.Begin(t.Context(), act("agents", 2), 10, 2); !errors.As(err, &be) || be.Profile != "agents" || be.Limit != 2 {
			t.Fatalf("third act of agents = %v, want the profile's cap of 2", err)
		}
		// Other profiles are not held by agents' cap, but all acts count towards the cap of 3.
		if _, err := l.Begin(t.Context(), act("review", 3), 3, 2); err != nil {
			t.Fatalf("first act of review: %v", err)
		}
		if _, err := l.Begin(t.Context(), act("", 4), 3, -1); !errors.As(err, &be) || be.Profile != "" || be.Limit != 3 {
			t.Fatalf("fourth act overall = %v, want the cap of all acts, 3", err)
		}
		rows := mustList(t, l, Query{})
		if len(rows) != 3 || rows[0].Profile != "review" || rows[2].Profile != "agents" {
			t.Errorf("rows = %+v, want 3 acts with their profiles", rows)
		}
	})
}
