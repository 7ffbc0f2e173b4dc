package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/hashicorp/go-hclog"

	"github.com/schollz/progressbar/v3"
	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/openhuman/openhuman-host/host"
	"github.com/openhuman/openhuman-host/host/config"
	"github.com/openhuman/openhuman-host/providers/memory"
	"github.com/openhuman/openhuman-host/sdk"
)

func newMemoryCmd(g *globalFlags) *cobra.Command {
	cmd := newGroupCmd("memory", "Load files into memory, inspect, export and back it up")
	var followLinks, keepMissing bool
	importCmd := &cobra.Command{
		Use:   "import PATH...",
		Short: "Import Markdown and text files (.md, .markdown, .txt) and folders into memory",
		Long: "import loads every .md, .markdown and .txt file named, or found in the folders named\n" +
			"(recursively, skipping hidden entries), as a document of source kind \"document\"; its title is\n" +
			"its first Markdown heading, else its file name. Importing again updates changed files and\n" +
			"leaves the others alone; files imported before from the same folders that are no longer on disk\n" +
			"are removed from memory (--keep-missing keeps them). It works while a server runs on the same\n" +
			"data directory.\n" +
			"A symbolic link is followed only to a file inside the folder imported, unless --follow-links;\n" +
			"files under /proc, /sys and /dev and anything but regular files are never read.\n" +
			"A progress bar is drawn on stderr when it is a terminal; a summary line goes to stdout, and\n" +
			"each skipped file to stderr, with the reason.\n" +
			"A file written by `memory export` (recognised by its first line; - reads one from stdin) is\n" +
			"restored exactly instead, in one transaction: its documents replace those with the same id.",
		Example: "  openhuman-host memory import ~/notes ~/Documents/journal.md\n  openhuman-host memory import memory.jsonl",
		Args:    cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return withMemory(g, func(ctx context.Context, p *memory.Provider) error {
				return runImportArgs(ctx, p, args, &memory.ImportOptions{FollowLinks: followLinks, KeepMissing: keepMissing}, cmd.InOrStdin(), cmd.OutOrStdout(), cmd.ErrOrStderr())
			})
		},
	}
	importCmd.Flags().BoolVar(&followLinks, "follow-links", false, "also import files that symbolic links point to outside the folders imported")
	importCmd.Flags().BoolVar(&keepMissing, "keep-missing", false, "keep the documents of files imported before that are no longer on disk")
	cmd.AddCommand(importCmd, newMemoryExportCmd(g), newMemoryBackupCmd(g), newMemoryForgetCmd(g))
	var force bool
	recoverCmd := &cobra.Command{
		Use:   "recover",
		Short: "Rebuild a damaged memory database from what can still be read of it",
		Long: "recover is the way out when the memory provider refuses memory.db as damaged. It copies every\n" +
			"source, document, chunk, chunk tag, previous version and embedding SQLite can still read into\na new database, " +
			"builds the search and entity indexes again, keeps the damaged files as\n" +
			"memory.db.damaged-<UTC time> and puts the new database in place. It refuses to run while a\n" +
			"server runs on the data directory; stop your MCP clients first. A healthy database is left\n" +
			"alone unless --force. Afterwards, import your files again: documents that could be read only\n" +
			"in part are listed, and importing replaces them.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runRecover(cmd, g, force)
		},
	}
	recoverCmd.Flags().BoolVar(&force, "force", false, "rebuild the database even when it passes SQLite's integrity check")
	cmd.AddCommand(recoverCmd)
	cmd.AddCommand(&cobra.Command{
		Use:   "stats",
		Short: "Print what memory holds and the size of its database",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return withMemory(g, func(ctx context.Context, p *memory.Provider) error {
				s, err := p.Stats(ctx)
				if err != nil {
					return err
				}
				_, err = fmt.Fprintf(cmd.OutOrStdout(),
					"database\t%s\nsize\t%s (%d bytes)\nschema\t%d\nsources\t%d\ndocuments\t%d\nchunks\t%d\nentities\t%d\nchunk tags\t%d\nnotes\t%d\nembeddings\t%d\n",
					s.Path, humanBytes(s.DBBytes), s.DBBytes, s.SchemaVersion, s.Sources, s.Documents, s.Chunks,
					s.Entities, s.ChunkTags, s.Notes, s.Embeddings)
				return err
			})
		},
	})
	return cmd
}

// memorySetup is what a memory command needs of the config: the data
// directory, the memory provider's own folder in it (created if missing)
// and its [providers.memory] table.
type memorySetup struct {
	log      hclog.Logger
	dataDir  string
	dir      string
	pc       config.ProviderConfig
	settings []byte
	// secrets are what Configure gets: the table's *_env values and, on
	// PostgreSQL, the shared database's connection string.
	secrets map[string]string
	// postgres is set when [storage] driver = "postgres": memory lives in
	// the shared database, not in memory.db.
	postgres bool
}

// loadMemorySetup reads the config the server would use for the memory
// provider; it fails when the provider is disabled.
func loadMemorySetup(g *globalFlags) (*memorySetup, error) {
	cfg, log, err := loadConfig(g)
	if err != nil {
		return nil, err
	}
	pc, ok := cfg.Providers["memory"]
	if !ok || !pc.Enabled {
		return nil, errors.New("the memory provider is disabled; set [providers.memory] enabled = true in the config")
	}
	dataDir, err := cfg.DataDir()
	if err != nil {
		return nil, err
	}
	settings, err := pc.SettingsJSON()
	if err != nil {
		return nil, fmt.Errorf("providers.memory: %w", err)
	}
	dir := filepath.Join(dataDir, "memory")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("create the memory data directory: %w", err)
	}
	secrets, err := host.SharedStorageSecrets(cfg, pc.ResolveSecrets(os.Getenv))
	if err != nil {
		return nil, err
	}
	return &memorySetup{log: log, dataDir: dataDir, dir: dir, pc: pc, settings: settings, secrets: secrets,
		postgres: cfg.Storage.Driver == config.StoragePostgres}, nil
}

// withMemory opens the memory provider in this process on the data
// directory and [providers.memory] table the server would use, runs fn,
// and closes it. SIGINT and SIGTERM cancel fn's context.
func withMemory(g *globalFlags, fn func(context.Context, *memory.Provider) error) error {
	m, err := loadMemorySetup(g)
	if err != nil {
		return err
	}
	ctx, stop := signalContext(context.Background())
	defer stop()
	p := memory.New(&memory.Options{Logger: m.log.Named("memory")})
	err = p.Configure(ctx, &sdk.ConfigureRequest{
		Config:  m.settings,
		DataDir: m.dir,
		Secrets: m.secrets,
	})
	if err != nil {
		return err
	}
	defer p.Close()
	return fn(ctx, p)
}

// runRecover runs memory recover: it refuses while a server runs on the
// data directory, then rebuilds memory.db and prints what it did.
func runRecover(cmd *cobra.Command, g *globalFlags, force bool) error {
	m, err := loadMemorySetup(g)
	if err != nil {
		return err
	}
	if m.postgres {
		return errors.New(`memory recover rebuilds a damaged SQLite memory.db; with [storage] driver = "postgres" memory lives in ` +
			`the shared PostgreSQL database: restore it from a pg_dump backup with pg_restore (or psql) instead`)
	}
	servers, err := readStatusReports(m.dataDir)
	if err != nil {
		return err
	}
	if len(servers) > 0 {
		pids := make([]string, len(servers))
		for i, s := range servers {
			pids[i] = strconv.Itoa(s.Pid)
		}
		return fmt.Errorf("%s running on %s (process %s); stop the MCP clients that started them, then run memory recover again",
			plural(len(servers), "server"), m.dataDir, strings.Join(pids, ", "))
	}
	ctx, stop := signalContext(context.Background())
	defer stop()
	sum, err := memory.New(&memory.Options{Logger: m.log.Named("memory")}).Recover(ctx, m.dir, &memory.RecoverOptions{Force: force})
	out := cmd.OutOrStdout()
	if errors.Is(err, memory.ErrNotDamaged) {
		_, err := fmt.Fprintf(out, "%s; nothing to do (--force rebuilds it anyway)\n", memory.ErrNotDamaged)
		return err
	}
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "the old database is kept as %s\n", sum.MovedTo)
	if sum.SchemaUnreadable {
		fmt.Fprintln(out, "SQLite could not read the old database's schema (its header or first pages are damaged, or it is not a SQLite file): nothing could be recovered, and memory starts empty")
	}
	fmt.Fprintf(out, "rebuilt memory.db: %s, %s, %s, %s, %s\n", plural(sum.Sources, "source"), plural(sum.Documents, "document"),
		plural(sum.Chunks, "chunk"), plural(sum.ChunkTags, "chunk tag"), plural(sum.Embeddings, "embedding"))
	if len(sum.Unreadable) > 0 {
		tables := slices.Sorted(maps.Keys(sum.Unreadable))
		parts := make([]string, len(tables))
		for i, t := range tables {
			parts[i] = fmt.Sprintf("%s (%s)", t, plural(sum.Unreadable[t], "region"))
		}
		fmt.Fprintf(out, "could not be read: %s\n", strings.Join(parts, ", "))
	}
	for _, d := range sum.Incomplete {
		fmt.Fprintf(out, "incomplete: %s\n", d)
	}
	for _, d := range sum.Lost {
		fmt.Fprintf(out, "lost: %s\n", d)
	}
	if sum.NotesUnlinked > 0 {
		fmt.Fprintf(out, "%s kept without the chunk they annotated\n", plural(sum.NotesUnlinked, "note"))
	}
	if len(sum.Incomplete)+len(sum.Lost) > 0 || len(sum.Unreadable) > 0 {
		fmt.Fprintln(out, "run `openhuman-host memory import` again for your files to restore what was lost")
	}
	return nil
}

// runImport imports paths with a progress bar on a terminal and prints the
// summary.
func runImport(ctx context.Context, p *memory.Provider, paths []string, opts *memory.ImportOptions, stdout, stderr io.Writer) error {
	var bar *progressbar.ProgressBar
	if f, ok := stderr.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
		bar = progressbar.NewOptions(-1,
			progressbar.OptionSetWriter(stderr),
			progressbar.OptionSetDescription("importing"),
			progressbar.OptionShowCount(),
			progressbar.OptionSetItsString("files"),
			progressbar.OptionShowIts(),
			progressbar.OptionClearOnFinish(),
			progressbar.OptionThrottle(100_000_000),
		)
	}
	opts.Progress = func(pr memory.ImportProgress) {
		if bar != nil {
			bar.ChangeMax(pr.Total)
			_ = bar.Set(pr.Done)
		}
	}
	sum, err := p.Import(ctx, paths, opts)
	if bar != nil {
		_ = bar.Finish()
	}
	for _, s := range sum.Skipped {
		fmt.Fprintf(stderr, "skipped %s: %s\n", s.Path, s.Reason)
	}
	if err != nil && ctx.Err() != nil {
		return fmt.Errorf("import interrupted after %d files (%s); what was written is kept: run the same command again to finish",
			sum.Written+sum.Unchanged, plural(sum.Chunks, "chunk"))
	}
	if err != nil {
		return err
	}
	for _, path := range sum.Removed {
		fmt.Fprintf(stderr, "removed %s: no longer on disk\n", path)
	}
	removed := ""
	if len(sum.Removed) > 0 {
		removed = fmt.Sprintf(", %d removed (no longer on disk)", len(sum.Removed))
	}
	_, err = fmt.Fprintf(stdout, "%s found: %d imported (new or changed), %d unchanged, %d skipped%s; %s in memory from these files; %.1f s\n",
		plural(sum.Files, "file"), sum.Written, sum.Unchanged, len(sum.Skipped), removed, plural(sum.Chunks, "chunk"), sum.Elapsed.Seconds())
	return err
}

// plural formats a count with a noun, adding "s" unless n is 1.
func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

// humanBytes formats n bytes with a binary unit.
func humanBytes(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTPE"[exp])
}
