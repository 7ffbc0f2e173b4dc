package memory

import (
	"fmt"

	"gorm.io/gorm"
)

// migration is one numbered step of the schema. Released migrations are
// never edited: a change to the schema is a new migration with the next
// version.
type migration struct {
	version    int
	name       string
	statements []string
}

// migrations lists every schema step in order; versions start at 1 and
// have no gaps.
var migrations = []migration{
	{
		version: 1,
		name:    "sources, documents, chunks and the chunk FTS5 index",
		statements: []string{
			`CREATE TABLE sources (
				id           TEXT PRIMARY KEY,
				kind         TEXT NOT NULL CHECK (kind IN ('chat', 'email', 'document', 'note')),
				display_name TEXT NOT NULL,
				created_ms   INTEGER NOT NULL,
				updated_ms   INTEGER NOT NULL
			)`,
			`CREATE TABLE documents (
				id         TEXT PRIMARY KEY,
				source_id  TEXT NOT NULL REFERENCES sources (id) ON DELETE CASCADE,
				namespace  TEXT NOT NULL,
				key        TEXT NOT NULL,
				title      TEXT NOT NULL,
				tags       TEXT NOT NULL DEFAULT '[]',
				created_ms INTEGER NOT NULL,
				updated_ms INTEGER NOT NULL,
				UNIQUE (namespace, key)
			)`,
			`CREATE INDEX documents_source_id ON documents (source_id)`,
			// pk is the chunk's rowid in chunks_fts; an INTEGER PRIMARY KEY
			// keeps it stable across VACUUM.
			`CREATE TABLE chunks (
				pk          INTEGER PRIMARY KEY,
				id          TEXT NOT NULL UNIQUE,
				document_id TEXT NOT NULL REFERENCES documents (id) ON DELETE CASCADE,
				seq         INTEGER NOT NULL CHECK (seq >= 0),
				content     TEXT NOT NULL,
				created_ms  INTEGER NOT NULL,
				updated_ms  INTEGER NOT NULL,
				UNIQUE (document_id, seq)
			)`,
			`CREATE INDEX chunks_updated_ms ON chunks (updated_ms)`,
			`CREATE VIRTUAL TABLE chunks_fts USING fts5 (
				title,
				content,
				tokenize = 'unicode61 remove_diacritics 2'
			)`,
			// Triggers keep the index in step with chunks and document
			// titles inside whatever transaction writes them, including
			// cascading deletes.
			`CREATE TRIGGER chunks_fts_after_insert AFTER INSERT ON chunks BEGIN
				INSERT INTO chunks_fts (rowid, title, content)
				VALUES (new.pk, (SELECT title FROM documents WHERE id = new.document_id), new.content);
			END`,
			`CREATE TRIGGER chunks_fts_after_delete AFTER DELETE ON chunks BEGIN
				DELETE FROM chunks_fts WHERE rowid = old.pk;
			END`,
			`CREATE TRIGGER chunks_fts_after_update AFTER UPDATE OF content, document_id ON chunks BEGIN
				UPDATE chunks_fts
				SET title = (SELECT title FROM documents WHERE id = new.document_id), content = new.content
				WHERE rowid = old.pk;
			END`,
			`CREATE TRIGGER documents_fts_after_title AFTER UPDATE OF title ON documents BEGIN
				UPDATE chunks_fts SET title = new.title
				WHERE rowid IN (SELECT pk FROM chunks WHERE document_id = new.id);
			END`,
		},
	},
}

// schemaVersion is the version this code writes and reads.
func schemaVersion() int { return migrations[len(migrations)-1].version }

// migrate applies the migrations the database has not seen, inside tx, an
// immediate write transaction, so concurrent openers apply each step
// exactly once and a failed step leaves the schema as it was. It returns
// the steps it applied.
func migrate(tx *gorm.DB, nowMS int64) ([]migration, error) {
	err := tx.Exec(`CREATE TABLE IF NOT EXISTS schema_migrations (
		version    INTEGER PRIMARY KEY,
		name       TEXT NOT NULL,
		applied_ms INTEGER NOT NULL
	)`).Error
	if err != nil {
		return nil, fmt.Errorf("create schema_migrations: %w", err)
	}
	var current int
	if err := tx.Raw(`SELECT COALESCE(MAX(version), 0) FROM schema_migrations`).Scan(&current).Error; err != nil {
		return nil, fmt.Errorf("read schema version: %w", err)
	}
	if current > schemaVersion() {
		return nil, fmt.Errorf("memory.db has schema version %d but this binary knows only up to %d; upgrade openhuman-host", current, schemaVersion())
	}
	var applied []migration
	for _, m := range migrations {
		if m.version <= current {
			continue
		}
		for _, stmt := range m.statements {
			if err := tx.Exec(stmt).Error; err != nil {
				return nil, fmt.Errorf("apply migration %d (%s): %w", m.version, m.name, err)
			}
		}
		err := tx.Exec(`INSERT INTO schema_migrations (version, name, applied_ms) VALUES (?, ?, ?)`,
			m.version, m.name, nowMS).Error
		if err != nil {
			return nil, fmt.Errorf("record migration %d: %w", m.version, err)
		}
		applied = append(applied, m)
	}
	return applied, nil
}
