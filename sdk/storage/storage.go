// Package storage opens the shared PostgreSQL database that replicas of
// openhuman-host use instead of SQLite files in their data directories
// ([storage] driver = "postgres"), and brings a component's tables up to
// date with its numbered migrations, once, under a PostgreSQL advisory
// lock, so that several replicas starting at once migrate one after the
// other.
//
// A provider whose manifest sets SharedStorage receives the driver and the
// connection string as the secrets sdk.SecretStorageDriver and
// sdk.SecretStorageDSN. With [DriverPostgres] it opens the database with
// [OpenPostgres] and migrates its own tables with [Migrate] under a
// component name of its own; without, it keeps a SQLite file in its data
// directory, which the subpackages help with: sqliteuri (URI filenames),
// sqliteerr (classifying errors), sqlitefile (moving a damaged database
// aside) and filelock (advisory lock files).
//
// Each component (the host's audit log, the memory provider, a provider of
// yours) keeps its own migrations, embedded SQL files named
// NNNNN_what.sql in goose's format (github.com/pressly/goose/v3), and its
// own version table, <component>_migrations.
package storage

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"hash/crc64"
	"io/fs"
	"net/url"
	"strings"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"
	"github.com/pressly/goose/v3"
	"gorm.io/driver/postgres"
	"gorm.io/gorm"
	"gorm.io/gorm/logger"
)

// Drivers, the values of the host's [storage] driver and of the secret
// sdk.SecretStorageDriver.
const (
	// DriverSQLite keeps every database in a SQLite file in the data
	// directory: the default, for one machine.
	DriverSQLite = "sqlite"
	// DriverPostgres keeps the shared state in one PostgreSQL database.
	DriverPostgres = "postgres"
)

// PoolOptions bounds a component's connections to PostgreSQL.
type PoolOptions struct {
	// MaxOpen caps the connections open at once; 0 means 10.
	MaxOpen int
	// MaxIdle caps the idle connections kept; 0 means MaxOpen.
	MaxIdle int
	// Settings are run-time parameters set on every connection (such as
	// plan_cache_mode), over those of the connection string.
	Settings map[string]string
}

// connectTimeout bounds dialing and authenticating one connection when the
// connection string does not say (connect_timeout).
const connectTimeout = 10 * time.Second

// OpenPostgres connects to the PostgreSQL database of dsn (a postgres://
// URL or a "key=value" connection string, as libpq and pgx read them) with
// the pgx driver, checks that it answers, and returns gorm and database/sql
// handles on one pool. Errors name the server by [Describe], never with
// the password. Close the *sql.DB when done.
func OpenPostgres(ctx context.Context, dsn string, opts PoolOptions) (*gorm.DB, *sql.DB, error) {
	where := Describe(dsn)
	cfg, err := pgx.ParseConfig(dsn)
	if err != nil {
		// pgx's parse errors can quote the string, password included.
		return nil, nil, fmt.Errorf("storage: read the PostgreSQL connection string: it is not a postgres:// URL or key=value list pgx accepts (%s)", parseHint(err))
	}
	if cfg.ConnectTimeout == 0 {
		cfg.ConnectTimeout = connectTimeout
	}
	for k, v := range opts.Settings {
		cfg.RuntimeParams[k] = v
	}
	sqlDB := stdlib.OpenDB(*cfg)
	maxOpen := opts.MaxOpen
	if maxOpen <= 0 {
		maxOpen = 10
	}
	maxIdle := opts.MaxIdle
	if maxIdle <= 0 {
		maxIdle = maxOpen
	}
	sqlDB.SetMaxOpenConns(maxOpen)
	sqlDB.SetMaxIdleConns(maxIdle)
	sqlDB.SetConnMaxIdleTime(5 * time.Minute)
	if err := sqlDB.PingContext(ctx); err != nil {
		_ = sqlDB.Close()
		return nil, nil, fmt.Errorf("storage: connect to PostgreSQL at %s: %w", where, err)
	}
	db, err := gorm.Open(postgres.New(postgres.Config{Conn: sqlDB}), &gorm.Config{
		Logger:                 logger.Discard,
		SkipDefaultTransaction: true,
		PrepareStmt:            true,
	})
	if err != nil {
		_ = sqlDB.Close()
		return nil, nil, fmt.Errorf("storage: open PostgreSQL at %s: %w", where, err)
	}
	return db, sqlDB, nil
}

// parseHint is the part of a connection string parse error that cannot
// hold a secret.
func parseHint(err error) string {
	msg := err.Error()
	for _, known := range []string{"invalid port", "invalid sslmode", "cannot parse", "invalid"} {
		if strings.Contains(msg, known) {
			return known
		}
	}
	return "see pgx's connection string documentation"
}

// Describe names the server and database of dsn for messages and status
// output: "host:port/database" with no user or password. It never fails:
// an unreadable string is "(an unreadable connection string)".
func Describe(dsn string) string {
	cfg, err := pgx.ParseConfig(dsn)
	if err != nil {
		if u, uerr := url.Parse(dsn); uerr == nil && u.Host != "" {
			return u.Host + u.Path
		}
		return "(an unreadable connection string)"
	}
	host := cfg.Host
	if strings.HasPrefix(host, "/") {
		host = "unix:" + host
	}
	return fmt.Sprintf("%s:%d/%s", host, cfg.Port, cfg.Database)
}

// Migration is the outcome of one migration that [Migrate] applied.
type Migration struct {
	// Version is the migration's number.
	Version int64
	// Name is its file name, such as "00001_audit.sql".
	Name string
	// Duration is how long it ran.
	Duration time.Duration
}

// Migrate applies the migrations in fsys (NNNNN_what.sql files in goose's
// format) that db has not applied yet, in order, each in its own
// transaction, and records them in the table <component>_migrations. It
// holds a PostgreSQL advisory lock (one per component) on one connection
// from the first check to the last migration, so concurrent callers, in
// this process or others, apply each migration once. It waits for the
// lock as long as ctx allows. It returns what it applied, in order; a
// failed migration is rolled back and its error names it.
func Migrate(ctx context.Context, db *sql.DB, component string, fsys fs.FS, log hclog.Logger) ([]Migration, error) {
	if log == nil {
		log = hclog.NewNullLogger()
	}
	p, err := goose.NewProvider(goose.DialectPostgres, db, fsys,
		goose.WithTableName(component+"_migrations"),
		goose.WithSessionLocker(advisoryLock{id: lockID(component)}),
		goose.WithDisableGlobalRegistry(true),
		goose.WithLogger(quiet{}),
	)
	if err != nil {
		return nil, fmt.Errorf("storage: read the %s migrations: %w", component, err)
	}
	results, err := p.Up(ctx)
	var partial *goose.PartialError
	if errors.As(err, &partial) {
		results = partial.Applied
	}
	var out []Migration
	for _, r := range results {
		m := Migration{Version: r.Source.Version, Name: r.Source.Path, Duration: r.Duration}
		out = append(out, m)
		log.Info("applied a migration", "component", component, "version", m.Version, "name", m.Name, "duration", m.Duration)
	}
	if err != nil {
		if partial != nil && partial.Failed != nil {
			return out, fmt.Errorf("storage: %s migration %s failed and was rolled back: %w", component, partial.Failed.Source.Path, partial.Err)
		}
		return out, fmt.Errorf("storage: migrate %s: %w", component, err)
	}
	return out, nil
}

// Version returns the newest migration of component applied to db, 0 when
// none is, and the newest fsys holds.
func Version(ctx context.Context, db *sql.DB, component string, fsys fs.FS) (current, latest int64, err error) {
	p, err := goose.NewProvider(goose.DialectPostgres, db, fsys,
		goose.WithTableName(component+"_migrations"),
		goose.WithDisableGlobalRegistry(true),
		goose.WithLogger(quiet{}),
	)
	if err != nil {
		return 0, 0, fmt.Errorf("storage: read the %s migrations: %w", component, err)
	}
	sources := p.ListSources()
	if len(sources) > 0 {
		latest = sources[len(sources)-1].Version
	}
	current, err = p.GetDBVersion(ctx)
	if err != nil {
		return 0, latest, fmt.Errorf("storage: read the %s schema version: %w", component, err)
	}
	return current, latest, nil
}

// lockID is the advisory lock key of component's migrations: a CRC-64 of
// "openhuman-host migrate <component>". The string stays as it is: replicas
// of different releases must take the same lock.
func lockID(component string) int64 {
	return int64(crc64.Checksum([]byte("openhuman-host migrate "+component), crc64.MakeTable(crc64.ECMA)))
}

// advisoryLock is goose's session lock, taken with pg_advisory_lock so
// that a waiting replica proceeds the moment the migrating one is done
// (goose's own locker polls pg_try_advisory_lock every few seconds).
type advisoryLock struct{ id int64 }

func (l advisoryLock) SessionLock(ctx context.Context, conn *sql.Conn) error {
	if _, err := conn.ExecContext(ctx, "SELECT pg_advisory_lock($1)", l.id); err != nil {
		return fmt.Errorf("take the migration lock: %w", err)
	}
	return nil
}

func (l advisoryLock) SessionUnlock(ctx context.Context, conn *sql.Conn) error {
	var released bool
	if err := conn.QueryRowContext(ctx, "SELECT pg_advisory_unlock($1)", l.id).Scan(&released); err != nil {
		return fmt.Errorf("release the migration lock: %w", err)
	}
	if !released {
		return errors.New("release the migration lock: this connection did not hold it")
	}
	return nil
}

// quiet is goose's logger: the outcome is logged through hclog by
// Migrate, and nothing may reach stdout.
type quiet struct{}

func (quiet) Fatalf(string, ...any) {}
func (quiet) Printf(string, ...any) {}

// MigrationsDir returns the directory dir of fsys, a component's embedded
// migrations (//go:embed dir/*.sql), as the fs.FS [Migrate] reads. It
// panics when dir is not a valid path, which only a wrong constant in the
// caller can cause.
func MigrationsDir(fsys fs.FS, dir string) fs.FS {
	sub, err := fs.Sub(fsys, dir)
	if err != nil {
		panic(fmt.Sprintf("storage: migrations directory %q: %v", dir, err))
	}
	return sub
}
