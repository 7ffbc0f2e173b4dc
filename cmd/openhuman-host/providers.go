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
	"strconv"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/pelletier/go-toml/v2"
	"github.com/spf13/cobra"

	"github.com/openhuman/openhuman-host/host"
	"github.com/openhuman/openhuman-host/host/config"
	"github.com/openhuman/openhuman-host/host/plugins"
)

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

func newProvidersStatusCmd(g *globalFlags) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "status",
		Short: "Show the state of every provider of the running servers",
		Long: "status shows, for every openhuman-host server running on this data directory, each enabled\n" +
			"provider's state (running, restarting, failed), process id, restarts, tool count and last error.\n" +
			"With no server running it starts the configured providers once and reports whether they load.\n" +
			"It exits 1 when a provider is failed.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runProvidersStatus(cmd, g, asJSON)
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the reports as a JSON array")
	return cmd
}

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
		err := runHost(cfg, log, "", func(_ context.Context, _ *os.File, h *host.Host) error {
			reports = []host.StatusReport{{Pid: os.Getpid(), Started: time.Now(), Updated: time.Now(), Providers: h.Status()}}
			return nil
		})
		if err != nil {
			return err
		}
	}
	out := cmd.OutOrStdout()
	if asJSON {
		enc := json.NewEncoder(out)
		enc.SetIndent("", "  ")
		if err := enc.Encode(reports); err != nil {
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
	}
	return nil
}

func printStatus(out io.Writer, reports []host.StatusReport, live bool) {
	for i, r := range reports {
		if live {
			if i > 0 {
				fmt.Fprintln(out)
			}
			fmt.Fprintf(out, "server pid %d, up %s\n", r.Pid, time.Since(r.Started).Round(time.Second))
		}
		w := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
		fmt.Fprintln(w, "PROVIDER\tSTATE\tPID\tRESTARTS\tTOOLS\tSINCE\tLAST ERROR")
		for _, p := range r.Providers {
			pid := "-"
			if p.Pid > 0 {
				pid = strconv.Itoa(p.Pid)
			}
			since := "-"
			if !p.Since.IsZero() {
				since = p.Since.Local().Format(time.DateTime)
			}
			lastErr := oneLine(p.LastError, 160)
			if lastErr == "" {
				lastErr = "-"
			}
			fmt.Fprintf(w, "%s\t%s\t%s\t%d\t%d\t%s\t%s\n", p.Name, p.State, pid, p.Restarts, p.Tools, since, lastErr)
		}
		_ = w.Flush()
	}
}

// oneLine squeezes s onto one line of at most n bytes.
func oneLine(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > n {
		s = strings.ToValidUTF8(s[:n], "") + "…"
	}
	return s
}

// readStatusReports reads the status files of the servers running on
// dataDir, oldest first, deleting those whose server is gone (it was killed
// before it could remove its file).
func readStatusReports(dataDir string) ([]host.StatusReport, error) {
	entries, err := os.ReadDir(statusDir(dataDir))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read server status: %w", err)
	}
	var out []host.StatusReport
	for _, e := range entries {
		name := e.Name()
		if !strings.HasPrefix(name, "serve-") || !strings.HasSuffix(name, ".json") {
			continue
		}
		path := filepath.Join(statusDir(dataDir), name)
		b, err := os.ReadFile(path)
		if err != nil {
			continue
		}
		var r host.StatusReport
		if json.Unmarshal(b, &r) != nil || r.Pid <= 0 {
			continue
		}
		if !processRunning(r.Pid) {
			_ = os.Remove(path)
			continue
		}
		out = append(out, r)
	}
	return out, nil
}

// processRunning reports whether a process with this id exists.
func processRunning(pid int) bool {
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}

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
			"$XDG_CONFIG_HOME/openhuman-host/config.toml, created if missing). The host refuses to run a\n" +
			"provider whose file no longer matches, so run add --force again after rebuilding it.\n\n" +
			"NAME defaults to the file name without its extension, lowercased, without a leading\n" +
			"\"openhuman-\" and then \"provider-\", other characters than a-z, 0-9, _ and - made \"-\".",
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

var nameChars = regexp.MustCompile(`[^a-z0-9_-]+`)

// providerNameFor derives a provider name from an executable's path.
func providerNameFor(path string) string {
	base := strings.ToLower(filepath.Base(path))
	base = strings.TrimSuffix(base, filepath.Ext(base))
	base = strings.TrimPrefix(base, "openhuman-")
	base = strings.TrimPrefix(base, "provider-")
	return strings.Trim(nameChars.ReplaceAllString(base, "-"), "-")
}

func runProvidersAdd(cmd *cobra.Command, g *globalFlags, path, name string, args []string, force bool) error {
	abs, err := filepath.Abs(path)
	if err != nil {
		return fmt.Errorf("resolve %s: %w", path, err)
	}
	fi, err := os.Stat(abs)
	if err != nil {
		return fmt.Errorf("provider executable: %w", err)
	}
	if !fi.Mode().IsRegular() {
		return fmt.Errorf("%s is not a regular file", abs)
	}
	if fi.Mode().Perm()&0o111 == 0 {
		return fmt.Errorf("%s is not executable; run: chmod +x %s", abs, abs)
	}
	if name == "" {
		name = providerNameFor(abs)
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
	old, err := os.ReadFile(cfgPath)
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
		return fmt.Errorf("%s defines [providers.%s] in a form this command cannot edit (dotted keys or an inline table); set command = %q and sha256 = %q there by hand",
			cfgPath, name, abs, sum)
	}
	mode := os.FileMode(0o600)
	if exists {
		if st, err := os.Stat(cfgPath); err == nil {
			mode = st.Mode().Perm()
		}
	}
	if err := writeFileAtomic(cfgPath, updated, mode); err != nil {
		return fmt.Errorf("write config: %w", err)
	}
	out := cmd.OutOrStdout()
	fmt.Fprintf(out, "Wrote [providers.%s] to %s:\n  command = %q\n  sha256 = %q\n", name, cfgPath, abs, sum)
	if len(p.Args) > 0 {
		fmt.Fprintf(out, "  args = %s\n", tomlStrings(p.Args))
	}
	flag := ""
	if g.configPath != "" {
		flag = " --config " + shellQuote(g.configPath)
	}
	fmt.Fprintf(out, "Check that it loads with: openhuman-host%s providers status\n"+
		"Running servers load it when restarted. After rebuilding the provider, run: openhuman-host%s providers add --force %s\n",
		flag, flag, shellQuote(abs))
	return nil
}

var tableHeader = regexp.MustCompile(`^\s*\[\s*([^\[\]]+?)\s*\]\s*(#.*)?$`)

// setProviderEntry returns doc with [providers.name] holding command, sha256
// and args: a new table appended, or with force, the existing table's
// command and sha256 replaced, and its args too unless args is nil (other
// keys and comments kept).
func setProviderEntry(doc []byte, name, command, sum string, args []string, force bool) ([]byte, error) {
	var parsed map[string]any
	if err := toml.Unmarshal(doc, &parsed); err != nil {
		return nil, fmt.Errorf("not valid TOML, fix it first: %w", err)
	}
	provs, _ := parsed["providers"].(map[string]any)
	_, present := provs[name]
	entry := []string{"command = " + tomlString(command), "sha256 = " + tomlString(sum)}
	if len(args) > 0 {
		entry = append(entry, "args = "+tomlStrings(args))
	}
	if !present {
		var b bytes.Buffer
		b.Write(doc)
		if len(doc) > 0 && !bytes.HasSuffix(doc, []byte("\n")) {
			b.WriteByte('\n')
		}
		if len(doc) > 0 {
			b.WriteByte('\n')
		}
		fmt.Fprintf(&b, "[providers.%s]\n%s\n", name, strings.Join(entry, "\n"))
		return b.Bytes(), nil
	}
	if !force {
		return nil, fmt.Errorf("[providers.%s] already exists; pass --force to replace its command, sha256 and args, or --name to add it under another name", name)
	}
	lines := strings.SplitAfter(string(doc), "\n")
	header := -1
	for i, l := range lines {
		if m := tableHeader.FindStringSubmatch(strings.TrimRight(l, "\r\n")); m != nil && strings.ReplaceAll(m[1], " ", "") == "providers."+name {
			header = i
			break
		}
	}
	if header < 0 {
		return nil, fmt.Errorf("[providers.%s] is not written as a table header; edit it by hand", name)
	}
	end := len(lines)
	for i := header + 1; i < len(lines); i++ {
		if strings.HasPrefix(strings.TrimSpace(lines[i]), "[") {
			end = i
			break
		}
	}
	var kept []string
	for i := header + 1; i < end; i++ {
		key, _, _ := strings.Cut(strings.TrimSpace(lines[i]), "=")
		switch strings.TrimSpace(key) {
		case "command", "sha256":
			continue
		case "args":
			if args == nil {
				break
			}
			// An array may span lines: skip to its closing bracket.
			for ; i < end && !strings.Contains(stripComment(lines[i]), "]"); i++ {
			}
			continue
		}
		kept = append(kept, lines[i])
	}
	var b strings.Builder
	for _, l := range lines[:header+1] {
		b.WriteString(l)
	}
	if !strings.HasSuffix(lines[header], "\n") {
		b.WriteByte('\n')
	}
	b.WriteString(strings.Join(entry, "\n") + "\n")
	for _, l := range kept {
		b.WriteString(l)
	}
	for _, l := range lines[end:] {
		b.WriteString(l)
	}
	return []byte(b.String()), nil
}

// stripComment drops a trailing # comment outside double quotes.
func stripComment(line string) string {
	in := false
	for i, r := range line {
		switch {
		case r == '"' && (i == 0 || line[i-1] != '\\'):
			in = !in
		case r == '#' && !in:
			return line[:i]
		}
	}
	return line
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

// tomlString quotes s as a TOML basic string: a JSON string is one (its
// escapes are a subset of TOML's).
func tomlString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
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
