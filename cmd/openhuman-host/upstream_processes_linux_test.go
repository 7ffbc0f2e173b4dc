package main

import (
	"fmt"
	"net/http"
	"os"
	"slices"
	"strconv"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/openhuman/openhuman-host/sdk/testproc"
	"github.com/openhuman/openhuman-host/sdk/testwait"
)

// TestOneUpstreamProcessPerClient serves a stdio upstream server over
// HTTP and counts its processes (each records its start; one runs while
// /proc shows it and it is no zombie): one before any client, one while
// one client calls it, two with two clients, each client's calls on its
// own; when the first client ends its session the second's process
// serves alone and the tools stay listed; when the second ends its
// session a process is started again for the catalog.
func TestOneUpstreamProcessPerClient(t *testing.T) {
	t.Parallel()
	starts := t.TempDir()
	url := serveUpstreamForTest(t, fmt.Sprintf("env = { %s = %q }\nread_only_tools = [\"echo\", \"pid\"]\n", upstreamStartsEnv, starts))

	// Clients of 2025-11-25 have sessions that end when they close them
	// (DELETE); a 2026-07-28 client has none to end, and the host forgets
	// it once idle.
	connect := func(name string) *mcp.ClientSession {
		t.Helper()
		client := mcp.NewClient(&mcp.Implementation{Name: name, Version: "1"}, nil)
		cs, err := client.Connect(testwait.Context(t), &mcp.StreamableClientTransport{Endpoint: url,
			HTTPClient: &http.Client{Transport: bearerTransport{testToken}}}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
		if err != nil {
			t.Fatalf("%s: connect: %v", name, err)
		}
		return cs
	}
	pid := func(cs *mcp.ClientSession) int {
		t.Helper()
		res, err := cs.CallTool(testwait.Context(t), &mcp.CallToolParams{Name: "local__pid", Arguments: map[string]any{}})
		if err != nil || res.IsError || len(res.Content) != 1 {
			t.Fatalf("local__pid: %v %+v", err, res)
		}
		n, err := strconv.Atoi(res.Content[0].(*mcp.TextContent).Text)
		if err != nil {
			t.Fatalf("local__pid: %v", err)
		}
		return n
	}
	listed := func(cs *mcp.ClientSession) {
		t.Helper()
		res, err := cs.ListTools(testwait.Context(t), nil)
		if err != nil {
			t.Fatalf("tools/list: %v", err)
		}
		if !slices.ContainsFunc(res.Tools, func(tl *mcp.Tool) bool { return tl.Name == "local__echo" }) {
			t.Fatalf("tools/list lacks local__echo")
		}
	}
	untilRunning := func(what string, want ...int) {
		t.Helper()
		slices.Sort(want)
		var got []int
		testwait.Until(t, what, func() bool {
			got = testproc.RunningPIDs(t, starts)
			return slices.Equal(got, want)
		})
	}
	started := func() int {
		t.Helper()
		entries, err := os.ReadDir(starts)
		if err != nil {
			t.Fatal(err)
		}
		return len(entries)
	}

	testwait.Until(t, "the catalog's process to start", func() bool { return len(testproc.RunningPIDs(t, starts)) == 1 })
	shared := testproc.RunningPIDs(t, starts)[0]

	first := connect("first")
	a := pid(first)
	untilRunning("only the first client's process", a)
	listed(first)

	second := connect("second")
	b := pid(second)
	if b == a {
		t.Fatal("two clients share one upstream session")
	}
	untilRunning("one process per client", a, b)
	if pid(first) != a || pid(second) != b {
		t.Fatal("a client's call ran on another client's session")
	}
	if n := started(); n != 3 {
		t.Fatalf("%d upstream processes started for the catalog and two clients, want 3", n)
	}

	if err := first.Close(); err != nil {
		t.Fatalf("close the first client: %v", err)
	}
	untilRunning("the second client's process alone", b)
	listed(second)
	if pid(second) != b {
		t.Fatal("the second client's call ran elsewhere after the first left")
	}
	if n := started(); n != 3 {
		t.Fatalf("%d upstream processes started, want 3: the first client leaving starts none", n)
	}

	if err := second.Close(); err != nil {
		t.Fatalf("close the second client: %v", err)
	}
	testwait.Until(t, "a new process alone to serve the catalog", func() bool {
		r := testproc.RunningPIDs(t, starts)
		return len(r) == 1 && r[0] != shared && r[0] != a && r[0] != b
	})
	third := connect("third")
	defer third.Close()
	listed(third)
}
