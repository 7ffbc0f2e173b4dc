package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/spf13/cobra"

	"github.com/openhuman/openhuman-host/host"
	"github.com/openhuman/openhuman-host/host/config"
	"github.com/openhuman/openhuman-host/host/plugins"
	"github.com/openhuman/openhuman-host/providers/upstream"
)

// statusDir is where serving hosts keep their status files, under the data
// directory: one serve-<pid>.json per running server.
func statusDir(dataDir string) string { return filepath.Join(dataDir, "run") }

// statusFile is the status file of the server with process id pid.
func statusFile(dataDir string, pid int) string {
	return filepath.Join(statusDir(dataDir), "serve-"+strconv.Itoa(pid)+".json")
}

// newProvidersStatusCmd builds providers status.
func newProvidersStatusCmd(g *globalFlags) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "status",
		Short: "Show the state of every provider of the running servers",
		Long: "status shows, for every openhuman-host server running on this data directory (headed by its\n" +
			"replica name, [server] replica, and pid), each enabled\n" +
			"provider's state (running, restarting, failed), process id, restarts, tool count and last error.\n" +
			"With no server running it starts the configured providers once and reports whether they load.\n" +
			"Below each table it lists every upstream server's state (connected, connecting, failed) and error.\n" +
			"It exits 1 when a provider or an upstream server is failed.",
		Args: cobra.NoArgs,
		RunE: configured(g, func(cmd *cobra.Command, _ []string, cfg *config.Config, log hclog.Logger) error {
			return runProvidersStatus(cmd, cfg, log, asJSON)
		}),
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the reports as a JSON array")
	return cmd
}

// runProvidersStatus prints the provider status of the servers running on
// cfg's data directory, or with none running, of the configured providers
// started once; it fails with exit status 1 when a provider is failed.
func runProvidersStatus(cmd *cobra.Command, cfg *config.Config, log hclog.Logger, asJSON bool) error {
	dataDir, err := cfg.DataDir()
	if err != nil {
		return fmt.Errorf("resolve data dir: %w", err)
	}
	reports, err := readStatusReports(dataDir)
	if err != nil {
		return err
	}
	live := len(reports) > 0
	if !live {
		// No server: start the providers once, as a server would.
		err := runHost(cfg, log, runOptions{}, func(_ context.Context, _ *os.File, h *host.Host) error {
			reports = []host.StatusReport{{Pid: os.Getpid(), Started: time.Now(), Updated: time.Now(), Providers: h.Status(),
				Upstream: h.UpstreamServers()}}
			return nil
		})
		if err != nil {
			return err
		}
		// The providers were stopped with the host above: their states are
		// as found while they ran, and their process ids name processes
		// that have exited (and may be reused), so none is shown.
		for i := range reports[0].Providers {
			reports[0].Providers[i].Pid = 0
		}
	}
	out := cmd.OutOrStdout()
	if asJSON {
		if err := writeJSON(out, reports); err != nil {
			return err
		}
	} else {
		if !live {
			fmt.Fprintf(out, "No openhuman-host server is running on %s; the configured providers, started once to check them and stopped again:\n", dataDir)
		}
		printStatus(out, reports, live)
	}
	for _, r := range reports {
		for _, p := range r.Providers {
			if p.State == plugins.StateFailed {
				return &exitError{code: 1}
			}
		}
		for _, u := range r.Upstream {
			if u.State == upstream.StateFailed {
				return &exitError{code: 1}
			}
		}
	}
	return nil
}

// printStatus writes one table of providers per report; with live set,
// each table is headed by its server's pid and uptime; a provider run in
// the server's process shows "host" as its pid. Text that comes
// from providers is made safe for a terminal first, and a failed
// provider's tool count, which no longer means anything, shows as "-".
func printStatus(out io.Writer, reports []host.StatusReport, live bool) {
	for i, r := range reports {
		if live {
			if i > 0 {
				fmt.Fprintln(out)
			}
			replica := ""
			if r.Replica != "" {
				replica = "replica " + oneLine(r.Replica, 64) + ", "
			}
			fmt.Fprintf(out, "server %spid %d, up %s\n", replica, r.Pid, time.Since(r.Started).Round(time.Second))
		}
		w := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
		fmt.Fprintln(w, "PROVIDER\tSTATE\tPID\tRESTARTS\tTOOLS\tSINCE\tLAST ERROR")
		for _, p := range r.Providers {
			pid := "-"
			switch {
			case p.InHost:
				// Called in the server's own process (pid above).
				pid = "host"
			case p.Pid > 0:
				pid = strconv.Itoa(p.Pid)
			}
			tools := "-"
			if p.State != plugins.StateFailed {
				tools = strconv.Itoa(p.Tools)
			}
			since := "-"
			if !p.Since.IsZero() {
				since = p.Since.Local().Format(time.DateTime)
			}
			lastErr := oneLine(p.LastError, 160)
			if lastErr == "" {
				lastErr = "-"
			}
			fmt.Fprintf(w, "%s\t%s\t%s\t%d\t%s\t%s\t%s\n", oneLine(p.Name, 64), oneLine(string(p.State), 32), pid, p.Restarts, tools, since, lastErr)
		}
		_ = w.Flush()
		if live && r.Audit != nil {
			fmt.Fprintln(out, auditLine(r.Audit))
		}
		if len(r.Upstream) > 0 {
			fmt.Fprintln(out, "upstream servers:")
			w := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
			fmt.Fprintln(w, "  SERVER\tSTATE\tNEXT ATTEMPT\tLAST ERROR")
			for _, u := range r.Upstream {
				next, lastErr := "-", oneLine(u.Error, 200)
				if !u.NextAttempt.IsZero() {
					next = u.NextAttempt.Local().Format(time.DateTime)
				}
				if lastErr == "" {
					lastErr = "-"
				}
				fmt.Fprintf(w, "  %s\t%s\t%s\t%s\n", oneLine(u.Name, 64), oneLine(u.State, 32), next, lastErr)
			}
			_ = w.Flush()
		}
	}
}

// auditLine is one line on a server's audit log health.
func auditLine(a *host.AuditStatus) string {
	var b strings.Builder
	if a.FailingSince != nil {
		fmt.Fprintf(&b, "audit log: FAILING since %s (%s); act tools are refused until their rows can be written",
			a.FailingSince.Local().Format(time.DateTime), oneLine(a.LastError, 200))
	} else {
		b.WriteString("audit log: ok")
	}
	if a.Dropped > 0 {
		fmt.Fprintf(&b, "; %d rows of reads or act outcomes dropped since start (see the server's log)", a.Dropped)
	}
	return b.String()
}

// oneLine squeezes s onto one line of at most n bytes, without anything a
// terminal would act on (see terminalSafe).
func oneLine(s string, n int) string {
	s = strings.Join(strings.Fields(terminalSafe(s)), " ")
	if len(s) > n {
		s = strings.ToValidUTF8(s[:n], "") + "…"
	}
	return s
}

// terminalSafe returns s without what a terminal would act on instead of
// printing: escape sequences (ESC and what follows it, and the C1
// introducers CSI, DCS, SOS, OSC, PM and APC with what they introduce) and
// every other C0 or C1 control character and DEL. Line breaks and tabs
// become spaces; invalid UTF-8 becomes U+FFFD.
func terminalSafe(s string) string {
	rs := []rune(s)
	var b strings.Builder
	for i := 0; i < len(rs); {
		r := rs[i]
		i++
		switch {
		case r == 0x1b:
			i = skipEscape(rs, i)
		case r == 0x9b:
			i = skipControlSequence(rs, i)
		case r == 0x90 || r == 0x98 || r == 0x9d || r == 0x9e || r == 0x9f:
			i = skipControlString(rs, i)
		case r == '\t' || r == '\n' || r == '\v' || r == '\f' || r == '\r' || r == 0x85:
			b.WriteByte(' ')
		case r < 0x20 || r >= 0x7f && r <= 0x9f:
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// skipEscape returns the index in rs after the escape sequence whose ESC
// is just before i.
func skipEscape(rs []rune, i int) int {
	if i >= len(rs) {
		return i
	}
	switch rs[i] {
	case '[':
		return skipControlSequence(rs, i+1)
	case 'P', 'X', ']', '^', '_':
		return skipControlString(rs, i+1)
	}
	// Intermediate bytes, then the final byte.
	return skipSequence(rs, i, 0x2f, 0x30)
}

// skipControlSequence returns the index in rs after the parameters,
// intermediate bytes and final byte of a control sequence starting at i
// (just after its CSI).
func skipControlSequence(rs []rune, i int) int {
	return skipSequence(rs, i, 0x3f, 0x40)
}

// skipSequence returns the index in rs after the run of runes from 0x20 to
// last starting at i and the final rune from first to 0x7e that ends it,
// when there is one: the tail of an escape or control sequence.
func skipSequence(rs []rune, i int, last, first rune) int {
	for i < len(rs) && rs[i] >= 0x20 && rs[i] <= last {
		i++
	}
	if i < len(rs) && rs[i] >= first && rs[i] <= 0x7e {
		i++
	}
	return i
}

// skipControlString returns the index in rs after the string terminator
// (BEL, ESC \ or ST) of a control string starting at i; an unterminated
// string runs to the end, as it would in a terminal.
func skipControlString(rs []rune, i int) int {
	for ; i < len(rs); i++ {
		switch {
		case rs[i] == 0x07 || rs[i] == 0x9c:
			return i + 1
		case rs[i] == 0x1b && i+1 < len(rs) && rs[i+1] == '\\':
			return i + 2
		}
	}
	return i
}

// statusName matches the name of a server's status file; the submatch is
// the server's pid.
var statusName = regexp.MustCompile(`^serve-([1-9][0-9]{0,9})\.json$`)

// readStatusReports reads the status files of the servers running on
// dataDir, oldest first. It deletes the serve-*.json files that are not the
// report of a running server: corrupt or foreign files, and those of
// servers killed before they could remove their file (see serverRunning).
func readStatusReports(dataDir string) ([]host.StatusReport, error) {
	dir := statusDir(dataDir)
	entries, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read server status: %w", err)
	}
	var out []host.StatusReport
	for _, e := range entries {
		name := e.Name()
		if !strings.HasPrefix(name, "serve-") || !strings.HasSuffix(name, ".json") || !e.Type().IsRegular() {
			continue
		}
		path := filepath.Join(dir, name)
		b, err := os.ReadFile(path)
		if err != nil {
			// Removed meanwhile by its server, or not ours to read.
			continue
		}
		r, ok := parseStatusFile(name, b)
		if !ok || !serverRunning(r.Pid, r.Started) {
			_ = os.Remove(path)
			continue
		}
		out = append(out, r)
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Started.Before(out[j].Started) })
	return out, nil
}

// parseStatusFile decodes the status file called name; ok is false unless
// it is a report of the server its name gives the pid of.
func parseStatusFile(name string, data []byte) (r host.StatusReport, ok bool) {
	m := statusName.FindStringSubmatch(name)
	if m == nil || json.Unmarshal(data, &r) != nil {
		return r, false
	}
	return r, strconv.Itoa(r.Pid) == m[1] && !r.Started.IsZero()
}

// startSlack is how much later than its report says a server may seem to
// have started: the boot time Linux reports is rounded down to a second,
// and the clock may have been adjusted since the server started.
// serverRunning (proc_unix.go, proc_windows.go) allows for it.
const startSlack = 10 * time.Second

// clockTicks is the unit of process start times in /proc/<pid>/stat:
// USER_HZ, which is 100 on every architecture Linux and Go share.
const clockTicks = 100

// procServerRunning is serverRunning with the Linux process file system
// mounted at root.
func procServerRunning(root string, pid int, started time.Time) bool {
	cmdline, err := os.ReadFile(filepath.Join(root, strconv.Itoa(pid), "cmdline"))
	if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ESRCH) {
		return false
	}
	if err != nil {
		// Not readable, so not checkable: trust the pid alone.
		return processRunning(pid)
	}
	args := strings.Split(strings.TrimSuffix(string(cmdline), "\x00"), "\x00")
	if len(args) < 2 || !slices.Contains(args[1:], "serve") {
		return false
	}
	start, err := procStartTime(root, pid)
	if err != nil {
		return false
	}
	return !start.After(started.Add(startSlack))
}

// procStartTime returns when process pid started, from field 22 of
// /proc/<pid>/stat (clock ticks after boot) and the boot time in /proc/stat.
func procStartTime(root string, pid int) (time.Time, error) {
	stat, err := os.ReadFile(filepath.Join(root, strconv.Itoa(pid), "stat"))
	if err != nil {
		return time.Time{}, err
	}
	// Field 2 is the command name in parentheses, which may itself hold
	// spaces and parentheses: the fields after the last ')' start at 3.
	i := bytes.LastIndexByte(stat, ')')
	if i < 0 {
		return time.Time{}, fmt.Errorf("process %d: malformed stat", pid)
	}
	fields := strings.Fields(string(stat[i+1:]))
	const startField = 22 - 3
	if len(fields) <= startField {
		return time.Time{}, fmt.Errorf("process %d: malformed stat", pid)
	}
	ticks, err := strconv.ParseInt(fields[startField], 10, 64)
	if err != nil {
		return time.Time{}, fmt.Errorf("process %d: malformed start time: %w", pid, err)
	}
	boot, err := bootTime(root)
	if err != nil {
		return time.Time{}, err
	}
	return boot.Add(time.Duration(ticks) * (time.Second / clockTicks)), nil
}

// bootTime returns when the system booted, from the btime line of
// /proc/stat.
func bootTime(root string) (time.Time, error) {
	stat, err := os.ReadFile(filepath.Join(root, "stat"))
	if err != nil {
		return time.Time{}, err
	}
	for line := range strings.SplitSeq(string(stat), "\n") {
		if v, ok := strings.CutPrefix(line, "btime "); ok {
			secs, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
			if err != nil {
				return time.Time{}, fmt.Errorf("malformed boot time %q", v)
			}
			return time.Unix(secs, 0), nil
		}
	}
	return time.Time{}, errors.New("no boot time in " + filepath.Join(root, "stat"))
}
