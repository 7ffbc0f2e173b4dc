//go:build !sqlite_fts5 && !fts5

package memory

// fts5Compiled reports whether the linked SQLite includes FTS5. The build
// constraint mirrors the one github.com/mattn/go-sqlite3 uses to enable it.
const fts5Compiled = false
