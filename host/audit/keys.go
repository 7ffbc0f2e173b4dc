package audit

import (
	"context"
	"fmt"
)

// KeyTable is the table of keys shared by every process that uses the
// database.
const KeyTable = "mcp_shared_keys"

// SharedKey is one row of [KeyTable].
type SharedKey struct {
	// Name says what the key is for, at most 64 bytes.
	Name string `gorm:"primaryKey;size:64"`
	// Key is the key's bytes.
	Key []byte `gorm:"not null"`
}

// TableName is [KeyTable].
func (SharedKey) TableName() string { return KeyTable }

// SharedKey returns the key stored under name, storing candidate first when
// there is none, so that every process sharing the database (replicas on
// one PostgreSQL) ends up with the same key whichever wrote first. The host
// keeps the key that seals multi-round-trip requestStates (MCP 2026-07-28,
// SEP-2322) here on PostgreSQL, so any replica can open a state another
// sealed. Anyone who can read the database can read the key: give its role
// to the host only. It fails when the database cannot be read or written,
// or when candidate is shorter than 32 bytes.
func (l *Log) SharedKey(ctx context.Context, name string, candidate []byte) ([]byte, error) {
	if err := l.usable(); err != nil {
		return nil, err
	}
	if err := l.isOpen(); err != nil {
		return nil, fmt.Errorf("audit: read the shared key %s: %w", name, err)
	}
	switch {
	case name == "" || len(name) > 64:
		return nil, fmt.Errorf("audit: read the shared key: name of %d bytes, want 1 to 64", len(name))
	case len(candidate) < 32:
		return nil, fmt.Errorf("audit: store the shared key %s: %d bytes, want at least 32", name, len(candidate))
	}
	db := l.db.WithContext(ctx)
	if err := db.Exec("INSERT INTO "+KeyTable+" (name, key) VALUES (?, ?) ON CONFLICT (name) DO NOTHING", name, candidate).Error; err != nil {
		return nil, fmt.Errorf("audit: store the shared key %s: %w", name, err)
	}
	var key []byte
	if err := db.Raw("SELECT key FROM "+KeyTable+" WHERE name = ?", name).Row().Scan(&key); err != nil {
		return nil, fmt.Errorf("audit: read the shared key %s: %w", name, err)
	}
	if len(key) < 32 {
		return nil, fmt.Errorf("audit: the shared key %s in the database has %d bytes, want at least 32: delete its row and restart every replica", name, len(key))
	}
	return key, nil
}
