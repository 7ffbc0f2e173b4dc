package memory

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/openhuman/openhuman-host/sdk/testwait"
)

func TestBackupCopiesEverything(t *testing.T) {
	t.Parallel()
	sqliteOnly(t)
	f := newExportFixture(t)
	before := dumpAll(t, filepath.Join(f.dir, dbFileName))
	dir := t.TempDir()
	path := filepath.Join(dir, dbFileName)
	if err := f.p.Backup(context.Background(), path); err != nil {
		t.Fatalf("Backup: %v", err)
	}
	info, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if runtime.GOOS != "windows" && info.Mode().Perm() != 0o600 {
		t.Errorf("the backup has mode %v, want 0600", info.Mode().Perm())
	}
	// One self-contained file: nothing beside it.
	if m, _ := filepath.Glob(path + "-*"); len(m) > 0 {
		t.Errorf("files beside the backup: %v", m)
	}
	if d := diff(before, dumpAll(t, path)); d != "" {
		t.Errorf("backup (-original +backup):\n%s", d)
	}
	// It opens as a memory database with the same counts.
	want, err := f.p.Stats(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	q := openProvider(t, dir, nil)
	got, err := q.Stats(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	got.Path, got.DBBytes, want.Path, want.DBBytes = "", 0, "", 0
	if d := diff(want, got); d != "" {
		t.Errorf("Stats of the backup (-original +backup):\n%s", d)
	}

	// Never over an existing file.
	if err := f.p.Backup(context.Background(), path); err == nil || !strings.Contains(err.Error(), "exists; backup never overwrites a file") {
		t.Errorf("Backup over an existing file = %v", err)
	}
	if err := f.p.Backup(context.Background(), filepath.Join(t.TempDir(), "missing", "x.db")); err == nil {
		t.Error("Backup into a missing folder succeeded")
	}
}

// TestBackupWhileWriting backs up while another goroutine stores
// documents: the backup is the database as of one moment, every document
// whole and the full-text index in step.
func TestBackupWhileWriting(t *testing.T) {
	t.Parallel()
	sqliteOnly(t)
	p, _ := newProvider(t)
	ctx := context.Background()
	for i := range 20 {
		put(t, p, map[string]any{"title": fmt.Sprintf("Seed %d", i), "content": strings.Repeat(fmt.Sprintf("seed %d text. ", i), 300)})
	}
	seed, err := p.Stats(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var stop, ended atomic.Bool
	var wg sync.WaitGroup
	var stored atomic.Int64
	wg.Add(1)
	go func() {
		defer wg.Done()
		defer ended.Store(true)
		for i := 0; !stop.Load(); i++ {
			_, err := p.store.putDocument(ctx, document{SourceID: "mcp:mcp", SourceKind: SourceKindNote, SourceName: "w", Namespace: "mcp",
				Key: fmt.Sprintf("w-%d", i), Title: fmt.Sprintf("Written %d", i), Tags: []string{"w"},
				Pieces: []string{fmt.Sprintf("part one of %d. ", i), fmt.Sprintf("part two of %d.", i)}})
			if err != nil {
				t.Errorf("write %d: %v", i, err)
				return
			}
			stored.Add(1)
		}
	}()
	// The backup starts while the writes go on. The writer ends before
	// it only on an error, which it has reported.
	testwait.Until(t, "the first concurrent writes", func() bool { return stored.Load() >= 3 || ended.Load() })
	dir := t.TempDir()
	err = p.Backup(ctx, filepath.Join(dir, dbFileName))
	stop.Store(true)
	wg.Wait()
	if err != nil {
		t.Fatalf("Backup while writing: %v", err)
	}
	q := openProvider(t, dir, nil)
	st, err := q.Stats(ctx)
	if err != nil {
		t.Fatal(err)
	}
	written := st.Documents - seed.Documents
	if written < 0 || written > stored.Load() || st.Chunks != seed.Chunks+2*written {
		t.Errorf("backup holds %d documents and %d chunks; want the %d seeds' %d chunks and 0..%d written documents of 2",
			st.Documents, st.Chunks, seed.Documents, seed.Chunks, stored.Load())
	}
	var check string
	if err := q.store.db.Raw(`PRAGMA integrity_check`).Scan(&check).Error; err != nil || check != "ok" {
		t.Errorf("integrity_check of the backup = %q, %v", check, err)
	}
	checkIndexInStep(t, q)
	t.Logf("backup taken after %d of %d concurrent writes", written, stored.Load())
}
