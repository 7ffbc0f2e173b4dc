package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/openhuman/openhuman-host/host/config"
)

// paths are the files and directories a server started with the same
// flags and environment would use.
type paths struct {
	// ConfigFile is the config file read: --config, or the default path.
	ConfigFile string `json:"config_file"`
	// ConfigFileExists is false when ConfigFile is missing, so the
	// embedded defaults apply.
	ConfigFileExists bool `json:"config_file_exists"`
	// ConfigDir is ConfigFile's directory, which also holds the user's
	// sub-agent definitions (agents/).
	ConfigDir string `json:"config_dir"`
	// DataDir holds the audit log and each provider's data.
	DataDir string `json:"data_dir"`
	// DataDirFrom says what chose DataDir: "--data-dir",
	// "OPENHUMAN_DATA_DIR", "server.data_dir" or "default".
	DataDirFrom string `json:"data_dir_from"`
}

// resolvePaths returns the paths g and the environment select.
func resolvePaths(g *globalFlags) (*paths, error) {
	cfg, err := g.load()
	if err != nil {
		return nil, err
	}
	p := &paths{ConfigFile: g.configPath}
	if p.ConfigFile == "" {
		if p.ConfigFile, err = config.DefaultPath(); err != nil {
			return nil, fmt.Errorf("find the config file: %w; pass --config", err)
		}
	}
	if p.ConfigFile, err = filepath.Abs(p.ConfigFile); err != nil {
		return nil, fmt.Errorf("resolve %s: %w", p.ConfigFile, err)
	}
	_, err = os.Stat(p.ConfigFile)
	p.ConfigFileExists = err == nil
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("config file: %w", err)
	}
	p.ConfigDir = filepath.Dir(p.ConfigFile)
	if p.DataDir, err = cfg.DataDir(); err != nil {
		return nil, fmt.Errorf("resolve data dir: %w", err)
	}
	switch {
	case g.dataDir != "":
		p.DataDirFrom = "--data-dir"
	case os.Getenv(config.EnvDataDir) != "":
		p.DataDirFrom = config.EnvDataDir
	case cfg.Server.DataDir != "":
		p.DataDirFrom = "server.data_dir"
	default:
		p.DataDirFrom = "default"
	}
	return p, nil
}

// newConfigPathsCmd builds config paths.
func newConfigPathsCmd(g *globalFlags) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "paths",
		Short: "Print the config file, config directory and data directory in use",
		Long: "paths prints where a server started with the same flags and environment reads its config\n" +
			"and keeps its data. The defaults follow the operating system:\n\n" +
			"  Linux    $XDG_CONFIG_HOME/openhuman-host (~/.config/openhuman-host) for the config,\n" +
			"           $XDG_DATA_HOME/openhuman-host (~/.local/share/openhuman-host) for data\n" +
			"  macOS    ~/Library/Application Support/openhuman-host for both\n" +
			"  Windows  %APPDATA%\\openhuman-host for the config, %LOCALAPPDATA%\\openhuman-host for data\n\n" +
			"--config FILE, and --data-dir DIR or OPENHUMAN_DATA_DIR (else [server] data_dir), choose others.\n" +
			"An MCP client may launch the server with fewer environment variables than your shell has\n" +
			"(GUI clients often drop XDG_*): to be sure it uses these paths, put --config and --data-dir\n" +
			"with them before serve in the client's args.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			p, err := resolvePaths(g)
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			if asJSON {
				return writeJSON(out, p)
			}
			exists := ""
			if !p.ConfigFileExists {
				exists = " (missing: the embedded defaults apply)"
			}
			w := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
			fmt.Fprintf(w, "config file\t%s%s\n", p.ConfigFile, exists)
			fmt.Fprintf(w, "config dir\t%s\n", p.ConfigDir)
			fmt.Fprintf(w, "data dir\t%s (%s)\n", p.DataDir, p.DataDirFrom)
			if err := w.Flush(); err != nil {
				return err
			}
			if note := xdgNote(g, p); note != "" {
				fmt.Fprintln(cmd.ErrOrStderr(), note)
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the paths as a JSON object")
	return cmd
}

// xdgNote warns, on systems that follow XDG, when a default path comes
// from an XDG variable that a client launching the server may not pass on.
func xdgNote(g *globalFlags, p *paths) string {
	if runtime.GOOS == "darwin" || runtime.GOOS == "windows" {
		return ""
	}
	var set []string
	if g.configPath == "" && os.Getenv("XDG_CONFIG_HOME") != "" {
		set = append(set, "XDG_CONFIG_HOME")
	}
	if p.DataDirFrom == "default" && os.Getenv("XDG_DATA_HOME") != "" {
		set = append(set, "XDG_DATA_HOME")
	}
	if len(set) == 0 {
		return ""
	}
	return fmt.Sprintf("note: these paths follow %s, which MCP clients often do not pass to the servers they launch;\n"+
		"to be sure a client's server uses them, give it these arguments: --config %s --data-dir %s serve",
		strings.Join(set, " and "), shellQuote(p.ConfigFile), shellQuote(p.DataDir))
}
