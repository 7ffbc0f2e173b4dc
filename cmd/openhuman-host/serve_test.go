package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/openhuman/openhuman-host/sdk/testwait"
)

// testExe is this test binary, which acts as the openhuman-host command
// line with cliEnv set (see TestMain).
func testExe(t *testing.T) string {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return exe
}

// serveConfig writes a config for `serve` with its data in dataDir and
// returns its path.
func serveConfig(t *testing.T, dataDir string) string {
	t.Helper()
	return serveConfigWith(t, dataDir, "")
}

// serveConfigWith is serveConfig followed by rest: more lines of the
// [server] table, then any other tables.
func serveConfigWith(t *testing.T, dataDir, rest string) string {
	t.Helper()
	cfgPath := filepath.Join(t.TempDir(), "config.toml")
	if err := os.WriteFile(cfgPath, fmt.Appendf(nil, "[server]\ndata_dir = %q\nlog_level = \"off\"\n%s%s", dataDir, slowStart, rest), 0o600); err != nil {
		t.Fatal(err)
	}
	return cfgPath
}

// serveStdio starts cmd (which runs `serve` on stdio) and connects the
// go-sdk client to it.
func serveStdio(t *testing.T, cmd *exec.Cmd) *mcp.ClientSession {
	t.Helper()
	return serveStdioAs(t, cmd, "hardening-test")
}

// serveStdioAs is serveStdio with the clientInfo.name the client sends.
func serveStdioAs(t *testing.T, cmd *exec.Cmd, clientName string) *mcp.ClientSession {
	t.Helper()
	cmd.Env = append(os.Environ(), cliEnv+"=1")
	cs, err := mcp.NewClient(&mcp.Implementation{Name: clientName, Version: "1"}, nil).
		Connect(testwait.Context(t), &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatalf("connect to %s: %v", strings.Join(cmd.Args, " "), err)
	}
	return cs
}

func TestServeRefusesWeakToken(t *testing.T) {
	t.Parallel()
	exe := testExe(t)
	cfgPath := serveConfig(t, t.TempDir())
	for name, args := range map[string][]string{
		"flag":        {"--auth-token", "a-short-secret"},
		"environment": nil,
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			cmd := exec.Command(exe, append([]string{"--config", cfgPath, "serve", "--transport", "http", "--port", "0"}, args...)...)
			cmd.Env = append(os.Environ(), cliEnv+"=1", "OPENHUMAN_MCP_TOKEN=0123456789abcdef0123456789abcdef")
			out, err := cmd.CombinedOutput()
			if err == nil || !strings.Contains(string(out), "bearer token is too weak") || !strings.Contains(string(out), "openssl rand -hex 32") {
				t.Errorf("serve with a weak token: %v\n%s", err, out)
			}
		})
	}
}

// TestStdioExitsWhenClientStopsReading: a client that closes stdin without
// reading stdout leaves the server's writes blocked; the server exits all
// the same, once its close grace and exit timeout have passed (here the
// shortest the config allows, so that the test does not wait the default
// 20 s).
func TestStdioExitsWhenClientStopsReading(t *testing.T) {
	t.Parallel()
	exe := testExe(t)
	cfgPath := serveConfigWith(t, t.TempDir(), "stdio_close_grace_secs = 0\nstdio_exit_timeout_secs = 1\n")
	cmd := exec.Command(exe, "--config", cfgPath, "serve")
	cmd.Env = append(os.Environ(), cliEnv+"=1")
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe() // never read
	if err != nil {
		t.Fatal(err)
	}
	defer stdout.Close()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill() })
	var b strings.Builder
	b.WriteString(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"mute","version":"1"}}}` + "\n")
	b.WriteString(`{"jsonrpc":"2.0","method":"notifications/initialized"}` + "\n")
	// Far more answer than a pipe holds.
	for i := 1; i <= 80; i++ {
		fmt.Fprintf(&b, `{"jsonrpc":"2.0","id":%d,"method":"tools/list"}`+"\n", i)
	}
	if _, err := io.WriteString(stdin, b.String()); err != nil {
		t.Fatal(err)
	}
	if err := stdin.Close(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	testwait.Recv(t, exited, "the server to exit after end of input with nobody reading its output")
}

// TestListenCapsConnections: beyond max_connections a client waits until
// a connection closes, however idle the connections held are.
func TestListenCapsConnections(t *testing.T) {
	t.Parallel()
	ln, err := listen("127.0.0.1:0", 2)
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "ok") })}
	go func() { _ = srv.Serve(ln) }()
	defer srv.Close()
	get := func(c net.Conn) error {
		if _, err := io.WriteString(c, "GET / HTTP/1.1\r\nHost: localhost\r\n\r\n"); err != nil {
			return err
		}
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("status %s", resp.Status)
		}
		return nil
	}
	var held []net.Conn
	for range 2 {
		c, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		if err := get(c); err != nil {
			t.Fatalf("a request within the cap: %v", err)
		}
		held = append(held, c)
	}
	third, err := net.Dial("tcp", ln.Addr().String()) // queued by the kernel
	if err != nil {
		t.Fatal(err)
	}
	defer third.Close()
	// Not served while two connections are held: the read gives up. (A
	// slow machine can only make this pass, never fail.)
	_ = third.SetReadDeadline(time.Now().Add(time.Second))
	if err := get(third); err == nil {
		t.Fatal("a third connection was served while two were held")
	}
	third.Close()

	fourth, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer fourth.Close()
	held[0].Close()
	_ = fourth.SetReadDeadline(testwait.Deadline(t))
	if err := get(fourth); err != nil {
		t.Fatalf("a connection once one closed: %v", err)
	}
}

// TestServeNamesReplica: over http a server without [server] replica is
// named by the host name and the port it serves, in its /healthz answer
// and the Openhuman-Replica header, and in its status file.
func TestServeNamesReplica(t *testing.T) {
	t.Parallel()
	exe := testExe(t)
	dataDir := t.TempDir()
	cfgPath := serveConfig(t, dataDir)
	addr := freeAddr(t)
	_, port, _ := net.SplitHostPort(addr)
	cmd := exec.Command(exe, "--config", cfgPath, "serve", "--transport", "http", "--port", port)
	cmd.Env = append(os.Environ(), cliEnv+"=1")
	var stderr testwait.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	hostname, err := os.Hostname()
	if err != nil {
		t.Fatal(err)
	}
	want := hostname + ":" + port
	var body []byte
	var header string
	testwait.Until(t, "the server's /healthz", func() bool {
		resp, err := http.Get("http://" + addr + "/healthz")
		if err != nil {
			return false
		}
		defer resp.Body.Close()
		body, _ = io.ReadAll(resp.Body)
		header = resp.Header.Get("Openhuman-Replica")
		return resp.StatusCode == http.StatusOK
	})
	var h struct {
		Status, Replica string
	}
	if err := json.Unmarshal(body, &h); err != nil || h.Status != "ok" || h.Replica != want || header != want {
		t.Errorf("/healthz = %s with Openhuman-Replica %q, %v; want replica %q\n%s", body, header, err, want, stderr.String())
	}
	status := statusFile(dataDir, cmd.Process.Pid)
	testwait.Until(t, "the status file", func() bool { _, err := os.Stat(status); return err == nil })
	b, err := os.ReadFile(status)
	if err != nil {
		t.Fatal(err)
	}
	var report struct{ Replica string }
	if err := json.Unmarshal(b, &report); err != nil || report.Replica != want {
		t.Errorf("status file %s: replica %q, %v; want %q", b, report.Replica, err, want)
	}
}
