package sqliteerr

import (
	"errors"
	"fmt"
	"testing"
)

func TestCorrupt(t *testing.T) {
	t.Parallel()
	for err, want := range map[error]bool{
		nil:                                  false,
		errors.New("database is locked"):     false,
		errors.New("file is not a database"): true,
		fmt.Errorf("open x: %w", errors.New("database disk image is malformed")): true,
	} {
		if got := Corrupt(err); got != want {
			t.Errorf("Corrupt(%v) = %v, want %v", err, got, want)
		}
	}
}
