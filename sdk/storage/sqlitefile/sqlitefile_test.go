package sqlitefile

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

func TestMoveAside(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := filepath.Join(dir, "a.db")
	for suffix, body := range map[string]string{"": "db", "-wal": "wal"} {
		if err := os.WriteFile(path+suffix, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	to, err := MoveAside(path, time.Date(2026, 12, 2, 10, 15, 0, 0, time.FixedZone("x", 3600)))
	if err != nil {
		t.Fatal(err)
	}
	if want := path + ".damaged-20261202T091500Z"; to != want {
		t.Fatalf("MoveAside = %q, want %q", to, want)
	}
	for suffix, want := range map[string]string{"": "db", "-wal": "wal"} {
		b, err := os.ReadFile(to + suffix)
		if err != nil || string(b) != want {
			t.Errorf("%s = %q, %v; want %q", to+suffix, b, err, want)
		}
		if _, err := os.Stat(path + suffix); !os.IsNotExist(err) {
			t.Errorf("%s still exists (%v)", path+suffix, err)
		}
	}
	if _, err := os.Stat(to + "-shm"); !os.IsNotExist(err) {
		t.Errorf("a -shm file appeared: %v", err)
	}
}

func TestMoveAsideKeepsEarlierMoves(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "a.db")
	now := time.Date(2026, 12, 2, 10, 15, 0, 0, time.UTC)
	var moved []string
	for i := range 3 {
		if err := os.WriteFile(path, []byte{byte('0' + i)}, 0o600); err != nil {
			t.Fatal(err)
		}
		to, err := MoveAside(path, now)
		if err != nil {
			t.Fatal(err)
		}
		moved = append(moved, to)
	}
	want := []string{path + ".damaged-20261202T101500Z", path + ".damaged-20261202T101500Z-2", path + ".damaged-20261202T101500Z-3"}
	for i, to := range moved {
		b, err := os.ReadFile(to)
		if to != want[i] || err != nil || string(b) != string(rune('0'+i)) {
			t.Errorf("move %d went to %s holding %q (%v); want %s holding %q", i, to, b, err, want[i], string(rune('0'+i)))
		}
	}
}
