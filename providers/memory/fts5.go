package memory

import "errors"

// ErrNoFTS5 is returned by Configure when the binary was built without
// SQLite FTS5, which full-text search needs.
var ErrNoFTS5 = errors.New(`memory provider: this binary was built without SQLite FTS5; build it with "make build" (go build -tags sqlite_fts5)`)

// checkFTS5 returns ErrNoFTS5 unless compiled is true; Configure passes
// fts5Compiled, tests pass both values.
func checkFTS5(compiled bool) error {
	if !compiled {
		return ErrNoFTS5
	}
	return nil
}
