package plugins

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/openhuman/openhuman-host/sdk/plugin"
	"github.com/openhuman/openhuman-host/sdk/testwait"
)

// TestReattachToProviderInDebugMode starts the test provider by hand in
// debug mode, as a debugger would, and has the host use it through the
// reattach config it prints instead of starting the spec's command.
func TestReattachToProviderInDebugMode(t *testing.T) {
	t.Parallel()
	cmd := exec.Command(kitPath)
	cmd.Env = append(os.Environ(), "OPENHUMAN_PROVIDER_DEBUG=kit")
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
	})
	lines := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			if v, ok := strings.CutPrefix(sc.Text(), plugin.EnvReattach+"='"); ok {
				lines <- strings.TrimSuffix(v, "'")
			}
		}
		exited <- cmd.Wait()
	}()
	reattach, err := plugin.ParseReattach(testwait.Recv(t, lines, "the provider's reattach line"))
	if err != nil {
		t.Fatal(err)
	}
	if rc := reattach["kit"]; rc == nil || rc.Pid != cmd.Process.Pid || rc.ProtocolVersion != plugin.ProtocolVersion {
		t.Fatalf("reattach config %+v, want the provider's pid %d and protocol %d", rc, cmd.Process.Pid, plugin.ProtocolVersion)
	}

	// No executable at the spec's path and no checksum: the host must not
	// start anything.
	spec := Spec{Name: "kit", Path: "/nonexistent/kit", Verify: true, DataDir: t.TempDir()}
	m, p := startKit(t, Options{Reattach: reattach}, spec)
	// kit.ping answers with its pid: the process started by hand.
	if got, err := ping(t.Context(), p); err != nil || got != fmt.Sprintf("pong %d", cmd.Process.Pid) {
		t.Fatalf("ping through the reattached provider: %q %v", got, err)
	}
	// Stopping the provider ends its debug session, and its process.
	m.Close()
	if err := testwait.Recv(t, exited, "the debugged provider to exit"); err != nil {
		t.Errorf("the debugged provider exited with %v", err)
	}
}
