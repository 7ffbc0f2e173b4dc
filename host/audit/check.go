package audit

import (
	"context"
	"errors"
	"fmt"
	"time"

	"gorm.io/gorm"
)

// Where names the log's database for messages and health reports: the
// SQLite file's absolute path, or "PostgreSQL host:port/database" (never
// the user or password).
func (l *Log) Where() string { return l.where }

// Check reports whether the log can take rows now, cheaply enough for a
// readiness probe: nil when the database is open, the writer's last write
// succeeded, and the database accepts a write transaction (on SQLite it
// takes the write lock and releases it; on PostgreSQL the session must not
// be read-only, as on a standby). It writes no row. It returns
// [ErrClosed] after Close, else an error that names the database (see
// [Log.Where]) and why.
func (l *Log) Check(ctx context.Context) error {
	if err := l.usable(); err != nil {
		return err
	}
	if err := l.isOpen(); err != nil {
		return err
	}
	if f := l.failing.Load(); f != nil {
		return fmt.Errorf("writes to the audit database %s have failed since %s: %w", l.where, f.since.UTC().Format(time.RFC3339), f.err)
	}
	err := l.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		if !l.postgres {
			// BEGIN IMMEDIATE (the pool's _txlock) has taken the write
			// lock; reading the table proves the schema is there.
			return tx.Exec("SELECT 1 FROM " + Table + " LIMIT 1").Error
		}
		var readOnly string
		if err := tx.Raw("SHOW transaction_read_only").Scan(&readOnly).Error; err != nil {
			return err
		}
		if readOnly != "off" {
			return errors.New("the database accepts no writes (transaction_read_only is on: a standby?)")
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("the audit database %s: %w", l.where, err)
	}
	return nil
}
