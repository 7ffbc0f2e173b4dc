package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/pelletier/go-toml/v2"
	"github.com/pelletier/go-toml/v2/unstable"
	"github.com/spf13/cobra"

	"github.com/openhuman/openhuman-host/host"
	"github.com/openhuman/openhuman-host/host/config"
	"github.com/openhuman/openhuman-host/host/plugins"
	"github.com/openhuman/openhuman-host/internal/platform"
	"github.com/openhuman/openhuman-host/internal/treeequal"
	"github.com/openhuman/openhuman-host/providers/upstream"
)

// newProvidersCmd builds the providers command and its subcommands.
func newProvidersCmd(g *globalFlags) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "providers",
		Short: "Show provider status and add third-party providers",
	}
	cmd.AddCommand(newProvidersStatusCmd(g), newProvidersAddCmd(g))
	return cmd
}

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
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runProvidersStatus(cmd, g, asJSON)
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the reports as a JSON array")
	return cmd
}

// runProvidersStatus prints the provider status of the servers running on
// the config's data directory, or with none running, of the configured
// providers started once; it fails with exit status 1 when a provider is
// failed.
func runProvidersStatus(cmd *cobra.Command, g *globalFlags, asJSON bool) error {
	cfg, log, err := loadConfig(g)
	if err != nil {
		return err
	}
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
	}
	out := cmd.OutOrStdout()
	if asJSON {
		if err := writeJSON(out, reports); err != nil {
			return err
		}
	} else {
		if !live {
			fmt.Fprintf(out, "No openhuman-host server is running on %s; the configured providers, started once:\n", dataDir)
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
// each table is headed by its server's pid and uptime. Text that comes
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
			if p.Pid > 0 {
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
	for i < len(rs) && rs[i] >= 0x20 && rs[i] <= 0x2f {
		i++
	}
	if i < len(rs) && rs[i] >= 0x30 && rs[i] <= 0x7e {
		i++
	}
	return i
}

// skipControlSequence returns the index in rs after the parameters,
// intermediate bytes and final byte of a control sequence starting at i
// (just after its CSI).
func skipControlSequence(rs []rune, i int) int {
	for i < len(rs) && rs[i] >= 0x20 && rs[i] <= 0x3f {
		i++
	}
	if i < len(rs) && rs[i] >= 0x40 && rs[i] <= 0x7e {
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

// newProvidersAddCmd builds providers add.
func newProvidersAddCmd(g *globalFlags) *cobra.Command {
	var (
		name  string
		args  []string
		force bool
	)
	cmd := &cobra.Command{
		Use:   "add PATH",
		Short: "Add a third-party provider executable to the config, with its SHA-256",
		Long: "add computes the SHA-256 of the executable at PATH and writes a [providers.NAME] table with\n" +
			"command (the absolute path), sha256 and args to the config file in effect (--config, or\n" +
			"config.toml in the system's config directory, created if missing; see config paths). The\n" +
			"host refuses to run a provider whose file no longer matches, so run add --force again after\n" +
			"rebuilding it.\n" +
			"A config file that is a symbolic link is edited where the link leads.\n\n" +
			"NAME must be a lowercase letter, then up to 31 lowercase letters, digits, _ or -. It defaults\n" +
			"to the file name without its extension, lowercased, without a leading \"openhuman-\" and then\n" +
			"\"provider-\", every run of other characters than a-z, 0-9, _ and - made one \"-\", and \"-\" and\n" +
			"\"_\" trimmed from both ends. A file name with letters or digits outside ASCII gives no default:\n" +
			"pass --name.",
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, pos []string) error {
			if !cmd.Flags().Changed("arg") {
				args = nil
			}
			return runProvidersAdd(cmd, g, pos[0], name, args, force)
		},
	}
	cmd.Flags().StringVar(&name, "name", "", "provider name (default: derived from the file name)")
	cmd.Flags().StringArrayVar(&args, "arg", nil, "an argument for the provider command (repeat for more)")
	cmd.Flags().BoolVar(&force, "force", false, "replace command and sha256 (and args, when --arg is given) of an existing [providers.NAME] table")
	return cmd
}

var (
	// validProviderName is the rule the config applies to provider names.
	validProviderName = regexp.MustCompile(`^[a-z][a-z0-9_-]{0,31}$`)
	// nameChars matches what a derived provider name cannot hold.
	nameChars = regexp.MustCompile(`[^a-z0-9_-]+`)
	// dashRuns matches repeated dashes, made one in a derived name.
	dashRuns = regexp.MustCompile(`-{2,}`)
)

// providerNameFor derives a provider name from an executable's path (the
// rule is in the add command's help). It fails when the result is not a
// valid provider name, and when the file name holds letters or digits
// outside ASCII: dropping them would give a name that no longer says which
// file it is.
func providerNameFor(path string) (string, error) {
	base := filepath.Base(path)
	stem := strings.TrimSuffix(base, filepath.Ext(base))
	fail := fmt.Errorf("cannot derive a provider name from %q; pass --name NAME", base)
	// Checked before lowercasing, which turns some letters outside ASCII
	// (the Kelvin sign) into ASCII ones.
	if strings.IndexFunc(stem, func(r rune) bool { return r > unicode.MaxASCII && (unicode.IsLetter(r) || unicode.IsDigit(r)) }) >= 0 {
		return "", fail
	}
	stem = strings.ToLower(stem)
	stem = strings.TrimPrefix(stem, "openhuman-")
	stem = strings.TrimPrefix(stem, "provider-")
	name := dashRuns.ReplaceAllString(nameChars.ReplaceAllString(stem, "-"), "-")
	name = strings.Trim(name, "-_")
	if !validProviderName.MatchString(name) {
		return "", fail
	}
	return name, nil
}

// runProvidersAdd writes [providers.name] for the executable at path to the
// config file in effect (see the add command's help).
func runProvidersAdd(cmd *cobra.Command, g *globalFlags, path, name string, args []string, force bool) error {
	if name != "" && !validProviderName.MatchString(name) {
		return fmt.Errorf("invalid provider name %q: a name is a lowercase letter, then up to 31 lowercase letters, digits, _ or -", name)
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return fmt.Errorf("resolve %s: %w", path, err)
	}
	if !utf8.ValidString(abs) {
		return fmt.Errorf("the path %q is not valid UTF-8; TOML cannot hold it: move the file", abs)
	}
	for _, a := range args {
		if !utf8.ValidString(a) {
			return fmt.Errorf("the argument %q is not valid UTF-8; TOML cannot hold it", a)
		}
	}
	fi, err := os.Stat(abs)
	if err != nil {
		return fmt.Errorf("provider executable: %w", err)
	}
	if !fi.Mode().IsRegular() {
		return fmt.Errorf("%s is not a regular file", abs)
	}
	if err := runnable(abs, fi); err != nil {
		return err
	}
	if name == "" {
		if name, err = providerNameFor(abs); err != nil {
			return err
		}
	}
	if config.IsBuiltin(name) {
		return fmt.Errorf("%q is the name of a built-in provider; choose another with --name", name)
	}
	sum, err := plugins.FileSHA256(abs)
	if err != nil {
		return fmt.Errorf("hash %s: %w", abs, err)
	}
	cfgPath := g.configPath
	if cfgPath == "" {
		if cfgPath, err = config.DefaultPath(); err != nil {
			return fmt.Errorf("find the config file: %w; pass --config", err)
		}
	}
	target, err := followSymlinks(cfgPath)
	if err != nil {
		return fmt.Errorf("resolve %s: %w", cfgPath, err)
	}
	if err := os.MkdirAll(filepath.Dir(target), 0o700); err != nil {
		return fmt.Errorf("create the config directory: %w", err)
	}
	unlock, err := lockFile(target + ".lock")
	if err != nil {
		return fmt.Errorf("lock the config: %w", err)
	}
	defer unlock()
	old, err := os.ReadFile(target)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("read config: %w", err)
	}
	exists := err == nil
	updated, err := setProviderEntry(old, name, abs, sum, args, force)
	if err != nil {
		return fmt.Errorf("%s: %w", cfgPath, err)
	}
	// The edited file must load, and must say what was asked.
	cfg, err := config.Parse(updated, cfgPath)
	if err != nil {
		return fmt.Errorf("the config would not load after adding [providers.%s], so it was left unchanged:\n%w", name, err)
	}
	p, ok := cfg.Providers[name]
	if !ok || p.Command != abs || p.SHA256 != sum || (args != nil && strings.Join(p.Args, "\x00") != strings.Join(args, "\x00")) {
		return fmt.Errorf("%s defines [providers.%s] in a form this command cannot edit (dotted keys or an inline table); set command = %s and sha256 = %s there by hand",
			cfgPath, name, tomlString(abs), tomlString(sum))
	}
	mode := os.FileMode(0o600)
	if exists {
		if st, err := os.Stat(target); err == nil {
			mode = st.Mode().Perm()
		}
	}
	if err := writeFileAtomic(target, updated, mode); err != nil {
		return fmt.Errorf("write config: %w", err)
	}
	out := cmd.OutOrStdout()
	fmt.Fprintf(out, "Wrote [providers.%s] to %s:\n  command = %s\n  sha256 = %s\n", name, cfgPath, tomlString(abs), tomlString(sum))
	if len(p.Args) > 0 {
		fmt.Fprintf(out, "  args = %s\n", tomlStrings(p.Args))
	}
	flag := ""
	if g.configPath != "" {
		flag = " --config " + shellQuote(g.configPath)
	}
	fmt.Fprintf(out, "Check that it loads with: openhuman-host%s providers status\n"+
		"%s After rebuilding the provider, run: openhuman-host%s providers add --force %s\n",
		flag, platform.ReloadNotice, flag, shellQuote(abs))
	return nil
}

// followSymlinks returns the file that path leads to through symbolic
// links, which need not exist, so that a config file kept as a link (into
// a dotfiles checkout, say) is edited where it is rather than replaced by
// a regular file. A path in a directory that does not exist yet is
// returned as it is.
func followSymlinks(path string) (string, error) {
	// 40 is the kernel's own limit on the links followed in one path.
	for range 40 {
		// Split, unlike Dir, leaves ".." to be resolved after the links
		// before it; on Windows it splits at \ as well as /.
		dir, base := filepath.Split(path)
		if dir == "" {
			dir = "."
		}
		realDir, err := filepath.EvalSymlinks(dir)
		if errors.Is(err, fs.ErrNotExist) {
			return filepath.Clean(path), nil
		}
		if err != nil {
			return "", err
		}
		path = filepath.Join(realDir, base)
		fi, err := os.Lstat(path)
		if errors.Is(err, fs.ErrNotExist) || err == nil && fi.Mode()&fs.ModeSymlink == 0 {
			return path, nil
		}
		if err != nil {
			return "", err
		}
		link, err := os.Readlink(path)
		if err != nil {
			return "", err
		}
		if !filepath.IsAbs(link) {
			// Kept unclean: ".." in link is resolved against the real
			// directories on the next round.
			link = realDir + string(filepath.Separator) + link
		}
		path = link
	}
	return "", fmt.Errorf("too many levels of symbolic links")
}

// utf8BOM is the byte order mark some editors start UTF-8 files with.
var utf8BOM = []byte("\xef\xbb\xbf")

// setProviderEntry returns doc with [providers.name] holding command, sha256
// and args: a new table appended, or with force, the existing table's
// command and sha256 replaced, and its args too unless args is nil (other
// keys and comments kept). A byte order mark at the start of doc is kept,
// and new lines end as doc's lines do. It refuses an edit whose result
// would not decode to the same values as doc everywhere else (see
// checkEdit).
func setProviderEntry(doc []byte, name, command, sum string, args []string, force bool) ([]byte, error) {
	body, hasBOM := bytes.CutPrefix(doc, utf8BOM)
	var before map[string]any
	if err := toml.Unmarshal(body, &before); err != nil {
		return nil, fmt.Errorf("not valid TOML, fix it first: %w", err)
	}
	eol := lineEnding(body)
	entry := "command = " + tomlString(command) + eol + "sha256 = " + tomlString(sum) + eol
	if len(args) > 0 {
		entry += "args = " + tomlStrings(args) + eol
	}
	provs, _ := before["providers"].(map[string]any)
	_, present := provs[name]
	var out []byte
	switch {
	case !present:
		var b bytes.Buffer
		b.Write(body)
		if len(body) > 0 && !bytes.HasSuffix(body, []byte("\n")) {
			b.WriteString(eol)
		}
		if len(body) > 0 {
			b.WriteString(eol)
		}
		b.WriteString("[providers." + name + "]" + eol + entry)
		out = b.Bytes()
	case !force:
		return nil, fmt.Errorf("[providers.%s] already exists; pass --force to replace its command, sha256 and args, or --name to add it under another name", name)
	default:
		var err error
		if out, err = replaceProviderKeys(body, name, entry, args != nil, eol); err != nil {
			return nil, err
		}
	}
	if err := checkEdit(before, out, name, command, sum, args); err != nil {
		return nil, err
	}
	if hasBOM {
		out = append(slices.Clip(utf8BOM), out...)
	}
	return out, nil
}

// lineEnding returns the line ending of doc's first line: "\r\n" or "\n".
func lineEnding(doc []byte) string {
	if i := bytes.IndexByte(doc, '\n'); i > 0 && doc[i-1] == '\r' {
		return "\r\n"
	}
	return "\n"
}

// replaceProviderKeys returns body with entry put right under its
// [providers.name] header, and the table's command and sha256 keys
// removed, with its args key too when replaceArgs is set. The keys are
// found with a TOML parser, so a value spanning lines (a multi-line string
// or array) goes whole, and text inside another value is never taken for a
// key or a header. A removed key takes the rest of its line (a comment)
// with it.
func replaceProviderKeys(body []byte, name, entry string, replaceArgs bool, eol string) ([]byte, error) {
	var p unstable.Parser
	p.Reset(body)
	headerEnd := -1
	inTable := false
	var cuts [][2]int // [start, end) of the lines to remove, in order
	for p.NextExpression() {
		e := p.Expression()
		switch e.Kind {
		case unstable.Table, unstable.ArrayTable:
			parts, end := keyParts(e)
			inTable = e.Kind == unstable.Table && slices.Equal(parts, []string{"providers", name})
			if inTable {
				headerEnd = lineEnd(body, end)
			}
		case unstable.KeyValue:
			if !inTable {
				continue
			}
			parts, _ := keyParts(e)
			if len(parts) != 1 || parts[0] != "command" && parts[0] != "sha256" && (parts[0] != "args" || !replaceArgs) {
				continue
			}
			start := int(e.Raw.Offset)
			cuts = append(cuts, [2]int{lineStart(body, start), lineEnd(body, start+int(e.Raw.Length))})
		}
	}
	if err := p.Error(); err != nil {
		return nil, fmt.Errorf("not valid TOML, fix it first: %w", err)
	}
	if headerEnd < 0 {
		return nil, fmt.Errorf("[providers.%s] has no [providers.%s] header of its own (it is made of dotted keys, an inline table or sub-tables only); edit it by hand", name, name)
	}
	var b bytes.Buffer
	b.Write(body[:headerEnd])
	if !bytes.HasSuffix(body[:headerEnd], []byte("\n")) {
		b.WriteString(eol)
	}
	b.WriteString(entry)
	pos := headerEnd
	for _, c := range cuts {
		b.Write(body[pos:c[0]])
		pos = c[1]
	}
	b.Write(body[pos:])
	return b.Bytes(), nil
}

// keyParts returns the unquoted parts of the key of a table header or a
// key/value expression, and the offset just after the key.
func keyParts(e *unstable.Node) (parts []string, end int) {
	it := e.Key()
	for it.Next() {
		n := it.Node()
		parts = append(parts, string(n.Data))
		end = int(n.Raw.Offset + n.Raw.Length)
	}
	return parts, end
}

// lineStart returns the offset of the start of the line holding offset i.
func lineStart(doc []byte, i int) int {
	return bytes.LastIndexByte(doc[:i], '\n') + 1
}

// lineEnd returns the offset just after the end of the line holding offset
// i, its line break included.
func lineEnd(doc []byte, i int) int {
	if j := bytes.IndexByte(doc[i:], '\n'); j >= 0 {
		return i + j + 1
	}
	return len(doc)
}

// checkEdit verifies an edited document against before, the original
// decoded: it must be valid TOML, [providers.name] must hold command, sum
// and (unless args is nil) args, and every other value must decode as it
// did before, so that an edit never changes or drops a value it was not
// asked to.
func checkEdit(before map[string]any, edited []byte, name, command, sum string, args []string) error {
	var after map[string]any
	if err := toml.Unmarshal(edited, &after); err != nil {
		return fmt.Errorf("the file would not be valid TOML after adding [providers.%s] (%v), so it was left unchanged; edit the file by hand", name, err)
	}
	provs, _ := after["providers"].(map[string]any)
	table, _ := provs[name].(map[string]any)
	var wantArgs any
	if len(args) > 0 {
		list := make([]any, len(args))
		for i, a := range args {
			list[i] = a
		}
		wantArgs = list
	}
	if table == nil || table["command"] != command || table["sha256"] != sum || args != nil && !valuesEqual(table["args"], wantArgs) {
		return fmt.Errorf("[providers.%s] is written in a form this command cannot edit; edit the file by hand", name)
	}
	strip := func(doc map[string]any) {
		provs, ok := doc["providers"].(map[string]any)
		if !ok {
			return
		}
		if t, ok := provs[name].(map[string]any); ok {
			delete(t, "command")
			delete(t, "sha256")
			if args != nil {
				delete(t, "args")
			}
			if len(t) == 0 {
				delete(provs, name)
			}
		}
		if len(provs) == 0 {
			delete(doc, "providers")
		}
	}
	strip(before)
	strip(after)
	if !valuesEqual(before, after) {
		return fmt.Errorf("editing [providers.%s] would change other values in the file, so it was left unchanged; edit the file by hand", name)
	}
	return nil
}

// valuesEqual reports whether two decoded TOML values are equal: tables
// and arrays element by element, NaN equal to NaN, date-times as instants.
func valuesEqual(a, b any) bool { return treeequal.Equal(a, b, tomlLeafEqual) }

// tomlLeafEqual compares two TOML scalars as valuesEqual does.
func tomlLeafEqual(a, b any) bool {
	switch a := a.(type) {
	case float64:
		b, ok := b.(float64)
		return ok && (a == b || math.IsNaN(a) && math.IsNaN(b))
	case time.Time:
		b, ok := b.(time.Time)
		return ok && a.Equal(b)
	default:
		return reflect.DeepEqual(a, b)
	}
}

// shellQuote quotes s for a POSIX shell when it needs quoting.
func shellQuote(s string) string {
	if s != "" && strings.IndexFunc(s, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("/._-+=:,@%", r))
	}) < 0 {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// tomlString quotes s as a TOML basic string with only the escapes it
// needs: backslash, double quote, and control characters (the short forms
// \b \t \n \f \r where TOML has them, \uXXXX for the others, C1 and DEL
// included). s must be valid UTF-8.
func tomlString(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range s {
		switch r {
		case '"':
			b.WriteString(`\"`)
		case '\\':
			b.WriteString(`\\`)
		case '\b':
			b.WriteString(`\b`)
		case '\t':
			b.WriteString(`\t`)
		case '\n':
			b.WriteString(`\n`)
		case '\f':
			b.WriteString(`\f`)
		case '\r':
			b.WriteString(`\r`)
		default:
			if r < 0x20 || r >= 0x7f && r <= 0x9f {
				fmt.Fprintf(&b, `\u%04X`, r)
			} else {
				b.WriteRune(r)
			}
		}
	}
	b.WriteByte('"')
	return b.String()
}

// tomlStrings writes ss as a TOML array of basic strings.
func tomlStrings(ss []string) string {
	q := make([]string, len(ss))
	for i, s := range ss {
		q[i] = tomlString(s)
	}
	return "[" + strings.Join(q, ", ") + "]"
}

// writeFileAtomic replaces path with data through a temporary file in the
// same directory, creating the directory (0700) if needed.
func writeFileAtomic(path string, data []byte, mode os.FileMode) error {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(dir, ".config-*.toml")
	if err != nil {
		return err
	}
	_, werr := tmp.Write(data)
	serr := tmp.Sync()
	cerr := tmp.Close()
	if err := errors.Join(werr, serr, cerr); err != nil {
		_ = os.Remove(tmp.Name())
		return err
	}
	if err := os.Chmod(tmp.Name(), mode); err != nil {
		_ = os.Remove(tmp.Name())
		return err
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		_ = os.Remove(tmp.Name())
		return err
	}
	return nil
}
