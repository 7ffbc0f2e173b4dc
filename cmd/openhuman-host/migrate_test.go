package main

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/openhuman/openhuman-host/host/config"
	"github.com/openhuman/openhuman-host/providers/memory/memorytool"
	"github.com/openhuman/openhuman-host/sdk/storage"
	"github.com/openhuman/openhuman-host/sdk/storage/pgtest"
)

// postgresHome sets up a CLI home whose config keeps the shared state in a
// new PostgreSQL database, and returns that database's URL.
func postgresHome(t *testing.T) string {
	t.Helper()
	dsn := pgtest.NewDatabase(t)
	cliHome(t, "\n[storage]\ndriver = \"postgres\"\ndsn_env = \"TEAM_DB\"\n")
	t.Setenv("TEAM_DB", dsn)
	return dsn
}

// TestCLIMigratePostgres: three replicas' migrate commands started at once
// apply each migration once; afterwards the schema reports up to date.
func TestCLIMigratePostgres(t *testing.T) {
	dsn := postgresHome(t)
	where := storage.Describe(dsn)
	out, err := runCLI(t, "migrate", "--status")
	if err != nil {
		t.Fatal(err)
	}
	if want := fmt.Sprintf("audit: PostgreSQL %s at version 0 of 3 (3 migrations pending)\nmemory: PostgreSQL %s at version 0 of 3 (3 migrations pending)\n", where, where); out != want {
		t.Errorf("migrate --status on a new database = %q, want %q", out, want)
	}

	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		outs []string
	)
	for range 3 {
		wg.Go(func() {
			cmd := exec.CommandContext(t.Context(), exe, "migrate")
			cmd.Env = append(os.Environ(), cliEnv+"=1")
			var stdout, stderr bytes.Buffer
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			if err := cmd.Run(); err != nil {
				t.Errorf("migrate: %v\n%s", err, stderr.String())
			}
			mu.Lock()
			outs = append(outs, stdout.String())
			mu.Unlock()
		})
	}
	wg.Wait()
	// Each component's migrations run under their own lock: one command
	// applies them, the others find them done.
	for component, done := range map[string]string{
		"audit":  "audit: applied 00001_audit.sql, 00002_shared_keys.sql, 00003_profile.sql",
		"memory": "memory: applied 00001_memory.sql, 00002_narrow_chunks.sql, 00003_fts_text_regexp.sql",
	} {
		applied, upToDate := 0, 0
		for _, o := range outs {
			for line := range strings.SplitSeq(strings.TrimSpace(o), "\n") {
				switch {
				case !strings.HasPrefix(line, component+":"):
				case line == done:
					applied++
				case line == fmt.Sprintf("%s: PostgreSQL %s is up to date", component, where):
					upToDate++
				default:
					t.Errorf("migrate printed %q", line)
				}
			}
		}
		if applied != 1 || upToDate != 2 {
			t.Errorf("%s: of 3 concurrent migrate commands %d applied the migrations and %d found them done, want 1 and 2", component, applied, upToDate)
		}
	}
	if out, err := runCLI(t, "migrate", "--status"); err != nil || !strings.Contains(out, "at version 3 of 3 (up to date)") ||
		!strings.Contains(out, "memory: PostgreSQL "+where+" at version 3 of 3 (up to date)") {
		t.Errorf("migrate --status after migrating = %q, %v", out, err)
	}
}

// TestCLIAuditOnPostgres: a tool call from one process is in the audit
// log that another reads, both on the shared database, and nothing is
// written to the data directory's audit.db.
func TestCLIAuditOnPostgres(t *testing.T) {
	postgresHome(t)
	if _, err := runCLI(t, "tools", "call", memorytool.Store, `{"title":"Shared","content":"kept in one place"}`); err != nil {
		t.Fatal(err)
	}
	out, err := runCLI(t, "audit", "list", "--json")
	if err != nil {
		t.Fatal(err)
	}
	if lines := strings.Split(strings.TrimSpace(out), "\n"); len(lines) != 1 || !strings.Contains(lines[0], `"tool":"`+memorytool.Store+`"`) ||
		!strings.Contains(lines[0], `"decision":"allowed"`) {
		t.Errorf("audit list on PostgreSQL:\n%s", out)
	}
	cfg, err := config.Load("")
	if err != nil {
		t.Fatal(err)
	}
	dataDir, err := cfg.DataDir()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dataDir, "audit.db")); !os.IsNotExist(err) {
		t.Errorf("audit.db in the data directory: %v; want none with the postgres driver", err)
	}
}

// TestCLIPostgresWithoutDSN: the postgres driver with its variable unset
// is an error that names the variable.
func TestCLIPostgresWithoutDSN(t *testing.T) {
	cliHome(t, "\n[storage]\ndriver = \"postgres\"\ndsn_env = \"TEAM_DB\"\n")
	t.Setenv("TEAM_DB", "")
	_, err := runCLI(t, "audit", "list")
	if err == nil || !strings.Contains(err.Error(), "TEAM_DB") || !strings.Contains(err.Error(), "unset or empty") {
		t.Errorf("audit list without TEAM_DB = %v, want an error naming TEAM_DB", err)
	}
}
