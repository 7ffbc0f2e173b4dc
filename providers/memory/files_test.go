package memory

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/openhuman/openhuman-host/sdk"
)

func TestMemoryFilesArePrivate(t *testing.T) {
	t.Parallel()
	sqliteOnly(t)
	if runtime.GOOS == "windows" {
		t.Skip("Windows has no Unix file modes")
	}
	for name, existing := range map[string]bool{"new database": false, "database made world-readable": true} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			dir := filepath.Join(t.TempDir(), "memory")
			if existing {
				p := openProvider(t, dir, nil)
				call[storeResult](t, p, ToolStore, map[string]any{"title": "t", "content": "private note"})
				if err := p.Close(); err != nil {
					t.Fatal(err)
				}
				if err := os.Chmod(filepath.Join(dir, dbFileName), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			p := openProvider(t, dir, nil)
			call[storeResult](t, p, ToolStore, map[string]any{"title": "u", "content": "another private note"})
			modes := map[string]fs.FileMode{}
			for _, n := range []string{".", dbFileName, dbFileName + "-wal", dbFileName + "-shm"} {
				info, err := os.Stat(filepath.Join(dir, n))
				if err != nil {
					t.Fatal(err)
				}
				modes[n] = info.Mode().Perm()
			}
			want := map[string]fs.FileMode{".": 0o700, dbFileName: 0o600, dbFileName + "-wal": 0o600, dbFileName + "-shm": 0o600}
			if d := diff(want, modes); d != "" {
				t.Errorf("modes (-want +got):\n%s", d)
			}
		})
	}
}

func TestMemoryDamagedDatabaseIsRefused(t *testing.T) {
	t.Parallel()
	sqliteOnly(t)
	requireFTS5(t)
	tests := map[string]func(t *testing.T, path string){
		"not a database": func(t *testing.T, path string) {
			if err := os.WriteFile(path, bytes.Repeat([]byte("not a database "), 1000), 0o600); err != nil {
				t.Fatal(err)
			}
		},
		"damaged pages": func(t *testing.T, path string) {
			p := openProvider(t, filepath.Dir(path), nil)
			for i := range 40 {
				call[storeResult](t, p, ToolStore, map[string]any{"title": "note " + strings.Repeat("x", i), "content": strings.Repeat("words to fill pages ", 400)})
			}
			if err := p.Close(); err != nil {
				t.Fatal(err)
			}
			b, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			copy(b[len(b)/2:], bytes.Repeat([]byte{0x5A}, 32<<10))
			if err := os.WriteFile(path, b, 0o600); err != nil {
				t.Fatal(err)
			}
		},
	}
	for name, damage := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			path := filepath.Join(dir, dbFileName)
			damage(t, path)
			err := New(nil).Configure(context.Background(), &sdk.ConfigureRequest{Config: json.RawMessage(`{}`), DataDir: dir})
			if !errors.Is(err, ErrDamaged) || !strings.Contains(err.Error(), "run `openhuman-host memory recover`") {
				t.Fatalf("Configure on a damaged database = %v, want ErrDamaged with the way out", err)
			}
		})
	}
}
