package main

import (
	"context"
	"fmt"
	"io"
	"io/fs"
	"path/filepath"
	"strings"

	"github.com/hashicorp/go-hclog"
	"github.com/spf13/cobra"

	"github.com/openhuman/openhuman-host/host"
	"github.com/openhuman/openhuman-host/host/audit"
	"github.com/openhuman/openhuman-host/host/config"
	"github.com/openhuman/openhuman-host/providers/memory"
	"github.com/openhuman/openhuman-host/sdk/storage"
)

func newMigrateCmd(g *globalFlags) *cobra.Command {
	var status bool
	cmd := &cobra.Command{
		Use:   "migrate",
		Short: "Bring the audit log's database schema up to date",
		Long: "migrate applies the audit log's pending schema migrations, which every server also does when it\n" +
			"starts. With [storage] driver = \"postgres\" it takes a PostgreSQL advisory lock first, so running it\n" +
			"while replicas start is safe: each migration runs once. Run it before rolling out a new version\n" +
			"to replicas sharing one database. With --status it only prints each schema's version.",
		Args: cobra.NoArgs,
		RunE: configured(g, func(cmd *cobra.Command, _ []string, cfg *config.Config, log hclog.Logger) error {
			ctx, stop := signalContext(cmd.Context())
			defer stop()
			out := cmd.OutOrStdout()
			if cfg.Storage.Driver != config.StoragePostgres {
				dataDir, err := cfg.DataDir()
				if err != nil {
					return err
				}
				if status {
					_, err := fmt.Fprintf(out, "audit: SQLite %s; its schema is brought up to date whenever it is opened\n",
						filepath.Join(dataDir, host.AuditFile))
					return err
				}
				l, err := host.OpenAudit(ctx, cfg, dataDir, nil)
				if err != nil {
					return err
				}
				if err := l.Close(ctx); err != nil {
					return err
				}
				_, err = fmt.Fprintf(out, "audit: SQLite %s is up to date\n", filepath.Join(dataDir, host.AuditFile))
				return err
			}
			dsn, err := cfg.Storage.DSN(nil)
			if err != nil {
				return err
			}
			return migratePostgres(ctx, dsn, status, log, out)
		}),
	}
	cmd.Flags().BoolVar(&status, "status", false, "print each schema's version and the newest this binary knows, and change nothing")
	return cmd
}

// migratePostgres migrates, or with status reports, every component kept
// in the shared PostgreSQL database at dsn.
func migratePostgres(ctx context.Context, dsn string, status bool, log hclog.Logger, out io.Writer) error {
	_, sqlDB, err := storage.OpenPostgres(ctx, dsn, storage.PoolOptions{MaxOpen: 2})
	if err != nil {
		return err
	}
	defer sqlDB.Close()
	where := storage.Describe(dsn)
	for _, c := range []struct {
		name string
		fsys fs.FS
	}{{audit.Component, audit.Migrations}, {memory.Component, memory.Migrations}} {
		if status {
			current, latest, err := storage.Version(ctx, sqlDB, c.name, c.fsys)
			if err != nil {
				return err
			}
			state := "up to date"
			if current < latest {
				state = fmt.Sprintf("%d migrations pending", latest-current)
			}
			if current > latest {
				state = "newer than this binary: upgrade it"
			}
			if _, err := fmt.Fprintf(out, "%s: PostgreSQL %s at version %d of %d (%s)\n", c.name, where, current, latest, state); err != nil {
				return err
			}
			continue
		}
		applied, err := storage.Migrate(ctx, sqlDB, c.name, c.fsys, log.Named("migrate"))
		var names []string
		for _, m := range applied {
			names = append(names, m.Name)
		}
		if len(names) > 0 {
			if _, werr := fmt.Fprintf(out, "%s: applied %s\n", c.name, strings.Join(names, ", ")); werr != nil {
				return werr
			}
		}
		if err != nil {
			return err
		}
		if len(names) == 0 {
			if _, err := fmt.Fprintf(out, "%s: PostgreSQL %s is up to date\n", c.name, where); err != nil {
				return err
			}
		}
	}
	return nil
}
