// Package freeport retries a start of a process that tests and
// benchmarks start on a port from testproc.FreePort, which another
// process may take first.
package freeport

import (
	"context"
)

// Retry calls start, which starts something on a port from testproc.FreePort,
// until it succeeds, at most tries times (at least once), and returns what
// it started. It stops early once ctx is done; then, or when every try
// failed, it returns the last try's error.
func Retry[T any](ctx context.Context, tries int, start func() (T, error)) (T, error) {
	var last error
	for range max(tries, 1) {
		v, err := start()
		if err == nil {
			return v, nil
		}
		last = err
		if ctx.Err() != nil {
			break
		}
	}
	var zero T
	return zero, last
}
