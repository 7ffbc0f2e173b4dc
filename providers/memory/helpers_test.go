package memory

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/jsonschema-go/jsonschema"
	"github.com/openhuman/openhuman-host/sdk"
	"github.com/openhuman/openhuman-host/sdk/storage/pgtest"
)

// testClock is a settable clock for deterministic timestamps, in UTC: it
// starts at startMS and moves only by Advance. It is safe for concurrent
// use.
type testClock struct {
	ns atomic.Int64 // Unix nanoseconds
}

func newTestClock() *testClock {
	c := &testClock{}
	c.ns.Store(startMS * int64(time.Millisecond))
	return c
}

func (c *testClock) Now() time.Time { return time.Unix(0, c.ns.Load()).UTC() }

func (c *testClock) Advance(d time.Duration) { c.ns.Add(int64(d)) }

// checkMapping checks that f, named name in messages, maps each key of
// cases to its value.
func checkMapping(t *testing.T, name string, f func(string) string, cases map[string]string) {
	t.Helper()
	for in, want := range cases {
		if got := f(in); got != want {
			t.Errorf("%s(%q) = %q, want %q", name, in, got, want)
		}
	}
}

// startMS is testClock's initial time in Unix milliseconds.
const startMS = 1_700_000_000_000

func TestMain(m *testing.M) { pgtest.Main(m) }

// envTestDriver names the environment variable that chooses the storage
// driver of the driver-neutral tests: "postgres" runs them on a throwaway
// PostgreSQL (pgtest), anything else on memory.db. `make test` runs the
// package once with each.
const envTestDriver = "OPENHUMAN_MEMORY_TEST_DRIVER"

// onPostgresDriver reports whether the driver-neutral tests run on
// PostgreSQL.
func onPostgresDriver() bool { return os.Getenv(envTestDriver) == "postgres" }

// sqliteOnly skips a test of memory.db itself (its files, FTS5 index,
// schema steps, backup or recovery) when the tests run on PostgreSQL.
func sqliteOnly(t testing.TB) {
	t.Helper()
	if onPostgresDriver() {
		t.Skip("tests memory.db itself; runs with the SQLite driver")
	}
}

// pgDatabases maps a test's data directory to the PostgreSQL database
// that stands for it, so that a provider opened again on the same
// directory finds the same memory.
var pgDatabases sync.Map

// configureRequest is the ConfigureRequest of a provider on dir with cfg
// (nil means {}) and secrets: on PostgreSQL, with the storage secrets of
// the database that stands for dir, created for t on first use.
func configureRequest(t testing.TB, dir string, cfg json.RawMessage, secrets map[string]string) *sdk.ConfigureRequest {
	t.Helper()
	if cfg == nil {
		cfg = json.RawMessage(`{}`)
	}
	req := &sdk.ConfigureRequest{Config: cfg, DataDir: dir, Secrets: secrets}
	if !onPostgresDriver() {
		return req
	}
	dsn, ok := pgDatabases.Load(dir)
	if !ok {
		dsn, _ = pgDatabases.LoadOrStore(dir, pgtest.NewDatabase(t))
	}
	req.Secrets = map[string]string{SecretStorageDriver: "postgres", SecretStorageDSN: dsn.(string)}
	for k, v := range secrets {
		req.Secrets[k] = v
	}
	return req
}

// openProvider configures a provider on dir and closes it at the end of the
// test.
func openProvider(t testing.TB, dir string, clock *testClock) *Provider {
	t.Helper()
	requireFTS5(t)
	opts := &Options{}
	if clock != nil {
		opts.Now = clock.Now
	}
	p := New(opts)
	if err := p.Configure(context.Background(), configureRequest(t, dir, nil, nil)); err != nil {
		t.Fatalf("Configure: %v", err)
	}
	t.Cleanup(func() {
		if err := p.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return p
}

// requireFTS5 skips tests that open a database when the binary has no
// FTS5; TestConfigureWithoutFTS5 covers that build instead.
func requireFTS5(t testing.TB) {
	t.Helper()
	if !fts5Compiled {
		t.Skip("needs SQLite FTS5: go test -tags sqlite_fts5")
	}
}

// newProvider configures a provider on a fresh directory with a test clock.
func newProvider(t *testing.T) (*Provider, *testClock) {
	t.Helper()
	clock := newTestClock()
	return openProvider(t, t.TempDir(), clock), clock
}

// newProviderWith is newProvider, on its own clock, with docs stored in
// order through memory_store.
func newProviderWith(t *testing.T, docs ...map[string]any) *Provider {
	t.Helper()
	p, _ := newProvider(t)
	for _, doc := range docs {
		put(t, p, doc)
	}
	return p
}

// storeOf returns p's configured store, failing the test when there is
// none.
func storeOf(t *testing.T, p *Provider) *store {
	t.Helper()
	st, err := p.configuredStore()
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// callRaw calls a tool and checks the result's shape: a text block always,
// and for successful results structured content that validates against the
// tool's output schema.
func callRaw(t *testing.T, p *Provider, name string, args any) *sdk.CallToolResult {
	t.Helper()
	raw, ok := args.(json.RawMessage)
	if !ok {
		var err error
		if raw, err = json.Marshal(args); err != nil {
			t.Fatalf("marshal args: %v", err)
		}
	}
	res, err := p.CallTool(context.Background(), &sdk.CallToolRequest{Name: name, Arguments: raw})
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	if len(res.Content) == 0 || res.Content[0].Type != "text" || res.Content[0].Text == "" {
		t.Fatalf("%s: result has no text block: %+v", name, res)
	}
	if res.IsError {
		return res
	}
	if res.StructuredContent == nil {
		t.Fatalf("%s: successful result has no structured content", name)
	}
	validateOutput(t, name, res.StructuredContent)
	return res
}

// call calls a tool that must succeed and decodes its structured content
// into T.
func call[T any](t *testing.T, p *Provider, name string, args any) T {
	t.Helper()
	res := callRaw(t, p, name, args)
	if res.IsError {
		t.Fatalf("%s(%v): unexpected error result: %s", name, args, res.Content[0].Text)
	}
	var v T
	if err := json.Unmarshal(res.StructuredContent, &v); err != nil {
		t.Fatalf("%s: decode structured content: %v", name, err)
	}
	return v
}

// put stores a document and returns the result.
func put(t *testing.T, p *Provider, args map[string]any) storeResult {
	t.Helper()
	return call[storeResult](t, p, ToolStore, args)
}

// search runs memory_search and returns its hits.
func search(t *testing.T, p *Provider, query string, k int) []searchHit {
	t.Helper()
	args := map[string]any{"query": query}
	if k != 0 {
		args["k"] = k
	}
	return call[searchResult](t, p, ToolSearch, args).Chunks
}

// hitDocs lists the document ids of hits in order.
func hitDocs(hits []searchHit) []string {
	ids := []string{}
	for _, h := range hits {
		ids = append(ids, h.DocumentID)
	}
	return ids
}

// resolvedSchema resolves one of a tool's schemas ("input" or "output")
// with github.com/google/jsonschema-go, the validator the host's MCP SDK
// uses, checking that defaults match their own schemas.
func resolvedSchema(t *testing.T, name, kind string) *jsonschema.Resolved {
	t.Helper()
	key := name + " " + kind
	if r, ok := resolvedSchemas.Load(key); ok {
		return r.(*jsonschema.Resolved)
	}
	tl := toolSpec(t, name)
	raw := tl.InputSchema
	if kind == "output" {
		raw = tl.OutputSchema
	}
	var s jsonschema.Schema
	if err := json.Unmarshal(raw, &s); err != nil {
		t.Fatalf("%s: decode %s schema: %v", name, kind, err)
	}
	r, err := s.Resolve(&jsonschema.ResolveOptions{ValidateDefaults: true})
	if err != nil {
		t.Fatalf("%s: resolve %s schema: %v", name, kind, err)
	}
	resolvedSchemas.Store(key, r)
	return r
}

// resolvedSchemas holds resolvedSchema's answers by "<tool> <kind>": the
// catalog is the same for every provider, and resolving a schema on every
// call was most of what the tests spent.
var resolvedSchemas sync.Map

// catalog is the provider's tool list by name, built once.
var catalog = sync.OnceValue(func() map[string]sdk.Tool {
	tools := map[string]sdk.Tool{}
	for _, tl := range New(nil).tools.List() {
		tools[tl.Name] = tl
	}
	return tools
})

// toolSpec returns the catalog entry of the tool name.
func toolSpec(t *testing.T, name string) sdk.Tool {
	t.Helper()
	tl, ok := catalog()[name]
	if !ok {
		t.Fatalf("no tool %q", name)
	}
	return tl
}

// validateOutput checks structured content against the tool's output
// schema.
func validateOutput(t *testing.T, name string, content json.RawMessage) {
	t.Helper()
	var v any
	if err := json.Unmarshal(content, &v); err != nil {
		t.Fatalf("%s: structured content is not JSON: %v", name, err)
	}
	if err := resolvedSchema(t, name, "output").Validate(v); err != nil {
		t.Fatalf("%s: structured content does not match the output schema: %v\ncontent: %s", name, err, content)
	}
}

// sha8 is the first 8 hex digits of SHA-256(s), computed independently of
// the code under test.
func sha8(s string) string {
	return fmt.Sprintf("%x", sha256.Sum256([]byte(s)))[:8]
}

// allowRefs lets cmp compare the hit types, which embed the unexported
// chunkRef.
var allowRefs = cmp.AllowUnexported(searchHit{}, browseHit{}, recallHit{}, chunkView{})

// diff is cmp.Diff that understands the hit types.
func diff(want, got any, opts ...cmp.Option) string {
	return cmp.Diff(want, got, append(opts, allowRefs)...)
}
