// Package sqliteerr classifies SQLite errors by the messages SQLite gives
// them, so that code building without cgo (cross-compile checks) needs no
// driver types.
package sqliteerr

import "strings"

// Messages of SQLite's result codes SQLITE_CORRUPT and SQLITE_NOTADB
// (sqlite3_errstr), which every driver passes on.
const (
	corruptMessage = "database disk image is malformed"
	notADBMessage  = "file is not a database"
)

// Corrupt reports whether err says a SQLite database is damaged
// (SQLITE_CORRUPT) or is not a database at all (SQLITE_NOTADB).
func Corrupt(err error) bool {
	if err == nil {
		return false
	}
	msg := err.Error()
	return strings.Contains(msg, corruptMessage) || strings.Contains(msg, notADBMessage)
}
