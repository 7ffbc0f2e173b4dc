package memory

import (
	"database/sql"
	"testing"
)

// Connections returned to the pool stay open, up to
// storage.SQLiteIdleConns: closing
// them made each call beyond the second open a new one.
func TestConnectionsStayOpenBetweenCalls(t *testing.T) {
	t.Parallel()
	sqliteOnly(t)
	p := openProvider(t, t.TempDir(), nil)
	sqlDB, err := p.store.db.DB()
	if err != nil {
		t.Fatal(err)
	}
	// Four calls at once hold four connections.
	var open []*sql.Conn
	for range 4 {
		c, err := sqlDB.Conn(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		if _, err := c.ExecContext(t.Context(), `SELECT COUNT(*) FROM documents`); err != nil {
			t.Fatal(err)
		}
		open = append(open, c)
	}
	before := sqlDB.Stats()
	for _, c := range open {
		if err := c.Close(); err != nil {
			t.Fatal(err)
		}
	}
	after := sqlDB.Stats()
	if before.InUse < 4 {
		t.Fatalf("%d connections in use with four held, want 4", before.InUse)
	}
	if closed := after.MaxIdleClosed - before.MaxIdleClosed; closed != 0 || after.Idle < 4 {
		t.Errorf("after the four were given back: %d connections closed as surplus, %d kept idle; want 0 closed and 4 kept", closed, after.Idle)
	}
}
