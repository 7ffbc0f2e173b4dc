package testproc_test

import (
	"net"
	"strconv"
	"testing"

	"github.com/openhuman/openhuman-host/sdk/testproc"
)

func TestFreePort(t *testing.T) {
	port, err := testproc.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	if port <= 0 || port > 65535 {
		t.Fatalf("FreePort() = %d, want a TCP port", port)
	}
	l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
	if err != nil {
		t.Fatalf("listen on the port FreePort returned: %v", err)
	}
	l.Close()
}
