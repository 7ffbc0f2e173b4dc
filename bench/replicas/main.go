// Command replicas measures the throughput of 1, 2 and 3 openhuman-host
// replicas behind HAProxy sharing one PostgreSQL database, on this
// machine, for docs/performance.md#replicas.
//
// It starts a throwaway PostgreSQL (sdk/storage/pgtest), three replicas of
// the built binary with the provider of test/replicas/replicaprovider and
// HAProxy with examples/haproxy/haproxy.cfg in front of them
// (internal/cluster), all on loopback. Each measurement takes replicas out
// of HAProxy's rotation through its admin socket (state maint) to serve
// with 1, 2 or 3, connects -clients fresh clients (half on 2026-07-28,
// half on 2025-11-25 sessions) and has each call in a loop for -duration
// after -warmup: three rep_read calls, then one rep_write (an act, whose
// audit row is written before it runs). The configurations are
// interleaved over -rounds, so a busier moment of the machine does not
// fall on one of them. Reported per configuration: calls per second (the
// mean over rounds), the ratio to one replica, latency percentiles and how
// busy the machine's CPUs were (from /proc/stat), because the load, the
// replicas, HAProxy and PostgreSQL all share them.
//
//	go run -tags sqlite_fts5 ./bench/replicas -host "$PWD/bin/openhuman-host"
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/openhuman/openhuman-host/internal/cluster"
	"github.com/openhuman/openhuman-host/sdk/storage/pgtest"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "bench/replicas:", err)
		os.Exit(1)
	}
}

// result is one configuration's figures.
type result struct {
	Replicas     int       `json:"replicas"`
	CallsPerSec  []float64 `json:"calls_per_sec"` // one per round
	MeanPerSec   float64   `json:"mean_calls_per_sec"`
	Ratio        float64   `json:"ratio_to_one"`
	P50Ms        float64   `json:"p50_ms"`
	P99Ms        float64   `json:"p99_ms"`
	Failed       int       `json:"failed"`
	CPUBusy      float64   `json:"cpu_busy"` // 0..1 of all CPUs, mean over rounds
	latencies    []time.Duration
	busySum      float64
	busyRoundsOK int
}

func run() error {
	fs := flag.NewFlagSet("replicas", flag.ContinueOnError)
	hostBin := fs.String("host", "", "absolute path of the openhuman-host binary (required)")
	clients := fs.Int("clients", 32, "concurrent clients, half on 2026-07-28 and half on 2025-11-25")
	duration := fs.Duration("duration", 10*time.Second, "measured time per configuration and round")
	warmup := fs.Duration("warmup", 2*time.Second, "unmeasured calling before each measurement")
	rounds := fs.Int("rounds", 3, "rounds; each measures 1, 2 and 3 replicas")
	jsonOut := fs.String("json", "", "also write the figures as JSON to this file")
	if err := fs.Parse(os.Args[1:]); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil
		}
		return err
	}
	if *hostBin == "" || !filepath.IsAbs(*hostBin) {
		return errors.New("-host must be the absolute path of the built openhuman-host (make build)")
	}
	ctx := context.Background()
	dir, err := os.MkdirTemp("", "openhuman-bench-replicas-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)

	startCtx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	pg, err := pgtest.Start(startCtx)
	if err != nil {
		return err
	}
	defer func() { _ = pg.Stop() }()
	dsn, err := pgtest.CreateDatabase(startCtx, pg.DSN, "bench_replicas")
	if err != nil {
		return err
	}
	provider, err := cluster.BuildProvider(startCtx, dir)
	if err != nil {
		return err
	}
	c, err := cluster.Start(startCtx, cluster.Options{Bin: *hostBin, Provider: provider, DSN: dsn, Dir: dir}, 3)
	if err != nil {
		return err
	}
	defer c.Close()
	if err := c.WaitUp(startCtx); err != nil {
		return err
	}

	fmt.Printf("%d CPUs; %d clients; %s per measurement after %s of warm-up; %d rounds\n", runtime.NumCPU(), *clients, *duration, *warmup, *rounds)
	results := []*result{{Replicas: 1}, {Replicas: 2}, {Replicas: 3}}
	for round := range *rounds {
		for _, r := range results {
			if err := only(ctx, c, r.Replicas); err != nil {
				return err
			}
			perSec, lat, failed, busy, err := measure(ctx, c.Proxy.URL, *clients, *warmup, *duration)
			if err != nil {
				return err
			}
			r.CallsPerSec = append(r.CallsPerSec, perSec)
			r.latencies = append(r.latencies, lat...)
			r.Failed += failed
			if busy >= 0 {
				r.busySum += busy
				r.busyRoundsOK++
			}
			fmt.Printf("round %d, %d replica(s): %.0f calls/s, %d failed, CPUs %.0f%% busy\n", round+1, r.Replicas, perSec, failed, busy*100)
		}
	}
	for _, r := range results {
		var sum float64
		for _, v := range r.CallsPerSec {
			sum += v
		}
		r.MeanPerSec = sum / float64(len(r.CallsPerSec))
		r.Ratio = r.MeanPerSec / results[0].MeanPerSec
		slices.Sort(r.latencies)
		r.P50Ms = ms(percentile(r.latencies, 0.50))
		r.P99Ms = ms(percentile(r.latencies, 0.99))
		if r.busyRoundsOK > 0 {
			r.CPUBusy = r.busySum / float64(r.busyRoundsOK)
		}
	}
	fmt.Println()
	fmt.Println("| replicas | calls/s (mean of rounds) | ratio to 1 | p50 ms | p99 ms | failed | CPUs busy |")
	fmt.Println("|---|---|---|---|---|---|---|")
	for _, r := range results {
		rounds := make([]string, len(r.CallsPerSec))
		for i, v := range r.CallsPerSec {
			rounds[i] = strconv.FormatFloat(v, 'f', 0, 64)
		}
		fmt.Printf("| %d | %.0f (%s) | %.2f | %.1f | %.1f | %d | %.0f%% |\n",
			r.Replicas, r.MeanPerSec, strings.Join(rounds, ", "), r.Ratio, r.P50Ms, r.P99Ms, r.Failed, r.CPUBusy*100)
	}
	if *jsonOut != "" {
		b, _ := json.MarshalIndent(results, "", "  ")
		if err := os.WriteFile(*jsonOut, b, 0o644); err != nil {
			return err
		}
	}
	stopCtx, cancelStop := context.WithTimeout(ctx, time.Minute)
	defer cancelStop()
	return c.Stop(stopCtx)
}

// only leaves the first n replicas in HAProxy's rotation and puts the
// others in maintenance.
func only(ctx context.Context, c *cluster.Cluster, n int) error {
	for i, r := range c.Replicas {
		state := "ready"
		if i >= n {
			state = "maint"
		}
		out, err := c.Proxy.Command(ctx, "set server openhuman/"+r.Name+" state "+state)
		if err != nil {
			return fmt.Errorf("set %s %s: %w", r.Name, state, err)
		}
		if strings.TrimSpace(out) != "" {
			return fmt.Errorf("set %s %s: haproxy answered %q", r.Name, state, out)
		}
	}
	return nil
}

// measure connects clients through url, has them call for warmup, then
// counts their calls for d. It returns calls per second, each measured
// call's latency, the failed calls and the busy share of the CPUs (-1
// when unknown).
func measure(ctx context.Context, url string, clients int, warmup, d time.Duration) (float64, []time.Duration, int, float64, error) {
	cls := make([]*cluster.Client, clients)
	defer func() {
		for _, c := range cls {
			if c != nil {
				c.Close()
			}
		}
	}()
	for i := range clients {
		version := cluster.Stateless
		if i >= clients/2 {
			version = cluster.Sessions
		}
		c, err := cluster.Dial(ctx, url, i, version)
		if err != nil {
			return 0, nil, 0, 0, err
		}
		cls[i] = c
	}
	var measuring atomic.Bool
	var calls, failed atomic.Int64
	stop := make(chan struct{})
	var mu sync.Mutex
	var lat []time.Duration
	var wg sync.WaitGroup
	for _, c := range cls {
		wg.Go(func() {
			var mine []time.Duration
			for seq := 0; ; seq++ {
				select {
				case <-stop:
					mu.Lock()
					lat = append(lat, mine...)
					mu.Unlock()
					return
				default:
				}
				tool := cluster.ToolRead
				if seq%4 == 3 {
					tool = cluster.ToolWrite
				}
				callCtx, cancel := context.WithTimeout(ctx, time.Minute)
				start := time.Now()
				res, _, err := c.Call(callCtx, tool, seq)
				took := time.Since(start)
				cancel()
				if !measuring.Load() {
					continue
				}
				if err != nil || res.IsError {
					failed.Add(1)
					continue
				}
				calls.Add(1)
				mine = append(mine, took)
			}
		})
	}
	time.Sleep(warmup)
	before, okBefore := cpuTimes()
	calls.Store(0)
	measuring.Store(true)
	start := time.Now()
	time.Sleep(d)
	n := calls.Load()
	elapsed := time.Since(start)
	after, okAfter := cpuTimes()
	measuring.Store(false)
	close(stop)
	wg.Wait()
	busy := -1.0
	if okBefore && okAfter && after.total > before.total {
		busy = 1 - float64(after.idle-before.idle)/float64(after.total-before.total)
	}
	return float64(n) / elapsed.Seconds(), lat, int(failed.Load()), busy, nil
}

// jiffies are the machine's CPU times from /proc/stat.
type jiffies struct{ idle, total uint64 }

func cpuTimes() (jiffies, bool) {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return jiffies{}, false
	}
	line, _, _ := strings.Cut(string(b), "\n")
	f := strings.Fields(line)
	if len(f) < 5 || f[0] != "cpu" {
		return jiffies{}, false
	}
	var j jiffies
	for i, v := range f[1:] {
		n, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			return jiffies{}, false
		}
		j.total += n
		if i == 3 || i == 4 { // idle, iowait
			j.idle += n
		}
	}
	return j, true
}

func percentile(sorted []time.Duration, p float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	return sorted[min(len(sorted)-1, int(p*float64(len(sorted))))]
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
