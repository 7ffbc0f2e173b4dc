package memory

import (
	"context"
	"database/sql"
	"embed"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/hashicorp/go-hclog"
	"gorm.io/driver/postgres"
	"gorm.io/gorm"
	gormlogger "gorm.io/gorm/logger"

	"github.com/openhuman/openhuman-host/sdk"
	"github.com/openhuman/openhuman-host/sdk/storage"
)

// Component names the memory provider's migrations on PostgreSQL: they are
// recorded in the table memory_migrations.
const Component = "memory"

//go:embed migrations/*.sql
var migrationFiles embed.FS

// Migrations are the memory provider's numbered PostgreSQL migrations
// (NNNNN_what.sql in goose's format), for [storage.Migrate]. On SQLite the
// schema follows the steps of migrations.go instead.
var Migrations = storage.MigrationsDir(migrationFiles, "migrations")

// Secrets the host passes the built-in memory provider when [storage]
// driver = "postgres": the driver, and the connection string of the
// database every replica shares.
const (
	// SecretStorageDriver is the key of the storage driver in
	// ConfigureRequest.Secrets; "postgres" opens PostgreSQL, anything else
	// (or none) memory.db in the data directory.
	SecretStorageDriver = sdk.SecretStorageDriver
	// SecretStorageDSN is the key of the PostgreSQL connection string.
	SecretStorageDSN = sdk.SecretStorageDSN
)

const (
	// pgPoolSize caps the store's connections to PostgreSQL: one writer
	// at a time, tool calls reading beside it, the backfill.
	pgPoolSize = 8
	// pgWriteLock is the transaction-level advisory lock every write
	// transaction takes first, so that replicas write one at a time, as
	// SQLite's writers do (a CRC-64 would do as well; this is "memwrite"
	// in ASCII).
	pgWriteLock int64 = 0x6d656d7772697465
	// pgTextConfig is the text search configuration of the migrations,
	// with which chunks are indexed and queries read.
	pgTextConfig = "memory_text"
)

// openPostgresStore connects to the PostgreSQL database of dsn and brings
// its memory tables up to date, under the migration lock, so that
// replicas starting at once migrate one after the other. Errors name the
// server without credentials.
func openPostgresStore(ctx context.Context, dsn string, now func() time.Time, extractors []Extractor, logger hclog.Logger) (*store, error) {
	where := storage.Describe(dsn)
	// Every statement is planned for its own values: a generic plan of
	// "tsv @@ to_tsquery($1)", which pgx's prepared statements get after a
	// few runs, cannot tell a rare word from a common one and scans every
	// chunk's vector. Nor is a table read whole where an index serves:
	// once the chunks are analyzed, the planner picks a sequential scan
	// for a word in a fifth of them or more, which tests every chunk's
	// vector, read from TOAST, a cost it does not count (a second at 100k
	// chunks, against tens of milliseconds for the GIN index).
	_, sqlDB, err := storage.OpenPostgres(ctx, dsn, storage.PoolOptions{MaxOpen: pgPoolSize,
		Settings: map[string]string{"plan_cache_mode": "force_custom_plan", "enable_seqscan": "off"}})
	if err != nil {
		return nil, err
	}
	fail := func(err error) (*store, error) {
		_ = sqlDB.Close()
		return nil, fmt.Errorf("open PostgreSQL %s: %w", where, err)
	}
	// A gorm handle of its own: statements are not prepared by gorm,
	// whose cache would keep one per distinct text (IN lists of every
	// length); pgx keeps a bounded cache per connection.
	db, err := gorm.Open(postgres.New(postgres.Config{Conn: sqlDB}), &gorm.Config{
		// Statements carry memory bodies; they must never reach a log.
		Logger:                 gormlogger.Discard,
		SkipDefaultTransaction: true,
	})
	if err != nil {
		return fail(err)
	}
	if _, err := storage.Migrate(ctx, sqlDB, Component, Migrations, logger); err != nil {
		return fail(err)
	}
	return &store{
		db: db, now: now, writeSlot: make(chan struct{}, 1), extractors: extractors,
		postings: newPostingCache(postingCacheBytes), postgres: true, where: where,
	}, nil
}

// pgSchemaVersion returns the newest memory migration applied to the
// PostgreSQL database.
func (s *store) pgSchemaVersion(ctx context.Context) (int, error) {
	sqlDB, err := s.db.DB()
	if err != nil {
		return 0, err
	}
	current, _, err := storage.Version(ctx, sqlDB, Component, Migrations)
	if err != nil {
		return 0, fmt.Errorf("read the schema version: %w", err)
	}
	return int(current), nil
}

// onPostgres reports whether db is a PostgreSQL handle, for the few
// statements whose SQL differs and that have no store at hand.
func onPostgres(db *gorm.DB) bool { return db.Dialector.Name() == "postgres" }

// byteLength is the SQL expression of the length in bytes of the text
// column col.
func byteLength(db *gorm.DB, col string) string {
	if onPostgres(db) {
		return "octet_length(" + col + ")"
	}
	return "length(CAST(" + col + " AS BLOB))"
}

// snapshot is the read transaction of an export: on PostgreSQL its
// queries' ? placeholders become $1, $2, ….
type snapshot struct {
	*sql.Tx
	postgres bool
}

// QueryContext runs query in the transaction.
func (s *snapshot) QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error) {
	return s.Tx.QueryContext(ctx, s.rebind(query), args...)
}

// QueryRowContext runs query, which returns at most one row, in the
// transaction.
func (s *snapshot) QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row {
	return s.Tx.QueryRowContext(ctx, s.rebind(query), args...)
}

// rebind numbers query's ? placeholders for PostgreSQL. The export's
// queries hold no ? in literals.
func (s *snapshot) rebind(query string) string {
	if !s.postgres || !strings.Contains(query, "?") {
		return query
	}
	var b strings.Builder
	n := 0
	for _, r := range query {
		if r == '?' {
			n++
			b.WriteString("$" + strconv.Itoa(n))
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}

// readSnapshotPostgres is readSnapshot on PostgreSQL: a read-only
// repeatable-read transaction, one snapshot of the whole database, which
// no writer waits for.
func readSnapshotPostgres(ctx context.Context, st *store, fn func(tx *snapshot) error) error {
	sqlDB, err := st.db.DB()
	if err != nil {
		return err
	}
	tx, err := sqlDB.BeginTx(ctx, &sql.TxOptions{ReadOnly: true, Isolation: sql.LevelRepeatableRead})
	if err != nil {
		return fmt.Errorf("begin a read transaction on PostgreSQL %s: %w", st.where, err)
	}
	defer func() { _ = tx.Rollback() }()
	return fn(&snapshot{Tx: tx, postgres: true})
}

// ErrBackupPostgres is Backup's refusal when memory lives in PostgreSQL.
var ErrBackupPostgres = errors.New(`memory backup copies the SQLite memory.db; with [storage] driver = "postgres" memory lives in ` +
	`the shared PostgreSQL database: back it up with pg_dump (its tables are listed in docs/memory.md)`)

// pgTables are the memory provider's tables on PostgreSQL.
var pgTables = []string{"sources", "documents", "chunks", "chunk_tags", "entities", "chunk_entities", "chunk_embeddings", "document_versions", "memory_state"}

// statsPostgres is Stats on PostgreSQL.
func (st *store) statsPostgres(ctx context.Context) (Stats, error) {
	var s Stats
	err := st.db.WithContext(ctx).Raw(`SELECT `+statsCounts+`,
		(SELECT COALESCE(SUM(pg_total_relation_size(to_regclass(t))), 0)::bigint FROM unnest(ARRAY['`+strings.Join(pgTables, "', '")+`']) AS t)`).Row().Scan(
		&s.Sources, &s.Documents, &s.Chunks, &s.Entities, &s.ChunkTags, &s.Notes, &s.Embeddings, &s.DBBytes)
	if err != nil {
		return Stats{}, fmt.Errorf("memory stats: %w", err)
	}
	if s.SchemaVersion, err = st.pgSchemaVersion(ctx); err != nil {
		return Stats{}, fmt.Errorf("memory stats: %w", err)
	}
	s.Path = st.where
	return s, nil
}
