// Package filelock takes advisory locks on lock files, shared or
// exclusive, without waiting (flock on Unix, LockFileEx on Windows): the
// processes that use a database hold its lock file shared, and a command
// that must be alone with it (such as the memory provider's recover) takes
// it exclusive. The locks are advisory: they exclude only processes that
// lock the same file through this package.
package filelock

import (
	"errors"
	"os"
)

// ErrLocked is returned when the lock is held in a conflicting mode by
// another open file description (another process, or another lock in this
// one).
var ErrLocked = errors.New("the lock is held elsewhere")

// Shared takes a shared lock on the file at path, creating it (0600) when
// missing, and returns the func that releases it. It fails at once with
// ErrLocked when an exclusive lock is held.
func Shared(path string) (func(), error) { return take(path, false) }

// Exclusive takes an exclusive lock on the file at path, creating it
// (0600) when missing, and returns the func that releases it. It fails at
// once with ErrLocked when any other lock is held.
func Exclusive(path string) (func(), error) { return take(path, true) }

func take(path string, exclusive bool) (func(), error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, err
	}
	if err := lock(f, exclusive); err != nil {
		_ = f.Close()
		return nil, err
	}
	// Closing the file releases the lock.
	return func() { _ = f.Close() }, nil
}
