package storage

import (
	"database/sql"
	"time"
)

// Pool settings of a SQLite database handle ([KeepSQLiteConnections]).
const (
	// SQLiteIdleConns is how many connections a SQLite handle keeps open
	// between calls.
	SQLiteIdleConns = 8
	// SQLiteIdleTime is how long an unused connection stays open.
	SQLiteIdleTime = 5 * time.Minute
)

// KeepSQLiteConnections sets db, a handle on a SQLite file, to keep up to
// [SQLiteIdleConns] connections open between calls, each closed once
// unused for [SQLiteIdleTime]. database/sql keeps 2 by default, so with
// more calls in flight every call beyond two opened a connection (the
// journal mode, the pragmas of the URI, FTS5's tokenizers, the statements
// prepared on it) and closed it again afterwards; at 8 searches in flight
// on the memory provider that cost more CPU than the searches. The number
// open at once stays unbounded, so that a call that needs a second
// connection while it holds one never waits for others doing the same.
func KeepSQLiteConnections(db *sql.DB) {
	db.SetMaxIdleConns(SQLiteIdleConns)
	db.SetConnMaxIdleTime(SQLiteIdleTime)
}
