package freeport

import (
	"context"
	"errors"
	"fmt"
	"testing"
)

func TestRetry(t *testing.T) {
	t.Parallel()
	failing := func(n int, calls *int) func() (string, error) {
		return func() (string, error) {
			*calls++
			if *calls <= n {
				return "", fmt.Errorf("try %d: port taken", *calls)
			}
			return "started", nil
		}
	}
	tests := map[string]struct {
		tries, failures int
		want            string
		wantErr         string
		wantCalls       int
	}{
		"first try":           {tries: 3, failures: 0, want: "started", wantCalls: 1},
		"third try":           {tries: 3, failures: 2, want: "started", wantCalls: 3},
		"every try fails":     {tries: 3, failures: 5, wantErr: "try 3: port taken", wantCalls: 3},
		"no tries is one try": {tries: 0, failures: 5, wantErr: "try 1: port taken", wantCalls: 1},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			calls := 0
			got, err := Retry(t.Context(), tc.tries, failing(tc.failures, &calls))
			gotErr := ""
			if err != nil {
				gotErr = err.Error()
			}
			if got != tc.want || gotErr != tc.wantErr || calls != tc.wantCalls {
				t.Errorf("Retry() = %q, %q after %d calls; want %q, %q after %d", got, gotErr, calls, tc.want, tc.wantErr, tc.wantCalls)
			}
		})
	}

	ctx, cancel := context.WithCancel(t.Context())
	calls := 0
	boom := errors.New("boom")
	_, err := Retry(ctx, 3, func() (int, error) {
		calls++
		cancel()
		return 0, boom
	})
	if !errors.Is(err, boom) || calls != 1 {
		t.Errorf("Retry() with ctx cancelled during the first try = %v after %d calls, want boom after 1", err, calls)
	}
}
