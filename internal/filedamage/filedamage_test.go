package filedamage

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

func TestOverwriteMiddle(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "f")
	if err := os.WriteFile(path, bytes.Repeat([]byte{'a'}, 40), 0o600); err != nil {
		t.Fatal(err)
	}
	OverwriteMiddle(t, path, 'Z', 10)
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	want := "aaaaaaaaaaaaaaaaaaaaZZZZZZZZZZaaaaaaaaaa"
	if string(got) != want {
		t.Errorf("file = %q, want %q", got, want)
	}
}
