// Package sqliteerr classifies SQLite errors by the messages SQLite gives
// them, so that code building without cgo (cross-compile checks) needs no
// driver types.
package sqliteerr

import (
	"slices"
	"strings"
)

// Messages of SQLite's result codes SQLITE_CORRUPT and SQLITE_NOTADB
// (sqlite3_errstr), which every driver passes on.
const (
	corruptMessage = "database disk image is malformed"
	notADBMessage  = "file is not a database"
)

// Corrupt reports whether err says a SQLite database is damaged
// (SQLITE_CORRUPT) or is not a database at all (SQLITE_NOTADB).
func Corrupt(err error) bool {
	return says(err, corruptMessage, notADBMessage)
}

// Messages of SQLITE_BUSY and SQLITE_LOCKED.
const (
	busyMessage   = "database is locked"
	lockedMessage = "database table is locked"
)

// Busy reports whether err says another connection held a lock SQLite
// would not wait for (SQLITE_BUSY or SQLITE_LOCKED): SQLite calls no busy
// handler for some lock changes, such as switching a new database to WAL,
// so such errors can reach a caller that set a busy timeout.
func Busy(err error) bool {
	return says(err, busyMessage, lockedMessage)
}

// says reports whether err is not nil and its message contains any of
// messages.
func says(err error, messages ...string) bool {
	if err == nil {
		return false
	}
	msg := err.Error()
	return slices.ContainsFunc(messages, func(m string) bool { return strings.Contains(msg, m) })
}
