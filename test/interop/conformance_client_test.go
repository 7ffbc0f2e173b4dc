package interop_test

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/openhuman/openhuman-host/internal/testwait"
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
	var missing, stale []string
	for _, s := range passedDirect {
		if !slices.Contains(passedThrough, s) {
			if _, ok := baseline[s]; !ok {
				missing = append(missing, s)
			}
		}
	}
	for s := range baseline {
		if slices.Contains(passedThrough, s) {
			stale = append(stale, s)
		}
	}
	var extra []string
	for _, s := range passedThrough {
		if !slices.Contains(passedDirect, s) {
			extra = append(extra, s)
		}
	}
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
// module in go.mod) and returns the binary.
func goBuild(t *testing.T, pkg string) string {
	t.Helper()
	out := filepath.Join(t.TempDir(), filepath.Base(pkg))
	cmd := exec.CommandContext(testwait.Context(t), "go", "build", "-o", out, pkg)
	cmd.Dir = "."
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("build %s: %v\n%s", pkg, err, b)
	}
	return out
}

// readBaseline reads a baseline file: one scenario per line, then its
// reason; # starts a comment.
func readBaseline(t *testing.T, path string) map[string]string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	out := map[string]string{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		name, reason, _ := strings.Cut(line, " ")
		if strings.TrimSpace(reason) == "" {
			t.Fatalf("%s: %s has no reason", path, name)
		}
		out[name] = strings.TrimSpace(reason)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// runClientSuite runs every client scenario of the suite with command as
// the client and returns the output without colour codes.
func runClientSuite(t *testing.T, p prereqs, sb *sandbox, command string) string {
	t.Helper()
	return runConformanceSuite(t, p, t.TempDir(), append(sb.environ(p.nodeDir()), "OPENHUMAN_HOST_BIN="+p.bin),
		"with "+filepath.Base(command), "client", "--command", command, "--suite", "all")
}
