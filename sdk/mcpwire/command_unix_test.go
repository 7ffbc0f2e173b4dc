//go:build !windows

package mcpwire

import (
	"context"
	"errors"
	"io"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

func TestCommandTransportReadsLines(t *testing.T) {
	script := `printf '\n{"jsonrpc":"2.0","method":"notifications/tools/list_changed"}\r\n  \n{"jsonrpc":"2.0","id":7,"result":{}}\nnot json\n'; cat >/dev/null`
	conn, err := (&CommandTransport{Cmd: exec.Command("sh", "-c", script), Terminate: time.Minute}).Connect(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	ctx := context.Background()
	msg, err := conn.Read(ctx)
	if req, ok := msg.(*jsonrpc.Request); err != nil || !ok || req.Method != "notifications/tools/list_changed" {
		t.Fatalf("first message = %#v, %v; want the notification", msg, err)
	}
	msg, err = conn.Read(ctx)
	if resp, ok := msg.(*jsonrpc.Response); err != nil || !ok || resp.ID.Raw() != int64(7) {
		t.Fatalf("second message = %#v, %v; want the response to 7", msg, err)
	}
	if _, err := conn.Read(ctx); err == nil || !strings.Contains(err.Error(), "not a JSON-RPC message") {
		t.Fatalf("a line that is not JSON read as %v, want an error that says so", err)
	}
}

func TestCommandTransportEOF(t *testing.T) {
	conn, err := (&CommandTransport{Cmd: exec.Command("sh", "-c", `printf '{"jsonrpc":"2.0","id":1,"result":{}}'`), Terminate: time.Minute}).Connect(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.Read(context.Background()); err != nil {
		t.Fatalf("a last line without a newline: %v", err)
	}
	if _, err := conn.Read(context.Background()); !errors.Is(err, io.EOF) {
		t.Fatalf("after the server's last line: %v, want EOF", err)
	}
}

// A server that ignores the end of its stdin and SIGTERM is killed.
func TestCommandTransportCloseKills(t *testing.T) {
	cmd := exec.Command("sh", "-c", `trap '' TERM; echo ready; while :; do sleep 1; done`)
	conn, err := (&CommandTransport{Cmd: cmd, Terminate: 10 * time.Millisecond}).Connect(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	// "ready" is not JSON-RPC: reading it proves the trap is set.
	if _, err := conn.Read(context.Background()); err == nil {
		t.Fatal("read a message from a line that is not one")
	}
	if err := conn.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus)
	if !ok || !ws.Signaled() || ws.Signal() != syscall.SIGKILL {
		t.Fatalf("the server ended with %v, want killed", cmd.ProcessState)
	}
	if err := conn.Write(context.Background(), &jsonrpc.Request{Method: "ping"}); err == nil {
		t.Fatal("Write after Close succeeded")
	}
}
