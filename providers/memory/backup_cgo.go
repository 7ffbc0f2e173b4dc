//go:build cgo

package memory

import (
	"context"
	"fmt"
	"time"

	"github.com/mattn/go-sqlite3"
)

// copyDatabase copies src's main database into dst's in one step, which
// reads it in a single transaction, so the copy is consistent however
// other connections write meanwhile; while the source is locked it tries
// again until ctx ends.
func copyDatabase(ctx context.Context, dst, src *sqlite3.SQLiteConn) error {
	b, err := dst.Backup("main", src, "main")
	if err != nil {
		return fmt.Errorf("start the backup: %w", err)
	}
	for {
		if err := ctx.Err(); err != nil {
			_ = b.Finish()
			return err
		}
		done, err := b.Step(-1)
		if err != nil {
			_ = b.Finish()
			return fmt.Errorf("copy the pages: %w", err)
		}
		if done {
			break
		}
		select {
		case <-ctx.Done():
		case <-time.After(backupRetry):
		}
	}
	if err := b.Finish(); err != nil {
		return fmt.Errorf("finish the backup: %w", err)
	}
	return nil
}
