package audit

import (
	"context"
	"database/sql"
	"embed"
	"fmt"
	"time"

	"gorm.io/gorm"

	"github.com/openhuman/openhuman-host/sdk/storage"
)

// Component names the audit log's migrations on PostgreSQL: they are
// recorded in the table audit_migrations.
const Component = "audit"

//go:embed migrations/*.sql
var migrationFiles embed.FS

// Migrations are the audit log's numbered PostgreSQL migrations
// (NNNNN_what.sql in goose's format), for [storage.Migrate]. On SQLite the
// tables follow Record and SpentState instead.
var Migrations = storage.MigrationsDir(migrationFiles, "migrations")

// poolSize caps the log's connections to PostgreSQL: the writer, Begin
// and Spend on the request path, and the query methods.
const poolSize = 8

// openPostgres connects to dsn, applies the migrations and prunes.
func openPostgres(ctx context.Context, dsn string, o Options) (*gorm.DB, *sql.DB, error) {
	db, sqlDB, err := storage.OpenPostgres(ctx, dsn, storage.PoolOptions{MaxOpen: poolSize})
	if err != nil {
		return nil, nil, fmt.Errorf("audit: open: %w", err)
	}
	fail := func(err error) (*gorm.DB, *sql.DB, error) {
		_ = sqlDB.Close()
		return nil, nil, fmt.Errorf("audit: open PostgreSQL %s: %w", storage.Describe(dsn), err)
	}
	if _, err := storage.Migrate(ctx, sqlDB, Component, Migrations, o.Logger); err != nil {
		return fail(err)
	}
	if err := prune(ctx, db, time.Duration(o.RetainDays)*24*time.Hour, o.Logger); err != nil {
		return fail(err)
	}
	return db, sqlDB, nil
}
