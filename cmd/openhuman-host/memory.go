package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"

	"github.com/schollz/progressbar/v3"
	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/openhuman/openhuman-host/providers/memory"
	"github.com/openhuman/openhuman-host/sdk"
)

func newMemoryCmd(g *globalFlags) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "memory",
		Short: "Load files into memory and inspect it",
		Args:  unknownSubcommand,
		RunE:  func(cmd *cobra.Command, _ []string) error { return cmd.Help() },
	}
	var followLinks bool
	importCmd := &cobra.Command{
		Use:   "import PATH...",
		Short: "Import Markdown and text files (.md, .markdown, .txt) and folders into memory",
		Long: "import loads every .md, .markdown and .txt file named, or found in the folders named\n" +
			"(recursively, skipping hidden entries), as a document of source kind \"document\"; its title is\n" +
			"its first Markdown heading, else its file name. Importing again updates changed files and\n" +
			"leaves the others alone. It works while a server runs on the same data directory.\n" +
			"A symbolic link is followed only to a file inside the folder imported, unless --follow-links;\n" +
			"files under /proc, /sys and /dev and anything but regular files are never read.\n" +
			"A progress bar is drawn on stderr when it is a terminal; a summary line goes to stdout, and\n" +
			"each skipped file to stderr, with the reason.",
		Example: "  openhuman-host memory import ~/notes ~/Documents/journal.md",
		Args:    cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return withMemory(g, func(ctx context.Context, p *memory.Provider) error {
				return runImport(ctx, p, args, followLinks, cmd.OutOrStdout(), cmd.ErrOrStderr())
			})
		},
	}
	importCmd.Flags().BoolVar(&followLinks, "follow-links", false, "also import files that symbolic links point to outside the folders imported")
	cmd.AddCommand(importCmd)
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

// withMemory opens the memory provider in this process on the data
// directory and [providers.memory] table the server would use, runs fn,
// and closes it. SIGINT and SIGTERM cancel fn's context.
func withMemory(g *globalFlags, fn func(context.Context, *memory.Provider) error) error {
	cfg, log, err := loadConfig(g)
	if err != nil {
		return err
	}
	pc, ok := cfg.Providers["memory"]
	if !ok || !pc.Enabled {
		return errors.New("the memory provider is disabled; set [providers.memory] enabled = true in the config")
	}
	dataDir, err := cfg.DataDir()
	if err != nil {
		return err
	}
	settings, err := pc.SettingsJSON()
	if err != nil {
		return fmt.Errorf("providers.memory: %w", err)
	}
	dir := filepath.Join(dataDir, "memory")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("create the memory data directory: %w", err)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	p := memory.New(&memory.Options{Logger: log.Named("memory")})
	err = p.Configure(ctx, &sdk.ConfigureRequest{
		Config:  settings,
		DataDir: dir,
		Secrets: pc.ResolveSecrets(os.Getenv),
	})
	if err != nil {
		return err
	}
	defer p.Close()
	return fn(ctx, p)
}

// runImport imports paths with a progress bar on a terminal and prints the
// summary.
func runImport(ctx context.Context, p *memory.Provider, paths []string, followLinks bool, stdout, stderr io.Writer) error {
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
	sum, err := p.Import(ctx, paths, &memory.ImportOptions{FollowLinks: followLinks, Progress: func(pr memory.ImportProgress) {
		if bar != nil {
			bar.ChangeMax(pr.Total)
			_ = bar.Set(pr.Done)
		}
	}})
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
	_, err = fmt.Fprintf(stdout, "%s found: %d imported (new or changed), %d unchanged, %d skipped; %s in memory from these files; %.1f s\n",
		plural(sum.Files, "file"), sum.Written, sum.Unchanged, len(sum.Skipped), plural(sum.Chunks, "chunk"), sum.Elapsed.Seconds())
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
