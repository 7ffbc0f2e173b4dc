//go:build !cgo

package memory

import (
	"context"
	"errors"

	"github.com/mattn/go-sqlite3"
)

// copyDatabase needs SQLite's backup API, which a build without cgo (and
// so without SQLite) does not have; such builds cannot open memory.db at
// all.
func copyDatabase(context.Context, *sqlite3.SQLiteConn, *sqlite3.SQLiteConn) error {
	return errors.New("memory backup needs a build of openhuman-host with cgo (SQLite)")
}
