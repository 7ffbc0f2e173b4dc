package filelock

import (
	"errors"
	"path/filepath"
	"testing"
)

func TestLocks(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "db.lock")
	un1, err := Shared(path)
	if err != nil {
		t.Fatal(err)
	}
	un2, err := Shared(path)
	if err != nil {
		t.Fatalf("a second shared lock: %v", err)
	}
	if _, err := Exclusive(path); !errors.Is(err, ErrLocked) {
		t.Fatalf("an exclusive lock while shared ones are held: %v, want ErrLocked", err)
	}
	un1()
	un2()
	unx, err := Exclusive(path)
	if err != nil {
		t.Fatalf("an exclusive lock once the shared ones are gone: %v", err)
	}
	if _, err := Shared(path); !errors.Is(err, ErrLocked) {
		t.Fatalf("a shared lock while an exclusive one is held: %v, want ErrLocked", err)
	}
	if _, err := Exclusive(path); !errors.Is(err, ErrLocked) {
		t.Fatalf("a second exclusive lock: %v, want ErrLocked", err)
	}
	unx()
	if un, err := Shared(path); err != nil {
		t.Fatalf("a shared lock after the exclusive one: %v", err)
	} else {
		un()
	}
}
