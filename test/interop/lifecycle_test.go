package interop_test

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/openhuman/openhuman-host/sdk/testproc"
	"github.com/openhuman/openhuman-host/sdk/testwait"
)

// buildTestProvider builds test/testprovider, a provider that prints to
// stdout, spawns children and more on request, or finds it built, and
// returns its path and the config table that loads it as "kit".
func buildTestProvider(t *testing.T) (string, string) {
	t.Helper()
	bin := testproc.Build(t, "github.com/openhuman/openhuman-host/test/testprovider")
	b, err := os.ReadFile(bin)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(b)
	return bin, fmt.Sprintf("[providers.kit]\ncommand = %q\nsha256 = %q\n", bin, hex.EncodeToString(sum[:]))
}

// newKitSandbox returns a sandbox whose config loads the test provider
// as kit, and the provider's binary.
func newKitSandbox(t *testing.T) (*sandbox, string) {
	t.Helper()
	sb := newSandbox(t)
	bin, table := buildTestProvider(t)
	sb.writeConfig(t, table)
	return sb, bin
}

// TestPrintingProviderStdio: a provider that writes to stdout before its
// handshake, in Configure and during calls (through os.Stdout, descriptor
// 1 and a child process) leaves the TypeScript SDK client's stdio stream
// clean: no transport error, every check passes.
func TestPrintingProviderStdio(t *testing.T) {
	p := requireInterop(t)
	t.Parallel()
	sb, _ := newKitSandbox(t)
	extra, err := json.Marshal([]map[string]any{
		{"name": "kit.print", "text": "printed"},
		{"name": "kit.print", "text": "printed"},
		{"name": "kit.ping", "text": "pong "},
	})
	if err != nil {
		t.Fatal(err)
	}
	tree := runClient(t, p, sb, []string{"EXTRA_CALLS=" + string(extra)}, "stdio", p.bin, "serve")
	tree.requireExited(t)
}

// TestKilledHostLeavesNoProcess: after SIGKILL of a stdio server, none of
// its providers, nor what they started, runs 5s later.
func TestKilledHostLeavesNoProcess(t *testing.T) {
	p := requireServer(t)
	t.Parallel()
	sb, bin := newKitSandbox(t)
	srv := startServer(t, p, sb, "serve")
	srv.send(t, initializeRequest)
	expectResult(t, srv.reply(t), "1")
	srv.send(t, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	srv.send(t, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"kit.spawn","arguments":{}}}`)
	m := srv.reply(t)
	expectResult(t, m, "2")
	var res struct {
		Content []struct{ Text string } `json:"content"`
		IsError bool                    `json:"isError"`
	}
	if err := json.Unmarshal(m.Result, &res); err != nil || res.IsError || len(res.Content) != 1 {
		t.Fatalf("kit.spawn: %s (%v)", m.Result, err)
	}
	child, err := strconv.Atoi(res.Content[0].Text)
	if err != nil {
		t.Fatalf("kit.spawn returned %q", res.Content[0].Text)
	}
	srv.tree.scan()

	if err := srv.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-srv.done
	srv.tree.halt()
	providers, others := srv.tree.split()
	all := append(providers, others...)
	var names []string
	sawChild := false
	for _, ps := range all {
		if len(ps.argv) > 0 {
			names = append(names, filepath.Base(ps.argv[0]))
		}
		sawChild = sawChild || ps.pid == child
	}
	if len(providers) == 0 || !slices.Contains(names, filepath.Base(bin)) || !sawChild {
		t.Fatalf("the server's tree lacks a built-in provider, the kit provider or its child %d: %v", child, all)
	}
	start := time.Now()
	if left := waitGone(all, testwait.Deadline(t)); len(left) > 0 {
		t.Errorf("still running at the test's deadline after the server was killed: %v", left)
	}
	t.Logf("every descendant gone %s after SIGKILL of the server", time.Since(start).Round(time.Millisecond))
	srv.tree.killRunning()
}

// closeGrace is the stdio_close_grace_secs of TestShutdownCancelsRunningCalls,
// which waits it out: shorter than the default 10 s.
const closeGrace = time.Second

// TestShutdownCancelsRunningCalls: closing stdin lets a running call go on
// for the grace period ([server] stdio_close_grace_secs, shortened here to
// closeGrace), then cancels it, answers it, and the server exits; SIGTERM
// cancels at once.
func TestShutdownCancelsRunningCalls(t *testing.T) {
	p := requireServer(t)
	t.Parallel()
	for _, how := range []string{"eof", "sigterm"} {
		t.Run(how, func(t *testing.T) {
			t.Parallel()
			sb := newSandbox(t)
			_, table := buildTestProvider(t)
			sb.writeConfig(t, fmt.Sprintf("[server]\nstdio_close_grace_secs = %d\n%s", int(closeGrace/time.Second), table))
			srv := startServer(t, p, sb, "serve")
			srv.send(t, initializeRequest)
			expectResult(t, srv.reply(t), "1")
			srv.send(t, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
			// kit.wait reports progress once it runs, then waits to be cancelled.
			srv.send(t, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"kit.wait","arguments":{},"_meta":{"progressToken":"w"}}}`)
			for {
				line, ok := srv.stdout.next(testwait.Deadline(t))
				if !ok {
					t.Fatalf("kit.wait did not report progress by the test's deadline; stderr:\n%s", indent(srv.stderr.String()))
				}
				if strings.Contains(line, `"notifications/progress"`) {
					break
				}
			}
			start := time.Now()
			if how == "eof" {
				_ = srv.stdin.Close()
				m := srv.reply(t)
				if string(m.ID) != "2" || !strings.Contains(string(m.Result), "openhuman-host is shutting down") {
					t.Errorf("answer to the running call: %s %s", m.ID, m.Result)
				}
			} else if err := srv.cmd.Process.Signal(syscall.SIGTERM); err != nil {
				t.Fatal(err)
			}
			// kit.wait never ends by itself, so the server exits only if it
			// cancels the call.
			select {
			case <-srv.done:
			case <-testwait.After(t):
				t.Fatalf("server still running at the test's deadline after %s", how)
			}
			took := time.Since(start)
			t.Logf("exited %s after %s", took.Round(time.Millisecond), how)
			// After EOF the call gets the grace period first; a timer never
			// fires early, however loaded the machine.
			if how == "eof" && took < closeGrace {
				t.Errorf("exit %s after EOF, want the call's %s grace first", took, closeGrace)
			}
			srv.tree.requireExited(t)
		})
	}
}
