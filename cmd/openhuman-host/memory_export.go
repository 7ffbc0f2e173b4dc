package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/openhuman/openhuman-host/providers/memory"
)

// exportOptions are the flags of memory export.
type exportOptions struct {
	format     string
	embeddings bool
	namespaces []string
	overwrite  bool
}

func newMemoryExportCmd(g *globalFlags) *cobra.Command {
	var o exportOptions
	cmd := &cobra.Command{
		Use:   "export [--format jsonl|markdown] [--embeddings] [--namespace NS]... OUT",
		Short: "Export memory to a JSON Lines file that memory import restores, or to Markdown files",
		Long: "export writes what memory holds as of one moment; it works while a server runs on the same data\n" +
			"directory, which goes on writing meanwhile.\n" +
			"--format jsonl (the default) writes one JSON Lines file, OUT, or stdout when OUT is -: sources,\n" +
			"documents, chunks, chunk tags, entities and, with --embeddings, the embedding vectors, which\n" +
			"`openhuman-host memory import OUT` restores exactly (docs/memory.md describes the format).\n" +
			"--format markdown writes one .md file per document, with a front matter, into a folder per\n" +
			"namespace under the folder OUT, for reading; it cannot be imported back as it was.\n" +
			"--namespace (repeatable) limits the export to those namespaces. An existing OUT file, or a\n" +
			"folder that is not empty, is refused unless --overwrite. Files are created readable by their\n" +
			"owner only. The summary goes to stdout, or to stderr when the export itself does.",
		Example: "  openhuman-host memory export memory.jsonl\n" +
			"  openhuman-host memory export --embeddings --namespace work - | gzip > work.jsonl.gz\n" +
			"  openhuman-host memory export --format markdown ~/memory-notes",
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if o.format != "jsonl" && o.format != "markdown" {
				return fmt.Errorf("--format must be jsonl or markdown, not %q", o.format)
			}
			if o.format == "markdown" && o.embeddings {
				return errors.New("--embeddings needs --format jsonl: Markdown files hold no vectors")
			}
			if o.format == "markdown" && args[0] == "-" {
				return errors.New("--format markdown writes a folder; name it instead of -")
			}
			return withMemory(g, func(ctx context.Context, p *memory.Provider) error {
				if o.format == "markdown" {
					return runExportMarkdown(ctx, p, args[0], o, cmd.OutOrStdout())
				}
				return runExportJSONL(ctx, p, args[0], o, cmd.OutOrStdout(), cmd.ErrOrStderr())
			})
		},
	}
	cmd.Flags().StringVar(&o.format, "format", "jsonl", "jsonl (restorable with memory import) or markdown (a folder of .md files)")
	cmd.Flags().BoolVar(&o.embeddings, "embeddings", false, "include the embedding vectors (jsonl only)")
	cmd.Flags().StringArrayVar(&o.namespaces, "namespace", nil, "export only this namespace (repeatable)")
	cmd.Flags().BoolVar(&o.overwrite, "overwrite", false, "replace an existing OUT file, or write into a folder that is not empty")
	return cmd
}

func newMemoryBackupCmd(g *globalFlags) *cobra.Command {
	return &cobra.Command{
		Use:   "backup FILE",
		Short: "Copy the memory database to FILE, consistently, even while a server writes to it",
		Long: "backup copies memory.db with SQLite's online backup API: FILE is the database as of one moment\n" +
			"(a server running on the same data directory goes on writing meanwhile), one self-contained\n" +
			"file readable by its owner only, checked with SQLite's quick_check. FILE must not exist. To\n" +
			"restore, stop every openhuman-host using the data directory and put FILE in place of\n" +
			"memory/memory.db (`openhuman-host config paths` prints where that is).\n" +
			"The summary goes to stdout.",
		Example: "  openhuman-host memory backup ~/backups/memory-$(date +%F).db",
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return withMemory(g, func(ctx context.Context, p *memory.Provider) error {
				start := time.Now()
				if err := p.Backup(ctx, args[0]); err != nil {
					return err
				}
				info, err := os.Stat(args[0])
				if err != nil {
					return err
				}
				_, err = fmt.Fprintf(cmd.OutOrStdout(), "backed up memory to %s (%s); %.1f s\n", args[0], humanBytes(info.Size()), time.Since(start).Seconds())
				return err
			})
		},
	}
}

// runExportJSONL writes the JSON Lines export to out, a file or - for
// stdout. A file is written under a temporary name beside it and renamed
// into place once complete, so a failed export leaves no partial file.
func runExportJSONL(ctx context.Context, p *memory.Provider, out string, o exportOptions, stdout, stderr io.Writer) error {
	opts := &memory.ExportOptions{Namespaces: o.namespaces, Embeddings: o.embeddings}
	if out == "-" {
		sum, err := p.Export(ctx, stdout, opts)
		if err != nil {
			return err
		}
		return printExportSummary(stderr, sum, "stdout")
	}
	if _, err := os.Lstat(out); err == nil && !o.overwrite {
		return fmt.Errorf("%s exists; choose another name, or pass --overwrite to replace it", out)
	}
	tmp, err := os.CreateTemp(filepath.Dir(out), "."+filepath.Base(out)+".*.partial")
	if err != nil {
		return fmt.Errorf("create %s: %w", out, err)
	}
	done := false
	defer func() {
		if !done {
			_ = tmp.Close()
			_ = os.Remove(tmp.Name())
		}
	}()
	if err := tmp.Chmod(0o600); err != nil {
		return fmt.Errorf("make %s private: %w", tmp.Name(), err)
	}
	sum, err := p.Export(ctx, tmp, opts)
	if err != nil {
		return err
	}
	if err := tmp.Sync(); err != nil {
		return fmt.Errorf("write %s: %w", out, err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("write %s: %w", out, err)
	}
	if err := os.Rename(tmp.Name(), out); err != nil {
		return fmt.Errorf("move the export into place as %s: %w", out, err)
	}
	done = true
	return printExportSummary(stdout, sum, out)
}

func printExportSummary(w io.Writer, sum memory.ExportSummary, to string) error {
	c := sum.Counts
	_, err := fmt.Fprintf(w, "exported %s (%s, %s, %s, %s, %s) from %s to %s (%s)\n",
		plural(c.Documents, "document"), plural(c.Chunks, "chunk"), plural(c.ChunkTags, "chunk tag"),
		plural(c.Embeddings, "embedding"), plural(c.Entities, "entity record"), plural(c.Versions, "previous version"),
		plural(c.Sources, "source"), to, humanBytes(sum.Bytes))
	return err
}

func runExportMarkdown(ctx context.Context, p *memory.Provider, dir string, o exportOptions, stdout io.Writer) error {
	sum, err := p.ExportMarkdown(ctx, dir, &memory.MarkdownExportOptions{Namespaces: o.namespaces, Overwrite: o.overwrite})
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(stdout, "exported %s as Markdown to %s (%s, %s created)\n",
		plural(sum.Documents, "document"), dir, humanBytes(sum.Bytes), plural(sum.Folders, "namespace folder"))
	return err
}

// runImportArgs runs memory import: every path that is an export file
// (recognised by its header line; - is one read from stdin) is restored
// with ImportJSONL, one transaction each, and the remaining paths are
// imported as Markdown and text files.
func runImportArgs(ctx context.Context, p *memory.Provider, paths []string, opts *memory.ImportOptions, stdin io.Reader, stdout, stderr io.Writer) error {
	var rest []string
	for _, path := range paths {
		isExport, err := isExportFile(path)
		if err != nil {
			return err
		}
		if !isExport {
			rest = append(rest, path)
			continue
		}
		if err := restoreExport(ctx, p, path, stdin, stdout); err != nil {
			return err
		}
	}
	if len(rest) == 0 {
		return nil
	}
	return runImport(ctx, p, rest, opts, stdout, stderr)
}

// isExportFile reports whether path is - or a regular file whose first
// line is an export's header.
func isExportFile(path string) (bool, error) {
	if path == "-" {
		return true, nil
	}
	info, err := os.Stat(path)
	if err != nil || !info.Mode().IsRegular() {
		return false, nil // the file import reports it
	}
	f, err := os.Open(path)
	if err != nil {
		return false, nil
	}
	defer f.Close()
	line, err := bufio.NewReaderSize(f, 64<<10).ReadSlice('\n')
	if err != nil && !errors.Is(err, io.EOF) && !errors.Is(err, bufio.ErrBufferFull) {
		return false, fmt.Errorf("read %s: %w", path, err)
	}
	return memory.IsJSONLExport(line), nil
}

// restoreExport restores the export at path (- for stdin) and prints what
// it did.
func restoreExport(ctx context.Context, p *memory.Provider, path string, stdin io.Reader, stdout io.Writer) error {
	r, name := stdin, "stdin"
	if path != "-" {
		f, err := os.Open(path)
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return fmt.Errorf("restore %s: %w", path, err)
			}
			return err
		}
		defer f.Close()
		r, name = f, path
	}
	sum, err := p.ImportJSONL(ctx, r, nil)
	if err != nil {
		return fmt.Errorf("restore %s: %w", name, err)
	}
	c := sum.Counts
	scope := "every namespace"
	if len(sum.Namespaces) > 0 {
		scope = "namespaces " + strings.Join(sum.Namespaces, ", ")
	}
	_, err = fmt.Fprintf(stdout, "restored %s, exported %s (%s): %s (%d new, %d replaced), %s, %s, %s, %s, %s; %.1f s\n",
		name, time.UnixMilli(sum.ExportedMS).UTC().Format(time.RFC3339), scope,
		plural(c.Documents, "document"), sum.New, sum.Replaced, plural(c.Chunks, "chunk"), plural(c.ChunkTags, "chunk tag"),
		plural(c.Embeddings, "embedding"), plural(c.Entities, "entity record"), plural(c.Versions, "previous version"), sum.Elapsed.Seconds())
	if err == nil && sum.NotesUnlinked > 0 {
		_, err = fmt.Fprintf(stdout, "%s kept without the chunk they annotated, which a replaced document no longer has\n", plural(sum.NotesUnlinked, "note"))
	}
	return err
}
