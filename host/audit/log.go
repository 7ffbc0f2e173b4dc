package audit

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"hash/crc32"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
	"gorm.io/driver/sqlite"
	"gorm.io/gorm"
	"gorm.io/gorm/logger"

	"github.com/openhuman/openhuman-host/internal/sqliteuri"
)

const (
	// defaultQueueSize is Options.QueueSize when it is 0.
	defaultQueueSize = 1024
	// maxBatch caps the rows the writer commits in one transaction.
	maxBatch = 256
	// linger is how long the writer waits for more records after the
	// first of a batch: a commit (BEGIN, INSERT, fsync) costs far more than
	// a row, so gathering the calls of a few milliseconds into one
	// transaction keeps the audit cheap under load. Calls never wait for
	// it: they only enqueue.
	linger = 2 * time.Millisecond
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
	// QueueSize is how many records may wait for the writer; when they all wait, [Log.Record] blocks.
	// Default 0 means 1024; a negative value is an error.
	QueueSize int
	// RetainDays is how many days of records to keep; older rows are deleted at Open and then hourly.
	// Default 0 means keep forever; a negative value is an error.
	RetainDays int
	// Logger receives the writer's warnings (failed inserts and retries) and debug lines; it never
	// receives SQL or row values. Name it for the component (such as "host.audit"). Default nil means
	// hclog.NewNullLogger().
	Logger hclog.Logger
}

// Log is an open audit log. Its methods are safe for concurrent use.
type Log struct {
	db     *gorm.DB
	sqlDB  *sql.DB
	logger hclog.Logger
	retain time.Duration
	queue  chan entry

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
}

// entry is one item of the queue: a record, or a flush marker when flushed is non-nil.
type entry struct {
	rec     Record
	flushed chan error // buffered(1); receives nil once every earlier record is committed
}

// Open opens the audit log in the SQLite database at path, creating the file (0600) and its parent
// directory (0700) when missing, migrating the mcp_audit table, deleting rows older than
// opts.RetainDays, and starting the background writer. Several processes may open the same file. Close
// the Log to flush it.
func Open(ctx context.Context, path string, opts *Options) (*Log, error) {
	var o Options
	if opts != nil {
		o = *opts
	}
	switch {
	case path == "":
		return nil, errors.New("audit: open: database path is empty")
	case o.QueueSize < 0:
		return nil, fmt.Errorf("audit: open: queue size %d is negative: use 0 for the default (%d)", o.QueueSize, defaultQueueSize)
	case o.RetainDays < 0:
		return nil, fmt.Errorf("audit: open: retain days %d is negative: use 0 to keep records forever", o.RetainDays)
	}
	if o.QueueSize == 0 {
		o.QueueSize = defaultQueueSize
	}
	if o.Logger == nil {
		o.Logger = hclog.NewNullLogger()
	}

	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, fmt.Errorf("audit: open %s: %w", path, err)
	}
	if err := os.MkdirAll(filepath.Dir(abs), 0o700); err != nil {
		return nil, fmt.Errorf("audit: open %s: create directory: %w", abs, err)
	}
	// Create the file ourselves so it is private; SQLite gives its -wal and -shm files the same mode.
	f, err := os.OpenFile(abs, os.O_RDONLY|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("audit: open %s: %w", abs, err)
	}
	_ = f.Close()

	db, err := gorm.Open(sqlite.Open(dsn(abs)), &gorm.Config{
		Logger:                 logger.Discard,
		SkipDefaultTransaction: true,
		// Every batch runs the same INSERT; preparing it once saves the
		// writer most of its CPU.
		PrepareStmt: true,
	})
	if err != nil {
		return nil, fmt.Errorf("audit: open %s: %w", abs, err)
	}
	sqlDB, err := db.DB()
	if err != nil {
		return nil, fmt.Errorf("audit: open %s: %w", abs, err)
	}
	if err := migrate(ctx, db); err != nil {
		_ = sqlDB.Close()
		return nil, fmt.Errorf("audit: open %s: migrate table %s: %w", abs, Table, err)
	}

	writeCtx, cancel := context.WithCancelCause(context.Background())
	l := &Log{
		db:          db,
		sqlDB:       sqlDB,
		logger:      o.Logger,
		retain:      time.Duration(o.RetainDays) * 24 * time.Hour,
		queue:       make(chan entry, o.QueueSize),
		stop:        make(chan struct{}),
		abort:       make(chan struct{}),
		cancelWrite: cancel,
		exited:      make(chan struct{}),
	}
	if err := l.prune(ctx); err != nil {
		cancel(nil)
		_ = sqlDB.Close()
		return nil, fmt.Errorf("audit: open %s: %w", abs, err)
	}
	go l.run(writeCtx)
	return l, nil
}

// schemaVersion fingerprints Record's columns (names, Go types and gorm
// tags, CRC-32 in 31 bits, never 0). [migrate] stores it in the database's
// user_version once the table matches Record, so a changed Record is
// migrated by the first process that opens the file and nobody else.
var schemaVersion = func() int32 {
	var b strings.Builder
	rt := reflect.TypeFor[Record]()
	for f := range rt.Fields() {
		fmt.Fprintf(&b, "%s %s %s\n", f.Name, f.Type, f.Tag.Get("gorm"))
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
		if err := tx.AutoMigrate(&Record{}); err != nil {
			return err
		}
		return tx.Exec(fmt.Sprintf("PRAGMA user_version = %d", schemaVersion)).Error
	})
}

// dsn builds a file: URI so that any character in the path is escaped rather than read as a parameter.
func dsn(abs string) string {
	return sqliteuri.File(abs, dsnParams)
}

// Record enqueues r for writing and returns once it is queued, not written: call [Log.Flush] to wait for
// the write. When the queue is full it blocks until there is room or ctx is done (then it returns an
// error wrapping ctx.Err() and r is not recorded); it never drops a queued record. ID is ignored, a zero
// TimeMs becomes the current time, and Error is cut by [TruncateError]. After Close it returns
// [ErrClosed].
func (l *Log) Record(ctx context.Context, r Record) error {
	r.ID = 0
	if r.TimeMs == 0 {
		r.TimeMs = time.Now().UnixMilli()
	}
	r.Error = TruncateError(r.Error)
	if err := l.enqueue(ctx, entry{rec: r}); err != nil {
		return fmt.Errorf("audit: record %s: %w", r.Tool, err)
	}
	return nil
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
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		return fmt.Errorf("audit: flush: %w", ctx.Err())
	}
}

func (l *Log) enqueue(ctx context.Context, e entry) error {
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return ErrClosed
	}
	l.senders.Add(1)
	l.mu.Unlock()
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
	if err := l.sqlDB.Close(); err != nil {
		errs = append(errs, fmt.Errorf("audit: close database: %w", err))
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
	var prune <-chan time.Time
	if l.retain > 0 {
		t := time.NewTicker(pruneInterval)
		defer t.Stop()
		prune = t.C
	}
	batch := make([]Record, 0, maxBatch)
	for {
		select {
		case e := <-l.queue:
			batch = l.process(ctx, e, batch[:0])
		case <-prune:
			if err := l.prune(ctx); err != nil {
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
	take := func(e entry) {
		if e.flushed != nil {
			marker = e.flushed
			return
		}
		batch = append(batch, e.rec)
	}
	take(first)
	timer := time.NewTimer(linger)
	defer timer.Stop()
collect:
	for marker == nil && len(batch) < maxBatch {
		select {
		case e := <-l.queue:
			take(e)
		case <-timer.C:
			break collect
		case <-l.stop:
			// Closing: commit what is here without lingering.
			for marker == nil && len(batch) < maxBatch {
				select {
				case e := <-l.queue:
					take(e)
				default:
					break collect
				}
			}
			break collect
		}
	}

	var err error
	if len(batch) > 0 {
		if err = l.write(ctx, batch); err != nil {
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
	return batch
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
		for i := range batch {
			batch[i].ID = 0 // a rolled-back attempt may have assigned ids
		}
		err := l.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
			return tx.Exec(insertSQL(len(batch)), insertArgs(batch)...).Error
		})
		if err == nil {
			if attempt > 1 {
				l.logger.Info("audit insert succeeded after retrying", "rows", len(batch), "attempts", attempt)
			}
			return nil
		}
		if ctx.Err() != nil {
			return gaveUp()
		}
		dbErr = err
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

// prune deletes rows older than the retention period, if there is one.
func (l *Log) prune(ctx context.Context) error {
	if l.retain <= 0 {
		return nil
	}
	cutoff := time.Now().Add(-l.retain).UnixMilli()
	res := l.db.WithContext(ctx).Where("time_ms < ?", cutoff).Delete(&Record{})
	if res.Error != nil {
		return fmt.Errorf("delete records older than %s: %w", l.retain, res.Error)
	}
	if res.RowsAffected > 0 {
		l.logger.Debug("deleted expired audit records", "rows", res.RowsAffected)
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

// insertColumns are the columns a batch insert writes; ids come from
// SQLite.
const insertColumns = "time_ms, session_hash, source_type, client_name, client_version, tool, provider, class, " +
	"decision, success, error, duration_us, args_summary, result_ref"

// insertWidth is the number of insertColumns.
const insertWidth = 14

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
			r.Class, r.Decision, r.Success, r.Error, r.DurationUs, r.ArgsSummary, r.ResultRef)
	}
	return args
}
