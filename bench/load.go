package main

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/openhuman/openhuman-host/sdk/mcpwire"
)

// maxCallsPerPhase bounds one phase by count as well as by time.
const maxCallsPerPhase = 5_000_000

// callTimeout bounds one call; a call without a response by then counts
// as failed (every call this bench makes normally takes well under 100ms).
const callTimeout = 5 * time.Second

// maxErrors ends a phase early: a server that fails this often is broken,
// not slow.
const maxErrors = 100

// sample is the outcome of one load phase.
type sample struct {
	latencies []time.Duration
	calls     int
	errors    int
	elapsed   time.Duration
	// serverCPU and clientCPU are the CPU time the server process tree
	// and the bench used during the phase; set by measure.
	serverCPU time.Duration
	clientCPU time.Duration
	// serverCPUBy splits serverCPU by process name.
	serverCPUBy map[string]time.Duration
	// firstError is the first failed call's error or error result.
	firstError string
	// fatal is set when the phase could not run (the session died, or
	// too many calls failed).
	fatal error
}

func (s *sample) throughput() float64 {
	if s.elapsed <= 0 {
		return 0
	}
	return float64(s.calls) / s.elapsed.Seconds()
}

// drive keeps c calls of tool in flight on cs for d, each worker sending
// its next call as soon as the previous one returns.
func drive(ctx context.Context, cs *mcp.ClientSession, tool string, args map[string]any, c int, d time.Duration) *sample {
	// A hung call must not hang the bench: the phase's context ends
	// well after its deadline.
	ctx, cancel := context.WithTimeout(ctx, d+30*time.Second)
	defer cancel()
	perWorker := maxCallsPerPhase / c
	type worker struct {
		lat      []time.Duration
		errors   int
		firstErr string
		fatal    error
	}
	workers := make([]worker, c)
	var wg sync.WaitGroup
	start := time.Now()
	deadline := start.Add(d)
	for i := range workers {
		w := &workers[i]
		w.lat = make([]time.Duration, 0, 4096)
		wg.Add(1)
		go func() {
			defer wg.Done()
			for n := 0; n < perWorker && time.Now().Before(deadline); n++ {
				// CallTool writes to its params, so each call gets its own.
				a := make(map[string]any, len(args))
				maps.Copy(a, args)
				params := &mcp.CallToolParams{Name: tool, Arguments: a}
				callCtx, cancelCall := context.WithTimeout(ctx, callTimeout)
				t0 := time.Now()
				res, err := cs.CallTool(callCtx, params)
				lat := time.Since(t0)
				cancelCall()
				switch {
				case err != nil:
					w.errors++
					if callCtx.Err() != nil && ctx.Err() == nil {
						err = fmt.Errorf("no response within %s: %w", callTimeout, err)
					}
					if w.firstErr == "" {
						w.firstErr = err.Error()
					}
					if errors.Is(err, mcp.ErrConnectionClosed) || ctx.Err() != nil {
						w.fatal = err
						return
					}
				case res.IsError:
					w.errors++
					if w.firstErr == "" {
						w.firstErr = mcpwire.Text(res)
					}
				default:
					w.lat = append(w.lat, lat)
				}
				if w.errors > maxErrors/c {
					w.fatal = fmt.Errorf("more than %d failed calls, the first: %s", maxErrors, w.firstErr)
					return
				}
			}
		}()
	}
	wg.Wait()
	s := &sample{elapsed: time.Since(start)}
	n := 0
	for _, w := range workers {
		n += len(w.lat)
	}
	s.latencies = make([]time.Duration, 0, n)
	for _, w := range workers {
		s.latencies = append(s.latencies, w.lat...)
		s.errors += w.errors
		if s.firstError == "" {
			s.firstError = w.firstErr
		}
		if s.fatal == nil && w.fatal != nil {
			s.fatal = w.fatal
		}
	}
	s.calls = len(s.latencies)
	return s
}

// percentile is the nearest-rank p-quantile (0 < p ≤ 1) of ds; 0 for none.
// ds is sorted in place.
func percentile(ds []time.Duration, p float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	if !slices.IsSorted(ds) {
		slices.Sort(ds)
	}
	rank := int(math.Ceil(p*float64(len(ds)))) - 1
	return ds[min(max(rank, 0), len(ds)-1)]
}

// median of ds, without reordering ds.
func median(ds []time.Duration) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}
