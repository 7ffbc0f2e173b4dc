package haproxytest

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/openhuman/openhuman-host/sdk/testwait"
)

func TestRender(t *testing.T) {
	cfg := []byte(`# head
global
    daemon
    user haproxy

defaults
    mode http

frontend mcp
    bind 127.0.0.1:9300
    # bind :443 ssl
    default_backend b

backend openhuman
    stick match req.hdr(Mcp-Session-Id)
    server r1 127.0.0.1:9301
    server r2 127.0.0.1:9302
`)
	got, err := Render(cfg, "global\n    maxconn 10", "127.0.0.1:4000", []string{"127.0.0.1:5001", "127.0.0.1:5002", "127.0.0.1:5003"})
	if err != nil {
		t.Fatal(err)
	}
	want := `# head
global
    maxconn 10

defaults
    mode http

frontend mcp
    bind 127.0.0.1:4000
    # bind :443 ssl
    default_backend b

backend openhuman
    stick match req.hdr(Mcp-Session-Id)
    server r1 127.0.0.1:5001
    server r2 127.0.0.1:5002
    server r3 127.0.0.1:5003
`
	if string(got) != want {
		t.Errorf("Render =\n%s\nwant\n%s", got, want)
	}
	if _, err := Render([]byte("defaults\n    mode http\n"), "global", "x", nil); err == nil {
		t.Error("Render of a configuration without global, bind and server lines succeeded")
	}
}

// TestExampleStickiness runs the example configuration in front of two
// plain HTTP servers that play replicas: requests carrying the session id
// a server issued always reach that server, requests without one reach
// both, /healthz keeps both UP, and a request to a stopped server's
// session goes to the other one.
func TestExampleStickiness(t *testing.T) {
	var hits [2]atomic.Int64
	var servers []string
	var backends []*httptest.Server
	for i := range 2 {
		name := fmt.Sprintf("s%d", i)
		ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Openhuman-Replica", name)
			// As a replica on loopback, refuse other Host headers; the
			// example names a replica by its loopback address.
			if r.Host != "127.0.0.1" {
				http.Error(w, "Host "+r.Host, http.StatusForbidden)
				return
			}
			if r.URL.Path == "/healthz" {
				return
			}
			hits[i].Add(1)
			if r.Header.Get("Mcp-Session-Id") == "" {
				w.Header().Set("Mcp-Session-Id", name+"-"+fmt.Sprint(time.Now().UnixNano()))
			}
		}))
		t.Cleanup(ts.Close)
		backends = append(backends, ts)
		servers = append(servers, strings.TrimPrefix(ts.URL, "http://"))
	}
	p := New(t, servers)
	ctx := context.Background()
	waitStates(t, p, map[string]string{"r1": "UP", "r2": "UP"})

	post := func(session string) (replica, newSession string) {
		t.Helper()
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, p.URL, strings.NewReader("{}"))
		req.Host = "mcp.example.com"
		if session != "" {
			req.Header.Set("Mcp-Session-Id", session)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("POST through the proxy: %d", resp.StatusCode)
		}
		return resp.Header.Get("Openhuman-Replica"), resp.Header.Get("Mcp-Session-Id")
	}
	owners := map[string]string{}
	for range 8 {
		replica, session := post("")
		if session == "" || !strings.HasPrefix(session, replica+"-") {
			t.Fatalf("initialize answered by %q with session %q", replica, session)
		}
		owners[session] = replica
	}
	seen := map[string]bool{}
	for session, owner := range owners {
		seen[owner] = true
		for range 5 {
			if got, _ := post(session); got != owner {
				t.Errorf("a request of session %s reached %s, not %s, which issued it", session, got, owner)
			}
		}
	}
	if len(seen) != 2 {
		t.Errorf("new sessions all went to %v; the balancer should use both servers", seen)
	}

	// A stopped server's sessions go elsewhere rather than fail at the proxy.
	backends[0].Close()
	for session, owner := range owners {
		if owner == "s0" {
			if got, _ := post(session); got != "s1" {
				t.Errorf("a session of the stopped server reached %q, want s1", got)
			}
			break
		}
	}
}

func waitStates(t *testing.T, p *Proxy, want map[string]string) {
	t.Helper()
	testwait.Retry(t, fmt.Sprintf("see server states %v", want), func() error {
		got, err := p.ServerStates(context.Background())
		if err == nil && fmt.Sprint(got) != fmt.Sprint(want) {
			err = fmt.Errorf("server states are %v", got)
		}
		return err
	})
}

// TestExampleIsValid: the example, unchanged (with its global section for
// Debian's packaged service), passes haproxy's own check.
func TestExampleIsValid(t *testing.T) {
	bin, err := Binary()
	if err != nil {
		if os.Getenv(EnvRequire) != "" {
			t.Fatal(err)
		}
		t.Skip(err)
	}
	out, err := exec.Command(bin, "-c", "-f", ExampleConfig()).CombinedOutput()
	if err != nil || !strings.Contains(string(out), "Configuration file is valid") {
		t.Errorf("haproxy -c -f %s: %v\n%s", ExampleConfig(), err, out)
	}
}
