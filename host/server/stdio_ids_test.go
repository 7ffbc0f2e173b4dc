package server

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"testing"
	"time"

	"github.com/openhuman/openhuman-host/host/policy"
	"github.com/openhuman/openhuman-host/sdk"
	"github.com/openhuman/openhuman-host/sdk/testwait"
)

// rawStdio runs s over a LineTransport on pipes, initializes a session,
// and returns functions to send a line and read the next one; done
// receives Run's result.
func rawStdio(t *testing.T, s *Server, drain time.Duration) (send func(string), next func() map[string]json.RawMessage, closeIn func(), done <-chan error) {
	t.Helper()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	ch := make(chan error, 1)
	go func() { ch <- s.MCP().Run(ctx, &LineTransport{In: inR, Out: outW, DrainTimeout: drain}) }()
	lines := bufio.NewScanner(outR)
	lines.Buffer(make([]byte, 1<<20), 1<<20)
	next = func() map[string]json.RawMessage {
		t.Helper()
		got := make(chan map[string]json.RawMessage, 1)
		go func() {
			if !lines.Scan() {
				got <- nil
				return
			}
			var m map[string]json.RawMessage
			if err := json.Unmarshal(lines.Bytes(), &m); err != nil {
				t.Errorf("server wrote a line that is not JSON: %q", lines.Text())
			}
			got <- m
		}()
		return testwait.Recv(t, got, "a line from the server")
	}
	send = func(line string) {
		t.Helper()
		if _, err := io.WriteString(inW, line+"\n"); err != nil {
			t.Fatal(err)
		}
	}
	send(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`)
	next()
	send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	return send, next, func() { _ = inW.Close() }, ch
}

func TestStdioIDsComeBackAsSent(t *testing.T) {
	t.Parallel()
	s, _ := newTestServer(t, policy.Supervised, true)
	send, next, _, _ := rawStdio(t, s, 0)
	for _, id := range []string{`1.5`, `12345678901234567890`, `-9223372036854775809`, `1e3`, `"abc"`, `7`, `-3`, `"1.5"`} {
		send(`{"jsonrpc":"2.0","id":` + id + `,"method":"ping"}`)
		got := next()
		if string(got["id"]) != id || got["result"] == nil {
			t.Errorf("ping with id %s: answer has id %s, result %s", id, got["id"], got["result"])
		}
	}
}

// blockingServer serves fake tools whose calls wait for release, ignoring
// cancellation, as a stuck provider would.
func blockingServer(t *testing.T) (*Server, chan struct{}) {
	t.Helper()
	release := make(chan struct{})
	pol := testPolicy(t, policy.Options{})
	p := &fakeProvider{call: func(ctx context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
		<-release
		return sdk.TextResult("released"), nil
	}}
	s, err := New(testCatalog(), map[string]Dispatcher{"fake": p}, &Options{Policy: pol})
	if err != nil {
		t.Fatal(err)
	}
	return s, release
}

func TestStdioDuplicateInFlightID(t *testing.T) {
	t.Parallel()
	s, release := blockingServer(t)
	send, next, _, _ := rawStdio(t, s, 0)
	send(`{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"fake_search","arguments":{"query":"x"}}}`)
	send(`{"jsonrpc":"2.0","id":5,"method":"ping"}`)
	got := next()
	var e struct{ Code int }
	if string(got["id"]) != "5" || json.Unmarshal(got["error"], &e) != nil || e.Code != -32600 {
		t.Fatalf("second request with id 5 while the first runs = %v, want error -32600 for id 5", got)
	}
	close(release)
	got = next()
	if string(got["id"]) != "5" || got["result"] == nil {
		t.Fatalf("the first request's answer = %v", got)
	}
	send(`{"jsonrpc":"2.0","id":5,"method":"ping"}`)
	if got := next(); string(got["id"]) != "5" || got["result"] == nil {
		t.Errorf("id 5 reused once answered = %v, want a result", got)
	}
}

// TestStdioEOFEndsWithinDrainTimeout: after end of input the connection
// waits for the answers to requests already read, but only for
// DrainTimeout: a request that is never answered cannot keep the server
// running.
func TestStdioEOFEndsWithinDrainTimeout(t *testing.T) {
	t.Parallel()
	inR, inW := io.Pipe()
	conn, err := (&LineTransport{In: inR, Out: io.Discard, DrainTimeout: 50 * time.Millisecond}).Connect(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	go func() {
		_, _ = io.WriteString(inW, `{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"fake_search"}}`+"\n")
		_ = inW.Close()
	}()
	if msg, err := conn.Read(t.Context()); err != nil || msg == nil {
		t.Fatalf("Read() = %v, %v; want the request", msg, err)
	}
	// The request is never answered.
	ended := make(chan error, 1)
	go func() {
		_, err := conn.Read(context.Background())
		ended <- err
	}()
	if err := testwait.Recv(t, ended, "end of input to be reported although a request is unanswered"); err != io.EOF {
		t.Errorf("Read() after end of input = %v, want io.EOF", err)
	}
}
