package replicas_test

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/openhuman/openhuman-host/internal/cluster"
	"github.com/openhuman/openhuman-host/providers/memory/memorytool"
	"github.com/openhuman/openhuman-host/sdk/mcpwire"
	"github.com/openhuman/openhuman-host/sdk/testwait"
)

// toolStore is the memory provider's store tool: an act, which the act
// budget counts like any other.
const toolStore = memorytool.Store

// callGuard bounds one call: a call still unanswered after it has hung,
// which the tests count as a failure of its own. It is a guard against a
// hang, not a measure of speed.
const callGuard = 3 * time.Minute

// dialAll connects n clients through the proxy, numbered from first: the
// first stateless of them on 2026-07-28, the others on 2025-11-25.
func dialAll(t *testing.T, ctx context.Context, url string, first, n, stateless int) []*cluster.Client {
	t.Helper()
	out := make([]*cluster.Client, n)
	errs := make(chan error, n)
	var wg sync.WaitGroup
	for i := range n {
		version := cluster.Stateless
		if i >= stateless {
			version = cluster.Sessions
		}
		wg.Go(func() {
			c, err := cluster.Dial(ctx, url, first+i, version)
			if err != nil {
				errs <- err
				return
			}
			out[i] = c
		})
	}
	wg.Wait()
	close(errs)
	t.Cleanup(func() {
		for _, c := range out {
			if c != nil {
				c.Close()
			}
		}
	})
	for err := range errs {
		t.Fatal(err)
	}
	return out
}

// soak returns OPENHUMAN_REPLICAS_SOAK as a duration; zero when unset.
func soak(t *testing.T) time.Duration {
	v := os.Getenv("OPENHUMAN_REPLICAS_SOAK")
	if v == "" {
		return 0
	}
	d, err := time.ParseDuration(v)
	if err != nil {
		t.Fatalf("OPENHUMAN_REPLICAS_SOAK=%q: %v", v, err)
	}
	return d
}

// TestLoadAcrossReplicas: three replicas behind HAProxy share one
// PostgreSQL database with an hourly act budget of 37. A hundred clients,
// half on 2026-07-28 and half on 2025-11-25, each make 10 calls at once,
// every other one an act. No call fails; exactly 37 acts run across all
// replicas and the others are refused by the budget; the database holds
// one audit row per call; every session stays on one replica and both
// kinds of client reach every replica. Every fourth call is a
// [memorytool.Store]: each one acknowledged is then found through every
// replica.
func TestLoadAcrossReplicas(t *testing.T) {
	const clients, maxActs, callsPerClient = 100, 37, 10
	budget := maxActs
	c, db := startCluster(t, 3, &budget, func(o *cluster.Options) { o.Memory = true })
	ctx := testwait.Context(t)
	cls := dialAll(t, ctx, c.Proxy.URL, 0, clients, clients/2)
	soakFor := soak(t)

	var mu sync.Mutex
	var outcomes []outcome
	var wg sync.WaitGroup
	start := make(chan struct{})
	began := time.Now()
	for _, cl := range cls {
		wg.Go(func() {
			<-start
			for seq := 0; ; seq++ {
				if soakFor > 0 && time.Since(began) >= soakFor || soakFor == 0 && seq >= callsPerClient {
					return
				}
				tool := cluster.ToolRead
				if seq%2 == 0 {
					tool = cluster.ToolWrite
				}
				callCtx, cancel := context.WithTimeout(ctx, callGuard)
				var (
					res     *mcp.CallToolResult
					replica string
					err     error
					word    string
				)
				if seq%4 == 0 {
					tool, word = toolStore, fmt.Sprintf("loadword%dx%d", cl.ID, seq)
					res, replica, err = cl.CallArgs(callCtx, toolStore, map[string]any{
						"title": "Load note " + word, "content": "Written under load: " + word + "."})
				} else {
					res, replica, err = cl.Call(callCtx, tool, seq)
				}
				cancel()
				o := outcome{client: cl.ID, version: cl.Version, seq: seq, tool: tool, replica: replica, err: err, pinned: cl.Pinned(), word: word}
				if res != nil {
					o.isError, o.text = res.IsError, mcpwire.Text(res)
				}
				mu.Lock()
				outcomes = append(outcomes, o)
				mu.Unlock()
			}
		})
	}
	close(start)
	wg.Wait()
	elapsed := time.Since(began)
	for _, cl := range cls {
		cl.Close()
	}
	// Every acknowledged store is found through every replica.
	var stored []outcome
	for _, o := range outcomes {
		if o.tool == toolStore && o.err == nil && !o.isError {
			stored = append(stored, o)
		}
	}
	if len(stored) == 0 {
		t.Error("no " + memorytool.Store + " was allowed under load")
	}
	for i, r := range c.Replicas {
		direct, err := cluster.Dial(ctx, "http://"+r.Addr+"/", 5000+i, cluster.Stateless)
		if err != nil {
			t.Fatal(err)
		}
		for _, o := range stored {
			res, _, err := direct.CallArgs(ctx, memorytool.Search, map[string]any{"query": o.word})
			if err != nil || res.IsError || !strings.Contains(mcpwire.Text(res), "Load note "+o.word) {
				t.Errorf("memory stored through %s (acknowledged) not found through %s: %v\n%s", o.replica, r.Name, err, mcpwire.Text(res))
			}
		}
		direct.Close()
	}
	// A graceful stop writes every queued audit row.
	if err := c.Stop(ctx); err != nil {
		t.Fatal(err)
	}

	var failed, reads, writes, allowed, refused, stores int
	stateless := map[string]int{}
	legacy := map[string]int{}
	sessionReplicas := map[int]map[string]bool{}
	for _, o := range outcomes {
		if o.err != nil {
			failed++
			if failed <= 5 {
				t.Errorf("failed call: %s", o)
			}
			continue
		}
		if o.version == cluster.Stateless {
			stateless[o.replica]++
		} else {
			legacy[o.replica]++
			if sessionReplicas[o.client] == nil {
				sessionReplicas[o.client] = map[string]bool{}
			}
			sessionReplicas[o.client][o.replica] = true
		}
		switch {
		case o.tool == toolStore && !o.isError:
			writes++
			allowed++
			stores++
		case o.tool == cluster.ToolRead:
			reads++
			if o.isError || o.text != cluster.Want(o.client, o.seq) {
				t.Errorf("read: %s", o)
			}
		case !o.isError:
			writes++
			allowed++
			if o.text != cluster.Want(o.client, o.seq) {
				t.Errorf("allowed act: %s", o)
			}
		default:
			writes++
			refused++
			if o.tool == toolStore {
				stores++
			}
			if !strings.Contains(o.text, "max_actions_per_hour = 37") {
				t.Errorf("act refused other than by the budget: %s", o)
			}
		}
	}
	if failed > 0 {
		t.Errorf("%d of %d calls failed, want 0", failed, len(outcomes))
	}
	if soakFor == 0 && len(outcomes) != clients*callsPerClient {
		t.Errorf("%d calls made, want %d", len(outcomes), clients*callsPerClient)
	}
	if allowed != maxActs {
		t.Errorf("%d acts allowed across the replicas, want exactly %d (max_actions_per_hour); %d refused", allowed, maxActs, refused)
	}
	for _, r := range c.Replicas {
		if stateless[r.Name] == 0 {
			t.Errorf("no 2026-07-28 call reached replica %s: %v", r.Name, stateless)
		}
		if legacy[r.Name] == 0 {
			t.Errorf("no 2025-11-25 session was on replica %s: %v", r.Name, legacy)
		}
	}
	for id, set := range sessionReplicas {
		if len(set) != 1 || set[""] {
			t.Errorf("the session of client %d was answered by %v, want one replica", id, set)
		}
	}

	// The database holds one row per call: reads, allowed acts (none
	// left pending after a graceful stop) and acts the budget refused;
	// the searches made after the load are left out.
	var total int
	if err := db.QueryRowContext(ctx, "SELECT count(*) FROM mcp_audit WHERE tool <> '"+memorytool.Search+"'").Scan(&total); err != nil {
		t.Fatal(err)
	}
	if total != len(outcomes) {
		t.Errorf("%d audit rows in PostgreSQL, want %d (one per call)", total, len(outcomes))
	}
	readRows := auditRows(t, db, cluster.ToolRead)
	writeRows := auditRows(t, db, cluster.ToolWrite)
	if len(readRows) != reads || len(writeRows) != writes-stores {
		t.Errorf("audit rows: %d reads, %d acts of %s; want %d and %d", len(readRows), len(writeRows), cluster.ToolWrite, reads, writes-stores)
	}
	decisions := map[string]int{}
	storeRows, err := db.QueryContext(ctx, "SELECT decision, pending FROM mcp_audit WHERE tool = $1", toolStore)
	if err != nil {
		t.Fatal(err)
	}
	for storeRows.Next() {
		var r struct {
			decision string
			pending  bool
		}
		if err := storeRows.Scan(&r.decision, &r.pending); err != nil {
			t.Fatal(err)
		}
		decisions[r.decision]++
		if r.pending {
			t.Errorf("a "+memorytool.Store+" row is still pending after a graceful stop: %+v", r)
		}
	}
	if err := storeRows.Err(); err != nil {
		t.Fatal(err)
	}
	storeRows.Close()
	for _, r := range writeRows {
		decisions[r.decision]++
		if r.pending {
			t.Errorf("an act's row is still pending after a graceful stop: %+v", r)
		}
	}
	if decisions["allowed"] != maxActs || decisions["denied:budget"] != writes-maxActs || len(decisions) != 2 {
		t.Errorf("act decisions in PostgreSQL = %v, want %d allowed and %d denied:budget", decisions, maxActs, writes-maxActs)
	}
	for _, o := range outcomes {
		if o.tool == cluster.ToolWrite && o.err == nil && !o.isError {
			if r, ok := writeRows[argsKey(o.client, o.seq)]; !ok || r.decision != "allowed" {
				t.Errorf("allowed act %s has audit row %+v (present %v)", o, r, ok)
			}
		}
	}
	t.Logf("%d calls by %d clients in %s through HAProxy; 2026-07-28 calls by replica %v, 2025-11-25 calls by replica %v; %d acts allowed, %d refused by the budget",
		len(outcomes), clients, elapsed.Round(time.Millisecond), stateless, legacy, allowed, refused)
}

// blockMarks returns, by replica name, the client ids of the rep_block
// calls running on each replica (the files its provider made).
func blockMarks(c *cluster.Cluster) map[string][]int {
	out := map[string][]int{}
	for _, r := range c.Replicas {
		_ = filepath.WalkDir(r.DataDir, func(path string, d fs.DirEntry, err error) error {
			if err == nil && !d.IsDir() && strings.HasPrefix(d.Name(), "blocking-") {
				var id, seq int
				if _, err := fmtSscanf(d.Name(), &id, &seq); err == nil {
					out[r.Name] = append(out[r.Name], id)
				}
			}
			return nil
		})
	}
	return out
}

// TestKillReplicaMidLoad: while a hundred clients call through HAProxy,
// one replica is killed with SIGKILL. Calls that were running on it fail,
// each with an error, and never hang (the rep_block calls known to run
// there show it); calls that start after it died do not fail; 2026-07-28
// clients carry on on the other replicas, 2025-11-25 clients whose session
// it held carry on after a new initialize, and the others are untouched;
// every act a client was told succeeded has its audit row in PostgreSQL.
func TestKillReplicaMidLoad(t *testing.T) {
	const clients, blockers, afterKill = 100, 6, 3
	c, db := startCluster(t, 3, nil)
	ctx := testwait.Context(t)
	cls := dialAll(t, ctx, c.Proxy.URL, 0, clients, clients/2)

	// killing is set as the kill is sent, killed once the replica has
	// exited: a call that fails must have ended after the first and, on
	// 2026-07-28, started before the second.
	var killing, killed atomic.Bool
	var successes atomic.Int64
	postKill := make([]atomic.Int64, clients)
	stop := make(chan struct{})
	var mu sync.Mutex
	var outcomes []outcome
	record := func(o outcome) {
		mu.Lock()
		outcomes = append(outcomes, o)
		mu.Unlock()
	}
	var wg sync.WaitGroup
	for i, cl := range cls {
		wg.Go(func() {
			for seq := 0; ; seq++ {
				select {
				case <-stop:
					return
				default:
				}
				tool := cluster.ToolRead
				if seq%2 == 0 {
					tool = cluster.ToolWrite
				}
				o := outcome{client: cl.ID, version: cl.Version, seq: seq, tool: tool, afterKill: killed.Load(), pinned: cl.Pinned()}
				callCtx, cancel := context.WithTimeout(ctx, callGuard)
				res, replica, err := cl.Call(callCtx, tool, seq)
				cancel()
				o.replica, o.err, o.endedAfterKilling = replica, err, killing.Load()
				if res != nil {
					o.isError, o.text = res.IsError, mcpwire.Text(res)
				}
				record(o)
				if err == nil && !o.isError {
					successes.Add(1)
					if o.afterKill {
						postKill[i].Add(1)
					}
					continue
				}
				if cl.Version == cluster.Sessions {
					// The session may be gone with its replica: start a
					// new one, as such a client must.
					for {
						err := cl.Reconnect(ctx)
						if err == nil {
							break
						}
						record(outcome{client: cl.ID, version: cl.Version, seq: seq, tool: "initialize", err: err,
							afterKill: killed.Load(), endedAfterKilling: killing.Load()})
						select {
						case <-ctx.Done():
							return
						case <-time.After(100 * time.Millisecond):
						}
					}
				}
			}
		})
	}
	testwait.Until(t, "300 successful calls before the kill", func() bool { return successes.Load() >= 300 })

	// Calls known to be running on each replica when it dies.
	type blocked struct {
		id  int
		err error
	}
	blockCtx, cancelBlocks := context.WithCancel(ctx)
	defer cancelBlocks()
	blockCls := dialAll(t, ctx, c.Proxy.URL, 1000, blockers, blockers)
	blockDone := make(chan blocked, blockers)
	for _, cl := range blockCls {
		go func() {
			res, _, err := cl.Call(blockCtx, cluster.ToolBlock, 0)
			if err == nil && res.IsError {
				err = errors.New(mcpwire.Text(res))
			} else if err == nil {
				err = errors.New("rep_block returned a result: " + mcpwire.Text(res))
			}
			blockDone <- blocked{cl.ID, err}
		}()
	}
	var marks map[string][]int
	testwait.Until(t, "every rep_block call to run on a replica", func() bool {
		marks = blockMarks(c)
		n := 0
		for _, ids := range marks {
			n += len(ids)
		}
		return n == blockers
	})
	victim := c.Replicas[0]
	for _, r := range c.Replicas {
		if len(marks[r.Name]) > len(marks[victim.Name]) {
			victim = r
		}
	}
	killing.Store(true)
	if err := victim.Kill(); err != nil {
		t.Fatal(err)
	}
	killed.Store(true)
	killedBlocks := marks[victim.Name]
	// Every call running on the dead replica ends with an error at once;
	// the others keep running.
	for range killedBlocks {
		b := testwait.Recv(t, blockDone, "the rep_block calls on the killed replica to fail")
		if !slices.Contains(killedBlocks, b.id) {
			t.Errorf("rep_block of client %d, on a live replica, ended when %s was killed: %v", b.id, victim.Name, b.err)
		} else if b.err == nil {
			t.Errorf("rep_block of client %d on the killed replica ended without an error", b.id)
		}
	}
	testwait.Until(t, "every client to make 3 successful calls after the kill", func() bool {
		for i := range postKill {
			if postKill[i].Load() < afterKill {
				return false
			}
		}
		return true
	})
	close(stop)
	wg.Wait()
	select {
	case b := <-blockDone:
		t.Errorf("rep_block of client %d, on a live replica, ended before it was cancelled: %v", b.id, b.err)
	default:
	}
	cancelBlocks()
	for range blockers - len(killedBlocks) {
		testwait.Recv(t, blockDone, "the other rep_block calls to end once cancelled")
	}
	for _, r := range c.Replicas {
		if r != victim {
			if err := r.Stop(ctx); err != nil {
				t.Error(err)
			}
		}
	}

	var inFlight, sessionLost int
	examples := map[string]string{}
	for _, o := range outcomes {
		if o.err != nil {
			kind := "2026-07-28 in flight"
			if o.version == cluster.Sessions {
				kind = "session on the killed replica"
			}
			if _, ok := examples[kind]; !ok {
				examples[kind] = o.err.Error()
			}
		}
		ok := o.err == nil && !o.isError
		if ok {
			if o.afterKill && o.replica == victim.Name {
				t.Errorf("answered by the killed replica after it died: %s", o)
			}
			if o.text != cluster.Want(o.client, o.seq) {
				t.Errorf("unexpected answer: %s", o)
			}
			continue
		}
		switch {
		case errors.Is(o.err, context.DeadlineExceeded):
			t.Errorf("call hung for %s: %s", callGuard, o)
		case !o.endedAfterKilling:
			t.Errorf("a call failed before any replica was killed: %s", o)
		case o.err == nil:
			t.Errorf("a call failed as a tool error: %s", o)
		case o.version == cluster.Sessions && o.pinned == victim.Name:
			// Its session died with the replica: in flight then, or
			// refused (404) until the client opened a new session.
			sessionLost++
		case o.version == cluster.Sessions:
			t.Errorf("a session on a live replica (%s) failed: %s", o.pinned, o)
		case o.afterKill:
			t.Errorf("a 2026-07-28 call that started after %s died failed: %s", victim.Name, o)
		default:
			inFlight++
		}
	}
	for _, cl := range cls {
		if cl.Version == cluster.Sessions && cl.Pinned() == victim.Name {
			t.Errorf("client %d still has its session on the killed replica", cl.ID)
		}
	}

	// Every act a client was told ran has its row in the shared database,
	// also those the killed replica ran.
	rows := auditRows(t, db, cluster.ToolWrite)
	acked, pending := 0, 0
	for _, o := range outcomes {
		if o.tool != cluster.ToolWrite || o.err != nil || o.isError {
			continue
		}
		acked++
		r, ok := rows[argsKey(o.client, o.seq)]
		if !ok || r.decision != "allowed" {
			t.Errorf("acknowledged act lost: %s (row %+v, present %v)", o, r, ok)
		}
		if r.pending {
			pending++
		}
	}
	byReplica := map[string]int{}
	for _, o := range outcomes {
		byReplica[o.replica]++
	}
	t.Logf("killed %s (holding %d rep_block calls) after %d calls; %d calls in all (by replica %v); %d 2026-07-28 calls in flight failed, "+
		"%d calls of sessions on %s failed; %d acknowledged acts all in PostgreSQL, %d of them left pending by the kill",
		victim.Name, len(killedBlocks), 300, len(outcomes), byReplica, inFlight, sessionLost, victim.Name, acked, pending)
	for kind, msg := range examples {
		t.Logf("a failed call (%s): %s", kind, msg)
	}
}
