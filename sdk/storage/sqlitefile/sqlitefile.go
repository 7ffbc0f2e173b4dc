// Package sqlitefile handles SQLite database files as files: moving a
// damaged database aside with the -wal and -shm files that belong to it.
package sqlitefile

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"time"
)

// DamagedSuffix starts the suffix MoveAside gives a database it moves
// aside; the UTC time of the move follows it, as in
// "memory.db.damaged-20261202T101500Z".
const DamagedSuffix = ".damaged-"

// MoveAside renames the database at path and its -wal and -shm files to
// "<path>.damaged-<UTC time of now>" (plus "-wal" and "-shm"), which
// SQLite opens together again, and returns the new name of the database.
// When that name is taken (a second move within the second), "-2", "-3"
// and so on follow the time. The -wal and -shm files go first, so that a
// database found at path afterwards never pairs with another one's log. A
// file that does not exist is skipped; any other failure is returned,
// naming the file.
func MoveAside(path string, now time.Time) (string, error) {
	base := path + DamagedSuffix + now.UTC().Format("20060102T150405Z")
	to := base
	for n := 2; taken(to); n++ {
		if n > 1000 {
			return "", fmt.Errorf("move %s aside: every name from %s to %s is taken", path, base, to)
		}
		to = fmt.Sprintf("%s-%d", base, n)
	}
	for _, suffix := range []string{"-wal", "-shm", ""} {
		if err := os.Rename(path+suffix, to+suffix); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return "", fmt.Errorf("move %s aside: %w", path+suffix, err)
		}
	}
	return to, nil
}

// taken reports whether a database or its -wal or -shm file exists at to.
func taken(to string) bool {
	for _, suffix := range []string{"", "-wal", "-shm"} {
		if _, err := os.Lstat(to + suffix); !errors.Is(err, fs.ErrNotExist) {
			return true
		}
	}
	return false
}
