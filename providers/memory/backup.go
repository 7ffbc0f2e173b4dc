package memory

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"time"

	"github.com/mattn/go-sqlite3"

	"github.com/openhuman/openhuman-host/sdk/storage/sqliteuri"
)

// backupRetry is how long Backup waits before trying again when the
// database is locked.
const backupRetry = 50 * time.Millisecond

// Backup writes a consistent copy of the memory database to path with
// SQLite's online backup API, while a server may go on writing: the copy
// is the database as of one moment, taken in a single read transaction
// (writers do not wait for it in WAL mode). The copy is one
// self-contained file (rollback journal mode, no -wal file needed),
// created with mode 0600, that passed SQLite's quick_check; the provider
// opens it as memory.db (it switches it back to WAL mode then).
//
// Backup refuses to overwrite: it fails when path, or a -journal, -wal or
// -shm file beside it, exists. Its folder must exist. On any failure,
// including ctx ending before the copy started, what it wrote is removed.
// It fails when the provider is not configured.
func (p *Provider) Backup(ctx context.Context, path string) (err error) {
	st, err := p.configuredStore()
	if err != nil {
		return err
	}
	if st.postgres {
		return ErrBackupPostgres
	}
	if _, err := os.Lstat(path); err == nil {
		return fmt.Errorf("memory backup: %s exists; backup never overwrites a file, choose another name", path)
	}
	for _, suffix := range []string{"-journal", "-wal", "-shm"} {
		if _, err := os.Lstat(path + suffix); err == nil {
			return fmt.Errorf("memory backup: %s exists; remove it or choose another file name", path+suffix)
		}
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if errors.Is(err, fs.ErrExist) {
		return fmt.Errorf("memory backup: %s exists; backup never overwrites a file, choose another name", path)
	}
	if err != nil {
		return fmt.Errorf("memory backup: create %s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("memory backup: create %s: %w", path, err)
	}
	defer func() {
		if err != nil {
			for _, suffix := range []string{"", "-journal", "-wal", "-shm"} {
				_ = os.Remove(path + suffix)
			}
		}
	}()
	if err := backupTo(ctx, st.path, path); err != nil {
		return fmt.Errorf("memory backup to %s: %w", path, err)
	}
	if info, err := os.Stat(path); err == nil {
		p.logger.Info("backed up memory database", "path", path, "bytes", info.Size())
	}
	return nil
}

// backupTo copies the database at srcPath into the empty file dstPath,
// switches the copy to rollback journal mode and checks it.
func backupTo(ctx context.Context, srcPath, dstPath string) error {
	src, err := sql.Open("sqlite3", sqliteuri.File(srcPath, fmt.Sprintf("mode=ro&_busy_timeout=%d", busyTimeoutMS)))
	if err != nil {
		return fmt.Errorf("open %s: %w", srcPath, err)
	}
	defer src.Close()
	dst, err := sql.Open("sqlite3", sqliteuri.File(dstPath, fmt.Sprintf("_busy_timeout=%d", busyTimeoutMS)))
	if err != nil {
		return fmt.Errorf("open the copy: %w", err)
	}
	defer dst.Close()
	srcConn, err := src.Conn(ctx)
	if err != nil {
		return fmt.Errorf("open %s: %w", srcPath, err)
	}
	defer srcConn.Close()
	dstConn, err := dst.Conn(ctx)
	if err != nil {
		return fmt.Errorf("open the copy: %w", err)
	}
	defer dstConn.Close()
	err = dstConn.Raw(func(dc any) error {
		return srcConn.Raw(func(sc any) error {
			d, ok1 := dc.(*sqlite3.SQLiteConn)
			s, ok2 := sc.(*sqlite3.SQLiteConn)
			if !ok1 || !ok2 {
				return fmt.Errorf("the SQLite driver is %T, not github.com/mattn/go-sqlite3", dc)
			}
			return copyDatabase(ctx, d, s)
		})
	})
	if err != nil {
		return err
	}
	// The pages copied say WAL mode, as the source is in it; a backup is
	// one self-contained file instead.
	var mode string
	if err := dstConn.QueryRowContext(ctx, `PRAGMA journal_mode = DELETE`).Scan(&mode); err != nil {
		return fmt.Errorf("switch the copy to rollback journal mode: %w", err)
	}
	var check string
	if err := dstConn.QueryRowContext(ctx, `PRAGMA quick_check(1)`).Scan(&check); err != nil {
		return fmt.Errorf("check the copy: %w", err)
	}
	if check != "ok" {
		return fmt.Errorf("the copy fails SQLite's quick_check: %s", check)
	}
	return nil
}
