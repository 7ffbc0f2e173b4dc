package main

import (
	"math"
	"os"
	"runtime/metrics"
	"strconv"
)

// runtimeEnv is this process's Go runtime settings as a Go program's
// environment, for the providers it starts: GOGC ("off" when the GC is
// off), GOMEMLIMIT in bytes when there is a soft memory limit, and GORACE
// as this process got it, when set. The host starts providers with an
// allow-listed environment, so without these they would run with Go's
// defaults whatever the host runs with (GOGC=400, with a soft limit on
// stdio: tuneGCForStdio, tuneGCForHTTP). GORACE matters only to a build with the race
// detector, whose providers are the same binary: they then report races
// where the host does and, with atexit_sleep_ms, exit as soon as it does.
func runtimeEnv() []string {
	s := []metrics.Sample{{Name: "/gc/gogc:percent"}, {Name: "/gc/gomemlimit:bytes"}}
	metrics.Read(s)
	var env []string
	if s[0].Value.Kind() == metrics.KindUint64 {
		// An off GC (a percent of -1) reads as a huge unsigned number.
		if p := s[0].Value.Uint64(); p <= math.MaxInt32 {
			env = append(env, "GOGC="+strconv.FormatUint(p, 10))
		} else {
			env = append(env, "GOGC=off")
		}
	}
	if s[1].Value.Kind() == metrics.KindUint64 {
		if l := s[1].Value.Uint64(); l > 0 && l < math.MaxInt64 {
			if l > uint64(inHostMemory) {
				// The share of the built-ins in the host's process is
				// the host's alone.
				l -= uint64(inHostMemory)
			}
			env = append(env, "GOMEMLIMIT="+strconv.FormatUint(l, 10))
		}
	}
	if v, ok := os.LookupEnv("GORACE"); ok {
		env = append(env, "GORACE="+v)
	}
	return env
}
