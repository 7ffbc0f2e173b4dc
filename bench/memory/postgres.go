package main

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"sync/atomic"

	"github.com/openhuman/openhuman-host/sdk/storage/pgtest"
)

// pgServer is where -driver postgres keeps its stores: a throwaway
// server started from the system's initdb and pg_ctl, or the one
// $OPENHUMAN_TEST_POSTGRES_DSN names (a role that may create databases),
// with a new database for each store of the run.
type pgServer struct {
	admin string
	// server is the throwaway server, nil for one named by the
	// environment.
	server *pgtest.Server
	dbs    []string
	n      atomic.Int64
}

// startPostgres starts the server, or takes the one the environment
// names.
func startPostgres(ctx context.Context, logf func(string, ...any)) (*pgServer, error) {
	if dsn := os.Getenv(pgtest.EnvDSN); dsn != "" {
		logf("PostgreSQL: the server %s names", pgtest.EnvDSN)
		return &pgServer{admin: dsn}, nil
	}
	s, err := pgtest.Start(ctx)
	if err != nil {
		return nil, fmt.Errorf("start a throwaway PostgreSQL: %w", err)
	}
	logf("PostgreSQL: a throwaway server")
	return &pgServer{admin: s.DSN, server: s}, nil
}

// newDatabase creates an empty database and returns its URL.
func (p *pgServer) newDatabase(ctx context.Context) (string, error) {
	name := "bench_memory_" + strconv.Itoa(os.Getpid()) + "_" + strconv.FormatInt(p.n.Add(1), 10)
	dsn, err := pgtest.CreateDatabase(ctx, p.admin, name)
	if err != nil {
		return "", err
	}
	p.dbs = append(p.dbs, name)
	return dsn, nil
}

// stop drops the run's databases and stops a throwaway server.
func (p *pgServer) stop() {
	if p.server != nil {
		_ = p.server.Stop()
		return
	}
	for _, name := range p.dbs {
		_ = pgtest.DropDatabase(context.Background(), p.admin, name)
	}
}
