package main

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// procHWM is one process's peak resident set size.
type procHWM struct {
	Pid    int    `json:"pid"`
	Name   string `json:"name"`
	HWMKiB int64  `json:"vm_hwm_kib"`
}

// treeHWM returns VmHWM of pid and of every descendant of pid, parents
// first.
func treeHWM(pid int) ([]procHWM, error) {
	return readTree(pid, func(p int) (procHWM, string, error) {
		name, hwm, err := readStatus(p)
		return procHWM{Pid: p, HWMKiB: hwm}, name, err
	}, func(v *procHWM, name string) { v.Name = name })
}

// readTree reads pid and each of its descendants with read, parents
// first, and names each with setName: by the name read returned or, for a
// descendant running the root's executable (a built-in provider, which is
// `openhuman-host provider memory`), by its command line. A descendant
// read fails on has exited meanwhile and is left out; the root's failure
// is returned.
func readTree[T any](pid int, read func(p int) (T, string, error), setName func(v *T, name string)) ([]T, error) {
	children, err := childMap()
	if err != nil {
		return nil, err
	}
	var out []T
	var rootName string
	queue := []int{pid}
	for seen := 0; len(queue) > 0 && seen < 1000; seen++ {
		p := queue[0]
		queue = queue[1:]
		v, name, err := read(p)
		if err != nil {
			if p == pid {
				return nil, err
			}
			continue // exited meanwhile
		}
		if p == pid {
			rootName = name
		} else if name == rootName {
			name = label(p, name)
		}
		setName(&v, name)
		out = append(out, v)
		queue = append(queue, children[p]...)
	}
	return out, nil
}

// label names a descendant that runs the same executable as the root,
// such as a built-in provider (`openhuman-host provider memory`), by its
// command line.
func label(pid int, name string) string {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	if err != nil {
		return name + " (child)"
	}
	args := strings.Split(strings.TrimRight(string(b), "\x00"), "\x00")
	if len(args) < 2 {
		return name + " (child)"
	}
	return name + " " + strings.Join(args[1:], " ")
}

// childMap maps every process id to its children's, from /proc/*/stat.
func childMap() (map[int][]int, error) {
	stats, err := filepath.Glob("/proc/[0-9]*/stat")
	if err != nil {
		return nil, err
	}
	m := map[int][]int{}
	for _, path := range stats {
		b, err := os.ReadFile(path)
		if err != nil {
			continue // exited meanwhile
		}
		pid, ppid, ok := parseStat(b)
		if ok {
			m[ppid] = append(m[ppid], pid)
		}
	}
	return m, nil
}

// parseStat reads pid and ppid from a /proc/<pid>/stat line. The command
// name in parentheses may hold spaces and parentheses, so the fields are
// read after its last ')'.
func parseStat(b []byte) (pid, ppid int, ok bool) {
	open, end := bytes.IndexByte(b, '('), bytes.LastIndexByte(b, ')')
	if open < 1 || end < open {
		return 0, 0, false
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b[:open])))
	if err != nil {
		return 0, 0, false
	}
	fields := strings.Fields(string(b[end+1:]))
	if len(fields) < 2 {
		return 0, 0, false
	}
	ppid, err = strconv.Atoi(fields[1])
	if err != nil {
		return 0, 0, false
	}
	return pid, ppid, true
}

// readStatus returns the Name and VmHWM (KiB) of /proc/<pid>/status.
func readStatus(pid int) (string, int64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return "", 0, err
	}
	return parseStatus(b)
}

func parseStatus(b []byte) (string, int64, error) {
	var name string
	hwm := int64(-1)
	for _, line := range strings.Split(string(b), "\n") {
		k, v, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		v = strings.TrimSpace(v)
		switch k {
		case "Name":
			name = v
		case "VmHWM":
			n, err := strconv.ParseInt(strings.TrimSuffix(v, " kB"), 10, 64)
			if err != nil {
				return "", 0, fmt.Errorf("VmHWM %q: %w", v, err)
			}
			hwm = n
		}
	}
	if hwm < 0 {
		return "", 0, fmt.Errorf("no VmHWM line (a zombie or kernel thread?)")
	}
	return name, hwm, nil
}

// clockTicks is the unit of utime and stime in /proc/<pid>/stat (USER_HZ,
// 100 on Linux for every architecture Go supports).
const clockTicks = 100

// procCPU is the CPU time (user + system) one process has used so far.
type procCPU struct {
	pid  int
	name string
	cpu  time.Duration
}

// treeCPU returns the CPU time of pid and of each of its descendants,
// parents first.
func treeCPU(pid int) ([]procCPU, error) {
	return readTree(pid, func(p int) (procCPU, string, error) {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", p))
		if err != nil {
			return procCPU{}, "", err
		}
		name, ticks, ok := parseStatCPU(b)
		if !ok {
			return procCPU{}, "", fmt.Errorf("/proc/%d/stat: unexpected format", p)
		}
		return procCPU{pid: p, cpu: time.Duration(ticks) * time.Second / clockTicks}, name, nil
	}, func(v *procCPU, name string) { v.name = name })
}

// cpuDelta is the CPU time each process in after used since before, by
// process name (processes of the same name are added up), and the total.
func cpuDelta(before, after []procCPU) (map[string]time.Duration, time.Duration) {
	was := map[int]time.Duration{}
	for _, p := range before {
		was[p.pid] = p.cpu
	}
	by := map[string]time.Duration{}
	var total time.Duration
	for _, p := range after {
		d := p.cpu - was[p.pid]
		by[p.name] += d
		total += d
	}
	return by, total
}

// parseStatCPU returns the command name and utime + stime (fields 2, 14
// and 15) of a /proc/<pid>/stat line.
func parseStatCPU(b []byte) (string, int64, bool) {
	open, end := bytes.IndexByte(b, '('), bytes.LastIndexByte(b, ')')
	if open < 0 || end < open {
		return "", 0, false
	}
	name := string(b[open+1 : end])
	fields := strings.Fields(string(b[end+1:]))
	// fields[0] is field 3 (state), so field n is fields[n-3].
	if len(fields) < 13 {
		return "", 0, false
	}
	u, err1 := strconv.ParseInt(fields[11], 10, 64)
	s, err2 := strconv.ParseInt(fields[12], 10, 64)
	if err1 != nil || err2 != nil {
		return "", 0, false
	}
	return name, u + s, true
}

// procMem is one process's proportional and anonymous resident memory at
// one moment, from /proc/<pid>/smaps_rollup.
type procMem struct {
	Name string `json:"name"`
	// PssKiB is the proportional set size: private pages plus each
	// shared page divided by the number of processes mapping it, so
	// the PSS of processes that map one executable adds up to what
	// they cost together.
	PssKiB int64 `json:"pss_kib"`
	// AnonKiB is the anonymous resident memory (heaps, stacks): what
	// the process itself allocated, without file pages.
	AnonKiB int64 `json:"anon_kib"`
}

// treeMem returns PSS and anonymous RSS of pid and of each of its
// descendants, parents first.
func treeMem(pid int) ([]procMem, error) {
	return readTree(pid, func(p int) (procMem, string, error) {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/smaps_rollup", p))
		if err != nil {
			return procMem{}, "", err
		}
		m, err := parseSmapsRollup(b)
		if err != nil {
			return procMem{}, "", fmt.Errorf("/proc/%d/smaps_rollup: %w", p, err)
		}
		name, _, err := readStatus(p)
		return m, name, err
	}, func(v *procMem, name string) { v.Name = name })
}

// parseSmapsRollup reads the Pss and Anonymous lines (kB) of a
// /proc/<pid>/smaps_rollup file.
func parseSmapsRollup(b []byte) (procMem, error) {
	m := procMem{PssKiB: -1, AnonKiB: -1}
	for _, line := range strings.Split(string(b), "\n") {
		k, v, ok := strings.Cut(line, ":")
		if !ok || (k != "Pss" && k != "Anonymous") {
			continue
		}
		v = strings.TrimSpace(v)
		n, err := strconv.ParseInt(strings.TrimSuffix(v, " kB"), 10, 64)
		if err != nil {
			return procMem{}, fmt.Errorf("%s %q: %w", k, v, err)
		}
		if k == "Pss" {
			m.PssKiB = n
		} else {
			m.AnonKiB = n
		}
	}
	if m.PssKiB < 0 || m.AnonKiB < 0 {
		return procMem{}, errors.New("no Pss or Anonymous line")
	}
	return m, nil
}
