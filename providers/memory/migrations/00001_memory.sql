-- The memory provider's tables on PostgreSQL ([storage] driver =
-- "postgres"): the same rows as schema version 4 of memory.db, with a
-- tsvector column and a GIN index in place of the FTS5 index.
--
-- Foreign keys are DEFERRABLE (INITIALLY IMMEDIATE) so that an import of
-- an export may defer them to its commit, as it does with SQLite's
-- defer_foreign_keys.

-- +goose Up
CREATE TABLE sources (
	id           TEXT PRIMARY KEY,
	kind         TEXT NOT NULL CHECK (kind IN ('chat', 'email', 'document', 'note')),
	display_name TEXT NOT NULL,
	created_ms   BIGINT NOT NULL,
	updated_ms   BIGINT NOT NULL
);

CREATE TABLE documents (
	id             TEXT PRIMARY KEY,
	source_id      TEXT NOT NULL REFERENCES sources (id) ON DELETE CASCADE DEFERRABLE,
	namespace      TEXT NOT NULL,
	key            TEXT NOT NULL,
	title          TEXT NOT NULL,
	tags           TEXT NOT NULL DEFAULT '[]',
	note_chunk_id  TEXT,
	content_sha256 TEXT NOT NULL DEFAULT '',
	created_ms     BIGINT NOT NULL,
	updated_ms     BIGINT NOT NULL,
	UNIQUE (namespace, key)
);
CREATE INDEX documents_source_id ON documents (source_id);
CREATE INDEX documents_note_chunk_id ON documents (note_chunk_id) WHERE note_chunk_id IS NOT NULL;

-- pk is numbered by the writer (the largest in use plus one), which holds
-- the memory write lock; tsv is the chunk's full-text vector and tokens
-- its length in words, kept by the triggers below.
CREATE TABLE chunks (
	pk          BIGINT PRIMARY KEY,
	id          TEXT NOT NULL UNIQUE,
	document_id TEXT NOT NULL REFERENCES documents (id) ON DELETE CASCADE DEFERRABLE,
	seq         INTEGER NOT NULL CHECK (seq >= 0),
	content     TEXT NOT NULL,
	created_ms  BIGINT NOT NULL,
	updated_ms  BIGINT NOT NULL,
	tsv         TSVECTOR NOT NULL DEFAULT ''::tsvector,
	tokens      INTEGER NOT NULL DEFAULT 0,
	UNIQUE (document_id, seq)
);
CREATE INDEX chunks_updated_ms ON chunks (updated_ms, pk);
CREATE INDEX chunks_tsv ON chunks USING GIN (tsv);

ALTER TABLE documents ADD CONSTRAINT documents_note_chunk_id_fkey
	FOREIGN KEY (note_chunk_id) REFERENCES chunks (id) ON DELETE SET NULL DEFERRABLE;

CREATE TABLE chunk_tags (
	chunk_id TEXT NOT NULL REFERENCES chunks (id) ON DELETE CASCADE DEFERRABLE,
	tag      TEXT NOT NULL,
	position INTEGER NOT NULL,
	PRIMARY KEY (chunk_id, tag)
);
CREATE INDEX chunk_tags_tag ON chunk_tags (tag);

CREATE TABLE entities (
	id            TEXT PRIMARY KEY,
	kind          TEXT NOT NULL,
	surface       TEXT NOT NULL,
	mention_count BIGINT NOT NULL DEFAULT 0,
	chunk_count   BIGINT NOT NULL DEFAULT 0,
	first_seen_ms BIGINT NOT NULL,
	last_seen_ms  BIGINT NOT NULL
);
CREATE INDEX entities_rank ON entities (mention_count DESC, last_seen_ms DESC);
CREATE INDEX entities_kind_rank ON entities (kind, mention_count DESC, last_seen_ms DESC);

CREATE TABLE chunk_entities (
	chunk_pk  BIGINT NOT NULL REFERENCES chunks (pk) ON DELETE CASCADE DEFERRABLE,
	entity_id TEXT NOT NULL REFERENCES entities (id) DEFERRABLE,
	count     INTEGER NOT NULL CHECK (count > 0),
	PRIMARY KEY (chunk_pk, entity_id)
);
CREATE INDEX chunk_entities_entity ON chunk_entities (entity_id, chunk_pk);

CREATE TABLE chunk_embeddings (
	chunk_pk   BIGINT PRIMARY KEY REFERENCES chunks (pk) ON DELETE CASCADE DEFERRABLE,
	model      TEXT NOT NULL,
	dims       INTEGER NOT NULL CHECK (dims > 0),
	vector     BYTEA NOT NULL,
	created_ms BIGINT NOT NULL
);
CREATE INDEX chunk_embeddings_model ON chunk_embeddings (model, dims);

CREATE TABLE document_versions (
	document_id    TEXT NOT NULL REFERENCES documents (id) ON DELETE CASCADE DEFERRABLE,
	version        INTEGER NOT NULL CHECK (version > 0),
	title          TEXT NOT NULL,
	tags           TEXT NOT NULL,
	content        TEXT NOT NULL,
	content_sha256 TEXT NOT NULL,
	updated_ms     BIGINT NOT NULL,
	replaced_ms    BIGINT NOT NULL,
	PRIMARY KEY (document_id, version)
);
CREATE INDEX document_versions_replaced_ms ON document_versions (replaced_ms);

-- memory_state counts the changes to what the full-text index holds, so
-- that every replica knows when the word counts it keeps are out of date,
-- and the chunks with their words, which BM25 needs.
CREATE TABLE memory_state (
	id      INTEGER PRIMARY KEY CHECK (id = 1),
	version BIGINT NOT NULL,
	chunks  BIGINT NOT NULL,
	tokens  BIGINT NOT NULL
);
INSERT INTO memory_state (id, version, chunks, tokens) VALUES (1, 0, 0, 0);

-- +goose StatementBegin
CREATE FUNCTION memory_entities_count() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
	IF TG_OP = 'INSERT' THEN
		UPDATE entities SET mention_count = mention_count + NEW.count, chunk_count = chunk_count + 1
		WHERE id = NEW.entity_id;
	ELSE
		UPDATE entities SET mention_count = mention_count - OLD.count, chunk_count = chunk_count - 1
		WHERE id = OLD.entity_id;
	END IF;
	RETURN NULL;
END
$$;
-- +goose StatementEnd
CREATE TRIGGER chunk_entities_count AFTER INSERT OR DELETE ON chunk_entities
	FOR EACH ROW EXECUTE FUNCTION memory_entities_count();

-- The text search configuration memory_text reads text as SQLite's
-- 'porter unicode61 remove_diacritics 2' tokenizer does, as far as
-- PostgreSQL allows: words are stemmed with the Snowball English stemmer
-- (Porter's successor), no word is dropped as a stop word, and accents are
-- removed with the unaccent extension where the server has it. Without it
-- (a server without the contrib modules), accented and plain spellings are
-- different words.
-- +goose StatementBegin
DO $$
DECLARE
	unaccent_schema TEXT;
BEGIN
	BEGIN
		CREATE EXTENSION IF NOT EXISTS unaccent;
	EXCEPTION WHEN OTHERS THEN
		RAISE NOTICE 'memory: the unaccent extension is not available (%); accents are kept', SQLERRM;
	END;
	CREATE TEXT SEARCH DICTIONARY memory_english_stem (TEMPLATE = snowball, language = english);
	CREATE TEXT SEARCH CONFIGURATION memory_text (COPY = simple);
	SELECT n.nspname INTO unaccent_schema FROM pg_extension e JOIN pg_namespace n ON n.oid = e.extnamespace
	WHERE e.extname = 'unaccent';
	IF unaccent_schema IS NOT NULL THEN
		EXECUTE format('ALTER TEXT SEARCH CONFIGURATION memory_text ALTER MAPPING FOR asciiword, word, numword, '
			'asciihword, hword, numhword, hword_asciipart, hword_part, hword_numpart WITH %I.unaccent, memory_english_stem',
			unaccent_schema);
	ELSE
		ALTER TEXT SEARCH CONFIGURATION memory_text ALTER MAPPING FOR asciiword, word, numword,
			asciihword, hword, numhword, hword_asciipart, hword_part, hword_numpart WITH memory_english_stem;
	END IF;
END
$$;
-- +goose StatementEnd

-- memory_fts_text turns ASCII punctuation into spaces before PostgreSQL's
-- parser reads the text, so that ana@example.com or a-b are the separate
-- words unicode61 makes of them, not an e-mail address or a hyphenated
-- word.
-- +goose StatementBegin
CREATE FUNCTION memory_fts_text(t TEXT) RETURNS TEXT LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
	SELECT translate(t, '!"#$%&''()*+,-./:;<=>?@[\]^_`{|}~', repeat(' ', 32))
$$;
-- +goose StatementEnd

-- memory_chunk_tsv is a chunk's vector: its document's title (weight A),
-- the document's tags in order then the chunk's own, sorted (weight B),
-- and its text (weight D).
-- +goose StatementBegin
CREATE FUNCTION memory_chunk_tsv(p_document_id TEXT, p_chunk_id TEXT, p_content TEXT) RETURNS tsvector
LANGUAGE sql STABLE AS $$
	SELECT coalesce((
		SELECT setweight(to_tsvector('memory_text', memory_fts_text(d.title)), 'A')
			|| setweight(to_tsvector('memory_text', memory_fts_text(
				coalesce((SELECT string_agg(j.v, ' ') FROM jsonb_array_elements_text(d.tags::jsonb) AS j (v)), '')
				|| ' ' ||
				coalesce((SELECT string_agg(ct.tag, ' ' ORDER BY ct.tag) FROM chunk_tags ct WHERE ct.chunk_id = p_chunk_id), ''))), 'B')
			|| to_tsvector('memory_text', memory_fts_text(p_content))
		FROM documents d WHERE d.id = p_document_id),
		to_tsvector('memory_text', memory_fts_text(p_content)))
$$;
-- +goose StatementEnd

-- memory_tsv_tokens is the number of words a vector was made of.
-- +goose StatementBegin
CREATE FUNCTION memory_tsv_tokens(v tsvector) RETURNS INTEGER LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
	SELECT coalesce(sum(coalesce(array_length(u.positions, 1), 1)), 0)::integer FROM unnest(v) AS u
$$;
-- +goose StatementEnd

-- A chunk's vector is made when it is inserted or its text changes, and
-- again when the triggers below set it after a change to its title or
-- tags; its word count follows its vector.
-- +goose StatementBegin
CREATE FUNCTION memory_chunks_tsv() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
	IF TG_OP = 'INSERT' OR NEW.id IS DISTINCT FROM OLD.id OR NEW.document_id IS DISTINCT FROM OLD.document_id
		OR NEW.content IS DISTINCT FROM OLD.content THEN
		NEW.tsv := memory_chunk_tsv(NEW.document_id, NEW.id, NEW.content);
	END IF;
	NEW.tokens := memory_tsv_tokens(NEW.tsv);
	RETURN NEW;
END
$$;
-- +goose StatementEnd
CREATE TRIGGER chunks_tsv BEFORE INSERT OR UPDATE ON chunks
	FOR EACH ROW EXECUTE FUNCTION memory_chunks_tsv();

-- +goose StatementBegin
CREATE FUNCTION memory_documents_tsv() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
	UPDATE chunks c SET tsv = memory_chunk_tsv(c.document_id, c.id, c.content) WHERE c.document_id = NEW.id;
	RETURN NULL;
END
$$;
-- +goose StatementEnd
CREATE TRIGGER documents_tsv AFTER UPDATE OF title, tags ON documents
	FOR EACH ROW WHEN (OLD.title IS DISTINCT FROM NEW.title OR OLD.tags IS DISTINCT FROM NEW.tags)
	EXECUTE FUNCTION memory_documents_tsv();

-- +goose StatementBegin
CREATE FUNCTION memory_chunk_tags_tsv() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
	IF TG_OP IN ('INSERT', 'UPDATE') THEN
		UPDATE chunks c SET tsv = memory_chunk_tsv(c.document_id, c.id, c.content) WHERE c.id = NEW.chunk_id;
	END IF;
	IF TG_OP IN ('DELETE', 'UPDATE') THEN
		UPDATE chunks c SET tsv = memory_chunk_tsv(c.document_id, c.id, c.content) WHERE c.id = OLD.chunk_id;
	END IF;
	RETURN NULL;
END
$$;
-- +goose StatementEnd
CREATE TRIGGER chunk_tags_tsv AFTER INSERT OR UPDATE OR DELETE ON chunk_tags
	FOR EACH ROW EXECUTE FUNCTION memory_chunk_tags_tsv();

-- +goose StatementBegin
CREATE FUNCTION memory_state_insert() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
	UPDATE memory_state SET version = version + 1,
		chunks = chunks + (SELECT count(*) FROM new_rows),
		tokens = tokens + (SELECT coalesce(sum(tokens), 0) FROM new_rows)
	WHERE id = 1;
	RETURN NULL;
END
$$;
-- +goose StatementEnd
CREATE TRIGGER chunks_state_insert AFTER INSERT ON chunks REFERENCING NEW TABLE AS new_rows
	FOR EACH STATEMENT EXECUTE FUNCTION memory_state_insert();

-- +goose StatementBegin
CREATE FUNCTION memory_state_delete() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
	UPDATE memory_state SET version = version + 1,
		chunks = chunks - (SELECT count(*) FROM old_rows),
		tokens = tokens - (SELECT coalesce(sum(tokens), 0) FROM old_rows)
	WHERE id = 1;
	RETURN NULL;
END
$$;
-- +goose StatementEnd
CREATE TRIGGER chunks_state_delete AFTER DELETE ON chunks REFERENCING OLD TABLE AS old_rows
	FOR EACH STATEMENT EXECUTE FUNCTION memory_state_delete();

-- +goose StatementBegin
CREATE FUNCTION memory_state_update() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
	UPDATE memory_state SET version = version + 1,
		tokens = tokens + (SELECT coalesce(sum(tokens), 0) FROM new_rows) - (SELECT coalesce(sum(tokens), 0) FROM old_rows)
	WHERE id = 1;
	RETURN NULL;
END
$$;
-- +goose StatementEnd
CREATE TRIGGER chunks_state_update AFTER UPDATE ON chunks REFERENCING NEW TABLE AS new_rows OLD TABLE AS old_rows
	FOR EACH STATEMENT EXECUTE FUNCTION memory_state_update();

-- +goose StatementBegin
CREATE FUNCTION memory_state_truncate() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
	UPDATE memory_state SET version = version + 1, chunks = 0, tokens = 0 WHERE id = 1;
	RETURN NULL;
END
$$;
-- +goose StatementEnd
CREATE TRIGGER chunks_state_truncate AFTER TRUNCATE ON chunks
	FOR EACH STATEMENT EXECUTE FUNCTION memory_state_truncate();

-- +goose Down
DROP TABLE IF EXISTS memory_state, document_versions, chunk_embeddings, chunk_entities, entities, chunk_tags CASCADE;
ALTER TABLE IF EXISTS documents DROP CONSTRAINT IF EXISTS documents_note_chunk_id_fkey;
DROP TABLE IF EXISTS chunks, documents, sources CASCADE;
DROP FUNCTION IF EXISTS memory_state_insert(), memory_state_delete(), memory_state_update(), memory_state_truncate(),
	memory_chunk_tags_tsv(), memory_documents_tsv(), memory_chunks_tsv(), memory_tsv_tokens(tsvector),
	memory_chunk_tsv(TEXT, TEXT, TEXT), memory_fts_text(TEXT), memory_entities_count();
DROP TEXT SEARCH CONFIGURATION IF EXISTS memory_text;
DROP TEXT SEARCH DICTIONARY IF EXISTS memory_english_stem;
