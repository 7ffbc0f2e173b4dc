package memory

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/hashicorp/go-hclog"
	"gorm.io/driver/sqlite"
	"gorm.io/gorm"
	gormlogger "gorm.io/gorm/logger"

	"github.com/openhuman/openhuman-host/sdk/storage"
	"github.com/openhuman/openhuman-host/sdk/storage/filelock"
	"github.com/openhuman/openhuman-host/sdk/storage/sqliteerr"
	"github.com/openhuman/openhuman-host/sdk/storage/sqliteuri"
)

const (
	// dbFileName is the database's name inside the provider's data dir.
	dbFileName = "memory.db"
	// busyTimeoutMS is how long a connection waits for another writer,
	// possibly in another process, before failing with SQLITE_BUSY.
	busyTimeoutMS = 30000
	// insertBatch bounds the rows of one INSERT, well under SQLite's
	// variable limit.
	insertBatch = 100
)

// errKeyCollision means both a title's key and its disambiguated key
// belong to documents with other titles.
var errKeyCollision = errors.New("key collision")

// store is the memory database. Its methods are safe for concurrent use,
// also with other processes that open the same file.
type store struct {
	db  *gorm.DB
	now func() time.Time
	// writeSlot lets one write transaction of this process at a time
	// reach SQLite, which allows one writer anyway: writers queue here, in
	// order and cancellable, instead of polling the file lock, so the busy
	// timeout only has to cover writers in other processes.
	writeSlot chan struct{}
	// extractors find the entities of every chunk written.
	extractors []Extractor
	// path is the database file.
	path string
	// unlock releases the shared lock on path's lock file (see lockPath),
	// which keeps a recovery from replacing the database under the store.
	unlock func()
	// keepVersions is how long a document written with KeepVersion keeps
	// the text it had before each replacement; 0 keeps none.
	keepVersions time.Duration
	// postings keeps the posting lists of recent query words while the
	// full-text index is unchanged (rank.go).
	postings *postingCache
	// postgres is set when the store is a PostgreSQL database shared by
	// replicas ([storage] driver = "postgres") rather than memory.db; path
	// is then empty and where names the database, without credentials.
	postgres bool
	where    string
}

// lockPath is the lock file of the database at path: every process with
// the database open holds it shared, and memory recover exclusive.
func lockPath(path string) string { return path + ".lock" }

// dsn returns the go-sqlite3 DSN for path. The parameters are applied by the
// driver to every connection it opens, so the whole pool runs in WAL mode,
// waits for other writers, takes the write lock at BEGIN (so a transaction
// never fails half way when it starts writing) and enforces foreign keys.
func dsn(path string) string {
	return sqliteuri.File(path, fmt.Sprintf("_journal_mode=WAL&_busy_timeout=%d&_txlock=immediate&_foreign_keys=1", busyTimeoutMS))
}

// openStore opens (creating if needed) the database at path and brings its
// schema up to date. Processes that open a new database at the same time
// race to switch it to WAL mode and create its schema, and SQLite does not
// wait for some of those locks whatever the busy timeout: an open that
// fails with SQLITE_BUSY is tried again, with backoff, for up to the busy
// timeout.
func openStore(ctx context.Context, path string, now func() time.Time, extractors []Extractor, logger hclog.Logger) (*store, error) {
	deadline := time.Now().Add(busyTimeoutMS * time.Millisecond)
	wait := 10 * time.Millisecond
	for {
		s, err := openStoreOnce(ctx, path, now, extractors, logger)
		if err == nil || !sqliteerr.Busy(err) || time.Now().After(deadline) {
			return s, err
		}
		logger.Debug("memory database busy while opening; trying again", "path", path, "wait", wait)
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("open %s: %w", path, ctx.Err())
		case <-time.After(wait):
		}
		wait = min(2*wait, 500*time.Millisecond)
	}
}

// openStoreOnce is one attempt of openStore.
func openStoreOnce(ctx context.Context, path string, now func() time.Time, extractors []Extractor, logger hclog.Logger) (*store, error) {
	if err := privateFiles(path); err != nil {
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	unlock, err := filelock.Shared(lockPath(path))
	if errors.Is(err, filelock.ErrLocked) {
		return nil, fmt.Errorf("open %s: `openhuman-host memory recover` is rebuilding it; try again once it has finished", path)
	}
	if err != nil {
		return nil, fmt.Errorf("open %s: lock it: %w", path, err)
	}
	db, err := gorm.Open(sqlite.Open(dsn(path)), &gorm.Config{
		// Statements carry memory bodies; they must never reach a log.
		Logger:                 gormlogger.Discard,
		SkipDefaultTransaction: true,
	})
	if err != nil {
		unlock()
		if isCorrupt(err) {
			err = damaged(err.Error())
		}
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	if sqlDB, err := db.DB(); err == nil {
		storage.KeepSQLiteConnections(sqlDB)
	}
	s := &store{db: db, now: now, writeSlot: make(chan struct{}, 1), extractors: extractors, path: path, unlock: unlock, postings: newPostingCache(postingCacheBytes)}
	if err := quickCheck(ctx, db); err != nil {
		s.close()
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	var fts5 bool
	if err := db.WithContext(ctx).Raw(`SELECT sqlite_compileoption_used('ENABLE_FTS5')`).Scan(&fts5).Error; err != nil {
		s.close()
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	if err := checkFTS5(fts5); err != nil {
		s.close()
		return nil, err
	}

	// A database already at this version needs no write lock: another
	// process may hold it for a while (an import batch), and opening must
	// not wait for it.
	var current int
	err = db.WithContext(ctx).Raw(`SELECT COALESCE(MAX(version), 0) FROM schema_migrations`).Scan(&current).Error
	var applied []migration
	if err != nil || current < schemaVersion() {
		err = s.write(ctx, func(tx *gorm.DB) error {
			applied, err = migrate(tx, migrationEnv{nowMS: now().UnixMilli(), extractors: extractors})
			return err
		})
	} else if current > schemaVersion() {
		err = fmt.Errorf("memory.db has schema version %d but this binary knows only up to %d; upgrade openhuman-host", current, schemaVersion())
	}
	if err != nil {
		s.close()
		return nil, fmt.Errorf("migrate %s: %w", path, err)
	}
	for _, m := range applied {
		logger.Info("applied schema migration", "version", m.version, "name", m.name)
	}
	return s, nil
}

// privateFiles creates the database at path when missing, readable by its
// owner only (SQLite gives its -wal and -shm files the same mode), in a
// folder only its owner may enter, and takes other users' access away
// from an existing one: it holds the user's notes.
func privateFiles(path string) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return fmt.Errorf("create its folder: %w", err)
	}
	if err := os.Chmod(filepath.Dir(path), 0o700); err != nil {
		return fmt.Errorf("make its folder private: %w", err)
	}
	f, err := os.OpenFile(path, os.O_RDONLY|os.O_CREATE, 0o600)
	if err != nil {
		return err
	}
	_ = f.Close()
	for _, p := range []string{path, path + "-wal", path + "-shm"} {
		if err := os.Chmod(p, 0o600); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("make it private: %w", err)
		}
	}
	return nil
}

// ErrDamaged is wrapped by the error of opening a memory database that
// fails SQLite's integrity check.
var ErrDamaged = errors.New("memory.db is damaged")

// quickCheck runs PRAGMA quick_check, which reads every page, and refuses a
// damaged database with the way out.
func quickCheck(ctx context.Context, db *gorm.DB) error {
	var res []string
	err := db.WithContext(ctx).Raw("PRAGMA quick_check(5)").Scan(&res).Error
	switch {
	case isCorrupt(err):
		return damaged(err.Error())
	case err != nil:
		return fmt.Errorf("check integrity: %w", err)
	case len(res) == 1 && res[0] == "ok":
		return nil
	}
	return damaged(strings.Join(res, "; "))
}

// isCorrupt reports whether err is SQLite's SQLITE_CORRUPT or SQLITE_NOTADB.
func isCorrupt(err error) bool { return sqliteerr.Corrupt(err) }

// damaged is the refusal of a damaged database, with what SQLite found and
// the way out.
func damaged(found string) error {
	return fmt.Errorf("%w (%s). Stop every openhuman-host using it, then run `openhuman-host memory recover`: it keeps "+
		"the damaged files as memory.db.damaged-<time> and rebuilds memory.db from every row SQLite can still read; "+
		"afterwards run `openhuman-host memory import` again for your files", ErrDamaged, found)
}

// write runs fn in one immediate write transaction: everything fn does is
// committed together or not at all.
func (s *store) write(ctx context.Context, fn func(tx *gorm.DB) error) error {
	select {
	case s.writeSlot <- struct{}{}:
	case <-ctx.Done():
		return ctx.Err()
	}
	defer func() { <-s.writeSlot }()
	if s.postgres {
		// Replicas write one at a time, as SQLite's writers do: the
		// transaction first takes the memory write lock.
		inner := fn
		fn = func(tx *gorm.DB) error {
			if err := tx.Exec(`SELECT pg_advisory_xact_lock(?)`, pgWriteLock).Error; err != nil {
				return fmt.Errorf("take the memory write lock: %w", err)
			}
			return inner(tx)
		}
	}
	err := s.db.WithContext(ctx).Transaction(fn)
	if err != nil && ctx.Err() != nil && !errors.Is(err, ctx.Err()) {
		// database/sql rolls the transaction back when ctx ends, and what
		// comes next, a statement or the commit, fails with ErrTxDone:
		// the cause is ctx.
		return fmt.Errorf("%w (%v)", ctx.Err(), err)
	}
	return err
}

func (s *store) close() error {
	if s.unlock != nil {
		defer s.unlock()
	}
	sqlDB, err := s.db.DB()
	if err != nil {
		return err
	}
	return sqlDB.Close()
}

// document is one document to write: where it belongs, its upsert key,
// and its content already split into chunks.
type document struct {
	// ID is the document's id; empty means documentID(Namespace, key).
	ID string
	// SourceID, SourceKind and SourceName identify its source, which is
	// created if missing (an existing source keeps its kind and name).
	SourceID   string
	SourceKind string
	SourceName string
	Namespace  string
	// Key is the upsert key within Namespace. With KeyFromTitle it is
	// ignored: the key is storeKey(Title), disambiguated when a document
	// with another title already has it.
	Key          string
	KeyFromTitle bool
	Title        string
	// Tags replace the document's tags; nil keeps those of an existing
	// document (a new one gets none).
	Tags []string
	// NoteChunkID is the chunk a note annotates; empty for other
	// documents.
	NoteChunkID string
	// Pieces are the chunk contents in order.
	Pieces []string
	// ChunkIDs, when set, are the ids of Pieces in document ID, which an
	// import computes while it reads files, off the writer's path; when
	// not set (or ID is empty), the write computes them.
	ChunkIDs []string
	// ContentSHA256 is the hex SHA-256 of the whole content.
	ContentSHA256 string
	// KeepVersion keeps the text an existing document had, when this
	// write changes its title or content, in document_versions for the
	// store's keepVersions.
	KeepVersion bool
}

// putResult says where a document was written.
type putResult struct {
	DocumentID string
	Key        string
	Created    bool
	// Unchanged is set when putDocuments was asked to skip documents whose
	// title, source, tags and content hash were already stored.
	Unchanged bool
	// Fresh are the chunks this write inserted (new or changed text).
	Fresh []chunkRow
	// ChunkIDs are the document's chunk ids in order.
	ChunkIDs []string
	// Tags are the document's tags after the write.
	Tags []string
	// Replaced describes what a write changed in an existing document;
	// nil for a new or unchanged one.
	Replaced *replacement
}

// replacement says how a write changed an existing document.
// The tags give memory_store's output schema.
type replacement struct {
	// Version is the number the previous text is kept under in
	// document_versions; 0 when it was not kept.
	Version int `json:"version,omitempty" jsonschema:"The previous text is kept as this version (memory_history reads it); absent when it was not kept." schema:"minimum=1"`
	// TitleChanged is set when the title changed (a note's, say).
	TitleChanged bool `json:"title_changed"`
	// PreviousBytes and Bytes are the content's size before and after,
	// in bytes of UTF-8.
	PreviousBytes int64 `json:"previous_bytes" jsonschema:"Size of the previous content, bytes of UTF-8." schema:"minimum=0"`
	Bytes         int64 `json:"bytes" jsonschema:"Size of the new content, bytes of UTF-8." schema:"minimum=0"`
	// ChunksKept, ChunksAdded and ChunksRemoved count the chunks the
	// write left alone, wrote and deleted.
	ChunksKept    int `json:"chunks_kept" jsonschema:"Chunks whose text and position did not change." schema:"minimum=0"`
	ChunksAdded   int `json:"chunks_added" jsonschema:"Chunks written." schema:"minimum=0"`
	ChunksRemoved int `json:"chunks_removed" jsonschema:"Chunks of the previous content deleted." schema:"minimum=0"`
}

// putDocument writes one document in its own transaction.
func (s *store) putDocument(ctx context.Context, doc document) (putResult, error) {
	res, err := s.putDocuments(ctx, []document{doc}, false)
	if err != nil {
		return putResult{}, err
	}
	return res[0], nil
}

// putDocuments upserts docs in one transaction: each source is created or
// touched, each document created or updated, and its chunks replaced
// (chunks whose id, and so content and position, did not change are kept
// with their timestamps, entities and embeddings). With skipUnchanged, a
// document whose stored title, source, tags and content hash equal doc's is
// left alone.
func (s *store) putDocuments(ctx context.Context, docs []document, skipUnchanged bool) ([]putResult, error) {
	nowMS := s.now().UnixMilli()
	results := make([]putResult, len(docs))
	err := s.write(ctx, func(tx *gorm.DB) error {
		w := s.newDocWriter(tx, nowMS)
		if err := w.lookAhead(docs); err != nil {
			return err
		}
		for i, doc := range docs {
			if err := w.put(doc, skipUnchanged, &results[i]); err != nil {
				return err
			}
		}
		return w.finish()
	})
	if err != nil {
		return nil, err
	}
	return results, nil
}

// putInTx writes doc inside tx and reports whether it deleted chunks; the
// caller drops the entities no chunk mentions any more when it did.
func (s *store) putInTx(tx *gorm.DB, doc document, skipUnchanged bool, nowMS int64) (putResult, bool, error) {
	var res putResult
	w := s.newDocWriter(tx, nowMS)
	if err := w.put(doc, skipUnchanged, &res); err != nil {
		return putResult{}, false, err
	}
	if err := w.flush(); err != nil {
		return putResult{}, false, err
	}
	return res, w.deleted, nil
}

// findDocument returns the document with namespace and key, or nil.
func findDocument(tx *gorm.DB, namespace, key string) (*documentRow, error) {
	var rows []documentRow
	if err := tx.Where("namespace = ? AND key = ?", namespace, key).Limit(1).Find(&rows).Error; err != nil {
		return nil, fmt.Errorf("look up document: %w", err)
	}
	if len(rows) == 0 {
		return nil, nil
	}
	return &rows[0], nil
}
