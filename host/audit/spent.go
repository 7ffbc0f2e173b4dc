package audit

import (
	"context"
	"fmt"
	"time"

	"gorm.io/gorm"
)

// SpentTable is the table of spent single-use states.
const SpentTable = "mcp_spent_states"

// SpentState is one single-use state that was used (a multi-round-trip
// requestState of MCP 2026-07-28, SEP-2322), kept until it expires so
// that it cannot be used again: not after a restart, and not by another
// process that shares the database.
type SpentState struct {
	// Nonce is the state's random identifier, at most 64 bytes.
	Nonce string `gorm:"primaryKey;size:64"`
	// ExpiresMs is when the state expires, Unix milliseconds; the row is
	// deleted after it.
	ExpiresMs int64 `gorm:"index;not null"`
}

// TableName is [SpentTable].
func (SpentState) TableName() string { return SpentTable }

// Spend records nonce as used until expiresMs (Unix milliseconds) and
// reports whether it was not used before. It writes at once, in one
// transaction that also deletes the expired rows, so two processes that
// share the database never both see a nonce as fresh. An error (the
// database cannot be written) means the caller must refuse the state.
func (l *Log) Spend(ctx context.Context, nonce string, expiresMs int64) (bool, error) {
	if err := l.usable(); err != nil {
		return false, err
	}
	if err := l.isOpen(); err != nil {
		return false, fmt.Errorf("audit: record a used state: %w", err)
	}
	if nonce == "" || len(nonce) > 64 {
		return false, fmt.Errorf("audit: record a used state: nonce of %d bytes, want 1 to 64", len(nonce))
	}
	var inserted int64
	err := l.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		if err := tx.Exec("DELETE FROM "+SpentTable+" WHERE expires_ms < ?", time.Now().UnixMilli()).Error; err != nil {
			return err
		}
		res := tx.Exec("INSERT INTO "+SpentTable+" (nonce, expires_ms) VALUES (?, ?) ON CONFLICT (nonce) DO NOTHING", nonce, expiresMs)
		inserted = res.RowsAffected
		return res.Error
	})
	if err != nil {
		return false, fmt.Errorf("audit: record a used state: %w", err)
	}
	return inserted == 1, nil
}
