// Package replicas_test runs replicas of the built openhuman-host binary
// behind HAProxy (with examples/haproxy/haproxy.cfg) sharing one
// PostgreSQL database, all on loopback, and drives them with MCP clients
// of both protocol eras: 2026-07-28 clients, whose requests may reach any
// replica, and 2025-11-25 clients, whose sessions are pinned to one.
//
// It needs OPENHUMAN_HOST_BIN (the built server), PostgreSQL's server
// binaries (sdk/storage/pgtest) and haproxy (internal/haproxytest). `make
// test` provides all three and sets OPENHUMAN_REQUIRE_INTEROP,
// OPENHUMAN_REQUIRE_POSTGRES and OPENHUMAN_REQUIRE_HAPROXY, which turn a
// missing one from a skip into a failure. By hand:
//
//	make build && OPENHUMAN_HOST_BIN=$PWD/bin/openhuman-host go test -tags sqlite_fts5 ./test/replicas/
//
// OPENHUMAN_REPLICAS_SOAK=60s makes the load test's clients call for that
// long instead of a fixed number of calls (`make soak-replicas`).
package replicas_test

import (
	"context"
	"crypto/rand"
	"database/sql"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/openhuman/openhuman-host/internal/cluster"
	"github.com/openhuman/openhuman-host/internal/haproxytest"
	"github.com/openhuman/openhuman-host/sdk/storage/pgtest"
	"github.com/openhuman/openhuman-host/sdk/testwait"
	"github.com/openhuman/openhuman-host/test/internal/prereq"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

// requireEnv are the variables of which any one, set, turns a missing
// prerequisite into a failure.
var requireEnv = []string{"OPENHUMAN_REQUIRE_INTEROP", pgtest.EnvRequire, haproxytest.EnvRequire}

func unavailable(t *testing.T, why string) {
	t.Helper()
	prereq.Missing(t, "replicas: "+why+"; run `make test`, or by hand: make build && OPENHUMAN_HOST_BIN=$PWD/bin/openhuman-host go test -tags sqlite_fts5 ./test/replicas/", requireEnv...)
}

var (
	providerOnce sync.Once
	providerBin  string
	providerErr  error
)

// provider builds the replicas' provider once for the package.
func provider(t *testing.T) string {
	t.Helper()
	providerOnce.Do(func() {
		dir, err := os.MkdirTemp("", "openhuman-replicaprovider-")
		if err != nil {
			providerErr = err
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()
		providerBin, providerErr = cluster.BuildProvider(ctx, dir)
	})
	if providerErr != nil {
		t.Fatal(providerErr)
	}
	return providerBin
}

// startCluster starts n replicas sharing a fresh database behind HAProxy
// and returns them with the database; everything stops when t ends, and
// a failed test logs what the replicas printed.
func startCluster(t *testing.T, n int, maxActs *int, opts ...func(*cluster.Options)) (*cluster.Cluster, *sql.DB) {
	t.Helper()
	bin, err := prereq.Executable("OPENHUMAN_HOST_BIN", "path of the built openhuman-host")
	if err != nil {
		unavailable(t, err.Error())
	}
	if _, err := haproxytest.Binary(); err != nil {
		unavailable(t, err.Error())
	}
	dsn := pgtest.NewDatabase(t)
	db, err := sql.Open("pgx", dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	ctx := testwait.Context(t)
	ownerDSN, appDSN := roles(t, ctx, db, dsn)
	o := cluster.Options{Bin: bin, Provider: provider(t), DSN: appDSN, MigrateDSN: ownerDSN, Dir: t.TempDir(), MaxActionsPerHour: maxActs,
		AfterMigrate: func(ctx context.Context) error { return grant(ctx, ownerDSN) }}
	for _, opt := range opts {
		opt(&o)
	}
	c, err := cluster.Start(ctx, o, n)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			for _, r := range c.Replicas {
				t.Logf("replica %s logged:\n%s", r.Name, r.Stderr())
			}
			if c.Proxy != nil {
				t.Logf("haproxy logged:\n%s", c.Proxy.Log())
			}
		}
		c.Close()
	})
	if err := c.WaitUp(ctx); err != nil {
		t.Fatal(err)
	}
	return c, db
}

// Roles of docs/deploy.md: the owner of the database, which migrates,
// and the role replicas connect as, with examples/postgres/grants.sql.
const (
	ownerRole = "openhuman_owner"
	appRole   = "openhuman_app"
)

// roles makes the database of dsn (whose superuser db is connected as)
// owned by ownerRole, connectable by appRole and nobody else, as
// docs/deploy.md does, and returns the database's URLs for both roles.
func roles(t *testing.T, ctx context.Context, db *sql.DB, dsn string) (ownerDSN, appDSN string) {
	t.Helper()
	u, err := url.Parse(dsn)
	if err != nil {
		t.Fatal(err)
	}
	name := strings.TrimPrefix(u.Path, "/")
	dsnFor := func(role, password string) string {
		v := *u
		v.User = url.UserPassword(role, password)
		return v.String()
	}
	ownerPW, appPW := rand.Text(), rand.Text()
	for _, stmt := range []string{
		// Roles belong to the server, which other tests of this package
		// share: made once, given new passwords each time.
		`DO $$ BEGIN IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = '` + ownerRole + `') THEN CREATE ROLE ` + ownerRole + ` LOGIN; END IF; END $$`,
		`DO $$ BEGIN IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = '` + appRole + `') THEN CREATE ROLE ` + appRole + ` LOGIN; END IF; END $$`,
		`ALTER ROLE ` + ownerRole + ` PASSWORD '` + ownerPW + `'`,
		`ALTER ROLE ` + appRole + ` PASSWORD '` + appPW + `'`,
		`ALTER DATABASE "` + name + `" OWNER TO ` + ownerRole,
		`REVOKE ALL ON DATABASE "` + name + `" FROM PUBLIC`,
		`GRANT CONNECT ON DATABASE "` + name + `" TO ` + appRole,
	} {
		if _, err := db.ExecContext(ctx, stmt); err != nil {
			t.Fatalf("%s: %v", stmt, err)
		}
	}
	return dsnFor(ownerRole, ownerPW), dsnFor(appRole, appPW)
}

// grant runs examples/postgres/grants.sql as the owner.
func grant(ctx context.Context, ownerDSN string) error {
	script, err := os.ReadFile(filepath.Join("..", "..", "examples", "postgres", "grants.sql"))
	if err != nil {
		return err
	}
	db, err := sql.Open("pgx", ownerDSN)
	if err != nil {
		return err
	}
	defer db.Close()
	var stmt strings.Builder
	for line := range strings.Lines(string(script)) {
		if strings.HasPrefix(strings.TrimSpace(line), "--") {
			continue
		}
		stmt.WriteString(line)
		if strings.HasSuffix(strings.TrimSpace(line), ";") {
			if _, err := db.ExecContext(ctx, stmt.String()); err != nil {
				return fmt.Errorf("grants.sql: %s: %w", strings.TrimSpace(stmt.String()), err)
			}
			stmt.Reset()
		}
	}
	return nil
}

// outcome is one call's result as its client saw it.
type outcome struct {
	client  int
	version string
	seq     int
	tool    string
	replica string // the replica that answered; "" when none did
	err     error  // transport or protocol error
	isError bool   // the tool's result was an error
	text    string
	// afterKill: the call started after the killed replica had exited.
	afterKill bool
	// endedAfterKilling: the call ended after the kill was sent.
	endedAfterKilling bool
	// pinned is the replica owning the client's session when the call
	// started (2025-11-25).
	pinned string
	// word is the unique word a [memorytool.Store] stored, "" for other
	// calls.
	word string
}

func (o outcome) String() string {
	return fmt.Sprintf("client %d (%s) call %d %s on %q: err=%v isError=%v %q", o.client, o.version, o.seq, o.tool, o.replica, o.err, o.isError, o.text)
}

// auditRows returns, by args summary, the decision and pending flag of
// every row of tool.
func auditRows(t *testing.T, db *sql.DB, tool string) map[string]auditRow {
	t.Helper()
	rows, err := db.QueryContext(testwait.Context(t), "SELECT args_summary, decision, pending FROM mcp_audit WHERE tool = $1", tool)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	out := map[string]auditRow{}
	for rows.Next() {
		var args string
		var r auditRow
		if err := rows.Scan(&args, &r.decision, &r.pending); err != nil {
			t.Fatal(err)
		}
		if _, dup := out[args]; dup {
			t.Errorf("two audit rows of %s for %s", tool, args)
		}
		out[args] = r
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

type auditRow struct {
	decision string
	pending  bool
}

// argsKey is the audit args summary of client id's call seq.
func argsKey(id, seq int) string { return fmt.Sprintf(`{"client":%d,"seq":%d}`, id, seq) }

// fmtSscanf reads a rep_block mark's name, blocking-CLIENT-SEQ.
func fmtSscanf(name string, id, seq *int) (int, error) {
	return fmt.Sscanf(name, "blocking-%d-%d", id, seq)
}
