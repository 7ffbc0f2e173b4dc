package server

import (
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/openhuman/openhuman-host/host/audit"
	"github.com/openhuman/openhuman-host/host/policy"
	"github.com/openhuman/openhuman-host/sdk"
)

// auditServer is a server over the fake provider whose audit is a real
// audit.Log in a temporary directory; call sees every provider call.
func auditServerAt(t *testing.T, path string, maxActs *int, call func(ctx context.Context, req *sdk.CallToolRequest)) (*Server, *audit.Log) {
	t.Helper()
	log, err := audit.Open(t.Context(), path, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = log.Close(context.Background()) })
	pol := testPolicy(t, policy.Options{MaxActionsPerHour: maxActs, SharedBudget: true})
	inner := defaultProvider()
	p := &fakeProvider{call: func(ctx context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
		if call != nil {
			call(ctx, req)
		}
		return inner.call(ctx, req)
	}}
	s, err := New(testCatalog(), map[string]Dispatcher{"fake": p}, &Options{Policy: pol, Audit: log, RecordReads: true, AuditRules: testAuditRules})
	if err != nil {
		t.Fatal(err)
	}
	return s, log
}

func TestAuditActRowIsWrittenBeforeDispatch(t *testing.T) {
	t.Parallel()
	var seen atomic.Pointer[[]audit.Record]
	path := filepath.Join(t.TempDir(), "audit.db")
	s, log := auditServerAt(t, path, nil, func(ctx context.Context, req *sdk.CallToolRequest) {
		if req.Name != "fake.store" {
			return
		}
		// While the act runs, another process already sees its row.
		other, err := audit.Open(ctx, path, nil)
		if err != nil {
			t.Error(err)
			return
		}
		defer other.Close(context.Background())
		rows, err := other.List(ctx, audit.Query{})
		if err != nil {
			t.Error(err)
		}
		seen.Store(&rows)
	})
	res, err := s.Call(t.Context(), Call{Tool: "fake_store", Arguments: json.RawMessage(`{"title":"t"}`), Caller: sdk.Caller{SourceType: "mcp:test"}})
	if err != nil || res.IsError {
		t.Fatalf("Call() = %+v, %v", res, err)
	}
	during := *seen.Load()
	if len(during) != 1 || !during[0].Pending || during[0].Tool != "fake_store" || during[0].Decision != audit.DecisionAllowed {
		t.Fatalf("rows while the act ran = %+v, want its pending row", during)
	}
	if err := log.Flush(t.Context()); err != nil {
		t.Fatal(err)
	}
	after, err := log.List(t.Context(), audit.Query{})
	if err != nil {
		t.Fatal(err)
	}
	if len(after) != 1 || after[0].ID != during[0].ID || after[0].Pending || !after[0].Success || after[0].ResultRef != "mcp/doc-1" {
		t.Errorf("row after the act = %+v, want row %d completed with its result", after, during[0].ID)
	}
}

func TestAuditFailureRefusesActsAndNeverHoldsReads(t *testing.T) {
	t.Parallel()
	var dispatched atomic.Int32
	a := &memAudit{beginErr: errors.New("database or disk is full")}
	pol := testPolicy(t, policy.Options{SharedBudget: true})
	inner := defaultProvider()
	p := &fakeProvider{call: func(ctx context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
		dispatched.Add(1)
		return inner.call(ctx, req)
	}}
	s, err := New(testCatalog(), map[string]Dispatcher{"fake": p}, &Options{Policy: pol, Audit: a, RecordReads: true})
	if err != nil {
		t.Fatal(err)
	}
	res, err := s.Call(t.Context(), Call{Tool: "fake_store", Arguments: json.RawMessage(`{}`)})
	if err != nil {
		t.Fatal(err)
	}
	want := "fake_store was not run: the audit log could not record it first (database or disk is full). Act tools run only once their audit row is written; free disk space"
	if !res.IsError || !strings.HasPrefix(res.Text(), want) {
		t.Errorf("act while the audit fails = %q, want an error starting %q", res.Text(), want)
	}
	if n := dispatched.Load(); n != 0 {
		t.Errorf("the act was dispatched %d times without an audit row", n)
	}
	res, err = s.Call(t.Context(), Call{Tool: "fake_search", Arguments: json.RawMessage(`{"query":"x"}`)})
	if err != nil || res.IsError {
		t.Errorf("read while the audit fails = %+v, %v; want it answered", res, err)
	}
	rows := a.all()
	if len(rows) != 2 || rows[0].Decision != "denied:audit" || rows[1].Decision != audit.DecisionAllowed {
		t.Errorf("rows = %+v, want the refused act and the read", rows)
	}
}

func TestAuditSharedActBudget(t *testing.T) {
	t.Parallel()
	two := 2
	path := filepath.Join(t.TempDir(), "audit.db")
	s, _ := auditServerAt(t, path, &two, nil)
	// A second server on the same audit database, as a second process would be.
	other, err := audit.Open(t.Context(), path, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = other.Close(context.Background()) })
	pol := testPolicy(t, policy.Options{MaxActionsPerHour: &two, SharedBudget: true})
	s2 := newFakeServer(t, &Options{Policy: pol, Audit: other})
	var texts []string
	for _, srv := range []*Server{s, s2, s, s2} {
		res, err := srv.Call(t.Context(), Call{Tool: "fake_store", Arguments: json.RawMessage(`{}`)})
		if err != nil {
			t.Fatal(err)
		}
		texts = append(texts, res.Text())
	}
	if texts[0] != "stored" || texts[1] != "stored" {
		t.Errorf("first two acts = %q, want both stored", texts[:2])
	}
	for _, got := range texts[2:] {
		if !strings.HasPrefix(got, "fake_store would exceed [autonomy] max_actions_per_hour = 2; the next slot frees up at") {
			t.Errorf("act beyond the shared budget = %q, want the budget refusal", got)
		}
	}
}

// TestAuditFailureOnPostgresSaysSo: when the shared database does not
// take an act's row, the refusal points at the database, not the disk.
func TestAuditFailureOnPostgresSaysSo(t *testing.T) {
	t.Parallel()
	a := &memAudit{beginErr: errors.New("audit: write the row of fake_store before it runs in PostgreSQL 127.0.0.1:5432/team: unexpected EOF")}
	pol := testPolicy(t, policy.Options{SharedBudget: true})
	s := newFakeServer(t, &Options{Policy: pol, Audit: a})
	res, err := s.Call(t.Context(), Call{Tool: "fake_store", Arguments: json.RawMessage(`{}`)})
	if err != nil {
		t.Fatal(err)
	}
	if text := res.Text(); !res.IsError || !strings.Contains(text, "shared PostgreSQL database did not take the row") || strings.Contains(text, "disk space") {
		t.Errorf("act while PostgreSQL is down = %q", text)
	}
}
