package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/openhuman/openhuman-host/host"
	"github.com/openhuman/openhuman-host/host/audit"
	"github.com/openhuman/openhuman-host/providers/memory/memorytool"
)

// maxAuditLimit bounds "audit list --limit".
const maxAuditLimit = 10_000

func newAuditCmd(g *globalFlags) *cobra.Command {
	cmd := newGroupCmd("audit", "Read the audit log: every tool call, who made it, and what the policy decided")
	var (
		since, tool, client string
		failed, asJSON      bool
		limit               int
		followOn            bool
		every               time.Duration
	)
	list := &cobra.Command{
		Use:   "list",
		Short: "List audit records, newest first",
		Long: "list prints one line per tool call, newest first: time (UTC), source, tool, decision,\n" +
			"outcome, duration and error. Arguments are stored summarised (bodies as lengths), never raw;\n" +
			"--json prints whole records, one JSON object per line.\n\n" +
			"--follow prints the newest --limit records oldest first, then every record committed after them\n" +
			"as it arrives (the database is polled every --interval), until Ctrl-C. The row of an act is\n" +
			"written before the act runs: it is printed as pending, and again once its outcome is written.\n" +
			"Filters apply to what follows as to what is listed (with --failed, an act is printed once it has\n" +
			"failed). It works on SQLite and PostgreSQL alike, and sees the rows of every server on the database.",
		Example: "  openhuman-host audit list --since 24h --failed\n" +
			"  openhuman-host audit list --tool " + memorytool.Store + " --client mcp:claude-desktop --json\n" +
			"  openhuman-host audit list --follow --limit 10",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if limit < 1 || limit > maxAuditLimit {
				return fmt.Errorf("--limit must be from 1 to %d, got %d", maxAuditLimit, limit)
			}
			from, err := parseTimeAgo("--since", since, time.Now())
			if err != nil {
				return err
			}
			if followOn && (every < audit.MinFollowEvery || every > audit.MaxFollowEvery) {
				return fmt.Errorf("--interval must be from %s to %s, got %s", audit.MinFollowEvery, audit.MaxFollowEvery, every)
			}
			q := audit.Query{Since: from, Tool: tool, Client: client, FailedOnly: failed, Limit: limit}
			return withAudit(g, func(ctx context.Context, log *audit.Log) error {
				if followOn {
					return followAudit(cmd.Context(), cmd.OutOrStdout(), log, q, every, asJSON)
				}
				rows, err := log.List(ctx, q)
				if err != nil {
					return err
				}
				if asJSON {
					return writeRecordsJSON(cmd.OutOrStdout(), rows)
				}
				return writeRecords(cmd.OutOrStdout(), rows)
			})
		},
	}
	list.Flags().StringVar(&since, "since", "", "only records at or after: a duration ago (90m, 24h, 7d) or a time (2026-11-30, 2026-11-30T08:00:00Z)")
	list.Flags().StringVar(&tool, "tool", "", "only this tool, such as "+memorytool.Store+" (old dotted names match too)")
	list.Flags().StringVar(&client, "client", "", "only this source type or client name, such as mcp:claude-desktop or cli")
	list.Flags().BoolVar(&failed, "failed", false, "only calls that failed or were denied")
	list.Flags().IntVar(&limit, "limit", 50, fmt.Sprintf("at most this many records, 1 to %d", maxAuditLimit))
	list.Flags().BoolVar(&asJSON, "json", false, "print whole records as JSON, one per line")
	list.Flags().BoolVarP(&followOn, "follow", "f", false, "keep printing records as they are committed, until Ctrl-C")
	list.Flags().DurationVar(&every, "interval", audit.DefaultFollowEvery, fmt.Sprintf("with --follow, how often to poll the database (%s to %s)", audit.MinFollowEvery, audit.MaxFollowEvery))

	var statsSince string
	stats := &cobra.Command{
		Use:   "stats",
		Short: "Per tool: calls, failures, denials and durations",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			from, err := parseTimeAgo("--since", statsSince, time.Now())
			if err != nil {
				return err
			}
			return withAudit(g, func(ctx context.Context, log *audit.Log) error {
				rows, err := log.Stats(ctx, from)
				if err != nil {
					return err
				}
				w := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 4, 2, ' ', 0)
				fmt.Fprintln(w, "TOOL\tCALLS\tFAILED\tPENDING\tDENIED\tP50\tMAX")
				for _, s := range rows {
					fmt.Fprintf(w, "%s\t%d\t%d\t%d\t%d\t%s\t%s\n", s.Tool, s.Calls, s.Failures, s.Pending, s.Denied,
						time.Duration(s.P50Us)*time.Microsecond, time.Duration(s.MaxUs)*time.Microsecond)
				}
				return w.Flush()
			})
		},
	}
	stats.Flags().StringVar(&statsSince, "since", "", "only records at or after: a duration ago (24h, 7d) or a time")
	cmd.AddCommand(list, stats)
	return cmd
}

// withAudit opens the audit log of the effective config's data directory,
// runs fn and closes it.
func withAudit(g *globalFlags, fn func(context.Context, *audit.Log) error) error {
	cfg, _, err := loadConfig(g)
	if err != nil {
		return err
	}
	dataDir, err := cfg.DataDir()
	if err != nil {
		return err
	}
	ctx := context.Background()
	log, err := host.OpenAudit(ctx, cfg, dataDir, &audit.Options{RetainDays: cfg.Audit.RetainDays})
	if err != nil {
		return err
	}
	defer log.Close(ctx)
	return fn(ctx, log)
}

// followAudit prints the newest records q selects, oldest first, then
// every record committed after them as it is committed, until ctx ends
// or SIGINT/SIGTERM arrives (which is not an error). Text output repeats
// the header line only once; --json prints one object per line.
func followAudit(ctx context.Context, out io.Writer, log *audit.Log, q audit.Query, every time.Duration, asJSON bool) error {
	ctx, stop := signalContext(ctx)
	defer stop()
	// Taken before listing: a row committed in between is followed, not
	// lost.
	last, err := log.LastID(ctx)
	if err != nil {
		return err
	}
	rows, err := log.List(ctx, q)
	if err != nil {
		return err
	}
	var shown []audit.Record
	var pending []uint64
	for _, r := range slices.Backward(rows) {
		if r.ID > last {
			continue
		}
		shown = append(shown, r)
		if r.Pending {
			pending = append(pending, r.ID)
		}
	}
	var w *recordWriter
	if !asJSON {
		w = newRecordWriter(out)
	}
	emit := func(rs ...audit.Record) error {
		if asJSON {
			return writeRecordsJSON(out, rs)
		}
		return w.write(rs...)
	}
	if err := emit(shown...); err != nil {
		return err
	}
	err = log.Follow(ctx, q, audit.FollowOptions{After: last, Pending: pending, Every: every}, func(r audit.Record) error { return emit(r) })
	if errors.Is(err, context.Canceled) && ctx.Err() != nil {
		return nil
	}
	return err
}

// recordWriter prints records as writeRecords does, one line at a time
// with fixed column widths, for a stream whose rows are not known in
// advance.
type recordWriter struct {
	out    io.Writer
	header bool
}

func newRecordWriter(out io.Writer) *recordWriter { return &recordWriter{out: out} }

// recordColumns are the widths of the first columns of a followed record.
const recordColumns = "%-19s  %-20s  %-24s  %-24s  %-7s  %-10s  %s\n"

func (w *recordWriter) write(rows ...audit.Record) error {
	if !w.header {
		w.header = true
		if _, err := fmt.Fprintf(w.out, recordColumns, "TIME (UTC)", "SOURCE", "TOOL", "DECISION", "OUTCOME", "DURATION", "ERROR"); err != nil {
			return err
		}
	}
	for _, r := range rows {
		f := recordFields(r)
		if _, err := fmt.Fprintf(w.out, recordColumns, f[0], f[1], f[2], f[3], f[4], f[5], f[6]); err != nil {
			return err
		}
	}
	return nil
}

// parseTimeAgo reads a time flag such as --since: "" (no bound), a
// duration before now such as 90m, 24h or 7d (days are 24 h), an RFC 3339
// time, or a date (midnight UTC). Negative durations and times in the
// future are refused; flag names the flag in errors.
func parseTimeAgo(flag, s string, now time.Time) (time.Time, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return time.Time{}, nil
	}
	if days, ok := strings.CutSuffix(s, "d"); ok {
		if n, err := strconv.Atoi(days); err == nil && n >= 0 {
			return now.Add(-time.Duration(n) * 24 * time.Hour), nil
		}
	}
	if d, err := time.ParseDuration(s); err == nil {
		if d < 0 {
			return time.Time{}, fmt.Errorf("%s %q: give how long ago as a positive duration, such as 24h", flag, s)
		}
		return now.Add(-d), nil
	}
	for _, layout := range []string{time.RFC3339, "2006-01-02T15:04", "2006-01-02"} {
		if t, err := time.Parse(layout, s); err == nil {
			if t.After(now) {
				return time.Time{}, fmt.Errorf("%s %q is in the future", flag, s)
			}
			return t, nil
		}
	}
	return time.Time{}, fmt.Errorf("%s %q: give a duration ago (90m, 24h, 7d) or a time (2026-11-30 or 2026-11-30T08:00:00Z)", flag, s)
}

// writeRecords prints records as aligned columns.
func writeRecords(out io.Writer, rows []audit.Record) error {
	w := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "TIME (UTC)\tSOURCE\tTOOL\tDECISION\tOUTCOME\tDURATION\tERROR")
	for _, r := range rows {
		f := recordFields(r)
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", f[0], f[1], f[2], f[3], f[4], f[5], f[6])
	}
	return w.Flush()
}

// recordFields are the columns writeRecords prints for r: time (UTC),
// source, tool, decision, outcome, duration and error.
func recordFields(r audit.Record) [7]string {
	outcome := "ok"
	switch {
	case r.Pending:
		// Written before the act ran; no outcome came back.
		outcome = "pending"
	case !r.Success:
		outcome = "failed"
	}
	errText := strings.Join(strings.Fields(r.Error), " ")
	if len(errText) > 120 {
		errText = strings.ToValidUTF8(errText[:120], "") + "…"
	}
	return [7]string{time.UnixMilli(r.TimeMs).UTC().Format("2006-01-02 15:04:05"), r.SourceType, r.Tool, r.Decision, outcome,
		(time.Duration(r.DurationUs) * time.Microsecond).String(), errText}
}

// writeRecordsJSON prints records as JSON lines.
func writeRecordsJSON(out io.Writer, rows []audit.Record) error {
	enc := json.NewEncoder(out)
	for _, r := range rows {
		if err := enc.Encode(recordJSON(r)); err != nil {
			return err
		}
	}
	return nil
}

// recordJSON is an audit record with snake_case keys and its summary as
// JSON, not a string.
func recordJSON(r audit.Record) map[string]any {
	return map[string]any{
		"id":             r.ID,
		"time":           time.UnixMilli(r.TimeMs).UTC().Format(time.RFC3339Nano),
		"time_ms":        r.TimeMs,
		"session_hash":   r.SessionHash,
		"source_type":    r.SourceType,
		"client_name":    r.ClientName,
		"client_version": r.ClientVersion,
		"tool":           r.Tool,
		"provider":       r.Provider,
		"class":          r.Class,
		"decision":       r.Decision,
		"success":        r.Success,
		"error":          r.Error,
		"duration_us":    r.DurationUs,
		"args_summary":   json.RawMessage(orEmptyObject(r.ArgsSummary)),
		"result_ref":     r.ResultRef,
		"pending":        r.Pending,
		"profile":        r.Profile,
	}
}

// orEmptyObject returns s, or "{}" when s is not JSON.
func orEmptyObject(s string) string {
	if json.Valid([]byte(s)) {
		return s
	}
	return "{}"
}
