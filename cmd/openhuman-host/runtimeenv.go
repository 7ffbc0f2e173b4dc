package main

import (
	"math"
	"runtime/metrics"
	"strconv"
)

// gcEnv is this process's garbage-collector settings as a Go program's
// environment, for the providers it starts: GOGC ("off" when the GC is
// off) and, when there is a soft memory limit, GOMEMLIMIT in bytes. The
// host starts providers with an allow-listed environment, so without
// these they would run with Go's defaults whatever the host runs with
// (GOGC=400 and a soft limit on stdio: tuneGCForStdio).
func gcEnv() []string {
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
			env = append(env, "GOMEMLIMIT="+strconv.FormatUint(l, 10))
		}
	}
	return env
}
