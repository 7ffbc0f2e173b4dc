package storage

import (
	"context"
	"strings"
	"testing"
)

// The tests that need a PostgreSQL server are in the host module
// (internal/storagetest), which has a throwaway one.

// TestUnreadableStringsHideThePassword: connection strings pgx cannot read
// fail before any connection, with errors that never quote the password.
func TestUnreadableStringsHideThePassword(t *testing.T) {
	t.Parallel()
	for name, tc := range map[string]struct{ dsn, describe string }{
		"bad port":   {"postgres://u:s3cret-hunter2@127.0.0.1:notaport/db", "(an unreadable connection string)"},
		"unreadable": {"host=127.0.0.1 password=s3cret-hunter2 sslmode=bogus", "(an unreadable connection string)"},
	} {
		_, _, err := OpenPostgres(context.Background(), tc.dsn, PoolOptions{})
		if err == nil || !strings.HasPrefix(err.Error(), "storage: read the PostgreSQL connection string: ") {
			t.Errorf("%s: OpenPostgres() = %v, want a connection string error", name, err)
		} else if strings.Contains(err.Error(), "s3cret-hunter2") {
			t.Errorf("%s: error quotes the password: %v", name, err)
		}
		if got := Describe(tc.dsn); got != tc.describe {
			t.Errorf("%s: Describe() = %q, want %q", name, got, tc.describe)
		}
	}
}

func TestDescribe(t *testing.T) {
	t.Parallel()
	for dsn, want := range map[string]string{
		"postgres://u:pw@db.example:6543/team?sslmode=require": "db.example:6543/team",
		"host=/run/postgresql port=5433 dbname=hub user=u":     "unix:/run/postgresql:5433/hub",
	} {
		if got := Describe(dsn); got != want {
			t.Errorf("Describe(%q) = %q, want %q", dsn, got, want)
		}
	}
}

// TestLockIDIsStable: the advisory lock keys of the migrations never
// change, so replicas of different releases wait for one another.
func TestLockIDIsStable(t *testing.T) {
	t.Parallel()
	for component, want := range map[string]int64{
		"audit":  -6830767435295315902,
		"memory": -6845976450070345972,
	} {
		if got := lockID(component); got != want {
			t.Errorf("lockID(%q) = %d, want %d", component, got, want)
		}
	}
}
