package storagetest

import (
	"context"
	"net/url"
	"strings"
	"sync"
	"testing"
	"testing/fstest"

	"github.com/openhuman/openhuman-host/sdk/storage"
	"github.com/openhuman/openhuman-host/sdk/storage/pgtest"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

var twoSteps = fstest.MapFS{
	"00001_first.sql":  {Data: []byte("-- +goose Up\nCREATE TABLE a (n INT);\nINSERT INTO a VALUES (1);\n-- +goose Down\nDROP TABLE a;\n")},
	"00002_second.sql": {Data: []byte("-- +goose Up\nINSERT INTO a VALUES (2);\n-- +goose Down\nDELETE FROM a WHERE n = 2;\n")},
}

// TestMigrateConcurrently: callers racing on a new database apply each
// migration exactly once between them.
func TestMigrateConcurrently(t *testing.T) {
	dsn := pgtest.NewDatabase(t)
	ctx := t.Context()
	var (
		wg      sync.WaitGroup
		mu      sync.Mutex
		applied []string
	)
	for range 8 {
		wg.Go(func() {
			_, db, err := storage.OpenPostgres(ctx, dsn, storage.PoolOptions{MaxOpen: 2})
			if err != nil {
				t.Error(err)
				return
			}
			defer db.Close()
			got, err := storage.Migrate(ctx, db, "test", twoSteps, nil)
			if err != nil {
				t.Error(err)
			}
			mu.Lock()
			for _, m := range got {
				applied = append(applied, m.Name)
			}
			mu.Unlock()
		})
	}
	wg.Wait()
	if strings.Join(applied, ",") != "00001_first.sql,00002_second.sql" {
		t.Errorf("applied %v across 8 callers, want each migration once", applied)
	}
	_, db, err := storage.OpenPostgres(ctx, dsn, storage.PoolOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var rows int
	if err := db.QueryRowContext(ctx, "SELECT count(*) FROM a").Scan(&rows); err != nil || rows != 2 {
		t.Errorf("table a has %d rows (%v), want 2", rows, err)
	}
	current, latest, err := storage.Version(ctx, db, "test", twoSteps)
	if err != nil || current != 2 || latest != 2 {
		t.Errorf("Version() = %d, %d, %v; want 2, 2", current, latest, err)
	}
}

// TestMigrateFailureRollsBack: a failing migration leaves nothing behind
// and its error names it; the ones before it stay applied.
func TestMigrateFailureRollsBack(t *testing.T) {
	dsn := pgtest.NewDatabase(t)
	ctx := t.Context()
	_, db, err := storage.OpenPostgres(ctx, dsn, storage.PoolOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	bad := fstest.MapFS{
		"00001_first.sql":  twoSteps["00001_first.sql"],
		"00002_broken.sql": {Data: []byte("-- +goose Up\nINSERT INTO a VALUES (2);\nINSERT INTO missing VALUES (3);\n-- +goose Down\n")},
	}
	applied, err := storage.Migrate(ctx, db, "test", bad, nil)
	if err == nil || !strings.Contains(err.Error(), "00002_broken.sql") || !strings.Contains(err.Error(), "rolled back") {
		t.Fatalf("Migrate() error = %v, want one naming 00002_broken.sql", err)
	}
	if len(applied) != 1 || applied[0].Version != 1 {
		t.Errorf("applied = %+v, want migration 1 only", applied)
	}
	var rows int
	if err := db.QueryRowContext(ctx, "SELECT count(*) FROM a").Scan(&rows); err != nil || rows != 1 {
		t.Errorf("table a has %d rows (%v), want 1: the broken migration's first insert must be rolled back", rows, err)
	}
}

// TestWrongPasswordIsNotQuoted: a server refusing the password gives an
// error that never quotes it. (Strings pgx cannot read are tested in the
// storage package itself.)
func TestWrongPasswordIsNotQuoted(t *testing.T) {
	u, err := url.Parse(pgtest.NewDatabase(t))
	if err != nil {
		t.Fatal(err)
	}
	u.User = url.UserPassword(u.User.Username(), "s3cret-hunter2")
	bad := u.String()
	_, _, err = storage.OpenPostgres(context.Background(), bad, storage.PoolOptions{})
	if err == nil {
		t.Fatal("OpenPostgres() with a wrong password succeeded")
	}
	if strings.Contains(err.Error(), "s3cret-hunter2") {
		t.Errorf("error quotes the password: %v", err)
	}
	if want := "storage: connect to PostgreSQL at " + storage.Describe(bad) + ": "; !strings.HasPrefix(err.Error(), want) {
		t.Errorf("error = %v, want it to start with %q", err, want)
	}
	if d := storage.Describe(bad); strings.Contains(d, "s3cret-hunter2") {
		t.Errorf("Describe() = %q quotes the password", d)
	}
}
