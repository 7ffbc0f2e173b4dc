package memory

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/openhuman/openhuman-host/sdk"
)

func TestCheckFTS5(t *testing.T) {
	t.Parallel()
	tests := map[string]struct {
		compiled bool
		want     string
	}{
		"built with sqlite_fts5":    {compiled: true, want: ""},
		"built without sqlite_fts5": {compiled: false, want: `memory provider: this binary was built without SQLite FTS5; build it with "make build" (go build -tags sqlite_fts5)`},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			got := ""
			if err := checkFTS5(tc.compiled); err != nil {
				got = err.Error()
			}
			if diff := diff(tc.want, got); diff != "" {
				t.Errorf("checkFTS5 (-want +got):\n%s", diff)
			}
		})
	}
}

func TestConfigure(t *testing.T) {
	t.Parallel()
	sqliteOnly(t)
	requireFTS5(t)
	tests := map[string]struct {
		config  string
		noDir   bool
		subdir  string
		wantErr string
	}{
		"data dir with URI characters": {config: `{}`, subdir: "a dir?with #odd %20 chars"},
		"empty table":                  {config: `{}`},
		"no config":                    {config: ``},
		"null config":                  {config: `null`},
		"embeddings without base_url":  {config: `{"embeddings":{"model":"x"}}`, wantErr: `memory provider: [providers.memory.embeddings] base_url is required, e.g. base_url = "https://api.openai.com/v1"`},
		"embeddings":                   {config: `{"embeddings":{"model":"x","base_url":"http://127.0.0.1:1/v1"}}`},
		"unknown keys":                 {config: `{"b":1,"a":2}`, wantErr: `memory provider: [providers.memory] has unknown keys "a", "b"; the valid keys are embeddings, scopes, keep_versions_days`},
		"not a table":                  {config: `[1]`, wantErr: `memory provider: [providers.memory] must be a table, not an array`},
		"no data dir":                  {config: `{}`, noDir: true, wantErr: `memory provider: the host gave no data directory`},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			if tc.subdir != "" {
				dir = filepath.Join(dir, tc.subdir)
				if err := os.Mkdir(dir, 0o700); err != nil {
					t.Fatal(err)
				}
			}
			req := configureRequest(t, dir, json.RawMessage(tc.config), nil)
			if tc.noDir {
				req.DataDir = ""
			}
			p := New(nil)
			defer p.Close()
			got := ""
			if err := p.Configure(context.Background(), req); err != nil {
				got = err.Error()
			}
			if diff := diff(tc.wantErr, got); diff != "" {
				t.Errorf("Configure error (-want +got):\n%s", diff)
			}
			_, statErr := os.Stat(filepath.Join(dir, "memory.db"))
			if created := statErr == nil; created != (tc.wantErr == "") {
				t.Errorf("memory.db created = %v, want %v", created, tc.wantErr == "")
			}
		})
	}
}

// TestConfigureWithoutFTS5 runs in builds without the sqlite_fts5 tag:
// Configure must refuse with the rebuild message and create nothing.
func TestConfigureWithoutFTS5(t *testing.T) {
	t.Parallel()
	sqliteOnly(t)
	if fts5Compiled {
		t.Skip("built with FTS5; TestCheckFTS5 covers the message")
	}
	dir := t.TempDir()
	err := New(nil).Configure(context.Background(), configureRequest(t, dir, nil, nil))
	if !errors.Is(err, ErrNoFTS5) {
		t.Fatalf("Configure error = %v, want ErrNoFTS5", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "memory.db")); !os.IsNotExist(err) {
		t.Errorf("memory.db exists after a refused Configure: %v", err)
	}
}

func TestConfigureTwice(t *testing.T) {
	t.Parallel()
	p, _ := newProvider(t)
	err := p.Configure(context.Background(), configureRequest(t, t.TempDir(), nil, nil))
	if err == nil {
		t.Fatal("second Configure: want an error")
	}
}

// TestMigrations checks the schema is recorded once and that reopening an
// up-to-date database applies nothing.
func TestMigrations(t *testing.T) {
	t.Parallel()
	sqliteOnly(t)
	requireFTS5(t)
	dir := t.TempDir()
	clock := newTestClock()
	for range 2 {
		p := New(&Options{Now: clock.Now})
		if err := p.Configure(context.Background(), configureRequest(t, dir, nil, nil)); err != nil {
			t.Fatal(err)
		}
		type row struct {
			Version   int
			Name      string
			AppliedMS int64 `gorm:"column:applied_ms"`
		}
		var got []row
		if err := p.store.db.Raw(`SELECT version, name, applied_ms FROM schema_migrations ORDER BY version`).Scan(&got).Error; err != nil {
			t.Fatal(err)
		}
		var want []row
		for _, m := range migrations {
			want = append(want, row{Version: m.version, Name: m.name, AppliedMS: startMS})
		}
		if diff := diff(want, got); diff != "" {
			t.Errorf("schema_migrations (-want +got):\n%s", diff)
		}
		if err := p.Close(); err != nil {
			t.Fatal(err)
		}
		clock.Advance(time.Hour)
	}
}

// TestPragmas checks that every pooled connection runs with the DSN's
// settings, not only the first.
func TestPragmas(t *testing.T) {
	t.Parallel()
	sqliteOnly(t)
	p, _ := newProvider(t)
	sqlDB, err := p.store.db.DB()
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	type pragmas struct {
		JournalMode string
		BusyTimeout int
		ForeignKeys int
	}
	want := pragmas{JournalMode: "wal", BusyTimeout: busyTimeoutMS, ForeignKeys: 1}
	// Hold several connections at once so the pool has to open new ones.
	var conns []interface{ Close() error }
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	for i := range 4 {
		conn, err := sqlDB.Conn(ctx)
		if err != nil {
			t.Fatal(err)
		}
		conns = append(conns, conn)
		var got pragmas
		for q, dst := range map[string]any{
			"PRAGMA journal_mode": &got.JournalMode,
			"PRAGMA busy_timeout": &got.BusyTimeout,
			"PRAGMA foreign_keys": &got.ForeignKeys,
		} {
			if err := conn.QueryRowContext(ctx, q).Scan(dst); err != nil {
				t.Fatalf("%s: %v", q, err)
			}
		}
		if diff := diff(want, got); diff != "" {
			t.Errorf("connection %d pragmas (-want +got):\n%s", i, diff)
		}
	}
}

func TestReopen(t *testing.T) {
	t.Parallel()
	requireFTS5(t)
	dir := t.TempDir()
	clock := newTestClock()
	first := New(&Options{Now: clock.Now})
	if err := first.Configure(context.Background(), configureRequest(t, dir, nil, nil)); err != nil {
		t.Fatal(err)
	}
	stored := put(t, first, map[string]any{"title": "Durable fact", "content": "The lighthouse keeper is named Ingrid.", "tags": []string{"people"}})
	before := search(t, first, "keeper", 0)
	call[tagResult](t, first, ToolTag, map[string]any{"chunk_id": before[0].ChunkID, "tags": []string{"coast"}})
	call[noteResult](t, first, ToolNote, map[string]any{"chunk_id": before[0].ChunkID, "note_text": "Mail ingrid@lighthouse.example."})
	before = search(t, first, "keeper", 0)
	entitiesBefore := call[topEntitiesResult](t, first, ToolTopEntities, map[string]any{})
	if err := first.Close(); err != nil {
		t.Fatal(err)
	}
	if err := first.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}

	second := openProvider(t, dir, clock)
	after := search(t, second, "keeper", 0)
	if diff := diff(before, after); diff != "" {
		t.Errorf("search after reopen (-before +after):\n%s", diff)
	}
	if len(after) != 1 || after[0].DocumentID != stored.DocumentID {
		t.Fatalf("hits after reopen = %+v", after)
	}
	got := call[readChunkResult](t, second, ToolReadChunk, map[string]any{"chunk_id": after[0].ChunkID})
	want := readChunkResult{Chunk: &chunkView{
		chunkRef: chunkRef{
			ChunkID:    after[0].ChunkID,
			DocumentID: "mcp/mcp-store-durable-fact",
			Title:      "Durable fact",
			Namespace:  "mcp",
			SourceID:   "mcp:mcp",
			SourceKind: "note",
			Seq:        0,
			UpdatedMS:  startMS,
		},
		Content:      "The lighthouse keeper is named Ingrid.",
		Tags:         []string{"coast"},
		DocumentTags: []string{"people"},
		Notes:        []noteView{{DocumentID: "mcp/mcp-note-" + after[0].ChunkID, Text: "Mail ingrid@lighthouse.example.", UpdatedMS: startMS}},
		CreatedMS:    startMS,
	}}
	if diff := diff(want, got); diff != "" {
		t.Errorf("read_chunk after reopen (-want +got):\n%s", diff)
	}
	entitiesAfter := call[topEntitiesResult](t, second, ToolTopEntities, map[string]any{})
	if diff := diff(entitiesBefore, entitiesAfter); diff != "" || len(entitiesAfter.Entities) != 1 {
		t.Errorf("entities after reopen (-before +after):\n%s", diff)
	}
}

// TestConcurrentProviders runs two providers, as a server and a CLI
// command would be, on one data directory: both configure at once on a new
// database, then write and read concurrently.
func TestConcurrentProviders(t *testing.T) {
	t.Parallel()
	requireFTS5(t)
	dir := t.TempDir()
	const (
		writersPerProvider = 4
		docsPerWriter      = 6
	)
	providers := make([]*Provider, 2)
	var wg sync.WaitGroup
	errs := make(chan error, 100)
	for i := range providers {
		providers[i] = New(nil)
		// Built here: configureRequest may end the test, which only the
		// test's own goroutine may do.
		req := configureRequest(t, dir, nil, nil)
		wg.Go(func() {
			if err := providers[i].Configure(context.Background(), req); err != nil {
				errs <- fmt.Errorf("provider %d: Configure: %w", i, err)
			}
		})
	}
	wg.Wait()
	t.Cleanup(func() {
		for _, p := range providers {
			p.Close()
		}
	})
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}

	var want []string
	errs = make(chan error, 2*writersPerProvider*docsPerWriter*2)
	for i, p := range providers {
		for w := range writersPerProvider {
			for d := range docsPerWriter {
				want = append(want, fmt.Sprintf("mcp/mcp-store-p%d-w%d-d%d", i, w, d))
			}
			wg.Go(func() {
				for d := range docsPerWriter {
					args, err := json.Marshal(map[string]any{
						"title":   fmt.Sprintf("p%d w%d d%d", i, w, d),
						"content": fmt.Sprintf("shared concurrency marker, writer %d of provider %d, doc %d\n\n%s", w, i, d, longText(3)),
					})
					if err != nil {
						errs <- err
						continue
					}
					res, err := p.CallTool(context.Background(), &sdk.CallToolRequest{Name: ToolStore, Arguments: json.RawMessage(args)})
					if err != nil {
						errs <- err
						continue
					}
					if res.IsError {
						errs <- fmt.Errorf("store: %s", res.Content[0].Text)
					}
					res, err = p.CallTool(context.Background(), &sdk.CallToolRequest{Name: ToolSearch, Arguments: json.RawMessage(`{"query":"concurrency marker","k":50}`)})
					if err != nil {
						errs <- err
					} else if res.IsError {
						errs <- fmt.Errorf("search: %s", res.Content[0].Text)
					}
				}
			})
		}
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	sort.Strings(want)
	for i, p := range providers {
		var got []string
		for _, h := range search(t, p, "shared concurrency marker", 50) {
			if h.Seq == 0 {
				got = append(got, h.DocumentID)
			}
		}
		sort.Strings(got)
		if diff := diff(want, got); diff != "" {
			t.Errorf("provider %d sees (-want +got):\n%s", i, diff)
		}
	}
}

// TestCrossProcess shares one data directory between this process and two
// child processes (re-runs of this test binary) that write at the same
// time, the way a running server and one-shot CLI commands do.
func TestCrossProcess(t *testing.T) {
	sqliteOnly(t)
	const (
		dirEnv    = "OPENHUMAN_MEMORY_TEST_DIR"
		writerEnv = "OPENHUMAN_MEMORY_TEST_WRITER"
		perWriter = 15
	)
	writeDocs := func(t *testing.T, p *Provider, writer string) {
		for i := range perWriter {
			put(t, p, map[string]any{
				"title":   fmt.Sprintf("%s doc %d", writer, i),
				"content": fmt.Sprintf("cross process marker from %s, document %d\n\n%s", writer, i, longText(2)),
			})
		}
	}
	if dir := os.Getenv(dirEnv); dir != "" {
		writeDocs(t, openProvider(t, dir, nil), os.Getenv(writerEnv))
		return
	}
	t.Parallel()
	requireFTS5(t)
	dir := t.TempDir()
	p := openProvider(t, dir, nil)

	writers := []string{"child-x", "child-y"}
	cmds := make([]*exec.Cmd, len(writers))
	outs := make([]strings.Builder, len(writers))
	for i, w := range writers {
		cmds[i] = exec.Command(os.Args[0], "-test.run=^TestCrossProcess$", "-test.count=1")
		cmds[i].Env = append(os.Environ(), dirEnv+"="+dir, writerEnv+"="+w)
		cmds[i].Stdout = &outs[i]
		cmds[i].Stderr = &outs[i]
		if err := cmds[i].Start(); err != nil {
			t.Fatal(err)
		}
	}
	writeDocs(t, p, "parent")
	for i, cmd := range cmds {
		if err := cmd.Wait(); err != nil {
			t.Errorf("writer %s: %v\n%s", writers[i], err, outs[i].String())
		}
	}
	for _, w := range append(writers, "parent") {
		hits := search(t, p, "cross process marker "+w, 50)
		if len(hits) != perWriter {
			t.Errorf("writer %s: %d documents found, want %d", w, len(hits), perWriter)
		}
	}
	checkIndexInStep(t, p)
}
