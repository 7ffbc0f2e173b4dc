// Package haproxytest gives tests a real load balancer: HAProxy from the
// system's binary (Debian's haproxy package), run in the foreground in a
// temporary directory and listening on a loopback port, with the
// repository's example configuration (examples/haproxy/haproxy.cfg) in
// front of the servers a test names.
//
// Of the example, only what ties it to a machine changes ([Render]): its
// global section becomes one for an unprivileged foreground process with
// an admin socket, its frontend binds the test's port, and its backend
// lists the test's servers. Stickiness, health checks, retries and
// timeouts are the example's own, so the tests check the file operators
// copy.
//
// Without the haproxy binary a test skips, or fails when
// OPENHUMAN_REQUIRE_HAPROXY is set (`make test` sets it, and installs
// Debian's haproxy package first).
package haproxytest

import (
	"bufio"
	"bytes"
	"context"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/openhuman/openhuman-host/internal/freeport"
	"github.com/openhuman/openhuman-host/sdk/testproc"
)

// EnvRequire turns a missing haproxy from a skip into a failure.
const EnvRequire = "OPENHUMAN_REQUIRE_HAPROXY"

// howToGet says how to make HAProxy available to the tests.
const howToGet = "install Debian's haproxy package (`make test` does, as root: scripts/debian-packages.sh haproxy)"

// ErrNoBinary is wrapped when the haproxy binary cannot be found.
var ErrNoBinary = errors.New("haproxytest: haproxy was not found on PATH or in /usr/sbin")

// Binary returns the path of the haproxy binary: the one on PATH, else
// /usr/sbin/haproxy (Debian's, which a user's PATH often lacks).
func Binary() (string, error) {
	if p, err := exec.LookPath("haproxy"); err == nil {
		return p, nil
	}
	const debian = "/usr/sbin/haproxy"
	if fi, err := os.Stat(debian); err == nil && !fi.IsDir() && fi.Mode()&0o111 != 0 {
		return debian, nil
	}
	return "", ErrNoBinary
}

// ExampleConfig returns the path of the repository's example
// configuration, examples/haproxy/haproxy.cfg.
func ExampleConfig() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..", "examples", "haproxy", "haproxy.cfg")
}

// Render returns cfg (an HAProxy configuration shaped like the example)
// with its global section replaced by global, the bind lines of its
// frontend replaced by one binding listen ("127.0.0.1:port"), and its
// server lines replaced by one per address in servers, named r1, r2, ...
// with the options of its first server line. It fails when cfg has no
// global section, no bind line or no server line.
func Render(cfg []byte, global, listen string, servers []string) ([]byte, error) {
	var out bytes.Buffer
	section := ""
	sawGlobal, sawBind, sawServer := false, false, false
	sc := bufio.NewScanner(bytes.NewReader(cfg))
	for sc.Scan() {
		line := sc.Text()
		fields := strings.Fields(line)
		indented := len(line) > 0 && (line[0] == ' ' || line[0] == '\t')
		if !indented && len(fields) > 0 && !strings.HasPrefix(fields[0], "#") {
			section = fields[0]
			if section == "global" {
				sawGlobal = true
				out.WriteString(strings.TrimRight(global, "\n") + "\n")
				continue
			}
		}
		switch {
		case section == "global" && len(fields) > 0:
			continue
		case len(fields) > 0 && fields[0] == "bind" && section == "frontend":
			if !sawBind {
				fmt.Fprintf(&out, "    bind %s\n", listen)
			}
			sawBind = true
			continue
		case len(fields) >= 3 && fields[0] == "server" && section == "backend":
			if !sawServer {
				opts := ""
				if len(fields) > 3 {
					opts = " " + strings.Join(fields[3:], " ")
				}
				for i, addr := range servers {
					fmt.Fprintf(&out, "    server r%d %s%s\n", i+1, addr, opts)
				}
			}
			sawServer = true
			continue
		}
		out.WriteString(line + "\n")
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("haproxytest: read the configuration: %w", err)
	}
	switch {
	case !sawGlobal:
		return nil, errors.New("haproxytest: the configuration has no global section")
	case !sawBind:
		return nil, errors.New("haproxytest: the configuration's frontend has no bind line")
	case !sawServer:
		return nil, errors.New("haproxytest: the configuration's backend has no server line")
	}
	return out.Bytes(), nil
}

// Proxy is one running HAProxy.
type Proxy struct {
	// Addr is the frontend's address, "127.0.0.1:port".
	Addr string
	// URL is "http://" + Addr + "/".
	URL string

	dir    string
	cmd    *exec.Cmd
	done   chan struct{}
	logTxt string
}

// globalFor is the global section of a test's proxy: foreground, its
// log on stderr, an admin socket in dir.
func globalFor(dir string) string {
	return strings.Join([]string{
		"global",
		"    log stderr format short local0 notice",
		"    maxconn 4096",
		"    stats socket " + filepath.Join(dir, "admin.sock") + " mode 600 level admin",
	}, "\n")
}

// Start renders the example configuration ([Render]) for servers
// ("host:port" each), writes it to a new temporary directory and starts
// haproxy on a free loopback port, returning once the frontend accepts
// connections. Call Stop when done.
func Start(ctx context.Context, servers []string) (*Proxy, error) {
	bin, err := Binary()
	if err != nil {
		return nil, err
	}
	example, err := os.ReadFile(ExampleConfig())
	if err != nil {
		return nil, fmt.Errorf("haproxytest: read the example configuration: %w", err)
	}
	// A port picked here may be taken before haproxy binds it; a few
	// tries make that harmless.
	return freeport.Retry(ctx, 3, func() (*Proxy, error) { return start(ctx, bin, example, servers) })
}

func start(ctx context.Context, bin string, example []byte, servers []string) (*Proxy, error) {
	dir, err := os.MkdirTemp("", "openhuman-haproxytest-")
	if err != nil {
		return nil, fmt.Errorf("haproxytest: make a directory: %w", err)
	}
	port, err := testproc.FreePort()
	if err != nil {
		_ = os.RemoveAll(dir)
		return nil, fmt.Errorf("haproxytest: %w", err)
	}
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	cfg, err := Render(example, globalFor(dir), addr, servers)
	if err != nil {
		_ = os.RemoveAll(dir)
		return nil, err
	}
	cfgPath := filepath.Join(dir, "haproxy.cfg")
	if err := os.WriteFile(cfgPath, cfg, 0o600); err != nil {
		_ = os.RemoveAll(dir)
		return nil, fmt.Errorf("haproxytest: write the configuration: %w", err)
	}
	p := &Proxy{Addr: addr, URL: "http://" + addr + "/", dir: dir, done: make(chan struct{}), logTxt: filepath.Join(dir, "haproxy.log")}
	logFile, err := os.Create(p.logTxt)
	if err != nil {
		_ = os.RemoveAll(dir)
		return nil, fmt.Errorf("haproxytest: create the log: %w", err)
	}
	// -db: foreground, no daemon; -W is not wanted (no master process).
	p.cmd = exec.Command(bin, "-db", "-f", cfgPath)
	p.cmd.Dir = dir
	p.cmd.Stdout, p.cmd.Stderr = logFile, logFile
	if err := p.cmd.Start(); err != nil {
		_ = logFile.Close()
		_ = os.RemoveAll(dir)
		return nil, fmt.Errorf("haproxytest: start %s: %w", bin, err)
	}
	go func() {
		_ = p.cmd.Wait()
		_ = logFile.Close()
		close(p.done)
	}()
	for {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			_ = c.Close()
			return p, nil
		}
		select {
		case <-p.done:
			log := p.Log()
			_ = os.RemoveAll(dir)
			return nil, fmt.Errorf("haproxytest: haproxy exited before it listened on %s: %s\n%s", addr, p.cmd.ProcessState, log)
		case <-ctx.Done():
			_ = p.Stop()
			return nil, fmt.Errorf("haproxytest: haproxy did not listen on %s: %w", addr, ctx.Err())
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// Log returns what haproxy printed so far.
func (p *Proxy) Log() string {
	b, _ := os.ReadFile(p.logTxt)
	return string(b)
}

// Stop stops haproxy (SIGTERM, its hard stop), waits for it to exit and
// removes its directory.
func (p *Proxy) Stop() error {
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(30 * time.Second):
		_ = p.cmd.Process.Kill()
		<-p.done
	}
	return os.RemoveAll(p.dir)
}

// ServerStates returns the state HAProxy's health checks give each
// server of the backend ("UP", "DOWN", "UP 1/2", ...), by server name
// (r1, r2, ...), from its admin socket's "show stat".
func (p *Proxy) ServerStates(ctx context.Context) (map[string]string, error) {
	out, err := p.Command(ctx, "show stat")
	if err != nil {
		return nil, err
	}
	rows, err := csv.NewReader(strings.NewReader(strings.TrimPrefix(out, "# "))).ReadAll()
	if err != nil || len(rows) == 0 {
		return nil, fmt.Errorf("haproxytest: show stat: unreadable answer %q: %v", out, err)
	}
	col := map[string]int{}
	for i, name := range rows[0] {
		col[name] = i
	}
	px, sv, st := col["pxname"], col["svname"], col["status"]
	states := map[string]string{}
	for _, r := range rows[1:] {
		if len(r) > st && r[px] == "openhuman" && r[sv] != "BACKEND" {
			states[r[sv]] = r[st]
		}
	}
	return states, nil
}

// Command sends one command to HAProxy's admin socket and returns its
// answer.
func (p *Proxy) Command(ctx context.Context, command string) (string, error) {
	var d net.Dialer
	c, err := d.DialContext(ctx, "unix", filepath.Join(p.dir, "admin.sock"))
	if err != nil {
		return "", fmt.Errorf("haproxytest: connect to the admin socket: %w", err)
	}
	defer c.Close()
	if dl, ok := ctx.Deadline(); ok {
		_ = c.SetDeadline(dl)
	}
	if _, err := io.WriteString(c, command+"\n"); err != nil {
		return "", fmt.Errorf("haproxytest: send %q: %w", command, err)
	}
	b, err := io.ReadAll(c)
	if err != nil {
		return "", fmt.Errorf("haproxytest: read the answer to %q: %w", command, err)
	}
	return string(b), nil
}

// New starts a proxy for t in front of servers and stops it when t ends;
// t fails with haproxy's log if it does not start. Without haproxy it
// skips t, or fails it when [EnvRequire] is set.
func New(t testing.TB, servers []string) *Proxy {
	t.Helper()
	if _, err := Binary(); err != nil {
		msg := err.Error() + "; " + howToGet
		if os.Getenv(EnvRequire) != "" {
			t.Fatal(msg + " (" + EnvRequire + " is set, so this is a failure)")
		}
		t.Skip(msg)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	p, err := Start(ctx, servers)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("haproxy's log:\n%s", p.Log())
		}
		if err := p.Stop(); err != nil {
			t.Errorf("stop haproxy: %v", err)
		}
	})
	return p
}
