// Package pgtest gives tests of code that stores data in PostgreSQL
// (through [github.com/openhuman/openhuman-host/sdk/storage] or otherwise)
// a real server: a throwaway one made from the system's binaries (initdb
// and pg_ctl, run as an unprivileged user when the tests run as root) in a
// temporary directory, listening on loopback with a random password, and
// a fresh database per test.
//
// With OPENHUMAN_TEST_POSTGRES_DSN set (a postgres:// URL of a role that
// may CREATE DATABASE), tests use that server instead and start none.
//
// A package whose tests use it calls [Main] from TestMain, so that the
// shared server stops once the tests are done. Without PostgreSQL's
// binaries a test skips, or fails when OPENHUMAN_REQUIRE_POSTGRES is set
// (as a CI job that installs them should set it). It is for tests only.
package pgtest

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	// The pgx driver for database/sql ("pgx").
	_ "github.com/jackc/pgx/v5/stdlib"

	"github.com/openhuman/openhuman-host/sdk/testproc"
)

// Environment variables read by the package.
const (
	// EnvDSN names an existing server to use instead of starting one.
	EnvDSN = "OPENHUMAN_TEST_POSTGRES_DSN"
	// EnvRequire turns a missing PostgreSQL from a skip into a failure.
	EnvRequire = "OPENHUMAN_REQUIRE_POSTGRES"
)

// howToGet says how to make PostgreSQL available to the tests.
const howToGet = "install PostgreSQL's server binaries initdb and pg_ctl (Debian's postgresql package) or set " + EnvDSN +
	" to a postgres:// URL of a role that may create databases"

// Server is one running throwaway PostgreSQL server.
type Server struct {
	// DSN is a postgres:// URL of the superuser, connecting to the
	// "postgres" database over TCP on 127.0.0.1.
	DSN string

	dir    string // temporary directory: data/, socket/, server.log
	pgCtl  string
	runAs  *account
	logTxt string
	opts   string // the server's options, for pg_ctl start -o
}

// Start makes and starts a server in a new temporary directory. It fails
// with what PostgreSQL printed when initdb or pg_ctl fail. Call Stop when
// done, also after the tests failed.
func Start(ctx context.Context) (*Server, error) {
	bin, err := binDir()
	if err != nil {
		return nil, err
	}
	runAs, err := unprivileged()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "openhuman-pgtest-")
	if err != nil {
		return nil, fmt.Errorf("pgtest: make a directory for the server: %w", err)
	}
	s := &Server{dir: dir, pgCtl: filepath.Join(bin, "pg_ctl"), runAs: runAs, logTxt: filepath.Join(dir, "server.log")}
	if err := s.init(ctx, bin); err != nil {
		_ = os.RemoveAll(dir)
		return nil, err
	}
	return s, nil
}

func (s *Server) init(ctx context.Context, bin string) error {
	if err := s.runAs.own(s.dir); err != nil {
		return err
	}
	password := randomHex(16)
	pwFile := filepath.Join(s.dir, "pwfile")
	if err := os.WriteFile(pwFile, []byte(password+"\n"), 0o600); err != nil {
		return fmt.Errorf("pgtest: write the password file: %w", err)
	}
	if err := s.runAs.own(pwFile); err != nil {
		return err
	}
	socket := filepath.Join(s.dir, "socket")
	if err := os.Mkdir(socket, 0o700); err != nil {
		return fmt.Errorf("pgtest: make the socket directory: %w", err)
	}
	if err := s.runAs.own(socket); err != nil {
		return err
	}
	data := filepath.Join(s.dir, "data")
	if out, err := s.run(ctx, filepath.Join(bin, "initdb"), "-D", data, "-U", "postgres", "--pwfile", pwFile,
		"--auth=scram-sha-256", "-E", "UTF8", "--locale=C", "--no-sync"); err != nil {
		return fmt.Errorf("pgtest: initdb: %w\n%s", err, out)
	}
	_ = os.Remove(pwFile)
	// A port picked here may be taken before the server binds it; a few
	// tries make that harmless.
	var lastErr error
	for range 3 {
		port, err := testproc.FreePort()
		if err != nil {
			return fmt.Errorf("pgtest: %w", err)
		}
		opts := strings.Join([]string{
			"-c listen_addresses=127.0.0.1",
			"-p " + strconv.Itoa(port),
			"-c unix_socket_directories=" + socket,
			// A commit reaches the operating system before it is
			// acknowledged, so it survives the server's crash (Kill), but
			// nothing waits for the disk: the tests never crash the machine.
			"-c fsync=off", "-c full_page_writes=off",
			"-c max_connections=300",
		}, " ")
		s.opts = opts
		out, err := s.run(ctx, s.pgCtl, "start", "-w", "-t", "120", "-D", data, "-l", s.logTxt, "-o", opts)
		if err == nil {
			u := url.URL{Scheme: "postgres", User: url.UserPassword("postgres", password),
				Host: net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), Path: "/postgres", RawQuery: "sslmode=disable"}
			s.DSN = u.String()
			return nil
		}
		log, _ := os.ReadFile(s.logTxt)
		lastErr = fmt.Errorf("pgtest: pg_ctl start: %w\n%s\n%s", err, out, tail(string(log), 2000))
	}
	return lastErr
}

// Stop stops the server at once (pg_ctl stop -m immediate) and removes its
// directory.
func (s *Server) Stop() error {
	out, err := s.run(context.Background(), s.pgCtl, "stop", "-m", "immediate", "-w", "-D", filepath.Join(s.dir, "data"))
	rmErr := os.RemoveAll(s.dir)
	if err != nil {
		return fmt.Errorf("pgtest: pg_ctl stop: %w\n%s", err, out)
	}
	return rmErr
}

// Kill stops the server at once, as a crash would (pg_ctl stop -m
// immediate), keeping its data for [Server.Restart]. Clients see their
// connections dropped and new ones refused.
func (s *Server) Kill(ctx context.Context) error {
	if out, err := s.run(ctx, s.pgCtl, "stop", "-m", "immediate", "-w", "-D", filepath.Join(s.dir, "data")); err != nil {
		return fmt.Errorf("pgtest: pg_ctl stop: %w\n%s", err, out)
	}
	return nil
}

// Restart starts a server stopped by Kill again, on the same port with the
// same data.
func (s *Server) Restart(ctx context.Context) error {
	if out, err := s.run(ctx, s.pgCtl, "start", "-w", "-t", "120", "-D", filepath.Join(s.dir, "data"), "-l", s.logTxt, "-o", s.opts); err != nil {
		log, _ := os.ReadFile(s.logTxt)
		return fmt.Errorf("pgtest: pg_ctl start: %w\n%s\n%s", err, out, tail(string(log), 2000))
	}
	return nil
}

// run runs a PostgreSQL program as the server's account.
func (s *Server) run(ctx context.Context, name string, args ...string) ([]byte, error) {
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = s.dir
	cmd.Env = append(os.Environ(), "LC_ALL=C", "TZ=UTC")
	s.runAs.apply(cmd)
	return cmd.CombinedOutput()
}

// CreateDatabase creates an empty database on the server whose admin URL
// is adminDSN and returns a URL of it.
func CreateDatabase(ctx context.Context, adminDSN, name string) (string, error) {
	db, err := sql.Open("pgx", adminDSN)
	if err != nil {
		return "", fmt.Errorf("pgtest: connect to %s: %w", redact(adminDSN), err)
	}
	defer db.Close()
	if _, err := db.ExecContext(ctx, "CREATE DATABASE "+quoteIdent(name)); err != nil {
		return "", fmt.Errorf("pgtest: create database %s: %w", name, err)
	}
	u, err := url.Parse(adminDSN)
	if err != nil {
		return "", fmt.Errorf("pgtest: parse %s: %w", EnvDSN, err)
	}
	u.Path = "/" + name
	return u.String(), nil
}

// DropDatabase drops a database made by CreateDatabase, closing the
// connections still open to it.
func DropDatabase(ctx context.Context, adminDSN, name string) error {
	db, err := sql.Open("pgx", adminDSN)
	if err != nil {
		return fmt.Errorf("pgtest: connect to %s: %w", redact(adminDSN), err)
	}
	defer db.Close()
	if _, err := db.ExecContext(ctx, "DROP DATABASE IF EXISTS "+quoteIdent(name)+" WITH (FORCE)"); err != nil {
		return fmt.Errorf("pgtest: drop database %s: %w", name, err)
	}
	return nil
}

var (
	shared     *Server
	sharedErr  error
	sharedOnce sync.Once
	sharedMu   sync.Mutex // guards shared against Main's stop
	dbCounter  atomic.Uint64
)

// adminDSN returns the URL of the server the tests use: EnvDSN, or the
// shared throwaway server, started on first use.
func adminDSN() (string, error) {
	if dsn := os.Getenv(EnvDSN); dsn != "" {
		return dsn, nil
	}
	sharedOnce.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
		defer cancel()
		s, err := Start(ctx)
		sharedMu.Lock()
		shared, sharedErr = s, err
		sharedMu.Unlock()
	})
	if sharedErr != nil {
		return "", sharedErr
	}
	return shared.DSN, nil
}

// NewDatabase returns the postgres:// URL of a new, empty database for t,
// dropped when t ends. It skips t when PostgreSQL is unavailable, or fails
// it when OPENHUMAN_REQUIRE_POSTGRES is set.
func NewDatabase(t testing.TB) string {
	t.Helper()
	admin, err := adminDSN()
	if err != nil {
		if errors.Is(err, errNoBinaries) && os.Getenv(EnvRequire) == "" {
			t.Skipf("%v; %s", err, howToGet)
		}
		t.Fatalf("%v; %s", err, howToGet)
	}
	name := databaseName(t.Name(), dbCounter.Add(1))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	dsn, err := CreateDatabase(ctx, admin, name)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := DropDatabase(ctx, admin, name); err != nil {
			t.Error(err)
		}
	})
	return dsn
}

// NewServer starts a server of t's own, for tests that crash and restart
// it ([Server.Kill], [Server.Restart]), and stops it when t ends. It skips
// or fails t as [NewDatabase] does when PostgreSQL is unavailable; it does
// not use OPENHUMAN_TEST_POSTGRES_DSN, which names a server tests may not
// stop.
func NewServer(t testing.TB) *Server {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	s, err := Start(ctx)
	if err != nil {
		if errors.Is(err, errNoBinaries) && os.Getenv(EnvRequire) == "" {
			t.Skipf("%v; %s", err, howToGet)
		}
		t.Fatalf("%v; %s", err, howToGet)
	}
	t.Cleanup(func() {
		if err := s.Stop(); err != nil {
			t.Error(err)
		}
	})
	return s
}

// Main runs the tests of m, stops the shared server ([Stop]) and exits
// with the tests' status. Call it from TestMain.
func Main(m *testing.M) {
	code := m.Run()
	if err := Stop(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		if code == 0 {
			code = 1
		}
	}
	os.Exit(code)
}

// Stop stops the shared server if one was started. A TestMain that does
// more than [Main] calls it once the tests are done.
func Stop() error {
	sharedMu.Lock()
	s := shared
	shared = nil
	sharedMu.Unlock()
	if s == nil {
		return nil
	}
	return s.Stop()
}

var nonIdent = regexp.MustCompile(`[^a-z0-9_]+`)

// databaseName is a valid, unique database name (at most 63 bytes) that
// says which test made it.
func databaseName(test string, n uint64) string {
	suffix := "_" + strconv.FormatUint(n, 10) + "_" + randomHex(3)
	base := strings.Trim(nonIdent.ReplaceAllString(strings.ToLower(test), "_"), "_")
	if max := 63 - len("t_") - len(suffix); len(base) > max {
		base = base[:max]
	}
	return "t_" + base + suffix
}

// quoteIdent quotes a PostgreSQL identifier.
func quoteIdent(s string) string {
	return `"` + strings.ReplaceAll(s, `"`, `""`) + `"`
}

// redact leaves a URL's password out of messages.
func redact(dsn string) string {
	u, err := url.Parse(dsn)
	if err != nil {
		return "(an unparsable URL)"
	}
	return u.Redacted()
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

func tail(s string, n int) string {
	if len(s) > n {
		return "..." + s[len(s)-n:]
	}
	return s
}

// errNoBinaries is wrapped when initdb and pg_ctl cannot be found.
var errNoBinaries = errors.New("pgtest: PostgreSQL's initdb and pg_ctl were not found on PATH or in /usr/lib/postgresql/*/bin")

// binDir returns the directory holding initdb and pg_ctl: the one on PATH,
// else Debian's newest /usr/lib/postgresql/<version>/bin.
func binDir() (string, error) {
	if p, err := exec.LookPath("initdb"); err == nil {
		if real, err := filepath.EvalSymlinks(p); err == nil {
			p = real
		}
		dir := filepath.Dir(p)
		if _, err := os.Stat(filepath.Join(dir, "pg_ctl")); err == nil {
			return dir, nil
		}
	}
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	sort.Slice(dirs, func(i, j int) bool { return version(dirs[i]) > version(dirs[j]) })
	for _, dir := range dirs {
		if _, err := os.Stat(filepath.Join(dir, "initdb")); err == nil {
			return dir, nil
		}
	}
	return "", errNoBinaries
}

// version is the major version in /usr/lib/postgresql/<version>/bin.
func version(binDir string) int {
	v, _ := strconv.Atoi(filepath.Base(filepath.Dir(binDir)))
	return v
}
