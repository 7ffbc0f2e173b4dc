package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/spf13/cobra"

	"github.com/openhuman/openhuman-host/cmd/openhuman-host/internal/tomledit"
	"github.com/openhuman/openhuman-host/host/config"
	"github.com/openhuman/openhuman-host/host/plugins"
	"github.com/openhuman/openhuman-host/internal/platform"
)

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
	updated, err := tomledit.SetProviderEntry(old, name, abs, sum, args, force)
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
			cfgPath, name, tomledit.String(abs), tomledit.String(sum))
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
	fmt.Fprintf(out, "Wrote [providers.%s] to %s:\n  command = %s\n  sha256 = %s\n", name, cfgPath, tomledit.String(abs), tomledit.String(sum))
	if len(p.Args) > 0 {
		fmt.Fprintf(out, "  args = %s\n", tomledit.Strings(p.Args))
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

// shellQuote quotes s for a POSIX shell when it needs quoting.
func shellQuote(s string) string {
	if s != "" && strings.IndexFunc(s, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("/._-+=:,@%", r))
	}) < 0 {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
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
