package testproc

import (
	"fmt"
	"net"
)

// FreePort returns a TCP port on 127.0.0.1 that was free a moment ago,
// for a server a test starts as a process of its own and tells which port
// to listen on. Another process may take the port in between, so a test
// should say which port its server failed to listen on. The error says why
// no port could be had.
func FreePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("find a free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}
