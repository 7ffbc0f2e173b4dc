// Package memory is the memory provider: long-term storage that MCP clients
// and sub-agents write to with memory.store and read back with memory.search
// and tree.read_chunk.
//
// Memory lives in one SQLite database, memory.db in the provider's data
// directory, opened through gorm in WAL mode with a busy timeout and
// immediate write transactions, so a running server and a one-shot CLI
// command can share it. The model is a tree: a source (such as mcp:<namespace>)
// holds documents (namespace, key, title, tags), and a document holds ordered
// chunks of about 512 tokens whose ids are content hashes. Every chunk is
// indexed in an FTS5 table (title, body and tags; the porter stemmer over
// unicode61 with diacritics removed) that triggers keep in step with the chunks table inside the
// writing transaction, so what memory.store writes is searchable as soon as
// the call returns. memory.search ranks with BM25, weighting the title above
// the body, and treats the query as plain words that must all match: FTS5
// syntax in user input is never interpreted.
//
// The schema is created and upgraded by numbered migrations recorded in the
// schema_migrations table. FTS5 requires the sqlite_fts5 build tag; a binary
// built without it refuses to configure the provider with a message that says
// how to rebuild.
package memory
