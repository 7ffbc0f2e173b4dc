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
	// after, when set, runs once the statements succeeded, in the same
	// transaction, for steps SQL cannot express (such as extracting
	// entities from existing chunks).
	after func(tx *gorm.DB, env migrationEnv) error
}

// migrationEnv is what Go migration steps may use.
type migrationEnv struct {
	nowMS      int64
	extractors []Extractor
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
	{
		version: 2,
		name:    "chunk tags, entities, notes, embeddings and a tags column in the FTS5 index",
		statements: []string{
			// note_chunk_id links a memory_note document to the chunk it
			// annotates; a note outlives its chunk (the link becomes NULL).
			`ALTER TABLE documents ADD COLUMN note_chunk_id TEXT REFERENCES chunks (id) ON DELETE SET NULL`,
			`CREATE INDEX documents_note_chunk_id ON documents (note_chunk_id) WHERE note_chunk_id IS NOT NULL`,
			// content_sha256 lets an import skip files that did not change.
			`ALTER TABLE documents ADD COLUMN content_sha256 TEXT NOT NULL DEFAULT ''`,
			`CREATE TABLE chunk_tags (
				chunk_id TEXT NOT NULL REFERENCES chunks (id) ON DELETE CASCADE,
				tag      TEXT NOT NULL,
				position INTEGER NOT NULL,
				PRIMARY KEY (chunk_id, tag)
			) WITHOUT ROWID`,
			`CREATE INDEX chunk_tags_tag ON chunk_tags (tag)`,
			// mention_count and chunk_count follow chunk_entities through
			// triggers, so ranking entities reads one index.
			`CREATE TABLE entities (
				id            TEXT PRIMARY KEY,
				kind          TEXT NOT NULL,
				surface       TEXT NOT NULL,
				mention_count INTEGER NOT NULL DEFAULT 0,
				chunk_count   INTEGER NOT NULL DEFAULT 0,
				first_seen_ms INTEGER NOT NULL,
				last_seen_ms  INTEGER NOT NULL
			)`,
			`CREATE INDEX entities_rank ON entities (mention_count DESC, last_seen_ms DESC)`,
			`CREATE INDEX entities_kind_rank ON entities (kind, mention_count DESC, last_seen_ms DESC)`,
			`CREATE TABLE chunk_entities (
				chunk_pk  INTEGER NOT NULL REFERENCES chunks (pk) ON DELETE CASCADE,
				entity_id TEXT NOT NULL REFERENCES entities (id),
				count     INTEGER NOT NULL CHECK (count > 0),
				PRIMARY KEY (chunk_pk, entity_id)
			) WITHOUT ROWID`,
			`CREATE INDEX chunk_entities_entity ON chunk_entities (entity_id, chunk_pk)`,
			`CREATE TRIGGER chunk_entities_after_insert AFTER INSERT ON chunk_entities BEGIN
				UPDATE entities SET mention_count = mention_count + new.count, chunk_count = chunk_count + 1
				WHERE id = new.entity_id;
			END`,
			`CREATE TRIGGER chunk_entities_after_delete AFTER DELETE ON chunk_entities BEGIN
				UPDATE entities SET mention_count = mention_count - old.count, chunk_count = chunk_count - 1
				WHERE id = old.entity_id;
			END`,
			`CREATE TABLE chunk_embeddings (
				chunk_pk   INTEGER PRIMARY KEY REFERENCES chunks (pk) ON DELETE CASCADE,
				model      TEXT NOT NULL,
				dims       INTEGER NOT NULL CHECK (dims > 0),
				vector     BLOB NOT NULL,
				created_ms INTEGER NOT NULL
			)`,
			`CREATE INDEX chunk_embeddings_model ON chunk_embeddings (model, dims)`,
			// The FTS5 index gains a tags column (the document's tags and
			// the chunk's own): FTS5 tables cannot add columns, so it is
			// rebuilt.
			`DROP TRIGGER chunks_fts_after_insert`,
			`DROP TRIGGER chunks_fts_after_delete`,
			`DROP TRIGGER chunks_fts_after_update`,
			`DROP TRIGGER documents_fts_after_title`,
			`DROP TABLE chunks_fts`,
			`CREATE VIRTUAL TABLE chunks_fts USING fts5 (
				title,
				content,
				tags,
				tokenize = 'porter unicode61 remove_diacritics 2'
			)`,
			`INSERT INTO chunks_fts (rowid, title, content, tags)
				SELECT c.pk, d.title, c.content, ` + ftsTags("c.id", "c.document_id") + `
				FROM chunks c JOIN documents d ON d.id = c.document_id`,
			`CREATE TRIGGER chunks_fts_after_insert AFTER INSERT ON chunks BEGIN
				INSERT INTO chunks_fts (rowid, title, content, tags)
				VALUES (new.pk, (SELECT title FROM documents WHERE id = new.document_id), new.content,
					` + ftsTags("new.id", "new.document_id") + `);
			END`,
			`CREATE TRIGGER chunks_fts_after_delete AFTER DELETE ON chunks BEGIN
				DELETE FROM chunks_fts WHERE rowid = old.pk;
			END`,
			`CREATE TRIGGER chunks_fts_after_update AFTER UPDATE OF content, document_id ON chunks BEGIN
				UPDATE chunks_fts
				SET title = (SELECT title FROM documents WHERE id = new.document_id), content = new.content,
					tags = ` + ftsTags("new.id", "new.document_id") + `
				WHERE rowid = old.pk;
			END`,
			`CREATE TRIGGER documents_fts_after_title AFTER UPDATE OF title, tags ON documents BEGIN
				UPDATE chunks_fts SET title = new.title, tags = ` + ftsTags("(SELECT id FROM chunks WHERE pk = chunks_fts.rowid)", "new.id") + `
				WHERE rowid IN (SELECT pk FROM chunks WHERE document_id = new.id);
			END`,
			`CREATE TRIGGER chunk_tags_fts_after_insert AFTER INSERT ON chunk_tags BEGIN
				UPDATE chunks_fts SET tags = ` + ftsTags("new.chunk_id", "(SELECT document_id FROM chunks WHERE id = new.chunk_id)") + `
				WHERE rowid = (SELECT pk FROM chunks WHERE id = new.chunk_id);
			END`,
			`CREATE TRIGGER chunk_tags_fts_after_delete AFTER DELETE ON chunk_tags BEGIN
				UPDATE chunks_fts SET tags = ` + ftsTags("old.chunk_id", "(SELECT document_id FROM chunks WHERE id = old.chunk_id)") + `
				WHERE rowid = (SELECT pk FROM chunks WHERE id = old.chunk_id);
			END`,
		},
		after: backfillEntities,
	},
	{
		version: 3,
		name:    "previous versions of replaced documents",
		statements: []string{
			// A document replaced by memory_store or memory_note keeps its
			// previous text here for keep_versions_days; forgetting the
			// document removes its versions with it.
			`CREATE TABLE document_versions (
				document_id    TEXT NOT NULL REFERENCES documents (id) ON DELETE CASCADE,
				version        INTEGER NOT NULL CHECK (version > 0),
				title          TEXT NOT NULL,
				tags           TEXT NOT NULL,
				content        TEXT NOT NULL,
				content_sha256 TEXT NOT NULL,
				updated_ms     INTEGER NOT NULL,
				replaced_ms    INTEGER NOT NULL,
				PRIMARY KEY (document_id, version)
			) WITHOUT ROWID`,
			`CREATE INDEX document_versions_replaced_ms ON document_versions (replaced_ms)`,
		},
	},
	{
		version: 4,
		name:    "a full-text index over the chunks' text instead of a copy of it",
		statements: []string{
			// The index of migration 2 kept its own copy of every chunk's
			// title, text and tags. It becomes an external-content index
			// over the view chunks_fts_source: the text is stored once, in
			// chunks, and snippets read it from there.
			`DROP TRIGGER chunks_fts_after_insert`,
			`DROP TRIGGER chunks_fts_after_delete`,
			`DROP TRIGGER chunks_fts_after_update`,
			`DROP TRIGGER documents_fts_after_title`,
			`DROP TRIGGER chunk_tags_fts_after_insert`,
			`DROP TRIGGER chunk_tags_fts_after_delete`,
			`DROP TABLE chunks_fts`,
			// Every value the index holds is read from this view, when a row
			// is indexed, when it is removed from the index (FTS5 must be
			// given exactly the values it indexed) and for snippets. Tags
			// are the document's, in their order, then the chunk's own,
			// sorted (by a subquery: group_concat's own ORDER BY would make
			// the schema unreadable to SQLite before 3.44, such as the
			// sqlite3 shell of many systems), so the same rows always give
			// the same text. FTS5 reads
			// the view with statements that may not use virtual tables, so
			// the document's JSON array is walked with json_extract rather
			// than json_each, and only when it is not empty, as it is for
			// every imported file.
			`CREATE VIEW chunks_fts_source (pk, title, content, tags) AS
				SELECT c.pk, d.title, c.content, trim(
					CASE WHEN d.tags = '[]' THEN '' ELSE (
						WITH RECURSIVE t (n, s) AS (
							SELECT 0, ''
							UNION ALL
							SELECT n + 1, s || ' ' || coalesce(json_extract(d.tags, '$[' || n || ']'), '')
							FROM t WHERE n < json_array_length(d.tags)
						) SELECT s FROM t ORDER BY n DESC LIMIT 1
					) END
					|| ' ' ||
					coalesce((SELECT group_concat(tag, ' ') FROM (SELECT ct.tag FROM chunk_tags ct WHERE ct.chunk_id = c.id ORDER BY ct.tag)), ''))
				FROM chunks c JOIN documents d ON d.id = c.document_id`,
			`CREATE VIRTUAL TABLE chunks_fts USING fts5 (
				title,
				content,
				tags,
				content = 'chunks_fts_source',
				content_rowid = 'pk',
				tokenize = 'porter unicode61 remove_diacritics 2'
			)`,
			`INSERT INTO chunks_fts (chunks_fts) VALUES ('rebuild')`,
			// The triggers keep the index in step inside whatever
			// transaction writes, cascading deletes included. A row leaves
			// the index in a BEFORE trigger, while the view still gives
			// what was indexed, and enters it in an AFTER trigger. When a
			// document is deleted its chunks leave the index with it: by
			// the time the cascade deletes them the document row is gone,
			// the view has no row for them, and their own triggers do
			// nothing; the same goes for the tags of a deleted chunk.
			`CREATE TRIGGER chunks_fts_after_insert AFTER INSERT ON chunks BEGIN
				` + ftsIndex("= new.pk") + `
			END`,
			`CREATE TRIGGER chunks_fts_before_delete BEFORE DELETE ON chunks BEGIN
				` + ftsUnindex("= old.pk") + `
			END`,
			`CREATE TRIGGER chunks_fts_before_update BEFORE UPDATE OF pk, id, document_id, content ON chunks BEGIN
				` + ftsUnindex("= old.pk") + `
			END`,
			`CREATE TRIGGER chunks_fts_after_update AFTER UPDATE OF pk, id, document_id, content ON chunks BEGIN
				` + ftsIndex("= new.pk") + `
			END`,
			`CREATE TRIGGER documents_fts_before_delete BEFORE DELETE ON documents BEGIN
				` + ftsUnindex("IN (SELECT pk FROM chunks WHERE document_id = old.id)") + `
			END`,
			`CREATE TRIGGER documents_fts_before_update BEFORE UPDATE OF title, tags ON documents
			WHEN old.title IS NOT new.title OR old.tags IS NOT new.tags BEGIN
				` + ftsUnindex("IN (SELECT pk FROM chunks WHERE document_id = old.id)") + `
			END`,
			`CREATE TRIGGER documents_fts_after_update AFTER UPDATE OF title, tags ON documents
			WHEN old.title IS NOT new.title OR old.tags IS NOT new.tags BEGIN
				` + ftsIndex("IN (SELECT pk FROM chunks WHERE document_id = new.id)") + `
			END`,
			// A tag already set is not inserted again (INSERT OR IGNORE
			// skips it, and no AFTER trigger runs then), so the chunk stays
			// in the index as it is.
			`CREATE TRIGGER chunk_tags_fts_before_insert BEFORE INSERT ON chunk_tags
			WHEN NOT EXISTS (SELECT 1 FROM chunk_tags WHERE chunk_id = new.chunk_id AND tag = new.tag) BEGIN
				` + ftsUnindex("IN (SELECT pk FROM chunks WHERE id = new.chunk_id)") + `
			END`,
			`CREATE TRIGGER chunk_tags_fts_after_insert AFTER INSERT ON chunk_tags BEGIN
				` + ftsIndex("IN (SELECT pk FROM chunks WHERE id = new.chunk_id)") + `
			END`,
			`CREATE TRIGGER chunk_tags_fts_before_delete BEFORE DELETE ON chunk_tags BEGIN
				` + ftsUnindex("IN (SELECT pk FROM chunks WHERE id = old.chunk_id)") + `
			END`,
			`CREATE TRIGGER chunk_tags_fts_after_delete AFTER DELETE ON chunk_tags BEGIN
				` + ftsIndex("IN (SELECT pk FROM chunks WHERE id = old.chunk_id)") + `
			END`,
			`CREATE TRIGGER chunk_tags_fts_before_update BEFORE UPDATE OF chunk_id, tag ON chunk_tags BEGIN
				` + ftsUnindex("IN (SELECT pk FROM chunks WHERE id IN (old.chunk_id, new.chunk_id))") + `
			END`,
			`CREATE TRIGGER chunk_tags_fts_after_update AFTER UPDATE OF chunk_id, tag ON chunk_tags BEGIN
				` + ftsIndex("IN (SELECT pk FROM chunks WHERE id IN (old.chunk_id, new.chunk_id))") + `
			END`,
		},
	},
}

// ftsIndex is the trigger statement that adds to chunks_fts the rows of
// chunks_fts_source whose pk matches cond ("= new.pk", "IN (...)").
func ftsIndex(cond string) string {
	return `INSERT INTO chunks_fts (rowid, title, content, tags)
				SELECT pk, title, content, tags FROM chunks_fts_source WHERE pk ` + cond + `;`
}

// ftsUnindex is the trigger statement that removes from chunks_fts the
// rows of chunks_fts_source whose pk matches cond, with FTS5's 'delete'
// command: an external-content index must be given the values it indexed,
// which the view still gives before the change.
func ftsUnindex(cond string) string {
	return `INSERT INTO chunks_fts (chunks_fts, rowid, title, content, tags)
				SELECT 'delete', pk, title, content, tags FROM chunks_fts_source WHERE pk ` + cond + `;`
}

// ftsTags is the SQL expression for a chunk's tags column in the chunks_fts
// of migrations 2 and 3: its document's tags and its own, space-separated.
// chunkID and docID are SQL expressions. Migration 4's view computes the
// same.
func ftsTags(chunkID, docID string) string {
	return `trim(
		coalesce((SELECT group_concat(j.value, ' ') FROM documents dt, json_each(dt.tags) j WHERE dt.id = ` + docID + `), '')
		|| ' ' ||
		coalesce((SELECT group_concat(ct.tag, ' ') FROM chunk_tags ct WHERE ct.chunk_id = ` + chunkID + `), ''))`
}

// schemaVersion is the version this code writes and reads.
func schemaVersion() int { return migrations[len(migrations)-1].version }

// migrate applies the migrations the database has not seen, inside tx, an
// immediate write transaction, so concurrent openers apply each step
// exactly once and a failed step leaves the schema as it was. It returns
// the steps it applied.
func migrate(tx *gorm.DB, env migrationEnv) ([]migration, error) {
	return migrateSteps(tx, env, migrations)
}

// migrateSteps applies the steps of list the database has not seen; tests
// use it to build a database of an older schema.
func migrateSteps(tx *gorm.DB, env migrationEnv, list []migration) ([]migration, error) {
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
	if current > list[len(list)-1].version {
		return nil, fmt.Errorf("memory.db has schema version %d but this binary knows only up to %d; upgrade openhuman-host", current, list[len(list)-1].version)
	}
	var applied []migration
	for _, m := range list {
		if m.version <= current {
			continue
		}
		for _, stmt := range m.statements {
			if err := tx.Exec(stmt).Error; err != nil {
				return nil, fmt.Errorf("apply migration %d (%s): %w", m.version, m.name, err)
			}
		}
		if m.after != nil {
			if err := m.after(tx, env); err != nil {
				return nil, fmt.Errorf("apply migration %d (%s): %w", m.version, m.name, err)
			}
		}
		err := tx.Exec(`INSERT INTO schema_migrations (version, name, applied_ms) VALUES (?, ?, ?)`,
			m.version, m.name, env.nowMS).Error
		if err != nil {
			return nil, fmt.Errorf("record migration %d: %w", m.version, err)
		}
		applied = append(applied, m)
	}
	return applied, nil
}
