package host

import (
	"bytes"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
)

// TestStateKey: the first call creates a private 32-byte key, later calls
// and concurrent first calls all read the same one, and a damaged file is
// an error that names the fix.
func TestStateKey(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	keys := make([][]byte, 8)
	var wg sync.WaitGroup
	for i := range keys {
		wg.Go(func() {
			k, err := stateKey(dir)
			if err != nil {
				t.Error(err)
			}
			keys[i] = k
		})
	}
	wg.Wait()
	for _, k := range keys {
		if len(k) != 32 || !bytes.Equal(k, keys[0]) {
			t.Fatalf("keys differ or are not 32 bytes: %x", keys)
		}
	}
	again, err := stateKey(dir)
	if err != nil || !bytes.Equal(again, keys[0]) {
		t.Fatalf("second read = %x, %v; want %x", again, err, keys[0])
	}
	path := filepath.Join(dir, StateKeyFile)
	info, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if runtime.GOOS != "windows" && info.Mode().Perm() != 0o600 {
		t.Errorf("mode %v, want 0600", info.Mode().Perm())
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 {
		t.Errorf("data dir holds %d entries, want only %s", len(entries), StateKeyFile)
	}
	if err := os.WriteFile(path, []byte("short\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := stateKey(dir); err == nil || !strings.Contains(err.Error(), "delete it and restart") {
		t.Errorf("damaged key: %v", err)
	}
}
