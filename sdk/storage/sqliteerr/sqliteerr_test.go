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

func TestBusy(t *testing.T) {
	for msg, want := range map[string]bool{
		"open x: database is locked":       true,
		"database table is locked: chunks": true,
		"database disk image is malformed": false,
		"":                                 false,
	} {
		var err error
		if msg != "" {
			err = errors.New(msg)
		}
		if got := Busy(err); got != want {
			t.Errorf("Busy(%q) = %v, want %v", msg, got, want)
		}
	}
}
