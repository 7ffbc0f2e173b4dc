package audit

import (
	"bytes"
	"context"
	"sync"
	"testing"
	"time"
)

// TestSpend: a nonce is fresh once, also across a reopened log and two
// logs sharing one database used at once, and expired rows are deleted.
func TestSpend(t *testing.T) {
	t.Parallel()
	eachDriver(t, func(t *testing.T, driver string) {
		ctx := context.Background()
		path := newTarget(t, driver)
		open := func() *Log {
			l, err := openAt(ctx, path, nil)
			if err != nil {
				t.Fatal(err)
			}
			return l
		}
		l := open()
		exp := time.Now().Add(time.Hour).UnixMilli()
		if fresh, err := l.Spend(ctx, "n1", exp); err != nil || !fresh {
			t.Fatalf("first spend = %v, %v", fresh, err)
		}
		if fresh, err := l.Spend(ctx, "n1", exp); err != nil || fresh {
			t.Fatalf("second spend = %v, %v; want used", fresh, err)
		}
		if err := l.Close(ctx); err != nil {
			t.Fatal(err)
		}
		a, b := open(), open()
		defer a.Close(ctx)
		defer b.Close(ctx)
		if fresh, err := a.Spend(ctx, "n1", exp); err != nil || fresh {
			t.Errorf("after reopening = %v, %v; want used", fresh, err)
		}
		var wg sync.WaitGroup
		var mu sync.Mutex
		fresh := 0
		for i := range 20 {
			wg.Go(func() {
				log := a
				if i%2 == 1 {
					log = b
				}
				ok, err := log.Spend(ctx, "n2", exp)
				if err != nil {
					t.Error(err)
				}
				if ok {
					mu.Lock()
					fresh++
					mu.Unlock()
				}
			})
		}
		wg.Wait()
		if fresh != 1 {
			t.Errorf("n2 was fresh %d times across two processes' logs, want once", fresh)
		}
		if ok, err := a.Spend(ctx, "old", time.Now().Add(-time.Minute).UnixMilli()); err != nil || !ok {
			t.Fatal(ok, err)
		}
		if _, err := a.Spend(ctx, "n3", exp); err != nil {
			t.Fatal(err)
		}
		var n int64
		if err := a.db.Raw("SELECT count(*) FROM " + SpentTable + " WHERE nonce = 'old'").Scan(&n).Error; err != nil || n != 0 {
			t.Errorf("expired row kept (%d, %v)", n, err)
		}
	})
}

// TestSharedKey: the first key stored wins for every log on the database.
func TestSharedKey(t *testing.T) {
	t.Parallel()
	eachDriver(t, func(t *testing.T, driver string) {
		target := newTarget(t, driver)
		a, b := mustOpen(t, target, nil), mustOpen(t, target, nil)
		first, second := bytes.Repeat([]byte{1}, 32), bytes.Repeat([]byte{2}, 32)
		got, err := a.SharedKey(t.Context(), "state", first)
		if err != nil || !bytes.Equal(got, first) {
			t.Fatalf("first SharedKey() = %x, %v; want the candidate", got, err)
		}
		got, err = b.SharedKey(t.Context(), "state", second)
		if err != nil || !bytes.Equal(got, first) {
			t.Errorf("second SharedKey() = %x, %v; want the first key", got, err)
		}
		if _, err := a.SharedKey(t.Context(), "other", []byte("short")); err == nil {
			t.Error("SharedKey() stored a 5-byte key")
		}
	})
}
