package main

import (
	"bytes"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/openhuman/openhuman-host/host/config"
	"github.com/openhuman/openhuman-host/internal/pgtest"
	"github.com/openhuman/openhuman-host/internal/storage"
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
	if want := fmt.Sprintf("audit: PostgreSQL %s at version 0 of 3 (3 migrations pending)\n", where); out != want {
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
	applied, upToDate := 0, 0
	for _, o := range outs {
		switch o {
		case "audit: applied 00001_audit.sql, 00002_shared_keys.sql, 00003_profile.sql\n":
			applied++
		case fmt.Sprintf("audit: PostgreSQL %s is up to date\n", where):
			upToDate++
		default:
			t.Errorf("migrate printed %q", o)
		}
	}
	if applied != 1 || upToDate != 2 {
		t.Errorf("of 3 concurrent migrate commands %d applied the migrations and %d found them done, want 1 and 2", applied, upToDate)
	}
	if out, err := runCLI(t, "migrate", "--status"); err != nil || !strings.Contains(out, "at version 3 of 3 (up to date)") {
		t.Errorf("migrate --status after migrating = %q, %v", out, err)
	}
}

// TestCLIAuditOnPostgres: a tool call from one process is in the audit
// log that another reads, both on the shared database, and nothing is
// written to the data directory's audit.db.
func TestCLIAuditOnPostgres(t *testing.T) {
	postgresHome(t)
	if _, err := runCLI(t, "tools", "call", "memory_store", `{"title":"Shared","content":"kept in one place"}`); err != nil {
		t.Fatal(err)
	}
	out, err := runCLI(t, "audit", "list", "--json")
	if err != nil {
		t.Fatal(err)
	}
	if lines := strings.Split(strings.TrimSpace(out), "\n"); len(lines) != 1 || !strings.Contains(lines[0], `"tool":"memory_store"`) ||
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

// TestCLIConfigCheckPostgres: config check names the shared database by
// server and name, never with the password, and loads on it.
func TestCLIConfigCheckPostgres(t *testing.T) {
	dsn := postgresHome(t)
	out, err := runCLI(t, "config", "check")
	if err != nil {
		t.Fatalf("config check: %v\n%s", err, out)
	}
	want := "# shared PostgreSQL database: " + storage.Describe(dsn) + " (from TEAM_DB)\n"
	if !strings.Contains(out, want) {
		t.Errorf("config check does not say %q:\n%s", want, out)
	}
	u, err := url.Parse(dsn)
	if err != nil {
		t.Fatal(err)
	}
	if pw, _ := u.User.Password(); pw == "" || strings.Contains(out, pw) {
		t.Errorf("config check prints the password (or the URL has none):\n%s", out)
	}
}

// TestServePostgresDown: a server whose shared database does not answer
// exits at once with an error naming the database, and no password.
func TestServePostgresDown(t *testing.T) {
	cliHome(t, "\n[storage]\ndriver = \"postgres\"\ndsn_env = \"TEAM_DB\"\n")
	// Port 1 on loopback: nothing listens there.
	t.Setenv("TEAM_DB", "postgres://openhuman:s3cret-hunter2@127.0.0.1:1/team?connect_timeout=5")
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.CommandContext(t.Context(), exe, "serve")
	cmd.Env = append(os.Environ(), cliEnv+"=1", "OPENHUMAN_LOG_LEVEL=error")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	err = cmd.Run()
	if err == nil {
		t.Fatal("serve started without its database")
	}
	if !strings.Contains(stderr.String(), "127.0.0.1:1/team") || strings.Contains(stderr.String(), "s3cret-hunter2") {
		t.Errorf("serve's error should name 127.0.0.1:1/team and not the password:\n%s", stderr.String())
	}
}
