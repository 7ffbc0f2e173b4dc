package main

import (
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"os"
	"runtime"
	"slices"
	"strings"
	"text/tabwriter"
	"time"
)

// Targets the project tracks; printed beside the measured ratios, never
// asserted.
const (
	targetThroughputRatio = 0.9                    // host/floor calls/s at c=8, at least
	targetP50Ratio        = 2.5                    // host/floor p50 at c=1, at most
	targetColdStart       = 150 * time.Millisecond // host launch to first tools/list, at most
	targetPeakRSSKiB      = 64 << 10               // host + providers, at most (64 MiB)
	targetMemoryPSSKiB    = 48 << 10               // host + memory provider PSS under the c=8 load, at most (48 MiB)
	targetPeerCPURatio    = 1.5                    // relay server CPU per call against the peer proxy's at c=8, at most
)

// results is everything one run measured.
type results struct {
	Started     time.Time                `json:"started"`
	Machine     string                   `json:"machine"`
	Options     map[string]any           `json:"options"`
	Concurrency []int                    `json:"concurrency"`
	Order       []string                 `json:"order"`
	Targets     map[string]*targetResult `json:"targets"`
	Ratios      []ratio                  `json:"ratios"`
	// Hosts compares host and every -variant against the floor.
	Hosts []hostFigures `json:"hosts"`
	// PeerNote says why the peer proxy was not measured; empty when it
	// was or was not asked for.
	PeerNote string `json:"peer_note,omitempty"`
	// Breakdown is where one cold start of host/defaults went; nil
	// without -cold-defaults or when its log could not be read.
	Breakdown *breakdown `json:"cold_start_breakdown,omitempty"`
}

// hostFigures are the tracked figures of one host target; a ratio is 0
// when its concurrency was not measured.
type hostFigures struct {
	Target          string  `json:"target"`
	ThroughputRatio float64 `json:"throughput_ratio_c8"`
	P50Ratio        float64 `json:"p50_ratio_c1"`
	CPUPerCallC1    float64 `json:"server_cpu_us_per_call_c1"`
	CPUPerCallC8    float64 `json:"server_cpu_us_per_call_c8"`
	ColdStartMs     float64 `json:"cold_start_ms"`
	PeakRSSMiB      float64 `json:"peak_rss_mib"`
}

// targetResult is what one server measured.
type targetResult struct {
	Load            map[int]*loadStats `json:"load"`
	ColdStarts      []time.Duration    `json:"cold_starts_ns"`
	ColdStartMedian time.Duration      `json:"cold_start_median_ns"`
	PeakRSSKiB      int64              `json:"peak_rss_kib"`
	Processes       []procHWM          `json:"processes"`
	// Memory is, per concurrency, the sample with the largest summed
	// PSS taken halfway through a measured phase.
	Memory map[int]*memSample `json:"memory_under_load,omitempty"`
}

// memSample is the memory of a server's process tree at one moment.
type memSample struct {
	PssKiB    int64     `json:"pss_kib"`
	AnonKiB   int64     `json:"anon_kib"`
	Processes []procMem `json:"processes"`
}

// addMem keeps procs as the sample at concurrency c if its summed PSS is
// the largest so far; an empty procs (the sample failed) is ignored.
func (tr *targetResult) addMem(c int, procs []procMem) {
	if len(procs) == 0 {
		return
	}
	m := &memSample{Processes: procs}
	for _, p := range procs {
		m.PssKiB += p.PssKiB
		m.AnonKiB += p.AnonKiB
	}
	if tr.Memory == nil {
		tr.Memory = map[int]*memSample{}
	}
	if old := tr.Memory[c]; old == nil || m.PssKiB > old.PssKiB {
		tr.Memory[c] = m
	}
}

// memoryAt is the memory sample at concurrency c, or at the highest
// concurrency measured when c was not; nil without samples.
func (tr *targetResult) memoryAt(c int) (*memSample, int) {
	if m := tr.Memory[c]; m != nil {
		return m, c
	}
	best := -1
	for k := range tr.Memory {
		best = max(best, k)
	}
	if best < 0 {
		return nil, 0
	}
	return tr.Memory[best], best
}

// loadStats aggregates the rounds at one concurrency.
type loadStats struct {
	Calls         int           `json:"calls"`
	Errors        int           `json:"errors"`
	FirstError    string        `json:"first_error,omitempty"`
	Elapsed       time.Duration `json:"elapsed_ns"`
	ServerCPU     time.Duration `json:"server_cpu_ns"`
	ClientCPU     time.Duration `json:"client_cpu_ns"`
	ServerCPUCall float64       `json:"server_cpu_us_per_call"`
	ClientCPUCall float64       `json:"client_cpu_us_per_call"`
	// ServerCPUBy is the server's CPU time by process name.
	ServerCPUBy  map[string]time.Duration `json:"server_cpu_by_process_ns"`
	RoundsPerSec []float64                `json:"rounds_calls_per_sec"`
	CallsPerSec  float64                  `json:"calls_per_sec"`
	P50          time.Duration            `json:"p50_ns"`
	P99          time.Duration            `json:"p99_ns"`

	latencies []time.Duration
}

// ratio is one tracked figure against its target.
type ratio struct {
	Name   string  `json:"name"`
	Value  float64 `json:"value"`
	Unit   string  `json:"unit"`
	Target string  `json:"target"`
	Met    *bool   `json:"met,omitempty"`
	Note   string  `json:"note,omitempty"`
}

func (tr *targetResult) add(c int, s *sample) {
	ls := tr.Load[c]
	if ls == nil {
		ls = &loadStats{}
		tr.Load[c] = ls
	}
	ls.Calls += s.calls
	ls.Errors += s.errors
	if ls.FirstError == "" {
		ls.FirstError = s.firstError
	}
	ls.Elapsed += s.elapsed
	ls.ServerCPU += s.serverCPU
	ls.ClientCPU += s.clientCPU
	if ls.ServerCPUBy == nil {
		ls.ServerCPUBy = map[string]time.Duration{}
	}
	for name, d := range s.serverCPUBy {
		ls.ServerCPUBy[name] += d
	}
	ls.RoundsPerSec = append(ls.RoundsPerSec, s.throughput())
	ls.latencies = append(ls.latencies, s.latencies...)
}

func describeOptions(o *options) map[string]any {
	return map[string]any{
		"duration":      o.duration.String(),
		"warmup":        o.warmup.String(),
		"rounds":        o.rounds,
		"cold_runs":     o.coldRuns,
		"host_env":      []string(o.hostEnv),
		"floor_env":     []string(o.floorEnv),
		"provider_args": o.providerArgs,
		"record_reads":  o.recordReads,
		"memory_docs":   o.memoryDocs,
		"variants":      o.variants.describe(),
	}
}

// finish computes the aggregates and the ratios.
func (r *results) finish() {
	r.Machine = machine()
	for _, tr := range r.Targets {
		for _, ls := range tr.Load {
			if ls.Elapsed > 0 {
				ls.CallsPerSec = float64(ls.Calls) / ls.Elapsed.Seconds()
			}
			ls.ServerCPUCall = perCall(ls.ServerCPU, ls.Calls)
			ls.ClientCPUCall = perCall(ls.ClientCPU, ls.Calls)
			ls.P50 = percentile(ls.latencies, 0.50)
			ls.P99 = percentile(ls.latencies, 0.99)
		}
	}
	floor, host := r.Targets["floor"], r.Targets["host"]
	if floor == nil || host == nil {
		return
	}
	for _, name := range r.Order {
		if name != "host" && !strings.HasPrefix(name, "host/") || name == relayHTTPTarget {
			continue // relayHTTPTarget is compared with floorHTTPTarget, not the floor
		}
		t := r.Targets[name]
		if len(t.Load) == 0 {
			continue // launched for its cold start only
		}
		hf := hostFigures{Target: name, ColdStartMs: float64(t.ColdStartMedian) / float64(time.Millisecond),
			PeakRSSMiB: float64(t.PeakRSSKiB) / 1024}
		if f, h := floor.Load[8], t.Load[8]; f != nil && h != nil && f.CallsPerSec > 0 {
			hf.ThroughputRatio = h.CallsPerSec / f.CallsPerSec
			hf.CPUPerCallC8 = h.ServerCPUCall
		}
		if f, h := floor.Load[1], t.Load[1]; f != nil && h != nil && f.P50 > 0 {
			hf.P50Ratio = float64(h.P50) / float64(f.P50)
			hf.CPUPerCallC1 = h.ServerCPUCall
		}
		r.Hosts = append(r.Hosts, hf)
	}
	if f, h := floor.Load[8], host.Load[8]; f != nil && h != nil && f.CallsPerSec > 0 {
		v := h.CallsPerSec / f.CallsPerSec
		r.Ratios = append(r.Ratios, ratio{Name: "host/floor throughput at c=8", Value: v, Unit: "×",
			Target: fmt.Sprintf("≥ %.1f", targetThroughputRatio), Met: met(v >= targetThroughputRatio)})
	} else {
		r.Ratios = append(r.Ratios, ratio{Name: "host/floor throughput at c=8", Unit: "×",
			Target: fmt.Sprintf("≥ %.1f", targetThroughputRatio), Note: "not measured: -c has no 8"})
	}
	if f, h := floor.Load[1], host.Load[1]; f != nil && h != nil && f.P50 > 0 {
		v := float64(h.P50) / float64(f.P50)
		r.Ratios = append(r.Ratios, ratio{Name: "host/floor p50 at c=1", Value: v, Unit: "×",
			Target: fmt.Sprintf("≤ %.1f", targetP50Ratio), Met: met(v <= targetP50Ratio)})
	} else {
		r.Ratios = append(r.Ratios, ratio{Name: "host/floor p50 at c=1", Unit: "×",
			Target: fmt.Sprintf("≤ %.1f", targetP50Ratio), Note: "not measured: -c has no 1"})
	}
	cs := host.ColdStartMedian
	r.Ratios = append(r.Ratios, ratio{Name: "host cold start (median)", Value: float64(cs) / float64(time.Millisecond), Unit: "ms",
		Target: fmt.Sprintf("≤ %d ms", targetColdStart.Milliseconds()), Met: met(cs <= targetColdStart)})
	rss := host.PeakRSSKiB
	r.Ratios = append(r.Ratios, ratio{Name: "host+provider peak RSS", Value: float64(rss) / 1024, Unit: "MiB",
		Target: fmt.Sprintf("≤ %d MiB", targetPeakRSSKiB>>10), Met: met(rss <= targetPeakRSSKiB)})
	defName, defTarget := "host cold start on the defaults (memory, agent)", fmt.Sprintf("≤ %d ms", targetDefaultsColdStart.Milliseconds())
	if d := r.Targets[defaultsTarget]; d != nil && d.ColdStartMedian > 0 {
		r.Ratios = append(r.Ratios, ratio{Name: defName, Value: float64(d.ColdStartMedian) / float64(time.Millisecond), Unit: "ms",
			Target: defTarget, Met: met(d.ColdStartMedian <= targetDefaultsColdStart)})
	} else {
		r.Ratios = append(r.Ratios, ratio{Name: defName, Unit: "ms", Target: defTarget, Note: "not measured: -cold-defaults=false"})
	}
	pssName, pssTarget := "host+memory PSS under load at c=8", fmt.Sprintf("≤ %d MiB", targetMemoryPSSKiB>>10)
	if mem := r.Targets[memoryTarget]; mem != nil && mem.Memory[8] != nil {
		v := mem.Memory[8].PssKiB
		r.Ratios = append(r.Ratios, ratio{Name: pssName, Value: float64(v) / 1024, Unit: "MiB", Target: pssTarget,
			Met: met(v <= targetMemoryPSSKiB)})
	} else {
		r.Ratios = append(r.Ratios, ratio{Name: pssName, Unit: "MiB", Target: pssTarget,
			Note: "not measured: needs -memory and 8 in -c"})
	}
	r.relayRatios("relay/floor throughput at c=8", "relay/peer server CPU per call at c=8",
		"floor", relayTarget, peerTarget, "-relay")
	r.relayRatios("relay/floor throughput at c=8 over HTTP", "relay/peer server CPU per call at c=8 over HTTP",
		floorHTTPTarget, relayHTTPTarget, peerHTTPTarget, "-relay, -http")
}

// met is a ratio's Met for ok.
func met(ok bool) *bool { return &ok }

// relayRatios adds the relay's two ratios at c=8 over one transport:
// relay's throughput against floor's, and its server CPU per call against
// peer's; flags names the bench flags those targets need, for the note of
// a ratio not measured.
func (r *results) relayRatios(throughputName, cpuName, floor, relay, peer, flags string) {
	if f, h := r.load(floor, 8), r.load(relay, 8); f != nil && h != nil && f.CallsPerSec > 0 {
		v := h.CallsPerSec / f.CallsPerSec
		r.Ratios = append(r.Ratios, ratio{Name: throughputName, Value: v, Unit: "×",
			Target: fmt.Sprintf("≥ %.1f", targetRelayRatio), Met: met(v >= targetRelayRatio)})
	} else {
		r.Ratios = append(r.Ratios, ratio{Name: throughputName, Unit: "×", Target: fmt.Sprintf("≥ %.1f", targetRelayRatio),
			Note: "not measured: needs " + flags + " and 8 in -c"})
	}
	if p, h := r.load(peer, 8), r.load(relay, 8); p != nil && h != nil && p.ServerCPUCall > 0 {
		v := h.ServerCPUCall / p.ServerCPUCall
		r.Ratios = append(r.Ratios, ratio{Name: cpuName, Value: v, Unit: "×",
			Target: fmt.Sprintf("≤ %.1f", targetPeerCPURatio), Met: met(v <= targetPeerCPURatio)})
	} else {
		note := r.PeerNote
		if note == "" {
			note = "not measured: needs " + flags + ", -peer and 8 in -c"
		}
		r.Ratios = append(r.Ratios, ratio{Name: cpuName, Unit: "×", Target: fmt.Sprintf("≤ %.1f", targetPeerCPURatio), Note: note})
	}
}

// load is target name's aggregate at concurrency c, or nil.
func (r *results) load(name string, c int) *loadStats {
	if t := r.Targets[name]; t != nil {
		return t.Load[c]
	}
	return nil
}

// report prints the table, memory, cold starts and ratios.
func report(w io.Writer, r *results) {
	fmt.Fprintf(w, "\nopenhuman-host bench — %s\n", r.Machine)
	fmt.Fprintf(w, "%v rounds of %v (warmup %v) per server and concurrency; host env %v; provider args %q; record_reads %v\n",
		r.Options["rounds"], r.Options["duration"], r.Options["warmup"], r.Options["host_env"], r.Options["provider_args"], r.Options["record_reads"])
	if vs, _ := r.Options["variants"].([]string); len(vs) > 0 {
		fmt.Fprintf(w, "variants: %s\n", strings.Join(vs, "; "))
	}
	fmt.Fprintln(w)

	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "server\tc\tcalls/s\tround range\tp50\tp99\tserver CPU/call\tbench CPU/call\terrors\t")
	for _, c := range r.Concurrency {
		for _, name := range r.Order {
			ls := r.Targets[name].Load[c]
			if ls == nil {
				continue
			}
			lo, hi := slices.Min(ls.RoundsPerSec), slices.Max(ls.RoundsPerSec)
			fmt.Fprintf(tw, "%s\t%d\t%.0f\t%.0f–%.0f\t%s\t%s\t%.0fµs\t%.0fµs\t%d\t\n", name, c, ls.CallsPerSec, lo, hi,
				fmtDur(ls.P50), fmtDur(ls.P99), ls.ServerCPUCall, ls.ClientCPUCall, ls.Errors)
		}
	}
	tw.Flush()
	fmt.Fprintln(w, "server CPU per call by process:")
	for _, name := range r.Order {
		for _, c := range r.Concurrency {
			ls := r.Targets[name].Load[c]
			if ls == nil || len(ls.ServerCPUBy) < 2 {
				continue
			}
			var parts []string
			for _, p := range slices.Sorted(maps.Keys(ls.ServerCPUBy)) {
				parts = append(parts, fmt.Sprintf("%s %.0fµs", p, perCall(ls.ServerCPUBy[p], ls.Calls)))
			}
			fmt.Fprintf(w, "  %s c=%d: %s\n", name, c, strings.Join(parts, " + "))
		}
	}
	for _, name := range r.Order {
		for _, c := range r.Concurrency {
			if ls := r.Targets[name].Load[c]; ls != nil && ls.FirstError != "" {
				fmt.Fprintf(w, "  %s c=%d first error: %s\n", name, c, firstLine(ls.FirstError))
			}
		}
	}

	fmt.Fprintln(w)
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "server\tpeak RSS\tprocesses (VmHWM)\tcold start median\tcold starts")
	for _, name := range r.Order {
		tr := r.Targets[name]
		var procs []string
		for _, p := range tr.Processes {
			procs = append(procs, fmt.Sprintf("%s %.1f", p.Name, float64(p.HWMKiB)/1024))
		}
		var colds []string
		for _, d := range tr.ColdStarts {
			colds = append(colds, fmtMs(d))
		}
		peak := "—"
		if len(tr.Processes) > 0 {
			peak = fmt.Sprintf("%.1f MiB", float64(tr.PeakRSSKiB)/1024)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", name, peak, strings.Join(procs, " + "),
			fmtMs(tr.ColdStartMedian), strings.Join(colds, " "))
	}
	tw.Flush()

	fmt.Fprintln(w, "\nmemory under load (halfway through the measured phase with the largest PSS, at c=8 or the highest -c):")
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "server\tc\tPSS\tanonymous RSS\tprocesses (PSS/anonymous, MiB)")
	for _, name := range r.Order {
		m, c := r.Targets[name].memoryAt(8)
		if m == nil {
			continue
		}
		var procs []string
		for _, p := range m.Processes {
			procs = append(procs, fmt.Sprintf("%s %.1f/%.1f", p.Name, float64(p.PssKiB)/1024, float64(p.AnonKiB)/1024))
		}
		fmt.Fprintf(tw, "%s\t%d\t%.1f MiB\t%.1f MiB\t%s\n", name, c, float64(m.PssKiB)/1024, float64(m.AnonKiB)/1024,
			strings.Join(procs, " + "))
	}
	tw.Flush()

	fmt.Fprintln(w, "\nagainst the targets:")
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	for _, ra := range r.Ratios {
		verdict := ra.Note
		if ra.Met != nil {
			verdict = "met"
			if !*ra.Met {
				verdict = "MISSED"
			}
		}
		val := "n/a"
		if ra.Met != nil {
			switch ra.Unit {
			case "×":
				val = fmt.Sprintf("%.2f×", ra.Value)
			default:
				val = fmt.Sprintf("%.1f %s", ra.Value, ra.Unit)
			}
		}
		fmt.Fprintf(tw, "  %s\t%s\ttarget %s\t%s\n", ra.Name, val, ra.Target, verdict)
	}
	tw.Flush()
	if r.Breakdown != nil {
		r.Breakdown.print(w)
	}
	reportHosts(w, r)
}

// reportHosts prints the tracked figures of host and its variants side by
// side; it prints nothing without variants.
func reportHosts(w io.Writer, r *results) {
	if len(r.Hosts) < 2 {
		return
	}
	fmt.Fprintln(w, "\nhost and variants, same rounds:")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "\tcalls/s host/floor c=8\tp50 host/floor c=1\tserver CPU/call c=1\tc=8\tcold start\tpeak RSS\t\n")
	fmt.Fprintf(tw, "(target)\t≥ %.1f\t≤ %.1f\t\t\t≤ %d ms\t≤ %d MiB\t\n", targetThroughputRatio, targetP50Ratio,
		targetColdStart.Milliseconds(), targetPeakRSSKiB>>10)
	var withAudit, withoutAudit, withTelemetry, relay, relayHost, relayPlugin float64
	for _, h := range r.Hosts {
		fmt.Fprintf(tw, "%s\t%.2f×\t%.2f×\t%.0fµs\t%.0fµs\t%.0f ms\t%.1f MiB\t\n", h.Target, h.ThroughputRatio, h.P50Ratio,
			h.CPUPerCallC1, h.CPUPerCallC8, h.ColdStartMs, h.PeakRSSMiB)
		switch h.Target {
		case "host":
			withAudit = h.ThroughputRatio
		case noAuditTarget:
			withoutAudit = h.ThroughputRatio
		case telemetryTarget:
			withTelemetry = h.ThroughputRatio
		case relayTarget:
			relay = h.ThroughputRatio
		case relayHostTarget:
			relayHost = h.ThroughputRatio
		case relayPluginTarget:
			relayPlugin = h.ThroughputRatio
		}
	}
	tw.Flush()
	printCost(w, "audit cost", withAudit, withoutAudit, noAuditTarget, targetAuditCost)
	printCost(w, "telemetry cost", withTelemetry, withAudit, "host", targetTelemetryCost)
	if p, h := r.load(peerTarget, 8), r.load(relayTarget, 8); relay > 0 && p != nil && h != nil && p.CallsPerSec > 0 {
		fmt.Fprintf(w, "relay against the peer proxy at c=8: %.2f× its throughput, %.0fµs against %.0fµs server CPU per call\n",
			h.CallsPerSec/p.CallsPerSec, h.ServerCPUCall, p.ServerCPUCall)
	}
	if p, h := r.load(peerHTTPTarget, 8), r.load(relayHTTPTarget, 8); p != nil && h != nil && p.CallsPerSec > 0 {
		fmt.Fprintf(w, "relay against the peer proxy at c=8 over HTTP: %.2f× its throughput, %.0fµs against %.0fµs server CPU per call\n",
			h.CallsPerSec/p.CallsPerSec, h.ServerCPUCall, p.ServerCPUCall)
	}
	if mh, mp := r.load(memoryTarget, 8), r.load(memoryPluginTarget, 8); mh != nil && mp != nil {
		fmt.Fprintf(w, "memory_search at c=8, memory provider in the host against in a plugin process: %.0f against %.0f calls/s, %.0fµs against %.0fµs server CPU per call",
			mh.CallsPerSec, mp.CallsPerSec, mh.ServerCPUCall, mp.ServerCPUCall)
		if a, b := r.Targets[memoryTarget].Memory[8], r.Targets[memoryPluginTarget].Memory[8]; a != nil && b != nil {
			fmt.Fprintf(w, ", PSS %.1f against %.1f MiB", float64(a.PssKiB)/1024, float64(b.PssKiB)/1024)
		}
		fmt.Fprintln(w)
	}
	if hh, hp := r.load(relayHostTarget, 8), r.load(relayPluginTarget, 8); relayHost > 0 && relayPlugin > 0 && hh != nil && hp != nil {
		fmt.Fprintf(w, "relay at c=8, upstream provider in the host against in a plugin process: %.2f× against %.2f× the floor's throughput, %.0fµs against %.0fµs server CPU per call\n",
			relayHost, relayPlugin, hh.ServerCPUCall, hp.ServerCPUCall)
		if p := r.load(peerTarget, 8); p != nil && p.ServerCPUCall > 0 {
			fmt.Fprintf(w, "  against the peer proxy's server CPU per call: %.2f× in the host, %.2f× in a plugin process\n",
				hh.ServerCPUCall/p.ServerCPUCall, hp.ServerCPUCall/p.ServerCPUCall)
		}
	}
}

// targetRelayRatio is the least throughput, against the upstream server
// alone, of a call relayed to it through the host at c=8.
const targetRelayRatio = 0.8

// printCost prints what a feature costs at c=8: how far the throughput
// ratio with it (with) is below the one of baseline, the host without it
// (without), against target; nothing when either was not measured.
func printCost(w io.Writer, what string, with, without float64, baseline string, target float64) {
	if with <= 0 || without <= 0 {
		return
	}
	cost := 1 - with/without
	verdict := "met"
	if cost > target {
		verdict = "MISSED"
	}
	fmt.Fprintf(w, "%s at c=8: throughput %.1f%% below %s (target ≤ %.0f%%): %s\n", what, 100*cost, baseline, 100*target, verdict)
}

// targetTelemetryCost is the most throughput telemetry (traces, metrics
// and their export) may cost at c=8.
const targetTelemetryCost = 0.05

// targetAuditCost is the most throughput the audit may cost at c=8.
const targetAuditCost = 0.05

func (r *results) writeJSON(path string) error {
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(b, '\n'), 0o644)
}

// machine describes the machine the bench ran on.
func machine() string {
	model := "unknown CPU"
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "model name" {
				model = strings.TrimSpace(v)
				break
			}
		}
	}
	return fmt.Sprintf("%s/%s, %d CPUs (%s), %s", runtime.GOOS, runtime.GOARCH, runtime.NumCPU(), model, runtime.Version())
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}

// fmtDur prints a latency with three significant digits.
func fmtDur(d time.Duration) string {
	switch {
	case d >= time.Second:
		return fmt.Sprintf("%.2fs", d.Seconds())
	case d >= time.Millisecond:
		return fmt.Sprintf("%.2fms", float64(d)/float64(time.Millisecond))
	default:
		return fmt.Sprintf("%.0fµs", float64(d)/float64(time.Microsecond))
	}
}

func fmtMs(d time.Duration) string {
	return fmt.Sprintf("%.0fms", float64(d)/float64(time.Millisecond))
}
