package audit

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/hashicorp/go-hclog"

	"github.com/openhuman/openhuman-host/sdk/storage"
	"github.com/openhuman/openhuman-host/sdk/storage/pgtest"
	"github.com/openhuman/openhuman-host/sdk/testwait"
)

// base is a fixed instant the tests' records are timed from.
var base = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

func ms(d time.Duration) int64 { return base.Add(d).UnixMilli() }

func TestMain(m *testing.M) { pgtest.Main(m) }

// drivers are the storage drivers the driver-neutral tests run on.
var drivers = []string{storage.DriverSQLite, storage.DriverPostgres}

// eachDriver runs test once per driver, as parallel subtests named by it.
func eachDriver(t *testing.T, test func(t *testing.T, driver string)) {
	t.Helper()
	for _, d := range drivers {
		t.Run(d, func(t *testing.T) {
			t.Parallel()
			test(t, d)
		})
	}
}

// newTarget returns where a new, empty log of driver lives: a SQLite file's
// path in a fresh directory, or a new PostgreSQL database's URL.
func newTarget(t *testing.T, driver string) string {
	t.Helper()
	if driver == storage.DriverPostgres {
		return pgtest.NewDatabase(t)
	}
	return filepath.Join(t.TempDir(), "audit.db")
}

// openAt opens the log at target with the driver newTarget gave it.
func openAt(ctx context.Context, target string, opts *Options) (*Log, error) {
	if strings.HasPrefix(target, "postgres://") {
		return OpenPostgres(ctx, target, opts)
	}
	return Open(ctx, target, opts)
}

// openLog opens a new log of driver and closes it when the test ends.
func openLog(t *testing.T, driver string, opts *Options) (*Log, string) {
	t.Helper()
	target := newTarget(t, driver)
	return mustOpen(t, target, opts), target
}

func mustOpen(t *testing.T, target string, opts *Options) *Log {
	t.Helper()
	l, err := openAt(t.Context(), target, opts)
	if err != nil {
		t.Fatalf("Open(%s) error: %v", target, err)
	}
	t.Cleanup(func() {
		if err := l.Close(context.Background()); err != nil && !errors.Is(err, ErrClosed) {
			t.Errorf("Close() error: %v", err)
		}
	})
	return l
}

func mustRecord(t *testing.T, l *Log, recs ...Record) {
	t.Helper()
	for _, r := range recs {
		if err := l.Record(t.Context(), r); err != nil {
			t.Fatalf("Record() error: %v", err)
		}
	}
}

func mustFlush(t *testing.T, l *Log) {
	t.Helper()
	if err := l.Flush(t.Context()); err != nil {
		t.Fatalf("Flush() error: %v", err)
	}
}

func mustList(t *testing.T, l *Log, q Query) []Record {
	t.Helper()
	got, err := l.List(t.Context(), q)
	if err != nil {
		t.Fatalf("List(%+v) error: %v", q, err)
	}
	return got
}

// ids returns the IDs of recs in order.
func ids(recs []Record) []uint64 {
	out := make([]uint64, len(recs))
	for i, r := range recs {
		out[i] = r.ID
	}
	return out
}

// sideDB opens a second connection pool on the log's file, as another process would.
func sideDB(t *testing.T, path string) *sql.DB {
	t.Helper()
	db, err := sql.Open("sqlite3", dsn(path))
	if err != nil {
		t.Fatalf("sql.Open() error: %v", err)
	}
	t.Cleanup(func() { _ = db.Close() })
	return db
}

// tablelessLog opens a SQLite log that logs to logs, then renames its table
// away behind its back so that every write fails; restore renames it back.
func tablelessLog(t *testing.T, logs *testwait.Buffer) (l *Log, restore func()) {
	t.Helper()
	l, path := openLog(t, storage.DriverSQLite, &Options{Logger: testLogger(logs)})
	side := sideDB(t, path)
	rename := func(from, to string) {
		t.Helper()
		if _, err := side.ExecContext(t.Context(), "ALTER TABLE "+from+" RENAME TO "+to); err != nil {
			t.Fatalf("rename table %s to %s: %v", from, to, err)
		}
	}
	rename("mcp_audit", "mcp_audit_away")
	return l, func() { rename("mcp_audit_away", "mcp_audit") }
}

// queryStrings runs query, which selects one text column, on db and
// returns its rows in order, failing the test on any error.
func queryStrings(t *testing.T, db *sql.DB, query string) []string {
	t.Helper()
	rows, err := db.QueryContext(t.Context(), query)
	if err != nil {
		t.Fatalf("query %q: %v", query, err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var v string
		if err := rows.Scan(&v); err != nil {
			t.Fatalf("query %q: scan: %v", query, err)
		}
		out = append(out, v)
	}
	if err := rows.Err(); err != nil {
		t.Fatalf("query %q: %v", query, err)
	}
	return out
}

func testLogger(buf *testwait.Buffer) hclog.Logger {
	return hclog.New(&hclog.LoggerOptions{Name: "host.audit", Output: buf, Level: hclog.Trace})
}

func TestOpenErrors(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	file := filepath.Join(dir, "file")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	tests := map[string]struct {
		path string
		opts *Options
		want string
	}{
		"empty path": {
			path: "",
			want: "audit: open: database path is empty",
		},
		"negative queue size": {
			path: filepath.Join(dir, "a.db"),
			opts: &Options{QueueSize: -1},
			want: "audit: open: queue size -1 is negative: use 0 for the default (1024)",
		},
		"negative retention": {
			path: filepath.Join(dir, "a.db"),
			opts: &Options{RetainDays: -2},
			want: "audit: open: retain days -2 is negative: use 0 to keep records forever",
		},
		"parent is a file": {
			path: filepath.Join(file, "audit.db"),
			want: "audit: open " + filepath.Join(file, "audit.db") + ": create directory: mkdir " + file + ": not a directory",
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			l, err := Open(t.Context(), tc.path, tc.opts)
			if err == nil {
				_ = l.Close(context.Background())
				t.Fatalf("Open() succeeded, want error %q", tc.want)
			}
			if diff := cmp.Diff(tc.want, err.Error()); diff != "" {
				t.Errorf("Open() error (-want +got):\n%s", diff)
			}
		})
	}
}

func TestOpenCreatesPrivateFilesAndSchema(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "data", "nested")
	path := filepath.Join(dir, "audit.db")
	l := mustOpen(t, path, nil)

	modes := map[string]os.FileMode{}
	for _, p := range []string{dir, path} {
		fi, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		modes[filepath.Base(p)] = fi.Mode().Perm()
	}
	if diff := cmp.Diff(map[string]os.FileMode{"nested": 0o700, "audit.db": 0o600}, modes); diff != "" {
		t.Errorf("modes (-want +got):\n%s", diff)
	}

	cols := queryStrings(t, l.sqlDB, "SELECT name FROM pragma_table_info('mcp_audit') ORDER BY cid")
	wantCols := []string{"id", "time_ms", "session_hash", "source_type", "client_name", "client_version", "tool",
		"provider", "class", "decision", "success", "error", "duration_us", "args_summary", "result_ref", "pending", "profile"}
	if diff := cmp.Diff(wantCols, cols); diff != "" {
		t.Errorf("columns (-want +got):\n%s", diff)
	}

	indexes := queryStrings(t, l.sqlDB,
		"SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = 'mcp_audit' AND sql IS NOT NULL ORDER BY name")
	wantIndexes := []string{"idx_mcp_audit_acts", "idx_mcp_audit_source_type", "idx_mcp_audit_time_ms", "idx_mcp_audit_tool"}
	if diff := cmp.Diff(wantIndexes, indexes); diff != "" {
		t.Errorf("indexes (-want +got):\n%s", diff)
	}
}

func TestEveryConnectionGetsPragmas(t *testing.T) {
	t.Parallel()
	l, _ := openLog(t, storage.DriverSQLite, nil)
	type pragmas struct {
		JournalMode string
		BusyTimeout int
		ForeignKeys int
	}
	// Hold several connections at once so the pool has to open new ones.
	var conns []*sql.Conn
	var got []pragmas
	for range 3 {
		c, err := l.sqlDB.Conn(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		conns = append(conns, c)
		var p pragmas
		if err := c.QueryRowContext(t.Context(), "PRAGMA journal_mode").Scan(&p.JournalMode); err != nil {
			t.Fatal(err)
		}
		if err := c.QueryRowContext(t.Context(), "PRAGMA busy_timeout").Scan(&p.BusyTimeout); err != nil {
			t.Fatal(err)
		}
		if err := c.QueryRowContext(t.Context(), "PRAGMA foreign_keys").Scan(&p.ForeignKeys); err != nil {
			t.Fatal(err)
		}
		got = append(got, p)
	}
	for _, c := range conns {
		_ = c.Close()
	}
	want := slices.Repeat([]pragmas{{JournalMode: "wal", BusyTimeout: 5000, ForeignKeys: 1}}, 3)
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("pragmas per connection (-want +got):\n%s", diff)
	}
}

func TestRoundTrip(t *testing.T) {
	t.Parallel()
	eachDriver(t, func(t *testing.T, driver string) {
		longErr := strings.Repeat("x", 1500)
		in := []Record{
			{
				TimeMs: ms(0), SessionHash: SessionHash("session-1"), SourceType: "mcp:claude-desktop",
				ClientName: "Claude Desktop", ClientVersion: "1.2.3", Tool: "notes_store", Provider: "memory",
				Class: "act", Decision: DecisionAllowed, Success: true, DurationUs: 1234,
				ArgsSummary: `{"content":{"len":42},"title":"Notes"}`, ResultRef: "mcp-store-notes",
			},
			{
				ID: 99, TimeMs: ms(time.Second), SourceType: "cli", Tool: "pages_tag", Provider: "memory", Class: "act",
				Decision: DecisionDenied("readonly"), Error: longErr, ArgsSummary: "{}",
			},
		}
		l, _ := openLog(t, driver, nil)
		mustRecord(t, l, in...)
		mustFlush(t, l)

		want := []Record{in[1], in[0]}
		want[0].ID = 2
		want[0].Error = longErr[:1024]
		want[1].ID = 1
		if diff := cmp.Diff(want, mustList(t, l, Query{})); diff != "" {
			t.Errorf("List() (-want +got):\n%s", diff)
		}
	})
}

func TestRecordStampsZeroTime(t *testing.T) {
	t.Parallel()
	eachDriver(t, func(t *testing.T, driver string) {
		l, _ := openLog(t, driver, nil)
		before := time.Now().UnixMilli()
		mustRecord(t, l, Record{Tool: "notes_search"})
		after := time.Now().UnixMilli()
		mustFlush(t, l)
		got := mustList(t, l, Query{})
		if len(got) != 1 || got[0].TimeMs < before || got[0].TimeMs > after {
			t.Fatalf("List() = %+v, want one record timed in [%d, %d]", got, before, after)
		}
	})
}

func TestRecordNeverBlocksAndCountsWhatItDrops(t *testing.T) {
	t.Parallel()
	tests := map[string]struct {
		queue, writers, each int
	}{
		"queue of one, many writers":        {queue: 1, writers: 32, each: 25},
		"queue of one, one writer":          {queue: 1, writers: 1, each: 300},
		"default queue, more than it holds": {queue: 0, writers: 8, each: 300},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			l, _ := openLog(t, storage.DriverSQLite, &Options{QueueSize: tc.queue})
			var (
				wg              sync.WaitGroup
				mu              sync.Mutex
				queued, dropped []string
			)
			for w := range tc.writers {
				wg.Go(func() {
					for i := range tc.each {
						r := Record{TimeMs: ms(0), SourceType: fmt.Sprintf("w%d", w), ResultRef: fmt.Sprint(i), Tool: "t"}
						err := l.Record(t.Context(), r)
						mu.Lock()
						switch {
						case err == nil:
							queued = append(queued, r.SourceType+"/"+r.ResultRef)
						case errors.Is(err, ErrQueueFull):
							dropped = append(dropped, r.SourceType+"/"+r.ResultRef)
						default:
							t.Errorf("Record() error: %v", err)
						}
						mu.Unlock()
					}
				})
			}
			wg.Wait()
			mustFlush(t, l)

			var got []string
			for _, r := range mustList(t, l, Query{Limit: tc.writers*tc.each + 10}) {
				got = append(got, r.SourceType+"/"+r.ResultRef)
			}
			slices.Sort(queued)
			slices.Sort(got)
			if diff := cmp.Diff(queued, got); diff != "" {
				t.Errorf("stored records are not the ones Record accepted (-want +got):\n%s", diff)
			}
			if len(queued)+len(dropped) != tc.writers*tc.each {
				t.Errorf("accepted %d + dropped %d records, want %d in all", len(queued), len(dropped), tc.writers*tc.each)
			}
			if st := l.Status(); st.Dropped != uint64(len(dropped)) || st.Queued != 0 || !st.FailingSince.IsZero() {
				t.Errorf("Status() = %+v, want Dropped %d, nothing queued, not failing", st, len(dropped))
			}
		})
	}
}

func TestRecordDropsWhileQueueFull(t *testing.T) {
	t.Parallel()
	var logs testwait.Buffer
	l, path := openLog(t, storage.DriverSQLite, &Options{QueueSize: 1, Logger: testLogger(&logs)})

	// Another process holds the write lock, so the writer waits inside its first insert.
	lock, err := sideDB(t, path).BeginTx(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := lock.ExecContext(t.Context(), "DELETE FROM mcp_audit WHERE id < 0"); err != nil {
		t.Fatal(err)
	}

	// The writer takes the first record (and stalls in its insert), so the second fits in the queue
	// without waiting, however slow the machine.
	mustRecord(t, l, Record{TimeMs: ms(0), Tool: "t0"})
	testwait.Until(t, "the writer to take t0", func() bool { return len(l.queue) == 0 })
	accepted := []string{"t0"}

	// With the writer stalled, records are accepted until the writer's batch (which takes what arrives
	// while it collects, up to 256) and the queue of one are full; the next Record returns at once,
	// however long its context, and records nothing.
	var err2 error
	for i := 1; err2 == nil; i++ {
		if i > maxBatch+1 {
			t.Fatalf("Record() accepted %d records while the writer was stalled; want it to drop", len(accepted))
		}
		tool := fmt.Sprintf("t%d", i)
		err2 = l.Record(t.Context(), Record{TimeMs: ms(time.Duration(i)), Tool: tool})
		if err2 == nil {
			accepted = append(accepted, tool)
		}
	}
	if len(accepted) < 2 {
		t.Errorf("Record() accepted %v while the writer was stalled; want the stalled batch and a queued one", accepted)
	}
	want := fmt.Sprintf("audit: record t%d: audit queue is full", len(accepted))
	if !errors.Is(err2, ErrQueueFull) || err2.Error() != want {
		t.Fatalf("Record() on a full queue = %v, want %q", err2, want)
	}
	// Outcomes are dropped the same way. The writer may still be gathering its batch, so one may yet
	// find room; it updates no row.
	var errC error
	for i := 0; errC == nil; i++ {
		if i > maxBatch+1 {
			t.Fatal("Complete() never found the queue full while the writer was stalled")
		}
		errC = l.Complete(1000, Record{Tool: "notes_store"})
	}
	if !errors.Is(errC, ErrQueueFull) {
		t.Errorf("Complete() on a full queue = %v, want ErrQueueFull", errC)
	}
	if st := l.Status(); st.Dropped != 2 || st.Queued > 1 {
		t.Errorf("Status() = %+v, want Dropped 2 and at most 1 queued", st)
	}
	// At most one warning every dropWarnEvery: the two drops give one, or two on a machine that stalls.
	if n := strings.Count(logs.String(), "audit queue is full"); n < 1 || n > 2 {
		t.Errorf("log has %d warnings about the full queue, want 1:\n%s", n, logs.String())
	}

	if err := lock.Rollback(); err != nil {
		t.Fatal(err)
	}
	mustFlush(t, l)
	var got []string
	for _, r := range mustList(t, l, Query{Limit: 2 * maxBatch}) {
		got = append(got, r.Tool)
	}
	slices.Reverse(accepted)
	if diff := cmp.Diff(accepted, got); diff != "" {
		t.Errorf("stored tools, newest first (-want +got):\n%s", diff)
	}
}

func TestFailedInsertIsRetried(t *testing.T) {
	t.Parallel()
	var logs testwait.Buffer
	l, restore := tablelessLog(t, &logs)
	secret := SummarizeArgs([]byte(`{"title":"very private title"}`), testRules)
	for i := range 3 {
		mustRecord(t, l, Record{TimeMs: ms(time.Duration(i)), Tool: "notes_store", SessionHash: "sha256:0badc0de", ArgsSummary: secret})
	}
	testwait.Until(t, "a retry warning", func() bool { return strings.Contains(logs.String(), "audit insert failed, retrying") })
	restore()
	mustFlush(t, l)

	if diff := cmp.Diff([]uint64{3, 2, 1}, ids(mustList(t, l, Query{}))); diff != "" {
		t.Errorf("stored ids (-want +got):\n%s", diff)
	}
	out := logs.String()
	for _, leak := range []string{"very private title", "0badc0de", "INSERT"} {
		if strings.Contains(out, leak) {
			t.Errorf("log output contains %q:\n%s", leak, out)
		}
	}
}

func TestFlush(t *testing.T) {
	t.Parallel()
	eachDriver(t, func(t *testing.T, driver string) {
		tests := map[string]struct {
			records int
		}{
			"nothing recorded": {records: 0},
			"one record":       {records: 1},
			"several batches":  {records: 700},
		}
		for name, tc := range tests {
			t.Run(name, func(t *testing.T) {
				t.Parallel()
				l, _ := openLog(t, driver, nil)
				for i := range tc.records {
					mustRecord(t, l, Record{TimeMs: ms(time.Duration(i) * time.Millisecond), Tool: "t"})
				}
				mustFlush(t, l)
				// Flush makes the records visible to another reader, such as the CLI.
				got := mustList(t, l, Query{Limit: 1000})
				if diff := cmp.Diff(tc.records, len(got)); diff != "" {
					t.Errorf("records after Flush (-want +got):\n%s", diff)
				}
			})
		}
	})
}

func TestCloseFlushesAndRefusesLaterCalls(t *testing.T) {
	t.Parallel()
	eachDriver(t, func(t *testing.T, driver string) {
		path := newTarget(t, driver)
		l, err := openAt(t.Context(), path, nil)
		if err != nil {
			t.Fatal(err)
		}
		for i := range 500 {
			mustRecord(t, l, Record{TimeMs: ms(time.Duration(i) * time.Millisecond), Tool: "t"})
		}
		if err := l.Close(t.Context()); err != nil {
			t.Fatalf("Close() error: %v", err)
		}

		_, listErr := l.List(t.Context(), Query{})
		_, statsErr := l.Stats(t.Context(), time.Time{})
		got := map[string]bool{
			"Record": errors.Is(l.Record(t.Context(), Record{Tool: "t"}), ErrClosed),
			"Flush":  errors.Is(l.Flush(t.Context()), ErrClosed),
			"Close":  errors.Is(l.Close(t.Context()), ErrClosed),
			"List":   errors.Is(listErr, ErrClosed),
			"Stats":  errors.Is(statsErr, ErrClosed),
		}
		want := map[string]bool{"Record": true, "Flush": true, "Close": true, "List": true, "Stats": true}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("errors.Is(err, ErrClosed) after Close (-want +got):\n%s", diff)
		}

		reopened := mustOpen(t, path, nil)
		if diff := cmp.Diff(500, len(mustList(t, reopened, Query{Limit: 1000}))); diff != "" {
			t.Errorf("records after reopening (-want +got):\n%s", diff)
		}
	})
}

func TestCloseReportsDiscardedRecords(t *testing.T) {
	t.Parallel()
	tests := map[string]struct {
		cancelled bool
		want      string
		wantIs    error
	}{
		"database unusable": {
			want: "audit: close: discarded 3 unwritten records: no such table: mcp_audit",
		},
		"context ended": {
			cancelled: true,
			want:      "audit: close: discarded 3 unwritten records: no such table: mcp_audit\ncontext canceled",
			wantIs:    context.Canceled,
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			var logs testwait.Buffer
			path := filepath.Join(t.TempDir(), "audit.db")
			l, err := Open(t.Context(), path, &Options{Logger: testLogger(&logs)})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := sideDB(t, path).ExecContext(t.Context(), "DROP TABLE mcp_audit"); err != nil {
				t.Fatal(err)
			}
			for i := range 3 {
				mustRecord(t, l, Record{TimeMs: ms(time.Duration(i)), Tool: "t"})
			}
			testwait.Until(t, "a failed insert", func() bool { return strings.Contains(logs.String(), "audit insert failed") })
			ctx := t.Context()
			if tc.cancelled {
				c, cancel := context.WithCancel(ctx)
				cancel()
				ctx = c
			}
			err = l.Close(ctx)
			if err == nil {
				t.Fatal("Close() succeeded, want an error counting discarded records")
			}
			if diff := cmp.Diff(tc.want, err.Error()); diff != "" {
				t.Errorf("Close() error (-want +got):\n%s", diff)
			}
			if tc.wantIs != nil && !errors.Is(err, tc.wantIs) {
				t.Errorf("errors.Is(%v, %v) = false", err, tc.wantIs)
			}
		})
	}
}

func TestRetention(t *testing.T) {
	t.Parallel()
	eachDriver(t, func(t *testing.T, driver string) {
		now := time.Now()
		ages := []time.Duration{10 * 24 * time.Hour, 2 * 24 * time.Hour, time.Hour, 0}
		tests := map[string]struct {
			days int
			want []string // ResultRef of the records left, newest first
		}{
			"keep forever": {days: 0, want: []string{"0s", "1h0m0s", "48h0m0s", "240h0m0s"}},
			"one day":      {days: 1, want: []string{"0s", "1h0m0s"}},
			"five days":    {days: 5, want: []string{"0s", "1h0m0s", "48h0m0s"}},
		}
		for name, tc := range tests {
			t.Run(name, func(t *testing.T) {
				t.Parallel()
				path := newTarget(t, driver)
				l, err := openAt(t.Context(), path, nil)
				if err != nil {
					t.Fatal(err)
				}
				for _, age := range ages {
					mustRecord(t, l, Record{TimeMs: now.Add(-age).UnixMilli(), Tool: "t", ResultRef: age.String()})
				}
				if err := l.Close(t.Context()); err != nil {
					t.Fatal(err)
				}

				l = mustOpen(t, path, &Options{RetainDays: tc.days})
				var got []string
				for _, r := range mustList(t, l, Query{}) {
					got = append(got, r.ResultRef)
				}
				if diff := cmp.Diff(tc.want, got); diff != "" {
					t.Errorf("records left (-want +got):\n%s", diff)
				}
			})
		}
	})
}

// fixture is the data set the query tests read: ids 1..7 in this order.
var fixture = []Record{
	{TimeMs: ms(0), SourceType: "mcp:claude-desktop", ClientName: "Claude Desktop", Tool: "notes_search", Decision: DecisionAllowed, Success: true, DurationUs: 100},
	{TimeMs: ms(1 * time.Minute), SourceType: "mcp:cursor", ClientName: "Cursor", Tool: "notes_search", Decision: DecisionAllowed, Success: true, DurationUs: 300},
	{TimeMs: ms(2 * time.Minute), SourceType: "cli", ClientName: "", Tool: "notes_store", Decision: DecisionAllowed, Success: false, Error: "boom", DurationUs: 50},
	{TimeMs: ms(3 * time.Minute), SourceType: "mcp:claude-desktop", ClientName: "Claude Desktop", Tool: "notes_store", Decision: DecisionDenied("budget"), DurationUs: 3},
	{TimeMs: ms(4 * time.Minute), SourceType: "mcp:cursor", ClientName: "Cursor", Tool: "notes_search", Decision: DecisionAllowed, Success: true, DurationUs: 200},
	{TimeMs: ms(5 * time.Minute), SourceType: "mcp:cursor", ClientName: "Cursor", Tool: "notes_search", Decision: DecisionAllowed, Success: false, DurationUs: 900},
	{TimeMs: ms(5 * time.Minute), SourceType: "cli", ClientName: "Claude Desktop", Tool: "pages_tag", Decision: DecisionDenied("readonly"), DurationUs: 2},
}

func fixtureLog(t *testing.T, driver string) *Log {
	t.Helper()
	l, _ := openLog(t, driver, nil)
	mustRecord(t, l, fixture...)
	mustFlush(t, l)
	return l
}

func TestList(t *testing.T) {
	t.Parallel()
	eachDriver(t, func(t *testing.T, driver string) {
		l := fixtureLog(t, driver)
		tests := map[string]struct {
			q    Query
			want []uint64
		}{
			"everything newest first, ties by id": {q: Query{}, want: []uint64{7, 6, 5, 4, 3, 2, 1}},
			"limit":                               {q: Query{Limit: 2}, want: []uint64{7, 6}},
			"negative limit means default":        {q: Query{Limit: -1}, want: []uint64{7, 6, 5, 4, 3, 2, 1}},
			"since is inclusive":                  {q: Query{Since: base.Add(4 * time.Minute)}, want: []uint64{7, 6, 5}},
			"tool":                                {q: Query{Tool: "notes_store"}, want: []uint64{4, 3}},
			"unknown tool":                        {q: Query{Tool: "memory"}, want: []uint64{}},
			"client by source type":               {q: Query{Client: "cli"}, want: []uint64{7, 3}},
			"client by client name":               {q: Query{Client: "Claude Desktop"}, want: []uint64{7, 4, 1}},
			"failed includes denied":              {q: Query{FailedOnly: true}, want: []uint64{7, 6, 4, 3}},
			"filters combine": {
				q:    Query{Client: "mcp:cursor", Tool: "notes_search", FailedOnly: true, Since: base.Add(time.Minute)},
				want: []uint64{6},
			},
			"client filter does not escape tool filter": {
				q:    Query{Client: "Claude Desktop", Tool: "pages_tag"},
				want: []uint64{7},
			},
		}
		for name, tc := range tests {
			t.Run(name, func(t *testing.T) {
				t.Parallel()
				got := mustList(t, l, tc.q)
				if diff := cmp.Diff(tc.want, ids(got)); diff != "" {
					t.Errorf("List(%+v) ids (-want +got):\n%s", tc.q, diff)
				}
			})
		}
	})
}

func TestListReturnsWholeRecords(t *testing.T) {
	t.Parallel()
	eachDriver(t, func(t *testing.T, driver string) {
		l := fixtureLog(t, driver)
		want := fixture[2]
		want.ID = 3
		if diff := cmp.Diff([]Record{want}, mustList(t, l, Query{Client: "cli", Tool: "notes_store"})); diff != "" {
			t.Errorf("List() (-want +got):\n%s", diff)
		}
	})
}

func TestStats(t *testing.T) {
	t.Parallel()
	eachDriver(t, func(t *testing.T, driver string) {
		l := fixtureLog(t, driver)
		tests := map[string]struct {
			since time.Time
			want  []ToolStats
		}{
			"all records": {
				want: []ToolStats{
					// Durations 100, 200, 300, 900: the nearest-rank median is the 2nd smallest.
					{Tool: "notes_search", Calls: 4, Failures: 1, Denied: 0, P50Us: 200, MaxUs: 900},
					// The denied attempt's 3µs is not a run.
					{Tool: "notes_store", Calls: 2, Failures: 1, Denied: 1, P50Us: 50, MaxUs: 50},
					{Tool: "pages_tag", Calls: 1, Failures: 0, Denied: 1, P50Us: 0, MaxUs: 0},
				},
			},
			"since": {
				since: base.Add(3 * time.Minute),
				want: []ToolStats{
					// Durations 200, 900.
					{Tool: "notes_search", Calls: 2, Failures: 1, P50Us: 200, MaxUs: 900},
					{Tool: "notes_store", Calls: 1, Denied: 1},
					{Tool: "pages_tag", Calls: 1, Denied: 1},
				},
			},
			"odd count median": {
				since: base.Add(time.Minute),
				want: []ToolStats{
					// Durations 200, 300, 900.
					{Tool: "notes_search", Calls: 3, Failures: 1, P50Us: 300, MaxUs: 900},
					{Tool: "notes_store", Calls: 2, Failures: 1, Denied: 1, P50Us: 50, MaxUs: 50},
					{Tool: "pages_tag", Calls: 1, Denied: 1},
				},
			},
			"nothing since": {since: base.Add(time.Hour), want: nil},
		}
		for name, tc := range tests {
			t.Run(name, func(t *testing.T) {
				t.Parallel()
				got, err := l.Stats(t.Context(), tc.since)
				if err != nil {
					t.Fatalf("Stats() error: %v", err)
				}
				if diff := cmp.Diff(tc.want, got); diff != "" {
					t.Errorf("Stats() (-want +got):\n%s", diff)
				}
			})
		}
	})
}

// TestOpenConcurrentlyOnNewFile opens one new audit.db from many
// connections at once, as parallel CLI calls on a fresh data dir do: every
// open succeeds and the table exists once.
func TestOpenConcurrentlyOnNewFile(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "audit.db")
	const n = 16
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for range n {
		wg.Go(func() {
			l, err := Open(context.Background(), path, nil)
			if err != nil {
				errs <- err
				return
			}
			if err := l.Close(context.Background()); err != nil {
				errs <- err
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

// TestOpenMigratedFileTakesNoWriteLock opens a file whose table is
// current while another process holds the write lock: Open reads the
// schema version and needs no lock, so it succeeds at once instead of
// queueing behind the writer.
func TestOpenMigratedFileTakesNoWriteLock(t *testing.T) {
	t.Parallel()
	l, path := openLog(t, storage.DriverSQLite, nil)
	mustRecord(t, l, Record{Tool: "notes_store", Decision: "allowed"})
	mustFlush(t, l)

	side := sideDB(t, path)
	var v int32
	if err := side.QueryRowContext(t.Context(), "PRAGMA user_version").Scan(&v); err != nil || v != schemaVersion {
		t.Fatalf("user_version = %d (err %v), want the schema version %d", v, err, schemaVersion)
	}
	conn, err := side.Conn(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.ExecContext(t.Context(), "BEGIN IMMEDIATE"); err != nil {
		t.Fatalf("BEGIN IMMEDIATE: %v", err)
	}
	defer conn.ExecContext(context.Background(), "ROLLBACK") //nolint:errcheck

	// The busy timeout would end a wait for the lock with "database is
	// locked"; a context that is already cancelled would too.
	second := mustOpen(t, path, nil)
	if got := mustList(t, second, Query{}); len(got) != 1 || got[0].Tool != "notes_store" {
		t.Errorf("List() on the second log = %+v, want the one record", got)
	}
}

// TestOpenMigratesOlderFile opens a file whose table predates the schema
// version (user_version 0, an index missing): Open creates the index and
// records the version, keeping the rows.
func TestOpenMigratesOlderFile(t *testing.T) {
	t.Parallel()
	l, path := openLog(t, storage.DriverSQLite, nil)
	mustRecord(t, l, Record{Tool: "notes_store", Decision: "allowed"})
	mustFlush(t, l)
	if err := l.Close(t.Context()); err != nil {
		t.Fatal(err)
	}
	side := sideDB(t, path)
	for _, stmt := range []string{"DROP INDEX idx_mcp_audit_tool", "PRAGMA user_version = 0"} {
		if _, err := side.ExecContext(t.Context(), stmt); err != nil {
			t.Fatalf("%s: %v", stmt, err)
		}
	}

	again := mustOpen(t, path, nil)
	var v int32
	if err := side.QueryRowContext(t.Context(), "PRAGMA user_version").Scan(&v); err != nil || v != schemaVersion {
		t.Errorf("user_version = %d (err %v), want the schema version %d", v, err, schemaVersion)
	}
	var index int
	if err := side.QueryRowContext(t.Context(), "SELECT count(*) FROM sqlite_master WHERE type = 'index' AND name = 'idx_mcp_audit_tool'").Scan(&index); err != nil || index != 1 {
		t.Errorf("idx_mcp_audit_tool: %d such index (err %v), want 1", index, err)
	}
	if got := mustList(t, again, Query{}); len(got) != 1 || got[0].Tool != "notes_store" {
		t.Errorf("List() = %+v, want the record written before", got)
	}
}

// TestInsertColumnsCoverRecord keeps the batch INSERT in step with Record:
// every mapped column but the id is written, in field order.
func TestInsertColumnsCoverRecord(t *testing.T) {
	t.Parallel()
	var cols []string
	rt := reflect.TypeFor[Record]()
	for f := range rt.Fields() {
		tag := f.Tag.Get("gorm")
		name, _, _ := strings.Cut(strings.TrimPrefix(tag, "column:"), ";")
		if name != "" && name != "id" {
			cols = append(cols, name)
		}
	}
	if got := strings.Split(insertColumns, ", "); !slices.Equal(cols, got) || len(got) != insertWidth {
		t.Errorf("insertColumns = %v (width %d), Record maps %v", got, insertWidth, cols)
	}
	if n := len(insertArgs([]Record{{}})); n != insertWidth {
		t.Errorf("insertArgs gives %d values a record, want %d", n, insertWidth)
	}
}

// TestBatchIsAllOrNothing: a batch that fails part way leaves no row of it,
// whether it is inserts alone (one statement, no transaction) or inserts
// with completions (one transaction).
func TestBatchIsAllOrNothing(t *testing.T) {
	t.Parallel()
	l, path := openLog(t, storage.DriverSQLite, nil)
	side := sideDB(t, path)
	if _, err := side.ExecContext(t.Context(), `CREATE TRIGGER refuse_boom BEFORE INSERT ON mcp_audit
		WHEN NEW.tool = 'boom' BEGIN SELECT RAISE(ABORT, 'boom refused'); END`); err != nil {
		t.Fatal(err)
	}
	pending := Record{TimeMs: 1, Tool: "act", Pending: true, Decision: DecisionAllowed}
	if err := writeBatchOnce(l.db.WithContext(t.Context()), []Record{pending}); err != nil {
		t.Fatalf("writing a pending row: %v", err)
	}
	count := func() (n int, pendingLeft int) {
		t.Helper()
		if err := side.QueryRowContext(t.Context(), "SELECT COUNT(*), COALESCE(SUM(pending), 0) FROM mcp_audit").Scan(&n, &pendingLeft); err != nil {
			t.Fatal(err)
		}
		return n, pendingLeft
	}
	if n, p := count(); n != 1 || p != 1 {
		t.Fatalf("after the pending row: %d rows, %d pending; want 1, 1", n, p)
	}

	inserts := []Record{{TimeMs: 2, Tool: "read"}, {TimeMs: 3, Tool: "boom"}, {TimeMs: 4, Tool: "read"}}
	if err := writeBatchOnce(l.db.WithContext(t.Context()), inserts); err == nil || !strings.Contains(err.Error(), "boom refused") {
		t.Errorf("inserts-only batch with a refused row: error %v, want boom refused", err)
	}
	if n, p := count(); n != 1 || p != 1 {
		t.Errorf("after the failed inserts-only batch: %d rows, %d pending; want 1, 1 (nothing of the batch)", n, p)
	}

	mixed := []Record{{ID: 1, Decision: DecisionAllowed, Success: true}, {TimeMs: 5, Tool: "boom"}}
	if err := writeBatchOnce(l.db.WithContext(t.Context()), mixed); err == nil {
		t.Error("batch with a completion and a refused row: no error")
	}
	if n, p := count(); n != 1 || p != 1 {
		t.Errorf("after the failed mixed batch: %d rows, %d pending; want 1, 1 (the completion rolled back)", n, p)
	}

	if err := writeBatchOnce(l.db.WithContext(t.Context()), []Record{{ID: 1, Decision: DecisionAllowed, Success: true}, {TimeMs: 6, Tool: "read"}}); err != nil {
		t.Fatalf("good mixed batch: %v", err)
	}
	if n, p := count(); n != 2 || p != 0 {
		t.Errorf("after the good mixed batch: %d rows, %d pending; want 2, 0", n, p)
	}
}
