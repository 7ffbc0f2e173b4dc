package memory

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"time"

	"github.com/hashicorp/go-hclog"
	"gorm.io/driver/sqlite"
	"gorm.io/gorm"
	"gorm.io/gorm/clause"
	gormlogger "gorm.io/gorm/logger"
)

const (
	// dbFileName is the database's name inside the provider's data dir.
	dbFileName = "memory.db"
	// busyTimeoutMS is how long a connection waits for another writer,
	// possibly in another process, before failing with SQLITE_BUSY.
	busyTimeoutMS = 5000
	// insertBatch bounds the rows of one INSERT, well under SQLite's
	// variable limit.
	insertBatch = 100
	// Search weights BM25 by column: title, then body.
	titleWeight = 5.0
	bodyWeight  = 1.0
	// snippetTokens is the length of a search snippet, in tokens.
	snippetTokens = 32
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
}

// dsn returns the go-sqlite3 DSN for path. The parameters are applied by the
// driver to every connection it opens, so the whole pool runs in WAL mode,
// waits for other writers, takes the write lock at BEGIN (so a transaction
// never fails half way when it starts writing) and enforces foreign keys.
func dsn(path string) string {
	u := url.URL{Scheme: "file", Path: path}
	return u.String() + fmt.Sprintf("?_journal_mode=WAL&_busy_timeout=%d&_txlock=immediate&_foreign_keys=1", busyTimeoutMS)
}

// openStore opens (creating if needed) the database at path and brings its
// schema up to date.
func openStore(ctx context.Context, path string, now func() time.Time, logger hclog.Logger) (*store, error) {
	db, err := gorm.Open(sqlite.Open(dsn(path)), &gorm.Config{
		// Statements carry memory bodies; they must never reach a log.
		Logger:                 gormlogger.Discard,
		SkipDefaultTransaction: true,
	})
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	s := &store{db: db, now: now, writeSlot: make(chan struct{}, 1)}
	var fts5 bool
	if err := db.WithContext(ctx).Raw(`SELECT sqlite_compileoption_used('ENABLE_FTS5')`).Scan(&fts5).Error; err != nil {
		s.close()
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	if err := checkFTS5(fts5); err != nil {
		s.close()
		return nil, err
	}
	var applied []migration
	err = s.write(ctx, func(tx *gorm.DB) error {
		applied, err = migrate(tx, now().UnixMilli())
		return err
	})
	if err != nil {
		s.close()
		return nil, fmt.Errorf("migrate %s: %w", path, err)
	}
	for _, m := range applied {
		logger.Info("applied schema migration", "version", m.version, "name", m.name)
	}
	return s, nil
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
	return s.db.WithContext(ctx).Transaction(fn)
}

func (s *store) close() error {
	sqlDB, err := s.db.DB()
	if err != nil {
		return err
	}
	return sqlDB.Close()
}

// document is what memory.store writes: one document of a note source.
type document struct {
	Namespace string
	Title     string
	Tags      []string
	// Pieces are the chunk contents in order.
	Pieces []string
}

// putResult says where putDocument wrote.
type putResult struct {
	DocumentID string
	Key        string
	Created    bool
}

// putDocument upserts doc under its store key in one transaction: the
// source is created or touched, the document created or updated, and its
// chunks replaced (chunks whose id, and so content and position, did not
// change are kept with their timestamps).
func (s *store) putDocument(ctx context.Context, doc document) (putResult, error) {
	nowMS := s.now().UnixMilli()
	tags, err := json.Marshal(doc.Tags)
	if err != nil {
		return putResult{}, fmt.Errorf("encode tags: %w", err)
	}
	var res putResult
	err = s.write(ctx, func(tx *gorm.DB) error {
		src := sourceRow{
			ID:          sourceIDForNamespace(doc.Namespace),
			Kind:        sourceKindNote,
			DisplayName: "Stored with memory.store (namespace " + doc.Namespace + ")",
			CreatedMS:   nowMS,
			UpdatedMS:   nowMS,
		}
		err := tx.Clauses(clause.OnConflict{
			Columns:   []clause.Column{{Name: "id"}},
			DoUpdates: clause.AssignmentColumns([]string{"updated_ms"}),
		}).Create(&src).Error
		if err != nil {
			return fmt.Errorf("upsert source: %w", err)
		}

		key := storeKey(doc.Title)
		existing, err := findDocument(tx, doc.Namespace, key)
		if err != nil {
			return err
		}
		if existing != nil && existing.Title != doc.Title {
			key = disambiguatedKey(key, doc.Title)
			if existing, err = findDocument(tx, doc.Namespace, key); err != nil {
				return err
			}
			if existing != nil && existing.Title != doc.Title {
				return errKeyCollision
			}
		}
		res = putResult{DocumentID: documentID(doc.Namespace, key), Key: key, Created: existing == nil}

		if existing == nil {
			err = tx.Create(&documentRow{
				ID:        res.DocumentID,
				SourceID:  src.ID,
				Namespace: doc.Namespace,
				Key:       key,
				Title:     doc.Title,
				Tags:      string(tags),
				CreatedMS: nowMS,
				UpdatedMS: nowMS,
			}).Error
		} else {
			err = tx.Model(&documentRow{ID: existing.ID}).Updates(map[string]any{
				"source_id":  src.ID,
				"tags":       string(tags),
				"updated_ms": nowMS,
			}).Error
		}
		if err != nil {
			return fmt.Errorf("write document: %w", err)
		}
		return replaceChunks(tx, res.DocumentID, doc.Pieces, nowMS)
	})
	if err != nil {
		return putResult{}, err
	}
	return res, nil
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

// replaceChunks makes pieces the chunks of document docID. The FTS index
// follows through the chunks triggers.
func replaceChunks(tx *gorm.DB, docID string, pieces []string, nowMS int64) error {
	var old []string
	if err := tx.Model(&chunkRow{}).Where("document_id = ?", docID).Pluck("id", &old).Error; err != nil {
		return fmt.Errorf("list chunks: %w", err)
	}
	keep := make(map[string]bool, len(pieces))
	rows := make([]chunkRow, 0, len(pieces))
	for seq, content := range pieces {
		id := chunkID(docID, seq, content)
		keep[id] = true
		rows = append(rows, chunkRow{ID: id, DocumentID: docID, Seq: seq, Content: content, CreatedMS: nowMS, UpdatedMS: nowMS})
	}
	oldSet := make(map[string]bool, len(old))
	var stale []string
	for _, id := range old {
		oldSet[id] = true
		if !keep[id] {
			stale = append(stale, id)
		}
	}
	for len(stale) > 0 {
		n := min(len(stale), insertBatch)
		if err := tx.Where("id IN ?", stale[:n]).Delete(&chunkRow{}).Error; err != nil {
			return fmt.Errorf("delete chunks: %w", err)
		}
		stale = stale[n:]
	}
	fresh := rows[:0]
	for _, r := range rows {
		if !oldSet[r.ID] {
			fresh = append(fresh, r)
		}
	}
	if len(fresh) == 0 {
		return nil
	}
	if err := tx.CreateInBatches(fresh, insertBatch).Error; err != nil {
		return fmt.Errorf("insert chunks: %w", err)
	}
	return nil
}

// search returns up to k chunks matching the FTS5 expression match, best
// first: BM25 with the title weighted above the body, ties broken by
// recency and then id so results are stable. The inner query ranks every
// match but builds no snippet; snippets, the costly part, are made for the
// k rows returned only.
func (s *store) search(ctx context.Context, match string, k int) ([]searchHit, error) {
	hits := []searchHit{}
	err := s.db.WithContext(ctx).Raw(`
		WITH top AS (
			SELECT f.rowid AS pk, -bm25(chunks_fts, ?, ?) AS score
			FROM chunks_fts f
			JOIN chunks c ON c.pk = f.rowid
			WHERE chunks_fts MATCH ?
			ORDER BY score DESC, c.updated_ms DESC, c.id
			LIMIT ?
		)
		SELECT c.id AS chunk_id, c.document_id, d.title, d.namespace, d.source_id, c.seq,
			snippet(chunks_fts, 1, '**', '**', '…', ?) AS snippet,
			top.score AS score,
			c.updated_ms
		FROM top
		JOIN chunks_fts ON chunks_fts.rowid = top.pk
		JOIN chunks c ON c.pk = top.pk
		JOIN documents d ON d.id = c.document_id
		WHERE chunks_fts MATCH ?
		ORDER BY top.score DESC, c.updated_ms DESC, c.id`,
		titleWeight, bodyWeight, match, k, snippetTokens, match).Scan(&hits).Error
	if err != nil {
		return nil, fmt.Errorf("search chunks: %w", err)
	}
	return hits, nil
}

// chunk returns the chunk with id and its document's details, or nil when
// there is none.
func (s *store) chunk(ctx context.Context, id string) (*chunkView, error) {
	var rows []struct {
		View     chunkView `gorm:"embedded"`
		TagsJSON string    `gorm:"column:tags_json"`
	}
	err := s.db.WithContext(ctx).Raw(`
		SELECT c.id AS chunk_id, c.document_id, d.title, d.namespace, d.source_id, c.seq, c.content,
			d.tags AS tags_json, c.created_ms, c.updated_ms
		FROM chunks c
		JOIN documents d ON d.id = c.document_id
		WHERE c.id = ?`, id).Scan(&rows).Error
	if err != nil {
		return nil, fmt.Errorf("read chunk: %w", err)
	}
	if len(rows) == 0 {
		return nil, nil
	}
	v := rows[0].View
	v.Tags = []string{}
	if err := json.Unmarshal([]byte(rows[0].TagsJSON), &v.Tags); err != nil {
		return nil, fmt.Errorf("decode tags of document %s: %w", v.DocumentID, err)
	}
	if v.Tags == nil {
		v.Tags = []string{}
	}
	return &v, nil
}
