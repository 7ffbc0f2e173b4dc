package upstream

import (
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strconv"
	"testing"

	"github.com/openhuman/openhuman-host/sdk"
	"github.com/openhuman/openhuman-host/sdk/testproc"
	"github.com/openhuman/openhuman-host/sdk/testwait"
)

// These tests count the stdio server's processes: each records its start
// in a folder (testdata/stdioserver, STDIOSERVER_STARTS), and one is
// running while /proc shows it and it is no zombie.

// untilRunning waits until exactly want recorded processes run, and
// returns them.
func untilRunning(t *testing.T, dir string, want int) []int {
	t.Helper()
	var got []int
	testwait.Until(t, fmt.Sprintf("%d upstream processes running", want), func() bool {
		got = testproc.RunningPIDs(t, dir)
		return len(got) == want
	})
	return got
}

// countedServer configures a provider with one stdio server named local
// that records its processes in a new folder, which it returns.
func countedServer(t *testing.T, host *fakeHost, extra map[string]any) (*Provider, string) {
	t.Helper()
	dir := t.TempDir()
	srv := map[string]any{"name": "local", "command": stdioServer, "env": map[string]string{"STDIOSERVER_STARTS": dir}}
	for k, v := range extra {
		srv[k] = v
	}
	p, cat := configure(t, host, srv)
	if !slices.Contains(toolNames(cat), "local__pid") {
		t.Fatalf("tools = %v", toolNames(cat))
	}
	return p, dir
}

// pidOf calls local__pid for the client (a session token; "" for a call
// from no MCP session) and returns the process ID that answered.
func pidOf(t *testing.T, p *Provider, client string) int {
	t.Helper()
	c := sdk.Caller{}
	if client != "" {
		c = caller(client, "pid")
	}
	res, err := p.CallTool(testwait.Context(t), &sdk.CallToolRequest{Name: "local__pid", Arguments: json.RawMessage(`{}`), Caller: c})
	if err != nil || res.IsError {
		t.Fatalf("local__pid for %q: %v %+v", client, err, res)
	}
	pid, err := strconv.Atoi(res.Text())
	if err != nil {
		t.Fatalf("local__pid for %q: %q", client, res.Text())
	}
	return pid
}

// catalogPID is the process ID of the session local's catalog is read from.
func catalogPID(p *Provider) int {
	p.mu.RLock()
	defer p.mu.RUnlock()
	if c := p.conns["local"]; c != nil && c.alive() {
		return c.cmd.Process.Pid
	}
	return 0
}

// describeHas fails t unless Describe lists the tool.
func describeHas(t *testing.T, p *Provider, tool string) {
	t.Helper()
	cat, err := p.Describe(testwait.Context(t))
	if err != nil || !slices.Contains(toolNames(cat), tool) {
		t.Fatalf("Describe: %v, tools %v, want %s", err, toolNames(cat), tool)
	}
}

func connected(t *testing.T, p *Provider) {
	t.Helper()
	if st := p.Servers(); len(st) != 1 || st[0].State != StateConnected {
		t.Fatalf("Servers() = %+v, want local connected", st)
	}
}

// TestOneUpstreamProcessPerClient: before any client there is one
// process, the shared session's; a client's first call starts its own
// and the shared one ends, so one client means one process; two clients,
// two, each client's calls on its own; when the client whose session
// serves the catalog leaves, the other's takes over with no process
// started; when the last leaves, the shared session is started again.
// The catalog is listed from whichever serves it all along.
func TestOneUpstreamProcessPerClient(t *testing.T) {
	host := newFakeHost()
	p, dir := countedServer(t, host, nil)
	shared := untilRunning(t, dir, 1)[0]
	if catalogPID(p) != shared {
		t.Fatalf("catalog served by %d, want the shared session's %d", catalogPID(p), shared)
	}

	a := pidOf(t, p, "A")
	if a == shared {
		t.Fatal("client A's call ran on the shared session")
	}
	servesAlone(t, p, dir, "A", a, "")

	b := pidOf(t, p, "B")
	if b == a || b == shared {
		t.Fatalf("client B's call ran on %d (A %d, shared %d)", b, a, shared)
	}
	if got := untilRunning(t, dir, 2); !slices.Equal(got, sorted(a, b)) {
		t.Fatalf("running %v, want A's %d and B's %d", got, a, b)
	}
	if pidOf(t, p, "A") != a || pidOf(t, p, "B") != b {
		t.Fatal("a client's call ran on another client's session")
	}
	if n := len(testproc.RecordedPIDs(t, dir)); n != 3 {
		t.Fatalf("%d processes started for the shared session and two clients, want 3", n)
	}

	// A leaves: B's session serves the catalog, and nothing starts.
	if err := p.SessionClosed(testwait.Context(t), caller("A", "")); err != nil {
		t.Fatal(err)
	}
	servesAlone(t, p, dir, "B", b, " after A left")
	if n := len(testproc.RecordedPIDs(t, dir)); n != 3 {
		t.Fatalf("%d processes started, want 3: A leaving starts none", n)
	}

	// B leaves too: the shared session is started again for the catalog.
	if err := p.SessionClosed(testwait.Context(t), caller("B", "")); err != nil {
		t.Fatal(err)
	}
	untilShared(t, p, dir, shared, a, b)
	describeHas(t, p, "local__echo")
	connected(t, p)
	if n := len(testproc.RecordedPIDs(t, dir)); n != 4 {
		t.Fatalf("%d processes started, want 4", n)
	}
}

// servesAlone checks that the process of client's session, pid, is the
// only one running (waiting for the others to end), that it serves the
// catalog, which lists local__echo with local connected, and that the
// client's next call runs on it; when ("" or " after ...") goes into the
// messages.
func servesAlone(t *testing.T, p *Provider, dir, client string, pid int, when string) {
	t.Helper()
	if got := untilRunning(t, dir, 1); got[0] != pid {
		t.Fatalf("running %v%s, want only client %s's %d", got, when, client, pid)
	}
	if catalogPID(p) != pid {
		t.Fatalf("catalog served by %d%s, want client %s's %d", catalogPID(p), when, client, pid)
	}
	describeHas(t, p, "local__echo")
	connected(t, p)
	if pidOf(t, p, client) != pid {
		t.Fatalf("client %s's next call ran elsewhere%s", client, when)
	}
}

// untilShared waits until one process runs, none of those before, and
// serves the catalog.
func untilShared(t *testing.T, p *Provider, dir string, before ...int) {
	t.Helper()
	testwait.Until(t, "a new shared session alone to serve the catalog", func() bool {
		r := testproc.RunningPIDs(t, dir)
		return len(r) == 1 && !slices.Contains(before, r[0]) && catalogPID(p) == r[0]
	})
}

func sorted(pids ...int) []int {
	slices.Sort(pids)
	return pids
}

// TestClientCatalogSessionRelaysListChanged: with a client's session
// serving the catalog (and no shared one running), a tool the server adds
// reaches the host as a catalog change, and Describe lists it.
func TestClientCatalogSessionRelaysListChanged(t *testing.T) {
	host := newFakeHost()
	p, dir := countedServer(t, host, nil)
	a := pidOf(t, p, "A")
	untilRunning(t, dir, 1)
	if catalogPID(p) != a {
		t.Fatalf("catalog served by %d, want client A's %d", catalogPID(p), a)
	}
	drain(host.catalog)
	res, err := p.CallTool(testwait.Context(t), &sdk.CallToolRequest{Name: "local__grow", Arguments: json.RawMessage(`{"text":"extra"}`), Caller: caller("A", "grow")})
	if err != nil || res.IsError {
		t.Fatalf("local__grow: %v %+v", err, res)
	}
	receive(t, host.catalog, "the host to be told the catalog changed")
	describeHas(t, p, "local__extra")
}

func drain(ch chan struct{}) {
	for {
		select {
		case <-ch:
		default:
			return
		}
	}
}

// TestClientCatalogSessionCrash: when the process of the client session
// serving the catalog dies, another client's session serves it and the
// server stays connected; the crashed client's next call starts its own
// process again. When the last client's process dies, the server is
// reported failed until the shared session is up again.
func TestClientCatalogSessionCrash(t *testing.T) {
	host := newFakeHost()
	p, dir := countedServer(t, host, nil)
	a := pidOf(t, p, "A")
	b := pidOf(t, p, "B")
	untilRunning(t, dir, 2)
	if catalogPID(p) != a {
		t.Fatalf("catalog served by %d, want the first client's %d", catalogPID(p), a)
	}
	kill(t, a)
	testwait.Until(t, "B's session to serve the catalog", func() bool { return catalogPID(p) == b })
	connected(t, p)
	describeHas(t, p, "local__echo")
	if pidOf(t, p, "B") != b {
		t.Fatal("B's call ran elsewhere after A's process died")
	}
	a2 := pidOf(t, p, "A")
	if a2 == a || a2 == b {
		t.Fatalf("A's call after its process died ran on %d", a2)
	}
	if got := untilRunning(t, dir, 2); !slices.Equal(got, sorted(a2, b)) {
		t.Fatalf("running %v, want %v", got, sorted(a2, b))
	}

	// Both clients' processes die: the shared session is started again.
	kill(t, b)
	testwait.Until(t, "A's new session to serve the catalog", func() bool { return catalogPID(p) == a2 })
	kill(t, a2)
	untilShared(t, p, dir, a, a2, b)
	connected(t, p)
	describeHas(t, p, "local__echo")
}

func kill(t *testing.T, pid int) {
	t.Helper()
	proc, err := os.FindProcess(pid)
	if err != nil {
		t.Fatal(err)
	}
	if err := proc.Kill(); err != nil {
		t.Fatal(err)
	}
}

// TestCallFromNoSessionBesideClients: a call from no MCP session while a
// client's session serves the catalog runs on a shared session of its
// own, which ends once the call has.
func TestCallFromNoSessionBesideClients(t *testing.T) {
	host := newFakeHost()
	p, dir := countedServer(t, host, nil)
	a := pidOf(t, p, "A")
	untilRunning(t, dir, 1)
	if pid := pidOf(t, p, ""); pid == a {
		t.Fatal("a call from no session ran on client A's session")
	}
	if got := untilRunning(t, dir, 1); got[0] != a {
		t.Fatalf("running %v, want only A's %d", got, a)
	}
	if catalogPID(p) != a {
		t.Fatalf("catalog served by %d, want A's %d", catalogPID(p), a)
	}
}

// TestIdleLastClientGivesWayToShared: a last client's session closed for
// being idle is replaced by the shared session.
func TestIdleLastClientGivesWayToShared(t *testing.T) {
	host := newFakeHost()
	p, dir := countedServer(t, host, map[string]any{"session_idle_secs": 1})
	a := pidOf(t, p, "A")
	untilRunning(t, dir, 1)
	untilShared(t, p, dir, a)
	connected(t, p)
	describeHas(t, p, "local__echo")
}

// TestHeldSharedSessionOutlivesTakeOver: a shared session that a request
// holds (a Describe listing on it, a call from no session) when a
// client's session takes the catalog over is closed only once released.
func TestHeldSharedSessionOutlivesTakeOver(t *testing.T) {
	host := newFakeHost()
	p, dir := countedServer(t, host, nil)
	p.mu.RLock()
	s := p.servers[0]
	p.mu.RUnlock()
	shared, release, err := p.sharedSession(testwait.Context(t), s)
	if err != nil {
		t.Fatal(err)
	}
	a := pidOf(t, p, "A")
	if catalogPID(p) != a {
		t.Fatalf("catalog served by %d, want client A's %d", catalogPID(p), a)
	}
	if !shared.alive() {
		t.Fatal("the held shared session was closed under its request")
	}
	if got := testproc.RunningPIDs(t, dir); !slices.Equal(got, sorted(a, shared.cmd.Process.Pid)) {
		t.Fatalf("running %v, want A's and the held shared session's", got)
	}
	release()
	testwait.Recv(t, shared.done, "the released shared session to end")
	if got := untilRunning(t, dir, 1); got[0] != a {
		t.Fatalf("running %v, want only A's %d", got, a)
	}
}
