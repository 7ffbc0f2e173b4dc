package interop_test

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/openhuman/openhuman-host/sdk/testproc"
	"github.com/openhuman/openhuman-host/sdk/testwait"
)

// TestConformanceClientThroughUpstream runs the conformance suite's client
// scenarios (the upstream side of the host: transport, elicitation, and
// OAuth sign-in in all its variants) twice: with the go-sdk's reference
// everything-client, and with testdata/conformanceclient, which puts each
// scenario's mock server behind openhuman-host as its one upstream server
// and does the same through the host. Every scenario the reference client
// passes must pass through the host, unless
// testdata/conformance-client-baseline.txt names it with a reason.
func TestConformanceClientThroughUpstream(t *testing.T) {
	p := requireInterop(t)
	t.Parallel()
	sb := newSandbox(t)
	reference := goBuild(t, "github.com/modelcontextprotocol/go-sdk/conformance/everything-client")
	wrapper := goBuild(t, "./testdata/conformanceclient")
	baseline := readBaseline(t, "testdata/conformance-client-baseline.txt")

	direct := runClientSuite(t, p, sb, reference)
	passedDirect := passed(direct)
	if len(passedDirect) < 20 {
		t.Fatalf("only %d client scenarios pass with the reference client (want ≥ 20); summary:\n%s", len(passedDirect), indent(summary(direct)))
	}
	through := runClientSuite(t, p, sb, wrapper)
	passedThrough := passed(through)
	missing := slices.DeleteFunc(notIn(passedDirect, passedThrough), func(s string) bool {
		_, known := baseline[s]
		return known
	})
	var stale []string
	for s := range baseline {
		if slices.Contains(passedThrough, s) {
			stale = append(stale, s)
		}
	}
	extra := notIn(passedThrough, passedDirect)
	t.Logf("%d client scenarios pass with the reference client, %d through the host (also %v)", len(passedDirect), len(passedThrough), extra)
	if len(missing) > 0 {
		t.Errorf("client scenarios that pass with the reference client but not through the host: %s\nsummary through the host:\n%s",
			strings.Join(missing, ", "), indent(summary(through)))
	}
	if len(stale) > 0 {
		slices.Sort(stale)
		t.Errorf("the baseline lists scenarios that pass through the host now; remove them: %s", strings.Join(stale, ", "))
	}
}

// goBuild builds the Go package pkg (a path within this module or a
// module in go.mod), or finds it built, and returns the binary.
func goBuild(t *testing.T, pkg string) string {
	t.Helper()
	return testproc.Build(t, pkg)
}

// readBaseline reads a baseline file: one scenario per line, then its
// reason; # starts a comment.
func readBaseline(t *testing.T, path string) map[string]string {
	t.Helper()
	out := map[string]string{}
	eachLine(t, path, func(line string) {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			return
		}
		name, reason, _ := strings.Cut(line, " ")
		if strings.TrimSpace(reason) == "" {
			t.Fatalf("%s: %s has no reason", path, name)
		}
		out[name] = strings.TrimSpace(reason)
	})
	return out
}

// eachLine calls fn with each line of the file at path (lines of up to
// 1 MiB), failing t when the file cannot be read.
func eachLine(t *testing.T, path string, fn func(line string)) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		fn(sc.Text())
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
}

// clientParallel is how many client scenarios run at once: through the
// host each one starts a server, its upstream provider and a sign-in, and
// the suite's own --suite all would start them all together, more than a
// busy 2-core machine finishes within a scenario's 30 s.
const clientParallel = 6

// clientOutcome is the last line of one scenario's run.
var clientOutcome = regexp.MustCompile(`(?m)^Passed: (\d+)/(\d+), (\d+) failed`)

// runClientSuite runs every client scenario of the suite, clientParallel
// at a time, with command as the client, and returns a summary in the
// suite's own format ("✓ name: 3 passed, 0 failed").
func runClientSuite(t *testing.T, p prereqs, sb *sandbox, command string) string {
	t.Helper()
	argv := p.conformanceClient("list", "--client")
	list, err := exec.CommandContext(testwait.Context(t), argv[0], argv[1:]...).Output()
	if err != nil {
		t.Fatalf("list the client scenarios: %v", err)
	}
	var names []string
	for _, m := range regexp.MustCompile(`(?m)^\s+- (\S+)`).FindAllStringSubmatch(string(list), -1) {
		names = append(names, m[1])
	}
	if len(names) < 30 {
		t.Fatalf("only %d client scenarios listed:\n%s", len(names), list)
	}
	env := append(sb.environ(p.nodeDir()), "OPENHUMAN_HOST_BIN="+p.bin)
	lines := make([]string, len(names))
	sem := make(chan struct{}, clientParallel)
	var wg sync.WaitGroup
	start := time.Now()
	for i, name := range names {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			argv := p.conformanceClient("client", "--command", command, "--scenario", name)
			cmd := exec.CommandContext(testwait.Context(t), argv[0], argv[1:]...)
			cmd.Dir = t.TempDir()
			cmd.Env = env
			cmd.WaitDelay = 5 * time.Second
			raw, _ := cmd.CombinedOutput()
			out := ansiEscape.ReplaceAllString(string(raw), "")
			m := clientOutcome.FindStringSubmatch(out)
			switch {
			case m == nil:
				lines[i] = fmt.Sprintf("✗ %s: 0 passed, 1 failed (no result)", name)
			case m[3] == "0" && m[1] != "0":
				lines[i] = fmt.Sprintf("✓ %s: %s passed, 0 failed", name, m[1])
			default:
				lines[i] = fmt.Sprintf("✗ %s: %s passed, %s failed", name, m[1], m[3])
			}
			if os.Getenv("OPENHUMAN_CONFORMANCE_DETAILS") != "" && !strings.HasPrefix(lines[i], "✓") {
				t.Logf("%s with %s:\n%s", name, filepath.Base(command), indent(out))
			}
		})
	}
	wg.Wait()
	t.Logf("%d client scenarios with %s took %s", len(names), filepath.Base(command), time.Since(start).Round(time.Millisecond))
	return strings.Join(lines, "\n") + "\n"
}
