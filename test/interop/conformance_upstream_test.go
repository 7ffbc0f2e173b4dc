package interop_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/openhuman/openhuman-host/sdk/testwait"
)

// scenarioLine is one line of the suite's summary: "✓ name: 1 passed, 0
// failed" or "✗ name: 0 passed, 1 failed".
var scenarioLine = regexp.MustCompile(`(?m)^\s*[✓✗]\s+(\S+):\s+(\d+) passed, (\d+) failed`)

// TestConformanceThroughUpstream runs the whole active conformance suite
// twice: against the go-sdk's conformance everything-server on its own
// (over Streamable HTTP), and against openhuman-host serving that same
// server as its one upstream (over stdio, prefix ""). Every scenario that
// passes directly must pass through the host: tools, resources, prompts,
// completion, subscriptions, logging, progress, sampling and elicitation
// are relayed transparently, with the upstream provider in the host's
// process and in a plugin process of its own ([upstream] process).
func TestConformanceThroughUpstream(t *testing.T) {
	p := requireInterop(t)
	t.Parallel()
	sb := newSandbox(t)
	everything := buildEverythingServer(t)

	direct := runSuite(t, p, sb, serveEverything(t, sb, everything, false))
	passedDirect := passed(direct)
	if len(passedDirect) < 20 {
		t.Fatalf("only %d scenarios pass against everything-server directly (want ≥ 20); summary:\n%s", len(passedDirect), indent(summary(direct)))
	}

	for _, process := range []string{"host", "plugin"} {
		t.Run(process, func(t *testing.T) {
			sb := newSandbox(t)
			sb.writeConfig(t, fmt.Sprintf("[upstream]\nprocess = %q\n\n[[upstream.servers]]\nname = \"conformance\"\ncommand = %q\nprefix = \"\"\ntrust_annotations = true\n",
				process, everything))
			srv := startHTTPServer(t, p, sb)
			defer srv.stop(t, "sigterm")
			through := runSuite(t, p, sb, srv.url)
			passedThrough := passed(through)
			missing := notIn(passedDirect, passedThrough)
			t.Logf("%d scenarios pass directly, %d through the host (upstream provider process = %q)", len(passedDirect), len(passedThrough), process)
			if len(missing) > 0 {
				t.Errorf("scenarios that pass against everything-server but not through the host: %s\nsummary through the host:\n%s\nhost stderr:\n%s",
					strings.Join(missing, ", "), indent(summary(through)), indent(srv.stderr.String()))
			}
		})
	}
}

// buildEverythingServer builds github.com/modelcontextprotocol/go-sdk's
// conformance/everything-server at the go-sdk version in go.mod.
func buildEverythingServer(t *testing.T) string {
	t.Helper()
	return goBuild(t, "github.com/modelcontextprotocol/go-sdk/conformance/everything-server")
}

// runSuite runs the whole active conformance suite against url and returns
// its output without colour codes. A failing scenario is not an error
// here: the caller compares.
func runSuite(t *testing.T, p prereqs, sb *sandbox, url string) string {
	t.Helper()
	results := t.TempDir()
	out := runConformanceSuite(t, results, sb.environ(p.nodeDir()), "against "+url, p.conformance("server", "--url", url)...)
	if os.Getenv("OPENHUMAN_CONFORMANCE_DETAILS") != "" {
		t.Log(resultFiles(results))
	}
	return out
}

// runConformanceSuite runs argv, a command line of the pinned conformance
// suite (its results in results, env its environment), and returns its
// output without colour codes. A failing scenario is not an error here:
// the caller compares; not finishing, not running, or printing no summary
// is.
func runConformanceSuite(t *testing.T, results string, env []string, what string, argv ...string) string {
	t.Helper()
	ctx := testwait.Context(t)
	argv = append(argv, "-o", results)
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Dir = results
	cmd.Env = env
	cmd.WaitDelay = 5 * time.Second
	start := time.Now()
	raw, err := cmd.CombinedOutput()
	out := ansiEscape.ReplaceAllString(string(raw), "")
	t.Logf("conformance suite %s took %s", what, time.Since(start).Round(time.Millisecond))
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		t.Fatalf("the conformance suite did not finish by the test's deadline; output:\n%s", indent(out))
	}
	var exit *exec.ExitError
	if err != nil && !errors.As(err, &exit) {
		t.Fatalf("run the conformance suite: %v\n%s", err, indent(out))
	}
	if len(scenarioLine.FindAllStringSubmatch(out, -1)) == 0 {
		t.Fatalf("no scenario summary in the suite's output:\n%s", indent(out))
	}
	return out
}

// passed lists the scenarios of a suite output that had no failed check.
func passed(out string) []string {
	var names []string
	for _, m := range scenarioLine.FindAllStringSubmatch(out, -1) {
		if m[3] == "0" && m[2] != "0" {
			names = append(names, m[1])
		}
	}
	return names
}

// notIn returns the names of from that in lacks, in from's order.
func notIn(from, in []string) []string {
	var out []string
	for _, s := range from {
		if !slices.Contains(in, s) {
			out = append(out, s)
		}
	}
	return out
}

// summary returns the suite's summary lines.
func summary(out string) string {
	var lines []string
	for _, m := range scenarioLine.FindAllString(out, -1) {
		lines = append(lines, strings.TrimSpace(m))
	}
	return strings.Join(lines, "\n")
}
