// Package cputime reads the CPU time the running process has used, for the
// benchmarks' client-side cost.
package cputime

import "time"

// Self returns the user plus system CPU time this process has used so far,
// or 0 when the system does not say.
func Self() time.Duration { return self() }
