package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"gorm.io/driver/sqlite"
	"gorm.io/gorm"
	gormlogger "gorm.io/gorm/logger"

	"github.com/openhuman/openhuman-host/host/config"
	"github.com/openhuman/openhuman-host/host/server"
	"github.com/openhuman/openhuman-host/providers/memory/memorytool"
)

// TestServerAndCLIShareMemory runs a server and command-line processes on
// one data directory at the same time, as a person does who imports notes
// while their editor is connected: every write from every process
// succeeds, and the database is intact afterwards.
func TestServerAndCLIShareMemory(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	dataDir := filepath.Join(dir, "data")
	cfgPath := serveConfig(t, dataDir)
	cfg, err := config.Load(cfgPath)
	if err != nil {
		t.Fatal(err)
	}
	h := startTestHost(t, cfg)
	defer h.Close(context.Background())

	notes := filepath.Join(dir, "notes")
	const files = 150
	for i := range files {
		body := fmt.Sprintf("# Imported %d\n\nsharedmarker imported file %d.\n\n%s", i, i, strings.Repeat("Filler sentence for size. ", 40+i%50))
		if err := os.MkdirAll(filepath.Join(notes, fmt.Sprint(i%5)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(notes, fmt.Sprint(i%5), fmt.Sprintf("n%d.md", i)), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cli := func(args ...string) error {
		cmd := exec.Command(exe, append([]string{"--config", cfgPath}, args...)...)
		cmd.Env = append(os.Environ(), cliEnv+"=1")
		out, err := cmd.CombinedOutput()
		if err != nil {
			return fmt.Errorf("%s: %w\n%s", strings.Join(args, " "), err, out)
		}
		return nil
	}

	const (
		serverWrites = 40
		cliWriters   = 3
		cliWrites    = 5
	)
	var wg sync.WaitGroup
	errs := make(chan error, serverWrites+cliWriters*cliWrites+1)
	wg.Go(func() {
		if err := cli("memory", "import", notes); err != nil {
			errs <- err
		}
	})
	for w := range cliWriters {
		wg.Go(func() {
			for i := range cliWrites {
				args := fmt.Sprintf(`{"title":"cli %d-%d","content":"sharedmarker from the command line, writer %d, note %d","namespace":"cli"}`, w, i, w, i)
				if err := cli("tools", "call", memorytool.Store, args); err != nil {
					errs <- err
				}
			}
		})
	}
	wg.Go(func() {
		for i := range serverWrites {
			res := call(t, h, memorytool.Store, fmt.Sprintf(`{"title":"server %d","content":"sharedmarker from the server, note %d","namespace":"server"}`, i, i))
			if res.IsError {
				errs <- fmt.Errorf("server store %d: %s", i, res.Text())
			}
			if res := call(t, h, memorytool.Search, `{"query":"sharedmarker","k":50}`); res.IsError {
				errs <- fmt.Errorf("server search: %s", res.Text())
			}
		}
	})
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}

	// Every write is visible to the server, per source.
	want := map[string]int64{"mcp:server": serverWrites, "mcp:cli": cliWriters * cliWrites, "file:" + notes: files}
	for source, n := range want {
		res := call(t, h, memorytool.Browse, fmt.Sprintf(`{"source_ids":[%q],"query":"sharedmarker","k":1}`, source))
		var got struct{ Total int64 }
		if err := json.Unmarshal(res.StructuredContent, &got); err != nil || got.Total != n {
			t.Errorf("%s: %d chunks with the marker (%v), want %d: %s", source, got.Total, err, n, res.Text())
		}
	}
	// The database and its full-text index pass SQLite's own checks.
	db, err := gorm.Open(sqlite.Open(filepath.Join(dataDir, "memory", "memory.db")), &gorm.Config{Logger: gormlogger.Discard})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if sqlDB, err := db.DB(); err == nil {
			sqlDB.Close()
		}
	}()
	var check string
	if err := db.Raw(`PRAGMA integrity_check`).Scan(&check).Error; err != nil || check != "ok" {
		t.Errorf("integrity_check = %q, %v", check, err)
	}
	if err := db.Exec(`INSERT INTO chunks_fts (chunks_fts) VALUES ('integrity-check')`).Error; err != nil {
		t.Errorf("FTS5 integrity check: %v", err)
	}
	var fk int
	if err := db.Raw(`SELECT COUNT(*) FROM pragma_foreign_key_check`).Scan(&fk).Error; err != nil || fk != 0 {
		t.Errorf("foreign key violations: %d, %v", fk, err)
	}
}

// TestLargeArgumentsReachProvider stores the largest content
// [memorytool.Store] accepts, made of characters JSON escapes six-fold,
// through a real provider process: the gRPC link must not be what refuses
// it.
func TestLargeArgumentsReachProvider(t *testing.T) {
	t.Parallel()
	h, _ := newTestHost(t, "")
	content := "start " + strings.Repeat("\u0001", 1_000_000-len("start "))
	args, err := json.Marshal(map[string]any{"title": "Escaped", "content": content})
	if err != nil {
		t.Fatal(err)
	}
	if len(args) < 5_000_000 {
		t.Fatalf("arguments are only %d bytes", len(args))
	}
	if res := call(t, h, memorytool.Store, string(args)); res.IsError {
		t.Fatalf("store: %s", res.Text())
	}
	res := call(t, h, memorytool.Search, `{"query":"start"}`)
	if res.IsError || !strings.Contains(string(res.StructuredContent), "mcp-store-escaped") {
		t.Errorf("search after a large store: %s", res.Text())
	}
}

// TestUnknownToolNamesProvidersThatDidNotLoad: a tool whose provider failed
// to load is unknown to the server, and the error says which provider did
// not load and why, instead of a bare "unknown tool".
func TestUnknownToolNamesProvidersThatDidNotLoad(t *testing.T) {
	t.Parallel()
	h, _ := newTestHost(t, "[providers.memory]\nbogus = 1\n")
	_, err := h.Server.Call(context.Background(), server.Call{Tool: memorytool.Search, Arguments: json.RawMessage(`{"query":"x"}`)})
	want := `unknown tool "` + memorytool.Search + `"; it may belong to a provider that did not load: memory (configure: memory provider: [providers.memory] has unknown key "bogus"; the valid keys are embeddings, scopes, keep_versions_days); fix the config, then send the server SIGHUP or restart it`
	if !errors.Is(err, server.ErrUnknownTool) || err.Error() != want {
		t.Errorf("error = %v\nwant %s", err, want)
	}
}
