package audit

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"hash/crc32"
	"hash/crc64"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"
	"gorm.io/driver/sqlite"
	"gorm.io/gorm"
	"gorm.io/gorm/logger"

	"github.com/openhuman/openhuman-host/sdk/storage"
	"github.com/openhuman/openhuman-host/sdk/storage/sqliteerr"
	"github.com/openhuman/openhuman-host/sdk/storage/sqlitefile"
	"github.com/openhuman/openhuman-host/sdk/storage/sqliteuri"
)

const (
	// defaultQueueSize is Options.QueueSize when it is 0.
	defaultQueueSize = 1024
	// maxBatch caps the rows the writer commits in one transaction.
	maxBatch = 256
	// linger is how long the writer waits for more records after the
	// first of a batch: a commit (the INSERT's statement and the WAL's
	// fsync) costs far more than a row, so gathering the calls of some
	// milliseconds into one commit keeps the audit cheap under load: at 8
	// calls in flight, 10 ms halves the writer's CPU per call against 2 ms
	// (docs/performance.md, Audit cost). The writer sleeps through it
	// rather than waking for each record. Calls never wait for it: they
	// only enqueue, and Flush and Begin end the wait at once.
	linger = 10 * time.Millisecond
	// closeAttempts is how many times the writer tries a batch once Close has begun, before discarding it.
	closeAttempts = 3
	// Retry delays grow from minBackoff, doubling per attempt, up to maxBackoff.
	minBackoff = 100 * time.Millisecond
	maxBackoff = 5 * time.Second
	// pruneInterval is how often rows older than Options.RetainDays are deleted.
	pruneInterval = time.Hour
)

// dsnParams are applied by the driver to every pooled connection: WAL so readers (the CLI) never block the
// server's writer, a busy timeout so processes sharing the file wait instead of failing, and BEGIN
// IMMEDIATE so a transaction takes the write lock up front rather than failing when it upgrades.
const dsnParams = "_journal_mode=WAL&_busy_timeout=5000&_txlock=immediate&_foreign_keys=1"

// ErrClosed is returned by the methods of a [Log] that has been closed.
var ErrClosed = errors.New("audit: log is closed")

// Options configures [Open]. A nil *Options means all defaults.
type Options struct {
	// QueueSize is how many records and outcomes may wait for the writer; beyond it [Log.Record] and
	// [Log.Complete] drop what they are given rather than block (see [Log.Status]). Default 0 means 1024;
	// a negative value is an error.
	QueueSize int
	// RetainDays is how many days of records to keep; older rows are deleted at Open and then hourly.
	// Default 0 means keep forever; a negative value is an error.
	RetainDays int
	// Repair checks the database at Open (PRAGMA quick_check). A damaged database, or a file that is not
	// a SQLite database, is renamed to "<path>.damaged-<UTC time>" (its -wal and -shm files too), a fresh
	// one is created in its place, and the move is logged at error level with both paths: the old rows
	// stay readable with the sqlite3 shell, and the host keeps recording. The long-running server sets
	// it; short-lived commands leave it off, since the check reads the whole file. Default false: a
	// damaged database is an error from Open.
	Repair bool
	// Retry keeps the log up when the database cannot be opened for a reason that may pass (a full disk,
	// an I/O error, a lock held past the busy timeout): Open then returns a Log that is not open yet,
	// logs the failure at error level, and keeps trying in the background (backing off from 100 ms to
	// 5 s) until it opens or Close is called. Until then [Log.Begin] fails, so no act runs unrecorded;
	// [Log.Record] and [Log.Complete] queue as usual, written once the database opens; [Log.Status]
	// reports the failure; and the query methods fail. A damaged database (with Repair), a missing
	// permission and an invalid option are still errors from Open. The long-running server sets it, so
	// that reads keep working when it starts on a full disk. Default false: any failure is an error from
	// Open.
	Retry bool
	// Logger receives the writer's warnings (failed writes, retries, dropped rows) and debug lines; it
	// never receives SQL or row values. Name it for the component (such as "host.audit"). Default nil
	// means hclog.NewNullLogger().
	Logger hclog.Logger
}

// Log is an open audit log. Its methods are safe for concurrent use.
type Log struct {
	// db and sqlDB are set once, before ready is closed: by Open, or by the writer when Options.Retry
	// let Open return before the database could be opened.
	db    *gorm.DB
	sqlDB *sql.DB
	ready chan struct{}
	// where names the database in messages: the SQLite file's path, or
	// PostgreSQL's host:port/database.
	where string
	// postgres is true on PostgreSQL, false on SQLite.
	postgres bool
	// connect opens, migrates and prunes the database; reconnect calls it
	// again after a failure.
	connect func(ctx context.Context) (*gorm.DB, *sql.DB, error)
	opts    Options
	logger  hclog.Logger
	retain  time.Duration
	queue   chan entry
	// urgent ends the writer's linger: Flush and Begin, which wait for the
	// writer, signal it after they queue their entry (see hurry).
	urgent chan struct{}

	mu      sync.Mutex // guards closed and the senders.Add that must precede Close's senders.Wait
	closed  bool
	senders sync.WaitGroup // Record and Flush calls between the closed check and their enqueue

	stop        chan struct{} // closed by Close once no sender remains: the writer drains and exits
	abort       chan struct{} // closed by Close when its context ends: waiting senders give up
	abortOnce   sync.Once
	cancelWrite context.CancelCauseFunc // cancels the writer's statements, on abort
	exited      chan struct{}           // closed when the writer returns

	// Written by the writer before exited is closed, read by Close after.
	discarded int
	lastErr   error

	inserts  atomic.Int64            // records queued by Record and not yet committed or discarded
	dropped  atomic.Uint64           // records and outcomes not queued because the queue was full
	warnedAt atomic.Int64            // UnixNano of the last dropped-row warning, to log at most one per dropWarnEvery
	failing  atomic.Pointer[failure] // set while the writer's writes fail, nil once one succeeds
	failures atomic.Uint64           // the writer's failed writes since Open
}

// failure is a run of failed writes.
type failure struct {
	since time.Time
	err   error
}

// entry is one item of the queue: a record to insert (rec.ID 0), the
// outcome of the pending row rec.ID, a flush marker when flushed is
// non-nil, or [Log.Begin]'s turn when turn is non-nil.
type entry struct {
	rec     Record
	flushed chan error // buffered(1); receives nil once every earlier record is committed
	turn    *turn
}

// turn lets [Log.Begin] insert its row after every row queued before it, so that ids follow the order
// of the calls: the writer commits what precedes the turn, closes reached, and writes nothing more until
// Begin closes done.
type turn struct {
	reached chan struct{}
	done    chan struct{}
}

// Open opens the audit log in the SQLite database at path, creating the file (0600) and its parent
// directory (0700) when missing, migrating the mcp_audit table, deleting rows older than
// opts.RetainDays, and starting the background writer. Several processes may open the same file. With
// opts.Repair a damaged database is moved aside and replaced by a fresh one; without it, it is an error
// that says so. Close the Log to flush it.
func Open(ctx context.Context, path string, opts *Options) (*Log, error) {
	if path == "" {
		return nil, errors.New("audit: open: database path is empty")
	}
	o, err := checkOptions(opts)
	if err != nil {
		return nil, err
	}

	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, fmt.Errorf("audit: open %s: %w", path, err)
	}
	if err := os.MkdirAll(filepath.Dir(abs), 0o700); err != nil {
		return nil, fmt.Errorf("audit: open %s: create directory: %w", abs, err)
	}
	l := newLog(abs, o)
	l.connect = func(ctx context.Context) (*gorm.DB, *sql.DB, error) { return connect(ctx, abs, o) }
	return l.start(ctx)
}

// OpenPostgres opens the audit log in the PostgreSQL database of dsn ([storage] driver = "postgres"),
// which every replica of the host shares: it applies the audit log's migrations (under an advisory
// lock, so replicas starting at once migrate once), deletes rows older than opts.RetainDays and starts
// the background writer. The act budget of [Log.Begin] and [Log.Spend] then hold across every process
// that uses the database. opts.Repair does not apply; opts.Retry does, for a server that cannot be
// reached. Errors name the server as host:port/database, never with the password.
func OpenPostgres(ctx context.Context, dsn string, opts *Options) (*Log, error) {
	o, err := checkOptions(opts)
	if err != nil {
		return nil, err
	}
	if dsn == "" {
		return nil, errors.New("audit: open: the PostgreSQL connection string is empty")
	}
	l := newLog("PostgreSQL "+storage.Describe(dsn), o)
	l.postgres = true
	l.connect = func(ctx context.Context) (*gorm.DB, *sql.DB, error) { return openPostgres(ctx, dsn, o) }
	return l.start(ctx)
}

// start opens the database, or with Options.Retry begins retrying, and starts the writer.
func (l *Log) start(ctx context.Context) (*Log, error) {
	db, sqlDB, err := l.connect(ctx)
	switch {
	case err == nil:
		l.opened(db, sqlDB)
	case l.opts.Retry && ctx.Err() == nil && !errors.Is(err, fs.ErrPermission) && !Damaged(err):
		l.failing.Store(&failure{since: time.Now(), err: err})
		l.logger.Error("audit database cannot be opened: acts are refused until it can; retrying in the background",
			"database", l.where, "error", err)
	default:
		return nil, err
	}
	writeCtx, cancel := context.WithCancelCause(context.Background())
	l.cancelWrite = cancel
	go l.run(writeCtx)
	return l, nil
}

// checkOptions validates opts and fills in the defaults.
func checkOptions(opts *Options) (Options, error) {
	var o Options
	if opts != nil {
		o = *opts
	}
	switch {
	case o.QueueSize < 0:
		return o, fmt.Errorf("audit: open: queue size %d is negative: use 0 for the default (%d)", o.QueueSize, defaultQueueSize)
	case o.RetainDays < 0:
		return o, fmt.Errorf("audit: open: retain days %d is negative: use 0 to keep records forever", o.RetainDays)
	}
	if o.QueueSize == 0 {
		o.QueueSize = defaultQueueSize
	}
	if o.Logger == nil {
		o.Logger = hclog.NewNullLogger()
	}
	return o, nil
}

// newLog returns a Log on where that is not open yet.
func newLog(where string, o Options) *Log {
	return &Log{
		ready:  make(chan struct{}),
		where:  where,
		opts:   o,
		logger: o.Logger,
		retain: time.Duration(o.RetainDays) * 24 * time.Hour,
		queue:  make(chan entry, o.QueueSize),
		urgent: make(chan struct{}, 1),
		stop:   make(chan struct{}),
		abort:  make(chan struct{}),
		exited: make(chan struct{}),
	}
}

// opened makes db the log's database. It is called once, before the writer uses it.
func (l *Log) opened(db *gorm.DB, sqlDB *sql.DB) {
	l.db, l.sqlDB = db, sqlDB
	close(l.ready)
}

// isOpen reports whether the database is open; it returns the reason when it is not.
func (l *Log) isOpen() error {
	select {
	case <-l.ready:
		return nil
	default:
	}
	err := errors.New("not opened yet")
	if f := l.failing.Load(); f != nil {
		err = f.err
	}
	return fmt.Errorf("the audit database %s could not be opened: %w", l.where, err)
}

// connect opens the database at abs, with o.Repair moving a damaged one aside and opening a fresh one.
func connect(ctx context.Context, abs string, o Options) (*gorm.DB, *sql.DB, error) {
	db, sqlDB, err := open(ctx, abs, o)
	if err == nil || !Damaged(err) {
		return db, sqlDB, err
	}
	if !o.Repair {
		return nil, nil, fmt.Errorf("%w; `openhuman-host serve` moves a damaged audit log aside and starts a fresh one", err)
	}
	moved, mvErr := sqlitefile.MoveAside(abs, time.Now())
	if mvErr != nil {
		return nil, nil, fmt.Errorf("%w; moving it aside failed too: %w", err, mvErr)
	}
	o.Logger.Error("audit database is damaged: moved it aside and started a fresh one; the old rows stay readable with the sqlite3 shell",
		"path", abs, "moved_to", moved, "error", err)
	return open(ctx, abs, o)
}

// open opens, checks (with o.Repair), migrates and prunes the database at abs.
func open(ctx context.Context, abs string, o Options) (*gorm.DB, *sql.DB, error) {
	// Create the file ourselves so it is private; SQLite gives its -wal and -shm files the same mode.
	f, err := os.OpenFile(abs, os.O_RDONLY|os.O_CREATE, 0o600)
	if err != nil {
		return nil, nil, fmt.Errorf("audit: open %s: %w", abs, err)
	}
	_ = f.Close()
	// A file made readable by others (by hand, or by an older version)
	// becomes private again.
	for _, p := range []string{abs, abs + "-wal", abs + "-shm"} {
		if err := os.Chmod(p, 0o600); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return nil, nil, fmt.Errorf("audit: open %s: make it private: %w", abs, err)
		}
	}

	db, err := gorm.Open(sqlite.Open(dsn(abs)), &gorm.Config{
		Logger:                 logger.Discard,
		SkipDefaultTransaction: true,
		// Every batch runs the same INSERT; preparing it once saves the
		// writer most of its CPU.
		PrepareStmt: true,
	})
	if err != nil {
		return nil, nil, fmt.Errorf("audit: open %s: %w", abs, err)
	}
	sqlDB, err := db.DB()
	if err != nil {
		return nil, nil, fmt.Errorf("audit: open %s: %w", abs, err)
	}
	// Acts are written by the calls themselves, several at once: keep
	// their connections, and the INSERT prepared on each, between calls.
	storage.KeepSQLiteConnections(sqlDB)
	fail := func(format string, args ...any) (*gorm.DB, *sql.DB, error) {
		_ = sqlDB.Close()
		return nil, nil, fmt.Errorf("audit: open %s: "+format, append([]any{abs}, args...)...)
	}
	if o.Repair {
		if err := quickCheck(ctx, db); err != nil {
			return fail("%w", err)
		}
	}
	if err := migrate(ctx, db); err != nil {
		return fail("migrate table %s: %w", Table, err)
	}
	if err := prune(ctx, db, time.Duration(o.RetainDays)*24*time.Hour, o.Logger); err != nil {
		return fail("%w", err)
	}
	return db, sqlDB, nil
}

// schemaVersion fingerprints Record's columns (names, Go types and gorm
// tags, CRC-32 in 31 bits, never 0). [migrate] stores it in the database's
// user_version once the table matches Record, so a changed Record is
// migrated by the first process that opens the file and nobody else.
var schemaVersion = func() int32 {
	var b strings.Builder
	for _, rt := range []reflect.Type{reflect.TypeFor[Record](), reflect.TypeFor[SpentState](), reflect.TypeFor[SharedKey]()} {
		for f := range rt.Fields() {
			fmt.Fprintf(&b, "%s %s %s\n", f.Name, f.Type, f.Tag.Get("gorm"))
		}
	}
	return int32(crc32.ChecksumIEEE([]byte(b.String()))&0x7fffffff) | 1
}()

// migrate brings the mcp_audit table in line with Record unless the
// database's user_version says it already is, which costs one read and no
// lock, so that many processes opening the file at once (parallel CLI
// calls, a client starting several servers) do not queue for the write
// lock. Otherwise it migrates inside one immediate transaction, checking
// the version again once it holds the lock, so that processes opening a
// new data dir at once migrate one after the other instead of racing to
// create the table.
func migrate(ctx context.Context, db *gorm.DB) error {
	version := func(tx *gorm.DB) (int32, error) {
		var v int32
		err := tx.Raw("PRAGMA user_version").Scan(&v).Error
		return v, err
	}
	if v, err := version(db.WithContext(ctx)); err != nil || v == schemaVersion {
		return err
	}
	return db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		if v, err := version(tx); err != nil || v == schemaVersion {
			return err
		}
		if err := tx.AutoMigrate(&Record{}, &SpentState{}, &SharedKey{}); err != nil {
			return err
		}
		return tx.Exec(fmt.Sprintf("PRAGMA user_version = %d", schemaVersion)).Error
	})
}

// dsn builds a file: URI so that any character in the path is escaped rather than read as a parameter.
func dsn(abs string) string {
	return sqliteuri.File(abs, dsnParams)
}

// ErrQueueFull is wrapped by the errors of [Log.Record] and [Log.Complete] when the queue has no room:
// the writer cannot keep up or cannot write (see [Log.Status]).
var ErrQueueFull = errors.New("audit queue is full")

// Record enqueues r for writing and returns once it is queued, not written: call [Log.Flush] to wait for
// the write. It never blocks: when the queue is full, r is dropped, counted in [Status].Dropped and
// logged (at most one warning every few seconds), and the error wraps [ErrQueueFull]. The host records
// read tools this way, so a slow, full or damaged disk never holds a read up; acts go through
// [Log.Begin] instead. ID and Pending are ignored, a zero TimeMs becomes the current time, and Error is
// cut by [TruncateError]. After Close it returns [ErrClosed].
func (l *Log) Record(ctx context.Context, r Record) error {
	r.ID, r.Pending = 0, false
	if r.TimeMs == 0 {
		r.TimeMs = time.Now().UnixMilli()
	}
	r.Error = TruncateError(r.Error)
	l.inserts.Add(1)
	if err := l.offer(entry{rec: r}); err != nil {
		l.inserts.Add(-1)
		return fmt.Errorf("audit: record %s: %w", r.Tool, err)
	}
	return nil
}

// budgetLockID is the PostgreSQL advisory lock that [Log.Begin] holds while it counts and inserts an
// act under a budget: the CRC-64 (ECMA) of "openhuman-host act budget", as a signed 64-bit key.
var budgetLockID = int64(crc64.Checksum([]byte("openhuman-host act budget"), crc64.MakeTable(crc64.ECMA)))

// BudgetWindow is the sliding window [Log.Begin] counts acts over.
const BudgetWindow = time.Hour

// BudgetError is the error of [Log.Begin] when the act budget is used up; nothing was written.
type BudgetError struct {
	// Limit is the limit Begin was given.
	Limit int
	// FreeAt is when the next act leaves the window, freeing a slot.
	FreeAt time.Time
	// Profile is set when the profile's own cap refused the act (Begin's profileLimit), to its name.
	Profile string
}

// Error says the limit and when a slot frees up.
func (e *BudgetError) Error() string {
	of := ""
	if e.Profile != "" {
		of = " of profile " + e.Profile
	}
	return fmt.Sprintf("audit: %d acts%s in the last hour reach the limit of %d; the next slot frees up at %s",
		e.Limit, of, e.Limit, e.FreeAt.UTC().Format(time.RFC3339))
}

// Begin writes r as a pending row (Record.Pending) and returns its id once the row is committed to
// disk, so that an act that runs always has a row, even when the host is killed during the call; the
// caller runs the act only when Begin succeeds, then calls [Log.Complete]. The outcome fields (ID,
// Success, Error, DurationUs, ResultRef) are ignored, and a zero TimeMs becomes the current time.
//
// With limit >= 0 Begin is also the hourly act budget shared by every process that uses the database
// (CLI calls, several servers): in the same write transaction it counts the rows of class "act" and
// decision "allowed" whose TimeMs is within [BudgetWindow] before r.TimeMs, and when there are limit or
// more it writes nothing and returns a [*BudgetError]. profileLimit is the same for the rows of
// r.Profile only, a profile's own cap; its error has Profile set. A negative limit means no budget.
//
// Rows of one millisecond are listed in the order of their ids, so Begin first waits for the writer
// to commit the rows [Log.Record] queued before the call (at most two seconds, and not at all while the
// writer is failing): within one process, ids follow the order of the calls.
//
// Any other error means the row could not be written (a full disk, a damaged or locked database, ctx
// done): the act must not run. It returns [ErrClosed] after Close.
func (l *Log) Begin(ctx context.Context, r Record, limit, profileLimit int) (uint64, error) {
	if err := l.usable(); err != nil {
		return 0, err
	}
	if err := l.isOpen(); err != nil {
		return 0, fmt.Errorf("audit: write the row of %s before it runs: %w", r.Tool, err)
	}
	// The outcome is unknown until Complete.
	r.ID, r.Pending, r.Success, r.Error, r.DurationUs, r.ResultRef = 0, true, false, "", 0, ""
	if r.TimeMs == 0 {
		r.TimeMs = time.Now().UnixMilli()
	}
	if t := l.awaitTurn(ctx); t != nil {
		defer close(t.done)
	}
	if err := ctx.Err(); err != nil {
		return 0, fmt.Errorf("audit: write the row of %s before it runs: %w", r.Tool, err)
	}
	var id uint64
	err := l.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		if limit >= 0 || profileLimit >= 0 {
			if l.postgres {
				// SQLite's BEGIN IMMEDIATE already serialises writers; on PostgreSQL two replicas
				// could otherwise both count limit-1 acts and both insert.
				if err := tx.Exec("SELECT pg_advisory_xact_lock(?)", budgetLockID).Error; err != nil {
					return fmt.Errorf("lock the act budget: %w", err)
				}
			}
			if limit >= 0 {
				if err := budget(tx, r.TimeMs, limit, nil); err != nil {
					return err
				}
			}
			if profileLimit >= 0 {
				if err := budget(tx, r.TimeMs, profileLimit, &r.Profile); err != nil {
					return err
				}
			}
		}
		return tx.Raw(insertSQL(1)+" RETURNING id", insertArgs([]Record{r})...).Scan(&id).Error
	})
	var be *BudgetError
	switch {
	case errors.As(err, &be):
		return 0, err
	case err != nil:
		return 0, fmt.Errorf("audit: write the row of %s before it runs in %s: %w", r.Tool, l.where, err)
	case id == 0:
		return 0, fmt.Errorf("audit: write the row of %s before it runs: the database returned no id", r.Tool)
	}
	return id, nil
}

// turnWait is how long [Log.Begin] waits for the writer to commit the rows queued before it. A writer
// that takes longer is retrying a failed write or is stuck behind another process's lock; Begin then
// writes its row at once, and its id may be lower than those of the reads just before it.
const turnWait = 2 * time.Second

// awaitTurn returns once the writer has committed every row that [Log.Record] queued before the call,
// and holds it until the returned turn's done is closed, so that Begin's row gets a higher id than
// theirs: within one process, ids (which order rows of the same millisecond) follow the order of the
// calls. It returns nil, without waiting, when no row is queued, when the writer is failing or the
// queue is full (order is not worth holding an act for), and when ctx ends or turnWait passes first.
func (l *Log) awaitTurn(ctx context.Context) *turn {
	if l.inserts.Load() <= 0 || l.failing.Load() != nil {
		return nil
	}
	t := &turn{reached: make(chan struct{}), done: make(chan struct{})}
	if l.enqueue(noWait, entry{turn: t}) != nil {
		return nil
	}
	l.hurry()
	wait := time.NewTimer(turnWait)
	defer wait.Stop()
	select {
	case <-t.reached:
	case <-ctx.Done():
	case <-wait.C:
	case <-l.abort:
	}
	// The writer waits for done only once it has reached the turn; closing done early lets it pass.
	return t
}

// hurry ends the writer's linger, if it is lingering, so that an entry
// someone waits for is reached at once. A signal left over from a wait
// that needed none only shortens one later linger.
func (l *Log) hurry() {
	select {
	case l.urgent <- struct{}{}:
	default:
	}
}

// ActsInWindow returns how many acts were allowed in the sliding hour ([BudgetWindow]) before now, of
// every profile: what max_actions_per_hour counts against.
func (l *Log) ActsInWindow(ctx context.Context) (int64, error) {
	if err := l.isOpen(); err != nil {
		return 0, err
	}
	var n int64
	since := time.Now().Add(-BudgetWindow).UnixMilli()
	if err := l.db.WithContext(ctx).Raw("SELECT count(*) FROM "+Table+" WHERE class = ? AND decision = ? AND time_ms > ?",
		ClassAct, DecisionAllowed, since).Scan(&n).Error; err != nil {
		return 0, fmt.Errorf("audit: count the acts of the last hour in %s: %w", l.where, err)
	}
	return n, nil
}

// budget returns a *BudgetError when the hour before nowMs holds limit or more allowed acts, of the
// profile *profile only when profile is not nil.
func budget(tx *gorm.DB, nowMs int64, limit int, profile *string) error {
	since := nowMs - BudgetWindow.Milliseconds()
	where, args := "class = ? AND decision = ? AND time_ms > ?", []any{ClassAct, DecisionAllowed, since}
	if profile != nil {
		where, args = where+" AND profile = ?", append(args, *profile)
	}
	var n int64
	if err := tx.Raw("SELECT count(*) FROM "+Table+" WHERE "+where, args...).Scan(&n).Error; err != nil {
		return fmt.Errorf("count the acts of the last hour: %w", err)
	}
	if n < int64(limit) {
		return nil
	}
	// A slot frees up when the act that brings the count below limit leaves the window.
	var oldest int64
	if err := tx.Raw("SELECT time_ms FROM "+Table+" WHERE "+where+" ORDER BY time_ms LIMIT 1 OFFSET ?",
		append(args, n-int64(limit))...).Scan(&oldest).Error; err != nil {
		return fmt.Errorf("find when the act budget frees up: %w", err)
	}
	be := &BudgetError{Limit: limit, FreeAt: time.UnixMilli(oldest).Add(BudgetWindow)}
	if profile != nil {
		be.Profile = *profile
	}
	return be
}

// Complete enqueues the outcome of the act whose pending row [Log.Begin] wrote as id: r's Decision,
// Success, Error (cut by [TruncateError]), DurationUs and ResultRef replace the row's, and the row stops
// being pending. Like [Log.Record] it never blocks: when the queue is full the outcome is dropped and
// counted, the error wraps [ErrQueueFull], and the row stays pending. After Close it returns
// [ErrClosed].
func (l *Log) Complete(id uint64, r Record) error {
	if id == 0 {
		return fmt.Errorf("audit: complete %s: id 0 is not a row of Begin", r.Tool)
	}
	r.ID, r.Pending = id, false
	r.Error = TruncateError(r.Error)
	if err := l.offer(entry{rec: r}); err != nil {
		return fmt.Errorf("audit: complete %s (row %d): %w", r.Tool, id, err)
	}
	return nil
}

// Status is the health of a [Log], for `providers status` and the log.
type Status struct {
	// Queued is how many records and outcomes wait for the writer.
	Queued int
	// Dropped counts the records and outcomes not recorded since Open because the queue was full.
	Dropped uint64
	// FailingSince is when the writer's current run of failed writes began; zero when its last write
	// succeeded.
	FailingSince time.Time
	// LastError is the error of the writer's last failed write while it is failing; "" otherwise.
	LastError string
	// WriteFailures counts the writer's failed writes since Open (each retry counts).
	WriteFailures uint64
}

// Status reports the queue and the writer's health. It is cheap and safe to call at any time.
func (l *Log) Status() Status {
	st := Status{Queued: len(l.queue), Dropped: l.dropped.Load(), WriteFailures: l.failures.Load()}
	if f := l.failing.Load(); f != nil {
		st.FailingSince, st.LastError = f.since, f.err.Error()
	}
	return st
}

// dropWarnEvery is the least time between two warnings about dropped rows.
const dropWarnEvery = 10 * time.Second

// noWait is a context that is already done: [Log.enqueue] with it only
// queues when there is room.
var noWait = func() context.Context {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	return ctx
}()

// offer queues e without waiting; when the queue is full it counts and logs the drop.
func (l *Log) offer(e entry) error {
	err := l.enqueue(noWait, e)
	if err == nil || errors.Is(err, ErrClosed) {
		return err
	}
	n := l.dropped.Add(1)
	now := time.Now().UnixNano()
	if last := l.warnedAt.Load(); now-last >= int64(dropWarnEvery) && l.warnedAt.CompareAndSwap(last, now) {
		args := []any{"dropped_total", n, "queue", cap(l.queue)}
		if f := l.failing.Load(); f != nil {
			args = append(args, "failing_since", f.since.UTC().Format(time.RFC3339), "error", f.err)
		}
		l.logger.Warn("audit queue is full: rows of read tools and outcomes of acts are being dropped (acts still get their row before they run)", args...)
	}
	return ErrQueueFull
}

// Flush waits until every record enqueued before the call is committed. It returns an error wrapping
// ctx.Err() when ctx ends first (the records stay queued), [ErrClosed] after Close, or an error when
// the records were discarded because Close gave up on an unusable database.
func (l *Log) Flush(ctx context.Context) error {
	done := make(chan error, 1)
	if err := l.enqueue(ctx, entry{flushed: done}); err != nil {
		if errors.Is(err, ErrClosed) {
			return err
		}
		return fmt.Errorf("audit: flush: %w", err)
	}
	l.hurry()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		return fmt.Errorf("audit: flush: %w", ctx.Err())
	}
}

// Damaged reports whether err says a SQLite database is damaged or is not a database at all
// (SQLITE_CORRUPT, SQLITE_NOTADB, or a failed quick_check).
func Damaged(err error) bool {
	return sqliteerr.Corrupt(err) || errors.Is(err, errDamaged)
}

var errDamaged = errors.New("the database is damaged")

// quickCheck runs PRAGMA quick_check and returns an error wrapping errDamaged unless it reports ok.
func quickCheck(ctx context.Context, db *gorm.DB) error {
	var res []string
	if err := db.WithContext(ctx).Raw("PRAGMA quick_check(5)").Scan(&res).Error; err != nil {
		return fmt.Errorf("check integrity: %w", err)
	}
	if len(res) == 1 && res[0] == "ok" {
		return nil
	}
	return fmt.Errorf("check integrity: %w: %s", errDamaged, strings.Join(res, "; "))
}

// addSender registers a caller about to enqueue, which must call
// l.senders.Done once it has, or returns ErrClosed once Close has begun.
func (l *Log) addSender() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return ErrClosed
	}
	l.senders.Add(1)
	return nil
}

// enqueue queues e, waiting for room until ctx ends or Close gives up.
func (l *Log) enqueue(ctx context.Context, e entry) error {
	if err := l.addSender(); err != nil {
		return err
	}
	defer l.senders.Done()

	select {
	case l.queue <- e:
		return nil
	default:
	}
	select {
	case l.queue <- e:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("wait for queue space: %w", ctx.Err())
	case <-l.abort:
		return ErrClosed
	}
}

// Close stops accepting records, waits for the writer to commit everything queued, and closes the
// database. If ctx ends first, or a batch still fails after a few attempts, the remaining records are
// discarded and the error says how many. Later calls return [ErrClosed].
func (l *Log) Close(ctx context.Context) error {
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return ErrClosed
	}
	l.closed = true
	l.mu.Unlock()

	// Let Records already past the closed check enqueue; the writer keeps draining meanwhile.
	sendersDone := make(chan struct{})
	go func() {
		l.senders.Wait()
		close(sendersDone)
	}()
	var ctxErr error
	if err := waitOrGiveUp(ctx, sendersDone, l.giveUp); err != nil {
		ctxErr = err
	}
	close(l.stop)
	if err := waitOrGiveUp(ctx, l.exited, l.giveUp); err != nil {
		ctxErr = err
	}
	l.cancelWrite(nil)

	var errs []error
	if l.discarded > 0 {
		cause := l.lastErr
		if ctxErr != nil && !errors.Is(cause, ctxErr) {
			cause = errors.Join(cause, ctxErr)
		}
		errs = append(errs, fmt.Errorf("audit: close: discarded %d unwritten records: %w", l.discarded, cause))
	}
	if l.sqlDB != nil { // set by the writer, which has exited
		if err := l.sqlDB.Close(); err != nil {
			errs = append(errs, fmt.Errorf("audit: close database: %w", err))
		}
	}
	return errors.Join(errs...)
}

// giveUp makes waiting senders return and the writer stop retrying: what is still queued is discarded.
// cause is why Close gave up.
func (l *Log) giveUp(cause error) {
	l.abortOnce.Do(func() {
		close(l.abort)
		l.cancelWrite(cause)
	})
}

// usable reports ErrClosed for the query methods once Close has begun.
func (l *Log) usable() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return ErrClosed
	}
	return nil
}

// run is the writer: it commits queued records in batches until Close stops it, and prunes hourly.
func (l *Log) run(ctx context.Context) {
	defer close(l.exited)
	if l.isOpen() != nil && !l.reconnect(ctx) {
		return
	}
	var pruneTick <-chan time.Time
	if l.retain > 0 {
		t := time.NewTicker(pruneInterval)
		defer t.Stop()
		pruneTick = t.C
	}
	batch := make([]Record, 0, maxBatch)
	for {
		select {
		case e := <-l.queue:
			batch = l.process(ctx, e, batch[:0])
		case <-pruneTick:
			if err := prune(ctx, l.db, l.retain, l.logger); err != nil {
				l.logger.Warn("delete expired audit records failed", "error", err)
			}
		case <-l.stop:
			// No sender remains, so the queue only shrinks from here.
			for {
				select {
				case e := <-l.queue:
					batch = l.process(ctx, e, batch[:0])
				default:
					return
				}
			}
		}
	}
}

// process takes first plus whatever else is queued (up to maxBatch records, or up to a flush marker so
// that Flush returns as soon as its records are in), commits the records in one transaction, and
// answers the flush markers. It returns batch for reuse.
func (l *Log) process(ctx context.Context, first entry, batch []Record) []Record {
	var marker chan error
	var next *turn
	take := func(e entry) {
		switch {
		case e.flushed != nil:
			marker = e.flushed
		case e.turn != nil:
			next = e.turn
		default:
			batch = append(batch, e.rec)
		}
	}
	take(first)
	if marker == nil && next == nil && len(l.queue) < maxBatch-len(batch) {
		// Sleep through the linger rather than wake for each record that
		// arrives; Flush, Begin and Close cut it short, and a full batch
		// already queued skips it.
		timer := time.NewTimer(linger)
		select {
		case <-timer.C:
		case <-l.urgent:
		case <-l.stop:
		}
		timer.Stop()
	}
collect:
	for marker == nil && next == nil && len(batch) < maxBatch {
		select {
		case e := <-l.queue:
			take(e)
		default:
			break collect
		}
	}

	var err error
	if len(batch) > 0 {
		err = l.write(ctx, batch)
		l.inserts.Add(-inserts(batch))
		if err != nil {
			l.discarded += len(batch)
			if l.lastErr == nil || ctx.Err() == nil {
				l.lastErr = err // once Close gives up, keep the database's error rather than the give-up
			}
			l.logger.Error("audit records discarded", "rows", len(batch), "error", err)
			err = fmt.Errorf("audit: %d records discarded: %w", len(batch), err)
		}
	}
	if l.discarded > 0 && err == nil && marker != nil {
		// An earlier batch this marker covers was discarded.
		err = fmt.Errorf("audit: %d records discarded: %w", l.discarded, l.lastErr)
	}
	if marker != nil {
		marker <- err
	}
	if next != nil {
		// Begin inserts its row now; nothing is written until it has.
		close(next.reached)
		select {
		case <-next.done:
		case <-ctx.Done():
		}
	}
	return batch
}

// inserts counts the records of batch that are new rows rather than outcomes of pending ones.
func inserts(batch []Record) int64 {
	var n int64
	for _, r := range batch {
		if r.ID == 0 {
			n++
		}
	}
	return n
}

// write inserts batch in one transaction, retrying with backoff until it succeeds. Once Close has begun
// it gives up after closeAttempts attempts (one, once a batch has been discarded), and at once when Close
// gives up (ctx is cancelled).
func (l *Log) write(ctx context.Context, batch []Record) error {
	stop := l.stop
	tries := 0      // attempts since Close began
	var dbErr error // the latest failure Close's giving up did not cause
	gaveUp := func() error {
		if dbErr != nil {
			return dbErr
		}
		return context.Cause(ctx)
	}
	for attempt := 1; ; attempt++ {
		if ctx.Err() != nil {
			return gaveUp()
		}
		err := writeBatchOnce(l.db.WithContext(ctx), batch)
		if err == nil {
			if attempt > 1 {
				l.logger.Info("audit insert succeeded after retrying", "rows", len(batch), "attempts", attempt)
			}
			if f := l.failing.Swap(nil); f != nil {
				l.logger.Info("audit writes recovered", "failing_for", time.Since(f.since).Round(time.Second), "dropped_total", l.dropped.Load())
			}
			return nil
		}
		if ctx.Err() != nil {
			return gaveUp()
		}
		dbErr = err
		l.failures.Add(1)
		since := time.Now()
		if f := l.failing.Load(); f != nil { // only the writer stores it
			since = f.since
		}
		l.failing.Store(&failure{since: since, err: err})
		if isClosed(l.stop) {
			tries++
			stop = nil
		}
		limit := closeAttempts
		if l.discarded > 0 {
			limit = 1 // an earlier batch already failed at Close: the database is unusable
		}
		if tries > 0 && tries >= limit {
			return err
		}
		delay := min(minBackoff<<min(attempt-1, 10), maxBackoff)
		if tries > 0 {
			delay = minBackoff << (tries - 1) // Close is waiting: keep its delays short
		}
		l.logger.Warn("audit insert failed, retrying", "rows", len(batch), "attempt", attempt, "retry_in", delay, "error", err)
		t := time.NewTimer(delay)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return gaveUp()
		case <-stop:
			// Close has begun: retry now and count the attempts.
			t.Stop()
		}
	}
}

// prune deletes the rows of db older than retain, if it is positive.
func prune(ctx context.Context, db *gorm.DB, retain time.Duration, log hclog.Logger) error {
	if retain <= 0 {
		return nil
	}
	cutoff := time.Now().Add(-retain).UnixMilli()
	res := db.WithContext(ctx).Where("time_ms < ?", cutoff).Delete(&Record{})
	if res.Error != nil {
		return fmt.Errorf("delete records older than %s: %w", retain, res.Error)
	}
	if res.RowsAffected > 0 {
		log.Debug("deleted expired audit records", "rows", res.RowsAffected)
	}
	return nil
}

// waitOrGiveUp waits for done. If ctx ends first it calls giveUp, still waits for done (which giveUp
// makes prompt), and returns ctx.Err().
func waitOrGiveUp(ctx context.Context, done <-chan struct{}, giveUp func(error)) error {
	if isClosed(done) {
		return nil
	}
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		giveUp(ctx.Err())
		<-done
		return ctx.Err()
	}
}

func isClosed(c <-chan struct{}) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}

// writeBatchOnce writes batch atomically: a batch of new records only
// (the usual case: reads and acts' pending rows) is one multi-row INSERT,
// atomic on its own, without the BEGIN and COMMIT round trips of a
// transaction, which cost the writer as much CPU as the insert; a batch
// that also completes pending rows runs in one transaction.
func writeBatchOnce(db *gorm.DB, batch []Record) error {
	if !slices.ContainsFunc(batch, func(r Record) bool { return r.ID != 0 }) {
		return db.Exec(insertSQL(len(batch)), insertArgs(batch)...).Error
	}
	return db.Transaction(func(tx *gorm.DB) error { return writeBatch(tx, batch) })
}

// writeBatch inserts the new records of batch (ID 0) in one statement and
// writes the outcomes (ID set, from [Log.Complete]) to their pending rows.
func writeBatch(tx *gorm.DB, batch []Record) error {
	inserts := make([]Record, 0, len(batch))
	for _, r := range batch {
		if r.ID == 0 {
			inserts = append(inserts, r)
		}
	}
	if len(inserts) > 0 {
		if err := tx.Exec(insertSQL(len(inserts)), insertArgs(inserts)...).Error; err != nil {
			return err
		}
	}
	for _, r := range batch {
		if r.ID == 0 {
			continue
		}
		if err := tx.Exec(completeSQL, r.Decision, r.Success, r.Error, r.DurationUs, r.ResultRef, r.ID).Error; err != nil {
			return err
		}
	}
	return nil
}

// completeSQL writes the outcome of a pending row.
const completeSQL = "UPDATE " + Table + " SET decision = ?, success = ?, error = ?, duration_us = ?, result_ref = ?, pending = FALSE WHERE id = ?"

// insertColumns are the columns a batch insert writes; ids come from
// SQLite.
const insertColumns = "time_ms, session_hash, source_type, client_name, client_version, tool, provider, class, " +
	"decision, success, error, duration_us, args_summary, result_ref, pending, profile"

// insertWidth is the number of insertColumns.
const insertWidth = 16

// insertSQL is the multi-row INSERT of n records: one statement per batch
// size, prepared once (the Log uses gorm's statement cache), without the
// RETURNING clause and reflection of gorm's Create, which cost more than
// the row itself.
func insertSQL(n int) string {
	row := "(" + strings.Repeat("?, ", insertWidth-1) + "?)"
	return "INSERT INTO " + Table + " (" + insertColumns + ") VALUES " + strings.Repeat(row+", ", n-1) + row
}

// insertArgs are the values of insertSQL(len(batch)), in column order.
func insertArgs(batch []Record) []any {
	args := make([]any, 0, insertWidth*len(batch))
	for _, r := range batch {
		args = append(args, r.TimeMs, r.SessionHash, r.SourceType, r.ClientName, r.ClientVersion, r.Tool, r.Provider,
			r.Class, r.Decision, r.Success, r.Error, r.DurationUs, r.ArgsSummary, r.ResultRef, r.Pending, r.Profile)
	}
	return args
}

// reconnect tries to open the database until it opens, backing off from minBackoff to maxBackoff, and
// reports whether it did. Once Close has begun it tries once more; if that fails, or when Close gives
// up, it discards what is queued and answers the flush markers, and returns false.
func (l *Log) reconnect(ctx context.Context) bool {
	for attempt := 1; ; attempt++ {
		closing := isClosed(l.stop)
		db, sqlDB, err := l.connect(ctx)
		if err == nil {
			l.opened(db, sqlDB)
			if f := l.failing.Swap(nil); f != nil {
				l.logger.Info("audit database opened: acts are allowed again", "database", l.where,
					"failing_for", time.Since(f.since).Round(time.Second), "queued", len(l.queue), "dropped_total", l.dropped.Load())
			}
			return true
		}
		if ctx.Err() == nil {
			since := time.Now()
			if f := l.failing.Load(); f != nil {
				since = f.since
			}
			l.failing.Store(&failure{since: since, err: err})
			l.lastErr = err
		}
		if closing || ctx.Err() != nil {
			l.discardQueued()
			return false
		}
		delay := min(minBackoff<<min(attempt-1, 10), maxBackoff)
		l.logger.Debug("audit database still cannot be opened", "attempt", attempt, "retry_in", delay, "error", err)
		t := time.NewTimer(delay)
		select {
		case <-t.C:
		case <-l.stop:
			t.Stop()
		case <-ctx.Done():
			t.Stop()
		}
	}
}

// discardQueued empties the queue of a log that never opened, once no sender remains, counting the
// records as discarded and failing the flush markers.
func (l *Log) discardQueued() {
	<-l.stop
	for {
		select {
		case e := <-l.queue:
			if e.flushed != nil {
				e.flushed <- fmt.Errorf("audit: %d records discarded: %w", l.discarded, l.lastErr)
				continue
			}
			if e.turn != nil {
				close(e.turn.reached)
				continue
			}
			l.discarded++
		default:
			if l.discarded > 0 {
				l.logger.Error("audit records discarded: the database never opened", "rows", l.discarded, "error", l.lastErr)
			}
			return
		}
	}
}
