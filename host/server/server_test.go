package server

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/openhuman/openhuman-host/host/audit"
	"github.com/openhuman/openhuman-host/host/catalog"
	"github.com/openhuman/openhuman-host/host/policy"
	"github.com/openhuman/openhuman-host/sdk"
	"github.com/openhuman/openhuman-host/sdk/testwait"
)

// fakeProvider answers every tool from a function.
type fakeProvider struct {
	call func(ctx context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error)
}

func (f *fakeProvider) CallTool(ctx context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
	return f.call(ctx, req)
}

func (f *fakeProvider) ReadResource(_ context.Context, req *sdk.ReadResourceRequest) (*sdk.ReadResourceResult, error) {
	if req.URI != "fake://doc" {
		return nil, sdk.ErrResourceNotFound
	}
	return &sdk.ReadResourceResult{Contents: []sdk.ResourceContents{{URI: req.URI, MIMEType: "text/markdown", Text: "# doc"}}}, nil
}

// memAudit keeps rows in memory.
type memAudit struct {
	mu       sync.Mutex
	rows     []audit.Record
	beginErr error
}

func (m *memAudit) Record(_ context.Context, r audit.Record) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.rows = append(m.rows, r)
	return nil
}

// Begin stores a pending row, as audit.Log.Begin does, unless beginErr is
// set; with limit >= 0 it counts the allowed acts it holds, with
// profileLimit >= 0 those of r.Profile.
func (m *memAudit) Begin(_ context.Context, r audit.Record, limit, profileLimit int) (uint64, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.beginErr != nil {
		return 0, m.beginErr
	}
	for _, cap := range []struct {
		limit   int
		profile *string
	}{{limit, nil}, {profileLimit, &r.Profile}} {
		if cap.limit < 0 {
			continue
		}
		n := 0
		for _, row := range m.rows {
			if row.Class == audit.ClassAct && row.Decision == audit.DecisionAllowed && (cap.profile == nil || row.Profile == *cap.profile) {
				n++
			}
		}
		if n >= cap.limit {
			be := &audit.BudgetError{Limit: cap.limit, FreeAt: time.Now().Add(time.Hour)}
			if cap.profile != nil {
				be.Profile = *cap.profile
			}
			return 0, be
		}
	}
	r.Pending = true
	m.rows = append(m.rows, r)
	r.ID = uint64(len(m.rows))
	m.rows[len(m.rows)-1].ID = r.ID
	return r.ID, nil
}

func (m *memAudit) Complete(id uint64, r audit.Record) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	r.ID, r.Pending = id, false
	m.rows[id-1] = r
	return nil
}

func (m *memAudit) all() []audit.Record {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]audit.Record(nil), m.rows...)
}

const searchSchema = `{"type":"object","properties":{"query":{"type":"string","maxLength":100},"k":{"type":"integer","minimum":1,"maximum":50},"tags":{"type":"array","maxItems":2,"items":{"type":"string","maxLength":4}}},"required":["query"],"additionalProperties":false}`

func testCatalog() *catalog.Catalog {
	return catalog.Build(nil, []catalog.Source{{Provider: "fake", Catalog: &sdk.Catalog{
		Name: "fake",
		Tools: []sdk.Tool{
			{Name: "fake.search", Description: "search", InputSchema: json.RawMessage(searchSchema), Class: sdk.ClassRead,
				Annotations: sdk.Annotations{ReadOnlyHint: sdk.Bool(true)}},
			{Name: "fake.store", Description: "store", InputSchema: json.RawMessage(`{"type":"object","properties":{"title":{"type":"string"}},"additionalProperties":false}`), Class: sdk.ClassAct,
				OutputSchema: json.RawMessage(`{"type":"object"}`), Annotations: sdk.Annotations{DestructiveHint: sdk.Bool(true)}},
			{Name: "fake.slow", Description: "slow", InputSchema: json.RawMessage(`{"type":"object"}`), Class: sdk.ClassRead, Timeout: 50 * time.Millisecond},
		},
		Resources: []sdk.Resource{{URI: "fake://doc", Name: "doc", MIMEType: "text/markdown"}},
	}}})
}

func defaultProvider() *fakeProvider {
	return &fakeProvider{call: func(ctx context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
		switch req.Name {
		case "fake.store":
			return sdk.StructuredResult("stored", map[string]string{"document_id": "mcp/doc-1"})
		case "fake.slow":
			<-ctx.Done()
			return nil, ctx.Err()
		}
		if strings.Contains(string(req.Arguments), "crash") {
			return nil, errors.New("connection reset")
		}
		_ = req.Progress(ctx, sdk.Progress{Progress: 1, Total: 2, Message: "half"})
		return sdk.TextResult("found " + string(req.Arguments)), nil
	}}
}

// testAuditRules are the audit rules of the fake provider's tools: a
// stored document's id is the row's result reference.
var testAuditRules = sdk.AuditRules{ResultRefs: []string{"document_id"}}

// testPolicy builds the policy of opts, failing the test when they are
// invalid.
func testPolicy(t testing.TB, opts policy.Options) *policy.Policy {
	t.Helper()
	pol, err := policy.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	return pol
}

// profilePolicy is pol narrowed to the profile p, failing the test when p
// is invalid.
func profilePolicy(t testing.TB, pol *policy.Policy, p policy.Profile) *policy.Policy {
	t.Helper()
	narrowed, err := pol.ForProfile(p)
	if err != nil {
		t.Fatal(err)
	}
	return narrowed
}

// newFakeServer serves testCatalog, with defaultProvider as provider
// "fake", under opts, failing the test when New fails.
func newFakeServer(t testing.TB, opts *Options) *Server {
	t.Helper()
	s, err := New(testCatalog(), map[string]Dispatcher{"fake": defaultProvider()}, opts)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func newTestServer(t *testing.T, level policy.Level, recordReads bool) (*Server, *memAudit) {
	t.Helper()
	pol := testPolicy(t, policy.Options{Level: level})
	a := &memAudit{}
	s := newFakeServer(t, &Options{Policy: pol, Audit: a, RecordReads: recordReads, AuditRules: testAuditRules})
	return s, a
}

func TestCallPipeline(t *testing.T) {
	t.Parallel()
	tests := map[string]struct {
		level        policy.Level
		tool, args   string
		wantError    bool
		wantText     string
		wantDecision string
		wantRef      string
	}{
		"read allowed":           {tool: "fake.search", args: `{"query":"reef"}`, wantText: `found {"query":"reef"}`, wantDecision: "allowed"},
		"act allowed":            {tool: "fake_store", args: `{"title":"t"}`, wantText: "stored", wantDecision: "allowed", wantRef: "mcp/doc-1"},
		"k above max":            {tool: "fake.search", args: `{"query":"x","k":51}`, wantError: true, wantText: `argument "k" must be between 1 and 50; got 51`, wantDecision: "denied:invalid_arguments"},
		"k zero":                 {tool: "fake_search", args: `{"query":"x","k":0}`, wantError: true, wantText: `argument "k" must be between 1 and 50; got 0`, wantDecision: "denied:invalid_arguments"},
		"k wrong type":           {tool: "fake.search", args: `{"query":"x","k":"5"}`, wantError: true, wantText: `argument "k" must be of type integer; got string (1 characters)`, wantDecision: "denied:invalid_arguments"},
		"k fractional":           {tool: "fake.search", args: `{"query":"x","k":2.5}`, wantError: true, wantText: `argument "k" must be of type integer; got number 2.5`, wantDecision: "denied:invalid_arguments"},
		"unknown argument":       {tool: "fake.search", args: `{"query":"x","bogus":1}`, wantError: true, wantText: `unknown argument "bogus"; fake_search takes: k, query, tags`, wantDecision: "denied:invalid_arguments"},
		"blank required string":  {tool: "fake.search", args: `{"query":"  \t"}`, wantError: true, wantText: `argument "query" must not be blank`, wantDecision: "denied:invalid_arguments"},
		"missing required":       {tool: "fake.search", args: `{}`, wantError: true, wantText: `missing required argument "query"`, wantDecision: "denied:invalid_arguments"},
		"too many items":         {tool: "fake.search", args: `{"query":"x","tags":["a","b","c"]}`, wantError: true, wantText: `argument "tags" has 3 items; at most 2 allowed`, wantDecision: "denied:invalid_arguments"},
		"item too long":          {tool: "fake.search", args: `{"query":"x","tags":["a","abcde"]}`, wantError: true, wantText: `argument "tags" item 2 is 5 characters long; at most 4 allowed`, wantDecision: "denied:invalid_arguments"},
		"arguments not object":   {tool: "fake.search", args: `[1]`, wantError: true, wantText: `arguments must be a JSON object; fake_search takes: k, query, tags`, wantDecision: "denied:invalid_arguments"},
		"readonly refuses acts":  {level: policy.ReadOnly, tool: "fake.store", args: `{}`, wantError: true, wantText: `level`, wantDecision: "denied:readonly"},
		"readonly allows reads":  {level: policy.ReadOnly, tool: "fake_search", args: `{"query":"x"}`, wantText: `found {"query":"x"}`, wantDecision: "allowed"},
		"provider failure named": {tool: "fake.search", args: `{"query":"crash"}`, wantError: true, wantText: "fake_search failed: provider fake: connection reset", wantDecision: "allowed"},
		"tool timeout":           {tool: "fake.slow", args: `{}`, wantError: true, wantText: "fake_slow timed out after 50ms", wantDecision: "allowed"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			s, a := newTestServer(t, tc.level, true) // no level is supervised
			res, err := s.Call(context.Background(), Call{Tool: tc.tool, Arguments: json.RawMessage(tc.args), Caller: sdk.Caller{SourceType: "mcp:test"}})
			if err != nil {
				t.Fatalf("Call: %v", err)
			}
			if res.IsError != tc.wantError {
				t.Errorf("IsError = %v, want %v (%s)", res.IsError, tc.wantError, res.Text())
			}
			if got := res.Text(); !strings.Contains(got, tc.wantText) {
				t.Errorf("text = %q, want it to contain %q", got, tc.wantText)
			}
			rows := a.all()
			if len(rows) != 1 {
				t.Fatalf("%d audit rows, want exactly 1", len(rows))
			}
			r := rows[0]
			if r.Decision != tc.wantDecision || r.Success == tc.wantError || r.Tool != strings.Replace(tc.tool, ".", "_", 1) || r.Provider != "fake" || r.SourceType != "mcp:test" || r.ResultRef != tc.wantRef {
				t.Errorf("audit row = %+v", r)
			}
			if tc.wantError && r.Error == "" {
				t.Error("failed call has no error in its audit row")
			}
		})
	}
}

func TestUnknownToolIsNotAudited(t *testing.T) {
	t.Parallel()
	s, a := newTestServer(t, policy.Supervised, true)
	_, err := s.Call(context.Background(), Call{Tool: "no.such", Arguments: json.RawMessage(`{}`)})
	if !errors.Is(err, ErrUnknownTool) {
		t.Fatalf("err = %v, want ErrUnknownTool", err)
	}
	if n := len(a.all()); n != 0 {
		t.Errorf("%d audit rows for an unknown tool", n)
	}
}

func TestRecordReadsOff(t *testing.T) {
	t.Parallel()
	s, a := newTestServer(t, policy.Supervised, false)
	ctx := context.Background()
	if _, err := s.Call(ctx, Call{Tool: "fake.search", Arguments: json.RawMessage(`{"query":"x"}`)}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Call(ctx, Call{Tool: "fake.store", Arguments: json.RawMessage(`{}`)}); err != nil {
		t.Fatal(err)
	}
	rows := a.all()
	if len(rows) != 1 || rows[0].Tool != "fake_store" {
		t.Errorf("rows = %+v, want only the act", rows)
	}
}

func TestDepthLimit(t *testing.T) {
	t.Parallel()
	s, a := newTestServer(t, policy.Supervised, true)
	res, err := s.Call(context.Background(), Call{Tool: "fake.search", Arguments: json.RawMessage(`{"query":"x"}`), Caller: sdk.Caller{Depth: MaxDepth + 1}})
	if err != nil || !res.IsError || !strings.Contains(res.Text(), "at most 6 deep") {
		t.Fatalf("res = %+v, err = %v", res, err)
	}
	if rows := a.all(); len(rows) != 1 || rows[0].Decision != "denied:depth" {
		t.Errorf("rows = %+v", rows)
	}
}

// connect runs s over in-memory transports and returns a connected client
// session at the client's latest protocol version.
func connect(t *testing.T, s *Server, clientName string, opts *mcp.ClientOptions) *mcp.ClientSession {
	t.Helper()
	return connectVersion(t, s, clientName, opts, "")
}

func TestMCPSurface(t *testing.T) {
	t.Parallel()
	s, a := newTestServer(t, policy.Supervised, true)
	var mu sync.Mutex
	var progress []string
	cs := connect(t, s, "Claude Desktop", &mcp.ClientOptions{
		ProgressNotificationHandler: func(_ context.Context, req *mcp.ProgressNotificationClientRequest) {
			mu.Lock()
			defer mu.Unlock()
			progress = append(progress, req.Params.Message)
		},
	})
	ctx := context.Background()

	init := cs.InitializeResult()
	//lint:ignore SA1019 the logging capability is still advertised for older protocol versions.
	if init.ServerInfo.Name != Name || init.Capabilities.Tools == nil || init.Capabilities.Resources == nil || init.Capabilities.Logging == nil {
		t.Fatalf("initialize result = %+v", init)
	}
	if diff := cmp.Diff([]string{"fake_search", "fake_slow", "fake_store"}, listedTools(t, cs)); diff != "" {
		t.Errorf("tools (-want +got):\n%s", diff)
	}

	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "fake.search", Arguments: map[string]any{"query": "reef"}, Meta: mcp.Meta{"progressToken": "p1"}})
	if err != nil || res.IsError {
		t.Fatalf("call: %v %+v", err, res)
	}
	// Notifications are handled asynchronously on the client side.
	var gotProgress []string
	testwait.Until(t, "a progress notification", func() bool {
		mu.Lock()
		defer mu.Unlock()
		gotProgress = append([]string(nil), progress...)
		return len(gotProgress) > 0
	})
	if diff := cmp.Diff([]string{"half"}, gotProgress); diff != "" {
		t.Errorf("progress (-want +got):\n%s", diff)
	}

	res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "fake.store", Arguments: map[string]any{}})
	if err != nil || res.IsError {
		t.Fatalf("store: %v %+v", err, res)
	}
	if diff := cmp.Diff(map[string]any{"document_id": "mcp/doc-1"}, res.StructuredContent); diff != "" {
		t.Errorf("structured content (-want +got):\n%s", diff)
	}

	_, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "no.such_tool", Arguments: map[string]any{}})
	var rpcErr *jsonrpc.Error
	if !errors.As(err, &rpcErr) || rpcErr.Code != jsonrpc.CodeInvalidParams {
		t.Errorf("unknown tool error = %v, want JSON-RPC -32602", err)
	}

	read, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "fake://doc"})
	if err != nil || len(read.Contents) != 1 || read.Contents[0].Text != "# doc" {
		t.Errorf("read resource: %v %+v", err, read)
	}

	rows := a.all()
	if len(rows) != 2 {
		t.Fatalf("%d audit rows, want 2", len(rows))
	}
	for _, r := range rows {
		if r.SourceType != "mcp:claude-desktop" || r.ClientName != "Claude Desktop" || r.ClientVersion != "9.9" || !strings.HasPrefix(r.SessionHash, "sha256:") {
			t.Errorf("provenance in audit row = %+v", r)
		}
	}
	if rows[0].SessionHash != rows[1].SessionHash {
		t.Errorf("one session, two session hashes: %q %q", rows[0].SessionHash, rows[1].SessionHash)
	}
	// Called by their dotted names, recorded by the advertised ones.
	if rows[0].Tool != "fake_search" || rows[1].Tool != "fake_store" {
		t.Errorf("audit rows name %q and %q, want fake_search and fake_store", rows[0].Tool, rows[1].Tool)
	}
}

func TestCleanClientText(t *testing.T) {
	t.Parallel()
	tests := map[string]string{
		"Claude Desktop":         "Claude Desktop",
		"idle\x1b[31mRED\nFAKE":  "idle[31mREDFAKE",
		strings.Repeat("n", 300): strings.Repeat("n", 128),
		"caf\u00e9\u0000":        "caf\u00e9",
	}
	for in, want := range tests {
		if got := cleanClientText(in); got != want {
			t.Errorf("cleanClientText(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestSourceType(t *testing.T) {
	t.Parallel()
	tests := map[string]string{
		"Claude Desktop":     "mcp:claude-desktop",
		"cursor":             "mcp:cursor",
		"  Interop Probe!! ": "mcp:interop-probe",
		"":                   "mcp",
		"日本語":                "mcp",
		"a--b__c":            "mcp:a-b-c",
		"Visual Studio Code": "mcp:visual-studio-code",
	}
	for in, want := range tests {
		if got := SourceType(in); got != want {
			t.Errorf("SourceType(%q) = %q, want %q", in, got, want)
		}
	}
}
