package main

import (
	"os"
	"os/exec"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestPercentile(t *testing.T) {
	ds := []time.Duration{5, 1, 4, 2, 3, 6, 7, 8, 9, 10}
	for _, tc := range []struct {
		p    float64
		want time.Duration
	}{{0.5, 5}, {0.99, 10}, {0.1, 1}, {1, 10}} {
		if got := percentile(ds, tc.p); got != tc.want {
			t.Errorf("percentile(%v) = %v, want %v", tc.p, got, tc.want)
		}
	}
	if got := percentile(nil, 0.5); got != 0 {
		t.Errorf("percentile of nothing = %v, want 0", got)
	}
	if got := median([]time.Duration{30, 10, 20, 100}); got != 25 {
		t.Errorf("median = %v, want 25ns", got)
	}
}

func TestParseStat(t *testing.T) {
	line := []byte("4242 (open) (human)) S 17 4242 4242 0 -1 4194560 100 0 0 0 250 31 0 0 20 0 9 0 1 2 3\n")
	pid, ppid, ok := parseStat(line)
	if !ok || pid != 4242 || ppid != 17 {
		t.Errorf("parseStat = %d, %d, %v; want 4242, 17, true", pid, ppid, ok)
	}
	name, ticks, ok := parseStatCPU(line)
	if !ok || name != "open) (human)" || ticks != 281 {
		t.Errorf("parseStatCPU = %q, %d, %v; want \"open) (human)\", 281, true", name, ticks, ok)
	}
	if _, _, ok := parseStat([]byte("garbage")); ok {
		t.Error("parseStat accepted garbage")
	}
}

func TestParseStatus(t *testing.T) {
	name, hwm, err := parseStatus([]byte("Name:\topenhuman-host\nVmPeak:\t  900 kB\nVmHWM:\t   40264 kB\nVmRSS:\t 30000 kB\n"))
	if err != nil || name != "openhuman-host" || hwm != 40264 {
		t.Errorf("parseStatus = %q, %d, %v; want openhuman-host, 40264, nil", name, hwm, err)
	}
	if _, _, err := parseStatus([]byte("Name:\tzombie\nState:\tZ\n")); err == nil {
		t.Error("parseStatus without VmHWM: no error")
	}
}

func TestParseSmapsRollup(t *testing.T) {
	m, err := parseSmapsRollup([]byte("55c8e38a0000-7ffd4eddc000 ---p 00000000 00:00 0  [rollup]\nRss:  1752 kB\nPss:   282 kB\nPss_Anon:  116 kB\nAnonymous:   116 kB\nAnonHugePages:  0 kB\n"))
	if err != nil || m.PssKiB != 282 || m.AnonKiB != 116 {
		t.Errorf("parseSmapsRollup = %+v, %v; want Pss 282, Anonymous 116", m, err)
	}
	if _, err := parseSmapsRollup([]byte("Rss: 10 kB\n")); err == nil {
		t.Error("parseSmapsRollup without Pss: no error")
	}
	if _, err := parseSmapsRollup([]byte("Pss: x kB\nAnonymous: 1 kB\n")); err == nil {
		t.Error("parseSmapsRollup with a bad number: no error")
	}
}

func TestVariantFlag(t *testing.T) {
	var v variantList
	if err := v.Set("lim:GOGC=off,GOMEMLIMIT=24MiB:-gogc=-1 -memlimit=12582912"); err != nil {
		t.Fatal(err)
	}
	if err := v.Set("plain:GOGC=200"); err != nil {
		t.Fatal(err)
	}
	if len(v) != 2 || v[0].name != "lim" || len(v[0].env) != 2 || len(v[0].providerArgs) != 2 || len(v[1].providerArgs) != 0 {
		t.Errorf("parsed %+v", v)
	}
	for _, bad := range []string{"", ":GOGC=1", "a b:GOGC=1", "x:GOGC", "lim:GOGC=1"} {
		if err := v.Set(bad); err == nil {
			t.Errorf("Set(%q) accepted", bad)
		}
	}
}

func TestTOMLString(t *testing.T) {
	if got, want := tomlString("/tmp/a \"b\"\\c\n"), `"/tmp/a \"b\"\\c\u000A"`; got != want {
		t.Errorf("tomlString = %s, want %s", got, want)
	}
}

func TestParseBreakdown(t *testing.T) {
	log := `2026-12-03T09:02:50.824Z [DEBUG] openhuman-host: starting the host: since_start=16.5ms
2026-12-03T09:02:51.182Z [DEBUG] openhuman-host.provider.agent: provider loaded: pid=10656 protocol=2 version=0.1.0 tools=4 resources=10 checksum=51ns handshake=288.5ms configure=10ms describe=4.75ms
2026-12-03T09:02:51.200Z [DEBUG] openhuman-host.provider.memory: provider loaded: pid=10657 protocol=2 version=0.1.0 tools=11 resources=0 checksum=0s handshake=70ms configure=30ms describe="1ms"
2026-12-03T09:02:51.231Z [DEBUG] openhuman-host: host started: audit=2ms providers=380ms catalog="900µs" state_key="40µs" server=3ms rest="200µs"
2026-12-03T09:02:51.232Z [INFO]  openhuman-host: providers loaded: count=2 failed=0 tools=15 since_start=424.5ms
`
	b, err := parseBreakdown(log, 450*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	want := &breakdown{Total: 450 * time.Millisecond, Init: 16500 * time.Microsecond, Providers: 408 * time.Millisecond,
		Host: hostSteps{Audit: 2 * time.Millisecond, Providers: 380 * time.Millisecond, Catalog: 900 * time.Microsecond,
			StateKey: 40 * time.Microsecond, Server: 3 * time.Millisecond, Rest: 200 * time.Microsecond},
		Steps: map[string]providerSteps{
			"agent":  {Checksum: 51, Handshake: 288500 * time.Microsecond, Configure: 10 * time.Millisecond, Describe: 4750 * time.Microsecond},
			"memory": {Handshake: 70 * time.Millisecond, Configure: 30 * time.Millisecond, Describe: time.Millisecond},
		}}
	if diff := cmp.Diff(want, b); diff != "" {
		t.Errorf("parseBreakdown (-want +got):\n%s", diff)
	}
	if _, err := parseBreakdown("no such lines\n", time.Second); err == nil {
		t.Error("parseBreakdown of a log without since_start: no error")
	}
}

func TestReadTreeFindsChildren(t *testing.T) {
	cmd := exec.Command("sleep", "60")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	self := os.Getpid()
	hwm, err := treeHWM(self)
	if err != nil {
		t.Fatal(err)
	}
	if len(hwm) < 2 || hwm[0].Pid != self || hwm[0].HWMKiB <= 0 {
		t.Fatalf("treeHWM(self) = %+v; want self first, with a peak RSS", hwm)
	}
	i := slices.IndexFunc(hwm, func(p procHWM) bool { return p.Pid == cmd.Process.Pid })
	if i < 0 || hwm[i].Name != "sleep" {
		t.Errorf("treeHWM(self) = %+v; want the child %d named sleep", hwm, cmd.Process.Pid)
	}
	mem, err := treeMem(self)
	if err != nil {
		t.Fatal(err)
	}
	if len(mem) != len(hwm) || mem[0].PssKiB <= 0 {
		t.Errorf("treeMem(self) = %+v; want %d processes, self with a PSS", mem, len(hwm))
	}
	cpu, err := treeCPU(self)
	if err != nil {
		t.Fatal(err)
	}
	if len(cpu) != len(hwm) || cpu[0].pid != self {
		t.Errorf("treeCPU(self) = %+v; want %d processes, self first", cpu, len(hwm))
	}
	if _, err := treeHWM(1 << 30); err == nil {
		t.Error("treeHWM of a pid that does not exist: no error")
	}
}
