package interop_test

import (
	"fmt"
	"net"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/openhuman/openhuman-host/sdk/testproc"
	"github.com/openhuman/openhuman-host/sdk/testwait"
)

// requirementsBaseline lists scenarios that pass against everything-server
// alone but may fail through the host, with the reason (see the file).
const requirementsBaseline = "testdata/conformance-requirements-baseline.txt"

// fixtureFree are the scenarios of each revision that need none of the
// conformance fixture tools, so the host must pass them on its own.
var fixtureFree = map[string][]string{
	"2025-11-25": {"server-initialize", "server-session-lifecycle", "ping", "logging-set-level", "tools-list", "resources-list", "prompts-list", "dns-rebinding-protection"},
	"2026-07-28": {"tools-list", "resources-list", "prompts-list", "dns-rebinding-protection", "caching", "http-header-validation"},
}

// TestConformanceRequirements runs the conformance suite (0.2.0-alpha.11,
// server mode) with --requirements for each revision the host serves on
// one HTTP endpoint: 2025-11-25 (sessions) and 2026-07-28 (stateless).
// For each it runs the suite against the go-sdk's everything-server alone
// (stateful for 2025-11-25, stateless for 2026-07-28), against
// openhuman-host with that server as its one upstream, and against the
// host alone. Every scenario that passes against everything-server must
// pass through the host, save those the baseline file lists with a
// reason, and the host alone must pass the scenarios that need no
// fixture tools.
func TestConformanceRequirements(t *testing.T) {
	p := requireInterop(t)
	t.Parallel()
	everything := buildEverythingServer(t)
	baseline := readBaseline(t, requirementsBaseline)
	for _, rev := range []string{"2025-11-25", "2026-07-28"} {
		t.Run(rev, func(t *testing.T) {
			t.Parallel()
			sb := newSandbox(t)
			url := serveEverything(t, sb, everything, rev >= "2026-07-28")
			direct := runRequirements(t, p, sb, url, rev)

			sb.writeConfig(t, fmt.Sprintf("[[upstream.servers]]\nname = \"conformance\"\ncommand = %q\nprefix = \"\"\ntrust_annotations = true\n", everything))
			srv := startHTTPServer(t, p, sb)
			through := runRequirements(t, p, sb, srv.url, rev)
			srv.stop(t, "sigterm")

			passedThrough := passed(through)
			var missing []string
			for _, s := range passed(direct) {
				if slices.Contains(passedThrough, s) {
					continue
				}
				if reason, ok := baseline[rev+"/"+s]; ok {
					t.Logf("%s fails through the host, as the baseline expects: %s", s, reason)
					continue
				}
				missing = append(missing, s)
			}
			t.Logf("%d scenarios pass against everything-server, %d through the host", len(passed(direct)), len(passedThrough))
			if len(missing) > 0 {
				t.Errorf("scenarios that pass against everything-server but not through the host: %s\nsummary through the host:\n%s\nhost stderr:\n%s",
					strings.Join(missing, ", "), indent(summary(through)), indent(srv.stderr.String()))
			}
			for name := range baseline {
				if s, ok := strings.CutPrefix(name, rev+"/"); ok && slices.Contains(passedThrough, s) {
					t.Errorf("%s passes through the host now: remove it from %s", s, requirementsBaseline)
				}
			}

			alone := newSandbox(t)
			host := startHTTPServer(t, p, alone)
			own := passed(runRequirements(t, p, alone, host.url, rev))
			host.stop(t, "sigterm")
			for _, s := range fixtureFree[rev] {
				if !slices.Contains(own, s) {
					t.Errorf("the host alone fails %s (%s)", s, rev)
				}
			}
		})
	}
}

// serveEverything serves everything-server over Streamable HTTP on a free
// loopback port, stateless or with sessions, until t ends, and returns its
// URL.
func serveEverything(t *testing.T, sb *sandbox, bin string, stateless bool) string {
	t.Helper()
	port, err := testproc.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	cmd := exec.Command(bin, "-http="+addr, fmt.Sprintf("-stateless=%v", stateless))
	cmd.Env = sb.environ("")
	var stderr testwait.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatalf("start everything-server: %v", err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	testwait.Retry(t, "reach everything-server on "+addr, func() error {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err != nil {
			return fmt.Errorf("%w; stderr:\n%s", err, indent(stderr.String()))
		}
		return c.Close()
	})
	return "http://" + addr + "/mcp"
}

// runRequirements runs the scenarios revision rev requires against url
// and returns the suite's output without colour codes.
func runRequirements(t *testing.T, p prereqs, sb *sandbox, url, rev string) string {
	t.Helper()
	results := t.TempDir()
	return runConformanceSuite(t, results, sb.environ(p.nodeDir()), rev+" against "+url,
		p.conformanceClient("server", "--url", url, "--requirements", rev)...)
}
