// Package freeport finds loopback ports for the processes tests and
// benchmarks start, and retries a start that lost its port to another
// process.
package freeport

import (
	"context"
	"fmt"
	"net"
)

// Loopback returns a TCP port on 127.0.0.1 that was free a moment ago.
// Another process may take it before the one it is meant for binds it:
// start that one with [Retry].
func Loopback() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("find a free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// Retry calls start, which starts something on a port from [Loopback],
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
