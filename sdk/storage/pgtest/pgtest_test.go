package pgtest

import (
	"context"
	"database/sql"
	"os"
	"strings"
	"testing"
)

func TestMain(m *testing.M) { Main(m) }

func TestNewDatabaseIsEmptyAndPrivate(t *testing.T) {
	dsn := NewDatabase(t)
	other := NewDatabase(t)
	if dsn == other {
		t.Fatalf("two databases share the URL %s", redact(dsn))
	}
	db, err := sql.Open("pgx", dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	ctx := context.Background()
	var name string
	if err := db.QueryRowContext(ctx, "SELECT current_database()").Scan(&name); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(name, "t_testnewdatabaseisemptyandprivate_") {
		t.Errorf("database name %q does not name the test", name)
	}
	var tables int
	if err := db.QueryRowContext(ctx, "SELECT count(*) FROM information_schema.tables WHERE table_schema = 'public'").Scan(&tables); err != nil {
		t.Fatal(err)
	}
	if tables != 0 {
		t.Errorf("a new database has %d tables, want 0", tables)
	}
	// The throwaway server listens on loopback only and wants the password.
	if os.Getenv(EnvDSN) == "" && !strings.Contains(dsn, "@127.0.0.1:") {
		t.Errorf("URL %s is not on loopback", redact(dsn))
	}
	noPassword := strings.Replace(dsn, ":"+passwordOf(t, dsn)+"@", ":wrong@", 1)
	bad, err := sql.Open("pgx", noPassword)
	if err != nil {
		t.Fatal(err)
	}
	defer bad.Close()
	if err := bad.PingContext(ctx); err == nil {
		t.Error("a wrong password was accepted")
	}
}

func passwordOf(t *testing.T, dsn string) string {
	t.Helper()
	at := strings.LastIndex(dsn, "@")
	colon := strings.LastIndex(dsn[:at], ":")
	return dsn[colon+1 : at]
}

func TestDatabaseName(t *testing.T) {
	got := databaseName(strings.Repeat("TestVeryLong/Sub Test-", 10), 7)
	if len(got) > 63 {
		t.Errorf("%q is %d bytes, PostgreSQL allows 63", got, len(got))
	}
	if strings.Trim(got, "abcdefghijklmnopqrstuvwxyz0123456789_") != "" {
		t.Errorf("%q has characters outside [a-z0-9_]", got)
	}
	if !strings.HasPrefix(got, "t_testverylong_sub_test_") || !strings.Contains(got, "_7_") {
		t.Errorf("%q does not name the test and its number", got)
	}
}
