// Package filedamage damages files on purpose, for tests of the host's
// recovery from a database file that no longer reads back.
package filedamage

import (
	"bytes"
	"os"
	"testing"
)

// OverwriteMiddle overwrites n bytes in the middle of the file at path with
// the byte fill, in place, failing the test when the file cannot be
// written or is shorter than 4n bytes (too small for the damage to land
// inside it rather than over its header or its end). For a SQLite database
// of many pages, n of a few pages or more ruins the b-tree pages there.
func OverwriteMiddle(t testing.TB, path string, fill byte, n int) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatalf("damage %s: %v", path, err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		t.Fatalf("damage %s: %v", path, err)
	}
	if fi.Size() < 4*int64(n) {
		t.Fatalf("damage %s: the file is %d bytes, want at least %d to damage %d in its middle", path, fi.Size(), 4*n, n)
	}
	if _, err := f.WriteAt(bytes.Repeat([]byte{fill}, n), fi.Size()/2); err != nil {
		t.Fatalf("damage %s: %v", path, err)
	}
	if err := f.Close(); err != nil {
		t.Fatalf("damage %s: %v", path, err)
	}
}
