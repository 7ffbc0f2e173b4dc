package interop_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/openhuman/openhuman-host/sdk/testwait"
)

// procStat is one process as /proc shows it. pid plus start time (clock
// ticks since boot) names exactly one process, even if the pid is reused.
type procStat struct {
	pid   int
	ppid  int
	state byte
	start uint64
	argv  []string
}

type procKey struct {
	pid   int
	start uint64
}

func (p procStat) key() procKey { return procKey{p.pid, p.start} }

func (p procStat) String() string {
	return fmt.Sprintf("pid %d (%s)", p.pid, strings.Join(p.argv, " "))
}

// readStat parses /proc/<pid>/stat. The command name is in parentheses and
// may contain anything, so the fields are counted from the last ')'.
func readStat(pid int) (procStat, bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return procStat{}, false
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return procStat{}, false
	}
	// After the name: state(3) ppid(4) ... starttime(22).
	f := strings.Fields(s[i+1:])
	if len(f) < 20 || f[0] == "" {
		return procStat{}, false
	}
	ppid, err1 := strconv.Atoi(f[1])
	start, err2 := strconv.ParseUint(f[19], 10, 64)
	if err1 != nil || err2 != nil {
		return procStat{}, false
	}
	return procStat{pid: pid, ppid: ppid, state: f[0][0], start: start}, true
}

func readArgv(pid int) []string {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline")
	if err != nil || len(b) == 0 {
		return nil
	}
	return strings.Split(strings.TrimRight(string(b), "\x00"), "\x00")
}

func listProcs() []procStat {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	out := make([]procStat, 0, len(entries))
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if p, ok := readStat(pid); ok {
			out = append(out, p)
		}
	}
	return out
}

// running reports whether exactly this process still runs. A zombie has
// exited; it only waits for its parent to reap it.
func running(p procStat) bool {
	cur, ok := readStat(p.pid)
	return ok && cur.start == p.start && cur.state != 'Z' && cur.state != 'X'
}

// procTree records every process that was ever a descendant of root while
// root ran, by polling /proc. Providers are children of the server and
// live as long as its session, so a short poll interval sees them all.
type procTree struct {
	root    procStat
	binName string

	mu   sync.Mutex
	seen map[procKey]procStat

	once sync.Once
	quit chan struct{}
	done chan struct{}
}

const procPollInterval = 20 * time.Millisecond

func watchProcTree(t *testing.T, rootPid int, bin string) *procTree {
	t.Helper()
	root, ok := readStat(rootPid)
	if !ok {
		t.Fatalf("pid %d has no /proc entry", rootPid)
	}
	w := &procTree{
		root:    root,
		binName: filepath.Base(bin),
		seen:    map[procKey]procStat{},
		quit:    make(chan struct{}),
		done:    make(chan struct{}),
	}
	w.scan()
	go func() {
		defer close(w.done)
		tick := time.NewTicker(procPollInterval)
		defer tick.Stop()
		for {
			select {
			case <-w.quit:
				return
			case <-tick.C:
				w.scan()
			}
		}
	}()
	t.Cleanup(w.halt)
	return w
}

// scan adds root's current descendants to the record.
func (w *procTree) scan() {
	if !running(w.root) {
		return
	}
	children := map[int][]procStat{}
	for _, p := range listProcs() {
		children[p.ppid] = append(children[p.ppid], p)
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	queue := []int{w.root.pid}
	for len(queue) > 0 {
		pid := queue[0]
		queue = queue[1:]
		for _, c := range children[pid] {
			// argv changes once a forked child execs; keep the latest.
			if argv := readArgv(c.pid); argv != nil {
				c.argv = argv
			} else if old, ok := w.seen[c.key()]; ok {
				c.argv = old.argv
			}
			w.seen[c.key()] = c
			queue = append(queue, c.pid)
		}
	}
}

func (w *procTree) halt() {
	w.once.Do(func() { close(w.quit) })
	<-w.done
}

func (w *procTree) isProvider(p procStat) bool {
	return len(p.argv) >= 2 && filepath.Base(p.argv[0]) == w.binName && p.argv[1] == "provider"
}

// split returns the providers seen and every other descendant.
func (w *procTree) split() (providers, others []procStat) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, p := range w.seen {
		if w.isProvider(p) {
			providers = append(providers, p)
		} else {
			others = append(others, p)
		}
	}
	return providers, others
}

// killRunning kills every recorded descendant that still runs
// (checked by pid and start time), so a failed or timed-out run leaves
// nothing behind.
func (w *procTree) killRunning() {
	providers, others := w.split()
	for _, p := range append(others, providers...) {
		if running(p) {
			if proc, err := os.FindProcess(p.pid); err == nil {
				_ = proc.Kill()
			}
		}
	}
}

// waitGone polls until none of procs runs or the timeout passes, and
// returns the ones still running.
func waitGone(procs []procStat, deadline time.Time) []procStat {
	for {
		var left []procStat
		for _, p := range procs {
			if running(p) {
				left = append(left, p)
			}
		}
		if len(left) == 0 || time.Now().After(deadline) {
			return left
		}
		time.Sleep(procPollInterval)
	}
}

// requireExited is called once root has exited. It checks that at least one
// provider ran under it and that nothing it started outlives it: other
// descendants (the server, when root is a client) get a few seconds to
// finish, then every provider must be gone.
func (w *procTree) requireExited(t *testing.T) {
	t.Helper()
	w.halt()
	providers, others := w.split()
	if len(providers) == 0 {
		t.Errorf("no `%s provider` process was seen under pid %d, so the exit check proves nothing", w.binName, w.root.pid)
	}
	if left := waitGone(others, testwait.Deadline(t)); len(left) > 0 {
		t.Errorf("still running at the test's deadline after pid %d exited: %v (killing them)", w.root.pid, left)
	}
	if left := waitGone(providers, testwait.Deadline(t)); len(left) > 0 {
		t.Errorf("provider processes survived the server: %v (killing them)", left)
	}
	w.killRunning()
}
