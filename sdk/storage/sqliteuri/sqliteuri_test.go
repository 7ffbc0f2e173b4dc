package sqliteuri

import (
	"database/sql"
	"os"
	"path/filepath"
	"testing"

	_ "github.com/mattn/go-sqlite3"
)

func TestFromSlash(t *testing.T) {
	t.Parallel()
	tests := map[string]struct {
		path, params, want string
	}{
		"absolute":                    {"/home/u/a.db", "x=1", "file:///home/u/a.db?x=1"},
		"no params":                   {"/home/u/a.db", "", "file:///home/u/a.db"},
		"characters that mean URI":    {"/d/a b?c#d%e.db", "x=1", "file:///d/a%20b%3Fc%23d%25e.db?x=1"},
		"Windows drive letter":        {"C:/Users/u/AppData/Local/a.db", "x=1", "file:///C:/Users/u/AppData/Local/a.db?x=1"},
		"lower-case drive letter":     {"d:/data/a.db", "", "file:///d:/data/a.db"},
		"relative stays relative":     {"data/a.db", "x=1", "file:data/a.db?x=1"},
		"relative with a colon in it": {"a:b/c.db", "", "file:a:b/c.db"},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			if got := fromSlash(tt.path, tt.params); got != tt.want {
				t.Errorf("fromSlash(%q, %q) = %q, want %q", tt.path, tt.params, got, tt.want)
			}
		})
	}
}

// TestFileOpens opens a database through File at a path with characters a
// URI gives meaning to, and finds it again under the same name.
func TestFileOpens(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "a b?c#d%e.db")
	for i := range 2 {
		db, err := sql.Open("sqlite3", File(path, "_journal_mode=WAL"))
		if err != nil {
			t.Fatal(err)
		}
		if i == 0 {
			_, err = db.Exec("CREATE TABLE t (v TEXT); INSERT INTO t VALUES ('kept')")
		} else {
			var v string
			err = db.QueryRow("SELECT v FROM t").Scan(&v)
			if err == nil && v != "kept" {
				t.Errorf("read %q, want kept", v)
			}
		}
		if err != nil {
			t.Fatalf("round %d: %v", i, err)
		}
		_ = db.Close()
	}
	if _, err := os.Stat(path); err != nil {
		t.Errorf("the database is not at %s: %v", path, err)
	}
}
