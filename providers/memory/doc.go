// Package memory is the memory provider: long-term storage that MCP clients
// and sub-agents write to with memory_store, memory_note and tree_tag,
// delete from with memory_forget, and read back with memory_search,
// memory_recall, tree_read_chunk, memory_history, tree_browse,
// tree_top_entities and tree_list_sources. Scopes limit each client to
// namespaces.
//
// Memory lives in one SQLite database, memory.db in the provider's data
// directory, opened through gorm in WAL mode with a busy timeout and
// immediate write transactions, so a running server and one-shot commands
// (tools call, memory import) can share it. The model is a tree: a source
// (mcp:<namespace>, file:<folder>) holds documents (namespace, key, title,
// tags), and a document holds ordered chunks of about 512 tokens whose ids
// are content hashes. Each chunk has its own tags, its entities (found by
// [Extractor]s and counted per chunk), the notes written about it, and an
// embedding when an embeddings endpoint is configured.
//
// Every chunk is indexed in an FTS5 table (title, body and tags; the porter
// stemmer over unicode61 with diacritics removed) that triggers keep in
// step inside the writing transaction, so what a write stores is
// searchable as soon as the call returns. The index stores no copy of the
// text: it reads the chunks' own, through a view, for snippets. memory_search ranks with BM25,
// the title weighted above the tags above the body, and treats the query as
// plain words that must all match: FTS5 syntax in user input is never
// interpreted. memory_recall fuses cosine similarity over embeddings with
// BM25 (reciprocal rank fusion), or ranks by any of the question's words
// when no embedder is configured, and says which it did.
//
// The schema is created and upgraded by numbered migrations recorded in the
// schema_migrations table. FTS5 requires the sqlite_fts5 build tag; a binary
// built without it refuses to configure the provider with a message that says
// how to rebuild.
//
// With the host's [storage] driver = "postgres", memory lives instead in the
// PostgreSQL database that every replica of the host shares (the host passes
// the connection string as the secret [SecretStorageDSN]): the same tables,
// created by the numbered SQL migrations of [Migrations] under PostgreSQL's
// migration lock, a tsvector column with a GIN index in place of the FTS5
// index, kept by triggers, and the same BM25 ranking, whose per-term counts
// come from ts_rank_cd. Write transactions take an advisory lock first, so
// replicas write one at a time.
package memory
