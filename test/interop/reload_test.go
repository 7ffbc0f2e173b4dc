package interop_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/openhuman/openhuman-host/sdk/testwait"
)

// searxngFixture is a SearXNG JSON answer with one result.
const searxngFixture = `{"query":"reef survey","number_of_results":1,"results":[{"url":"https://example.org/reef","title":"Reef survey",` +
	`"content":"Coral bleaching seen at site four.","engine":"duckduckgo","engines":["duckduckgo"],"score":1.0,"category":"general"}],` +
	`"answers":[],"corrections":[],"infoboxes":[],"suggestions":[],"unresponsive_engines":[]}`

var reloadSummary = regexp.MustCompile(`(?m)^reload: (\d+) passed, (\d+) failed$`)

// TestReloadWithConnectedClient: a TypeScript SDK client stays connected
// over stdio while SIGHUP enables searxng (the client gets list_changed,
// sees [searxngtool.Search] and calls it against a local test server), an
// invalid config changes nothing (and the server logs the key and line),
// and SIGHUP disables it again (list_changed, the tool is gone).
func TestReloadWithConnectedClient(t *testing.T) {
	p := requireInterop(t)
	t.Parallel()
	searx := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/search" || r.URL.Query().Get("format") != "json" || r.URL.Query().Get("q") != "reef survey" {
			http.Error(w, "unexpected request "+r.URL.String(), http.StatusBadRequest)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(searxngFixture))
	}))
	defer searx.Close()

	sb := newSandbox(t)
	sb.writeConfig(t, "[providers.searxng]\nenabled = false\n")
	configPath := filepath.Join(sb.config, "openhuman-host", "config.toml")
	dir := clientDir(t, p, sb, "reload.mjs")
	ctx := testwait.Context(t)
	var stdout, stderr testwait.Buffer
	cmd := exec.CommandContext(ctx, p.node(), "reload.mjs", configPath, searx.URL, p.bin, "serve")
	cmd.Dir = dir
	cmd.Env = sb.environ(p.nodeDir())
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	cmd.WaitDelay = 5 * time.Second
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	tree := watchProcTree(t, cmd.Process.Pid, p.bin)
	runErr := cmd.Wait()
	for _, l := range strings.Split(strings.TrimSpace(stdout.String()), "\n") {
		t.Log(l)
	}
	m := reloadSummary.FindStringSubmatch(stdout.String())
	switch {
	case errors.Is(ctx.Err(), context.DeadlineExceeded):
		t.Fatalf("reload.mjs did not finish by the test's deadline; stderr:\n%s", indent(stderr.String()))
	case runErr != nil || m == nil || m[2] != "0" || m[1] != "5":
		t.Fatalf("reload.mjs failed (%v); stderr (client and server):\n%s", runErr, indent(stderr.String()))
	}
	for _, want := range []string{"config reload refused; the running configuration is unchanged", "config.toml:2", "providers.searxng.enabled"} {
		if !strings.Contains(stderr.String(), want) {
			t.Errorf("server log lacks %q:\n%s", want, indent(stderr.String()))
		}
	}
	tree.requireExited(t)
}
