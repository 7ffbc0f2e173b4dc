package server

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/openhuman/openhuman-host/host/policy"
	"github.com/openhuman/openhuman-host/sdk/testwait"
)

// TestLineTransportKeepsSessionAfterBadLines drives the stdio transport
// with raw lines: each bad line gets a JSON-RPC error and the session
// still answers what follows.
func TestLineTransportKeepsSessionAfterBadLines(t *testing.T) {
	t.Parallel()
	s, _ := newTestServer(t, policy.Supervised, true)
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- s.MCP().Run(ctx, &LineTransport{In: inR, Out: outW}) }()

	lines := bufio.NewScanner(outR)
	lines.Buffer(make([]byte, 1<<20), 1<<20)
	next := func() map[string]any {
		t.Helper()
		got := make(chan map[string]any, 1)
		go func() {
			if !lines.Scan() {
				got <- nil
				return
			}
			var m map[string]any
			if err := json.Unmarshal(lines.Bytes(), &m); err != nil {
				t.Errorf("server wrote a line that is not JSON: %q", lines.Text())
			}
			got <- m
		}()
		return testwait.Recv(t, got, "a response")
	}
	send := func(line string) {
		t.Helper()
		if _, err := io.WriteString(inW, line+"\n"); err != nil {
			t.Fatal(err)
		}
	}

	tests := []struct {
		name, line string
		want       map[string]any
	}{
		{"invalid JSON", `{not json`, map[string]any{"jsonrpc": "2.0", "id": nil, "error": map[string]any{"code": float64(-32700)}}},
		{"not a JSON-RPC message", `{"id":7,"foo":1}`, map[string]any{"jsonrpc": "2.0", "id": float64(7), "error": map[string]any{"code": float64(-32600)}}},
		{"batch", `[{"jsonrpc":"2.0","id":3,"method":"ping"}]`, map[string]any{"jsonrpc": "2.0", "id": nil, "error": map[string]any{"code": float64(-32600)}}},
		{"null id", `{"jsonrpc":"2.0","id":null,"method":"ping"}`, map[string]any{"jsonrpc": "2.0", "id": nil, "error": map[string]any{"code": float64(-32600)}}},
		{"initialize still works", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`, nil},
	}
	for _, tc := range tests {
		send(tc.line)
		got := next()
		if tc.want == nil {
			if got["id"] != float64(1) || got["result"] == nil {
				t.Errorf("%s: got %v", tc.name, got)
			}
			continue
		}
		if e, ok := got["error"].(map[string]any); ok {
			delete(e, "message")
		}
		if diff := cmp.Diff(tc.want, got); diff != "" {
			t.Errorf("%s (-want +got):\n%s", tc.name, diff)
		}
	}
	send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	send("")
	send(`{"jsonrpc":"2.0","id":2,"method":"tools/list"}`)
	got := next()
	if got["id"] != float64(2) || !strings.Contains(fmt.Sprint(got), "fake_search") {
		t.Errorf("tools/list after bad lines: %v", got)
	}
	_ = inW.Close()
	testwait.Recv(t, done, "the server to stop at the end of its input")
}

// TestLineTransportAnswersEverythingBeforeEOF is a scripted client: it
// writes its requests and closes stdin at once. Every request must still
// be answered before the session ends.
func TestLineTransportAnswersEverythingBeforeEOF(t *testing.T) {
	t.Parallel()
	s, a := newTestServer(t, policy.Supervised, true)
	in := strings.Join([]string{
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"pipe","version":"1"}}}`,
		`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
		`{"jsonrpc":"2.0","id":2,"method":"tools/list"}`,
		`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"fake.store","arguments":{"title":"t"}}}`,
		`{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"fake.search","arguments":{"query":"q"}}}`,
	}, "\n") + "\n"
	var out testwait.Buffer
	ctx := testwait.Context(t)
	if err := s.MCP().Run(ctx, &LineTransport{In: strings.NewReader(in), Out: &out}); err != nil && ctx.Err() != nil {
		t.Fatalf("run: %v", err)
	}
	var ids []float64
	for _, line := range strings.Split(strings.TrimSpace(out.String()), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("bad output line %q", line)
		}
		if id, ok := m["id"].(float64); ok {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	if diff := cmp.Diff([]float64{1, 2, 3, 4}, ids); diff != "" {
		t.Errorf("answered ids (-want +got):\n%s", diff)
	}
	if n := len(a.all()); n != 2 {
		t.Errorf("%d audit rows, want 2", n)
	}
}
