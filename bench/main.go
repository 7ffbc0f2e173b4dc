// Command bench measures what openhuman-host costs on top of the go-sdk.
//
// It compares, in one run, two MCP servers doing the same work — a tool that
// takes an empty object and returns "ok" — over stdio, driven by the go-sdk
// client on sdk/mcpwire's CommandTransport (one decode per response,
// so the bench's own CPU stays small next to the servers'):
//
//   - floor: the go-sdk serving the tool in-process (bench/floor);
//   - host:  `openhuman-host serve` with the tool served by a third-party
//     provider (bench/noopprovider) loaded through a generated config, so
//     every call crosses the host's stdio transport, its tools/call pipeline
//     (lookup, validation, policy, audit) and the go-plugin gRPC hop.
//
// A third server, host+memory, runs the host with the built-in memory
// provider and is driven with [memorytool.Search] over seeded documents; it
// is extra information, not part of the ratios (-memory=false skips it).
//
// The bench builds the helper programs with `go build` into a temporary
// directory, so run it from the module:
//
//	go run -tags sqlite_fts5 ./bench -host "$PWD/bin/openhuman-host"
//	make bench
//
// For each concurrency in -c (calls in flight on one session) and each of
// -rounds rounds, every server gets a -warmup phase and a measured phase of
// -duration, interleaved so machine noise hits all of them: round 1 runs the
// servers in the order listed (floor, host, variants, host+memory), round 2
// in reverse, and so on. Reported per server and concurrency: calls/s (total
// calls over total measured time, with the per-round range), p50 and p99
// latency over every call of every round, errors (a call without a response
// within 5s counts as one), and the CPU time per call of the server with its
// descendants and of the bench itself, from /proc and getrusage, split by
// process below the table. Also reported: peak RSS (VmHWM from /proc) of the
// floor process and of the host with all its descendants (the providers),
// summed over processes; and cold start, the median over -cold-runs launches
// of the time from starting the process to the first complete tools/list
// response. The bench reads /proc, so it runs on Linux.
//
// The report ends with the ratios the project tracks and their targets:
// host/floor throughput at c=8 (≥ 0.9), host/floor p50 at c=1 (≤ 2.5), host
// cold start (≤ 150 ms), host+provider peak RSS (≤ 64 MiB). Targets are
// printed, never asserted: the exit status is non-zero only when the
// benchmark itself fails.
//
// GC settings: -host-env KEY=VALUE (repeatable) adds to the host's
// environment, for example -host-env GOGC=400 or -host-env GOMEMLIMIT=48MiB;
// -floor-env does the same for the floor. The host hands its providers its
// own effective GC settings (GOGC, GOMEMLIMIT); the no-op provider's
// -gogc and -memlimit args override them for it:
// -provider-args "-gogc=400 -memlimit=16777216" (also -maxprocs=N).
//
// -variant NAME:ENV[,ENV...][:PROVIDER-ARGS] (repeatable) adds another host,
// reported as host/NAME, measured in the same interleaved rounds, which is
// how settings are best compared on a noisy machine:
//
//	-variant gogc400:GOGC=400:-gogc=400
//	-variant limit:GOGC=off,GOMEMLIMIT=32MiB:-gogc=-1 -memlimit=16777216
//
// Two more hosts run in the same rounds unless turned off: host/no-audit
// (-audit-cost; reads not audited) and host/telemetry (-telemetry; every
// [telemetry] signal on, spans and metrics exported every second to an
// OTLP/HTTP receiver in the bench that drops them, the Prometheus
// registry kept), whose throughput against host's is the cost of
// auditing and of telemetry. host/relay (-relay) serves the floor's tool
// from the floor server run as an upstream MCP server ([[upstream.servers]])
// through the built-in upstream provider: its throughput against the
// floor's is what relaying costs (target ≥ 0.8). -relay-modes adds
// host/relay-in-host and host/relay-plugin, the relay with [upstream]
// process = "host" and "plugin", to compare the two in the same rounds.
// -http (on by default) adds floor/http, host/relay/http and
// peer/mcp-go-proxy/http: the floor, the relay and the peer proxy with the
// client on Streamable HTTP, for the relay's targets over HTTP.
//
// -cpuprofile FILE adds a pass after the measurement: the host pipeline is
// run by bench/profhost (the same packages `serve` uses, with
// runtime/pprof) under load at the highest concurrency, and its CPU profile
// is written to FILE; -memprofile FILE writes its heap profile on exit;
// -profile-target picks another host's config (host/telemetry,
// host/no-audit, a variant).
// Inspect them with `go tool pprof -top FILE`. -json FILE writes the results
// as JSON.
//
// bench_test.go holds in-process Go benchmarks of the same comparison without
// processes or stdio (go test -tags sqlite_fts5 -run '^$' -bench . ./bench/).
//
// Everything runs on this machine: the only traffic is stdio and go-plugin's
// local socket between the bench's own child processes. Every loop is bounded
// in time and in count.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/openhuman/openhuman-host/bench/internal/cputime"
	"github.com/openhuman/openhuman-host/host/plugins"
	"github.com/openhuman/openhuman-host/providers/memory/memorytool"
)

// options are the command-line flags.
type options struct {
	hostBin      string
	conc         []int
	duration     time.Duration
	warmup       time.Duration
	rounds       int
	coldRuns     int
	hostEnv      envList
	floorEnv     envList
	providerArgs string
	variants     variantList
	memory       bool
	memoryModes  bool
	memoryDocs   int
	recordReads  bool
	auditCost    bool
	telemetry    bool
	relay        bool
	http         bool
	relayModes   bool
	peer         bool
	coldDefaults bool
	cpuProfile   string
	memProfile   string
	profTarget   string
	jsonOut      string
}

// envList is a repeatable KEY=VALUE flag.
type envList []string

func (e *envList) String() string { return strings.Join(*e, " ") }

func (e *envList) Set(v string) error {
	k, _, ok := strings.Cut(v, "=")
	if !ok || k == "" {
		return fmt.Errorf("%q: want KEY=VALUE", v)
	}
	*e = append(*e, v)
	return nil
}

// variant is one more host to measure in the same run, for comparing
// runtime settings under the same machine noise.
type variant struct {
	name         string
	env          []string
	providerArgs []string
}

// variantList is a repeatable NAME:ENV[,ENV...][:PROVIDER-ARGS] flag.
type variantList []variant

func (v *variantList) String() string {
	var names []string
	for _, x := range *v {
		names = append(names, x.name)
	}
	return strings.Join(names, ",")
}

func (v *variantList) Set(s string) error {
	name, rest, _ := strings.Cut(s, ":")
	envs, args, _ := strings.Cut(rest, ":")
	if name == "" || strings.ContainsAny(name, " /") {
		return fmt.Errorf("%q: want NAME:ENV[,ENV...][:PROVIDER-ARGS] with a NAME without spaces or slashes", s)
	}
	x := variant{name: name, providerArgs: strings.Fields(args)}
	for _, e := range strings.Split(envs, ",") {
		if e = strings.TrimSpace(e); e == "" {
			continue
		}
		if k, _, ok := strings.Cut(e, "="); !ok || k == "" {
			return fmt.Errorf("%q: %q is not KEY=VALUE", s, e)
		}
		x.env = append(x.env, e)
	}
	for _, have := range *v {
		if have.name == name {
			return fmt.Errorf("%q: variant %s given twice", s, name)
		}
	}
	*v = append(*v, x)
	return nil
}

// describe lists the variants as NAME: ENV; provider args ARGS.
func (v variantList) describe() []string {
	var out []string
	for _, x := range v {
		d := x.name + ": " + strings.Join(x.env, " ")
		if len(x.providerArgs) > 0 {
			d += "; provider args " + strings.Join(x.providerArgs, " ")
		}
		out = append(out, d)
	}
	return out
}

// intList is a comma-separated list of positive integers.
type intList []int

func parseIntList(s string) (intList, error) {
	var out intList
	for _, f := range strings.Split(s, ",") {
		f = strings.TrimSpace(f)
		if f == "" {
			continue
		}
		n, err := strconv.Atoi(f)
		if err != nil || n < 1 || n > 256 {
			return nil, fmt.Errorf("%q: want integers from 1 to 256, comma-separated", s)
		}
		out = append(out, n)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%q: no concurrency given", s)
	}
	return out, nil
}

func parseFlags(args []string) (*options, error) {
	o := &options{}
	fs := flag.NewFlagSet("bench", flag.ContinueOnError)
	fs.StringVar(&o.hostBin, "host", "", "absolute path of the openhuman-host binary (required)")
	conc := fs.String("c", "1,8", "calls in flight, comma-separated")
	fs.DurationVar(&o.duration, "duration", 5*time.Second, "measured time per server, concurrency and round")
	fs.DurationVar(&o.warmup, "warmup", time.Second, "unmeasured load before each measured phase")
	fs.IntVar(&o.rounds, "rounds", 3, "interleaved rounds")
	fs.IntVar(&o.coldRuns, "cold-runs", 5, "launches per server for the cold-start median")
	fs.Var(&o.hostEnv, "host-env", "KEY=VALUE added to the host's environment (repeatable)")
	fs.Var(&o.floorEnv, "floor-env", "KEY=VALUE added to the floor server's environment (repeatable)")
	fs.StringVar(&o.providerArgs, "provider-args", "", "args of the no-op provider, space-separated (-gogc=N, -memlimit=BYTES, -maxprocs=N)")
	fs.Var(&o.variants, "variant", "NAME:ENV[,ENV...][:PROVIDER-ARGS]: one more host, host/NAME, with ENV added to its environment and\nPROVIDER-ARGS as the no-op provider's args, measured in the same rounds (repeatable)")
	fs.BoolVar(&o.memory, "memory", true, "also measure "+memorytool.Search+" through the host with the memory provider")
	fs.BoolVar(&o.memoryModes, "memory-modes", false, "with -memory, also measure "+memoryPluginTarget+": the memory provider in a plugin process of its own\n([providers.memory] process = \"plugin\") rather than the host's, in the same rounds")
	fs.IntVar(&o.memoryDocs, "memory-docs", 200, "documents stored before "+memorytool.Search+" is measured")
	fs.BoolVar(&o.recordReads, "record-reads", true, "the host's [audit] record_reads (its default is true)")
	fs.BoolVar(&o.auditCost, "audit-cost", true, "also measure host/no-audit (record_reads = false) in the same rounds, for the audit's cost")
	fs.BoolVar(&o.telemetry, "telemetry", true, "also measure host/telemetry (traces and metrics exported over OTLP to a sink in the bench, and kept for Prometheus) in the same rounds, for telemetry's cost")
	fs.BoolVar(&o.coldDefaults, "cold-defaults", true, "also launch "+defaultsTarget+" (the embedded default config: memory and agent on) for its cold start, and break one launch down from its debug log")
	fs.BoolVar(&o.relayModes, "relay-modes", false, "with -relay, also measure "+relayHostTarget+" and "+relayPluginTarget+": the relay with the upstream provider\nin the host's process and in a plugin process of its own ([upstream] process), in the same rounds")
	fs.BoolVar(&o.peer, "peer", true, "with -relay, also measure "+peerTarget+": the floor behind a plain MCP proxy built on github.com/mark3labs/mcp-go (bench/peerproxy, fetched from the Go module proxy), the relay's peer")
	fs.BoolVar(&o.http, "http", true, "with -relay, also measure the floor, host/relay and the peer proxy with the client on Streamable HTTP ("+floorHTTPTarget+", "+relayHTTPTarget+", "+peerHTTPTarget+")")
	fs.BoolVar(&o.relay, "relay", true, "also measure host/relay (the floor server behind the host as an upstream MCP server, through the upstream provider) in the same rounds, for the relay's cost against the floor alone")
	fs.StringVar(&o.cpuProfile, "cpuprofile", "", "write a CPU profile of the host pipeline under load to this file")
	fs.StringVar(&o.memProfile, "memprofile", "", "write a heap profile of the host pipeline to this file")
	fs.StringVar(&o.profTarget, "profile-target", "host", "the host whose config the profile pass runs: host, host/no-audit, host/telemetry or host/NAME of a -variant")
	fs.StringVar(&o.jsonOut, "json", "", "also write the results as JSON to this file")
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	var err error
	if o.conc, err = parseIntList(*conc); err != nil {
		return nil, fmt.Errorf("-c %w", err)
	}
	switch {
	case o.hostBin == "":
		return nil, errors.New("-host is required: the absolute path of bin/openhuman-host (make build)")
	case !filepath.IsAbs(o.hostBin):
		return nil, fmt.Errorf("-host %q: give an absolute path", o.hostBin)
	case o.duration < 100*time.Millisecond || o.duration > 10*time.Minute:
		return nil, fmt.Errorf("-duration %s: want 100ms to 10m", o.duration)
	case o.warmup < 0 || o.warmup > time.Minute:
		return nil, fmt.Errorf("-warmup %s: want 0 to 1m", o.warmup)
	case o.rounds < 1 || o.rounds > 100:
		return nil, fmt.Errorf("-rounds %d: want 1 to 100", o.rounds)
	case o.coldRuns < 1 || o.coldRuns > 100:
		return nil, fmt.Errorf("-cold-runs %d: want 1 to 100", o.coldRuns)
	case len(o.variants) > 8:
		return nil, fmt.Errorf("-variant given %d times: at most 8", len(o.variants))
	case o.memoryDocs < 1 || o.memoryDocs > 100000:
		return nil, fmt.Errorf("-memory-docs %d: want 1 to 100000", o.memoryDocs)
	}
	if _, err := os.Stat(o.hostBin); err != nil {
		return nil, fmt.Errorf("-host: %w (run make build first)", err)
	}
	return o, nil
}

func main() {
	o, err := parseFlags(os.Args[1:])
	if errors.Is(err, flag.ErrHelp) {
		return
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(2)
	}
	if err := run(o); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

func run(o *options) error {
	ctx := context.Background()
	modDir, err := moduleDir()
	if err != nil {
		return err
	}
	tmp, err := os.MkdirTemp("", "openhuman-bench-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)

	fmt.Fprintln(os.Stderr, "bench: building the floor server and the no-op provider")
	floorBin := filepath.Join(tmp, "floor")
	provBin := filepath.Join(tmp, "noopprovider")
	if err := goBuild(ctx, modDir, floorBin, "./bench/floor"); err != nil {
		return err
	}
	if err := goBuild(ctx, modDir, provBin, "./bench/noopprovider"); err != nil {
		return err
	}
	sum, err := plugins.FileSHA256(provBin)
	if err != nil {
		return err
	}
	peerBin, peerNote := "", ""
	if o.relay && o.peer {
		peerBin = filepath.Join(tmp, "peerproxy")
		if err := goBuild(ctx, filepath.Join(modDir, "bench", "peerproxy"), peerBin, "."); err != nil {
			peerBin, peerNote = "", "not measured: bench/peerproxy could not be built (is github.com/mark3labs/mcp-go reachable on the Go module proxy?): "+firstLine(err.Error())
			fmt.Fprintf(os.Stderr, "bench: leaving %s out: %v\n", peerTarget, err)
		}
	}

	targets, err := setupTargets(o, tmp, floorBin, provBin, sum, peerBin)
	if err != nil {
		return err
	}
	checked := targets[:0]
	for _, t := range targets {
		err := t.checkToolsList(ctx, o.hostBin)
		switch {
		case err == nil:
			checked = append(checked, t)
		case t.seed != nil:
			// host+memory is extra information: measure the rest without it.
			fmt.Fprintf(os.Stderr, "bench: leaving %s out: %v\n", t.name, err)
		default:
			return err
		}
	}
	targets = checked
	width := 0
	for _, t := range targets {
		width = max(width, len(t.name))
	}

	res := &results{
		Started:     time.Now().UTC(),
		Options:     describeOptions(o),
		Concurrency: o.conc,
		Targets:     map[string]*targetResult{},
		PeerNote:    peerNote,
	}
	for _, t := range targets {
		res.Order = append(res.Order, t.name)
		res.Targets[t.name] = &targetResult{Load: map[int]*loadStats{}}
	}

	fmt.Fprintf(os.Stderr, "bench: cold start, %d launches per server\n", o.coldRuns)
	if err := measureColdStarts(ctx, o, targets, res); err != nil {
		return err
	}
	for _, t := range targets {
		if t.name == defaultsTarget {
			b, err := measureBreakdown(ctx, t)
			if err != nil {
				fmt.Fprintf(os.Stderr, "bench: no cold-start breakdown: %v\n", err)
			}
			res.Breakdown = b
		}
	}
	targets = slices.DeleteFunc(targets, func(t *target) bool { return t.coldOnly })

	runs := make([]*running, len(targets))
	defer func() {
		for _, r := range runs {
			if r != nil {
				_ = r.close()
			}
		}
	}()
	for i, t := range targets {
		r, _, err := t.start(ctx)
		if err != nil {
			return err
		}
		runs[i] = r
		if t.seed != nil {
			fmt.Fprintf(os.Stderr, "bench: %s: seeding\n", t.name)
			if err := t.seed(ctx, r); err != nil {
				return fmt.Errorf("%s: seed: %w%s", t.name, err, r.stderr.suffix())
			}
		}
	}

	total := time.Duration(o.rounds*len(o.conc)*len(targets)) * (o.duration + o.warmup)
	fmt.Fprintf(os.Stderr, "bench: %d rounds × c=%v × %d servers, about %s\n", o.rounds, o.conc, len(targets), total.Round(time.Second))
	for round := range o.rounds {
		order := make([]int, len(targets))
		for i := range order {
			order[i] = i
			if round%2 == 1 {
				order[i] = len(targets) - 1 - i
			}
		}
		for _, c := range o.conc {
			for _, i := range order {
				t, r := targets[i], runs[i]
				if o.warmup > 0 {
					if s := drive(ctx, r.cs, t.tool, t.args, c, o.warmup); s.fatal != nil {
						return fmt.Errorf("%s warmup c=%d: %w%s", t.name, c, s.fatal, r.stderr.suffix())
					}
				}
				// Memory is sampled halfway through the measured phase:
				// under load, not after it.
				memc := make(chan []procMem, 1)
				sampler := time.AfterFunc(o.duration/2, func() {
					m, _ := treeMem(r.cmd.Process.Pid)
					memc <- m
				})
				s := measure(ctx, r, t, c, o.duration)
				if sampler.Stop() {
					close(memc)
				}
				if s.fatal != nil {
					return fmt.Errorf("%s c=%d: %w%s", t.name, c, s.fatal, r.stderr.suffix())
				}
				res.Targets[t.name].add(c, s)
				res.Targets[t.name].addMem(c, <-memc)
				fmt.Fprintf(os.Stderr, "bench: round %d %-*s c=%-3d %8.0f calls/s  p50 %-9s server CPU %4.0fµs/call  errors %d\n",
					round+1, width, t.name, c, s.throughput(), fmtDur(percentile(s.latencies, 0.50)), perCall(s.serverCPU, s.calls), s.errors)
			}
		}
	}

	for i, t := range targets {
		tr := res.Targets[t.name]
		procs, err := treeHWM(runs[i].cmd.Process.Pid)
		if err != nil {
			return fmt.Errorf("%s: read peak RSS: %w", t.name, err)
		}
		tr.Processes = procs
		for _, p := range procs {
			tr.PeakRSSKiB += p.HWMKiB
		}
	}
	for i := range runs {
		if err := runs[i].close(); err != nil {
			fmt.Fprintf(os.Stderr, "bench: %s: close: %v%s\n", targets[i].name, err, runs[i].stderr.suffix())
		}
		runs[i] = nil
	}

	res.finish()
	report(os.Stdout, res)

	if o.cpuProfile != "" || o.memProfile != "" {
		i := slices.IndexFunc(targets, func(t *target) bool { return t.name == o.profTarget && t.configPath != "" })
		if i < 0 {
			return fmt.Errorf("-profile-target %q: no such host among this run's targets", o.profTarget)
		}
		if err := profilePass(ctx, o, modDir, tmp, targets[i]); err != nil {
			return fmt.Errorf("profile pass: %w", err)
		}
	}
	if o.jsonOut != "" {
		if err := res.writeJSON(o.jsonOut); err != nil {
			return err
		}
	}
	return nil
}

// measure is one measured phase of drive, with the CPU time the server
// (with its descendants) and the bench itself used during it.
func measure(ctx context.Context, r *running, t *target, c int, d time.Duration) *sample {
	pid := r.cmd.Process.Pid
	server0, err0 := treeCPU(pid)
	client0 := cputime.Self()
	s := drive(ctx, r.cs, t.tool, t.args, c, d)
	s.clientCPU = cputime.Self() - client0
	if server1, err1 := treeCPU(pid); err0 == nil && err1 == nil {
		s.serverCPUBy, s.serverCPU = cpuDelta(server0, server1)
	}
	return s
}

// perCall is d per call in microseconds.
func perCall(d time.Duration, calls int) float64 {
	if calls == 0 {
		return 0
	}
	return float64(d) / float64(time.Microsecond) / float64(calls)
}

// moduleDir is the directory of the module the bench belongs to, where
// `go build ./bench/...` works.
func moduleDir() (string, error) {
	out, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		return "", fmt.Errorf("go env GOMOD: %w", err)
	}
	mod := strings.TrimSpace(string(out))
	if mod == "" || mod == os.DevNull {
		return "", errors.New("run the bench from the openhuman-host module (go env GOMOD is empty)")
	}
	return filepath.Dir(mod), nil
}

// goBuild builds pkg of the module in dir to out.
func goBuild(ctx context.Context, dir, out, pkg string, tags ...string) error {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Minute)
	defer cancel()
	args := []string{"build", "-o", out}
	if len(tags) > 0 {
		args = append(args, "-tags", strings.Join(tags, ","))
	}
	args = append(args, pkg)
	cmd := exec.CommandContext(ctx, "go", args...)
	cmd.Dir = dir
	if b, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("go %s: %w\n%s", strings.Join(args, " "), err, b)
	}
	return nil
}

// profilePass runs the host pipeline under bench/profhost with profiling
// on, loaded at the highest concurrency for one measured duration.
func profilePass(ctx context.Context, o *options, modDir, tmp string, host *target) error {
	fmt.Fprintln(os.Stderr, "bench: profile pass: building bench/profhost")
	bin := filepath.Join(tmp, "profhost")
	if err := goBuild(ctx, modDir, bin, "./bench/profhost", "sqlite_fts5"); err != nil {
		return err
	}
	args := []string{"-config", host.configPath}
	for _, p := range []struct{ flag, path string }{{"-cpuprofile", o.cpuProfile}, {"-memprofile", o.memProfile}} {
		if p.path == "" {
			continue
		}
		abs, err := filepath.Abs(p.path)
		if err != nil {
			return err
		}
		args = append(args, p.flag, abs)
	}
	pt := *host
	pt.name = "profhost"
	pt.command = func() *exec.Cmd {
		cmd := exec.Command(bin, args...)
		cmd.Env = host.env
		return cmd
	}
	r, _, err := pt.start(ctx)
	if err != nil {
		return err
	}
	c := o.conc[len(o.conc)-1]
	for _, n := range o.conc {
		c = max(c, n)
	}
	if o.warmup > 0 {
		drive(ctx, r.cs, pt.tool, pt.args, c, o.warmup)
	}
	s := drive(ctx, r.cs, pt.tool, pt.args, c, o.duration)
	if err := r.close(); err != nil {
		return fmt.Errorf("profhost exit: %w%s", err, r.stderr.suffix())
	}
	if s.fatal != nil {
		return fmt.Errorf("profhost c=%d: %w%s", c, s.fatal, r.stderr.suffix())
	}
	fmt.Printf("\nprofile pass (bench/profhost, c=%d): %.0f calls/s, p50 %s\n", c, s.throughput(), fmtDur(percentile(s.latencies, 0.5)))
	for _, p := range []string{o.cpuProfile, o.memProfile} {
		if p != "" {
			fmt.Printf("  go tool pprof -top %s\n", p)
		}
	}
	return nil
}
