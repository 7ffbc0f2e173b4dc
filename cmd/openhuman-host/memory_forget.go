package main

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/spf13/cobra"

	"github.com/openhuman/openhuman-host/host"
	"github.com/openhuman/openhuman-host/host/server"
	"github.com/openhuman/openhuman-host/providers/memory/memorytool"
	"github.com/openhuman/openhuman-host/sdk"
)

// newMemoryForgetCmd returns "memory forget": [memorytool.Forget] from the
// command line, through the host's policy and audit like "tools call".
func newMemoryForgetCmd(g *globalFlags) *cobra.Command {
	var (
		chunks, docs, sources, namespaces []string
		query, before                     string
		dryRun, asJSON                    bool
	)
	cmd := &cobra.Command{
		Use:   "forget",
		Short: "Delete chunks, documents, sources or namespaces from memory, for good",
		Long: "forget deletes what the flags select, which combine with AND (repeat a flag for alternatives):\n" +
			"--chunk and --query (every word must match) and --before select chunks, and a document none of\n" +
			"whose chunks is left goes too; --document, --source and --namespace alone select whole documents.\n" +
			"Notes about a removed chunk, the previous versions of a removed document and entities nothing else\n" +
			"mentions go with it. --dry-run prints what would go and changes nothing. It runs the " + memorytool.Forget + "\n" +
			"tool through the host's security policy and audit log (source type \"cli\"), while a server runs\n" +
			"on the same data directory too. Imported files come back if imported again while still on disk.",
		Example: "  openhuman-host memory forget --dry-run --namespace work\n" +
			"  openhuman-host memory forget --document mcp/mcp-store-trip-plan\n" +
			"  openhuman-host memory forget --query \"old password\" --before 2026-01-01",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			args := map[string]any{}
			for name, v := range map[string][]string{"chunk_ids": chunks, "document_ids": docs, "source_ids": sources, "namespaces": namespaces} {
				if len(v) > 0 {
					args[name] = v
				}
			}
			if query != "" {
				args["query"] = query
			}
			if before != "" {
				t, err := parseTimeAgo("--before", before, time.Now())
				if err != nil {
					return err
				}
				args["updated_before_ms"] = t.UnixMilli()
			}
			if len(args) == 0 {
				return errors.New("say what to forget: give --chunk, --document, --source, --namespace, --query or --before")
			}
			if dryRun {
				args["dry_run"] = true
			}
			raw, err := json.Marshal(args)
			if err != nil {
				return err
			}
			return withHostFor(g, memorytool.Forget, func(ctx context.Context, h *host.Host) error {
				res, err := h.Server.Call(ctx, server.Call{
					Tool:      memorytool.Forget,
					Arguments: raw,
					Caller:    sdk.Caller{SourceType: "cli", ClientName: "openhuman-host", ClientVersion: hostVersion()},
				})
				if err != nil {
					return err
				}
				return printResult(cmd.OutOrStdout(), cmd.ErrOrStderr(), res, asJSON)
			})
		},
	}
	f := cmd.Flags()
	f.StringArrayVar(&chunks, "chunk", nil, "a chunk id (repeatable)")
	f.StringArrayVar(&docs, "document", nil, "a document id, e.g. mcp/mcp-store-trip-plan (repeatable)")
	f.StringArrayVar(&sources, "source", nil, "a source id, e.g. file:/home/ana/notes (repeatable)")
	f.StringArrayVar(&namespaces, "namespace", nil, "a namespace, e.g. mcp or file (repeatable)")
	f.StringVar(&query, "query", "", "chunks containing every word of this text")
	f.StringVar(&before, "before", "", "chunks last changed before this time: a duration ago (90d, 12h) or a time (2026-01-31 or 2026-01-31T12:00:00Z)")
	f.BoolVar(&dryRun, "dry-run", false, "print what would be removed and change nothing")
	f.BoolVar(&asJSON, "json", false, "print the whole result as JSON")
	return cmd
}
