// Command openhuman-host is an MCP server that hosts tool providers as
// plugins: a memory store, sub-agents and web search for any MCP client.
//
//	openhuman-host serve                     # stdio, for an MCP client's config
//	openhuman-host serve --transport http    # Streamable HTTP on 127.0.0.1:9300
//	openhuman-host tools list
//	openhuman-host tools call NAME '{"query":"reef"}'   # NAME from tools list
package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"runtime/debug"
	"strings"

	"github.com/spf13/cobra"

	"github.com/openhuman/openhuman-host/host/builtin"
	"github.com/openhuman/openhuman-host/host/config"
	"github.com/openhuman/openhuman-host/sdk"
	"github.com/openhuman/openhuman-host/sdk/plugin"
)

// version is set at build time with -ldflags "-X main.version=..."; the
// module version from the build info is used otherwise.
var version = ""

func hostVersion() string {
	if version != "" {
		return version
	}
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return "dev"
	}
	v := info.Main.Version
	if v == "" || v == "(devel)" {
		v = "dev"
	}
	for _, s := range info.Settings {
		// A pseudo-version already ends in the revision.
		if s.Key == "vcs.revision" && len(s.Value) >= 12 && !strings.HasSuffix(v, s.Value[:12]) {
			v += "+" + s.Value[:12]
		}
	}
	return v
}

func main() {
	if err := newRootCmd().Execute(); err != nil {
		if _, quiet := err.(*exitError); !quiet {
			fmt.Fprintln(os.Stderr, "openhuman-host:", err)
		}
		os.Exit(exitCode(err))
	}
}

// exitError carries a process exit status without a message of its own.
type exitError struct{ code int }

func (e *exitError) Error() string { return fmt.Sprintf("exit status %d", e.code) }

func exitCode(err error) int {
	if e, ok := err.(*exitError); ok {
		return e.code
	}
	return 1
}

type globalFlags struct {
	configPath string
	dataDir    string
	verbose    bool
}

func newRootCmd() *cobra.Command {
	g := &globalFlags{}
	root := &cobra.Command{
		Use:   "openhuman-host",
		Short: "An MCP server that hosts tool providers: memory, sub-agents and web search",
		Long: "openhuman-host is an MCP server for Claude Desktop, Cursor, Windsurf or any MCP client.\n" +
			"Its tools come from providers that run as isolated plugin processes.",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.PersistentFlags().StringVar(&g.configPath, "config", "", "config file (default: config.toml in the system's config directory, else embedded defaults; see config paths)")
	root.PersistentFlags().StringVar(&g.dataDir, "data-dir", "", "data directory (default: $"+config.EnvDataDir+", else [server] data_dir, else the system's data directory; see config paths)")
	root.PersistentFlags().BoolVarP(&g.verbose, "verbose", "v", false, "log at debug level (OPENHUMAN_LOG_LEVEL wins)")
	root.AddCommand(newServeCmd(g), newToolsCmd(g), newConfigCmd(g), newMemoryCmd(g), newAuditCmd(g), newMigrateCmd(g), newProvidersCmd(g), newUpstreamCmd(g), newStatusCmd(g), newVersionCmd(), newProviderCmd())
	return root
}

func newVersionCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the version",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			_, err := fmt.Fprintf(cmd.OutOrStdout(), "openhuman-host %s (provider protocol %d)\n", hostVersion(), plugin.ProtocolVersion)
			return err
		},
	}
}

func newProviderCmd() *cobra.Command {
	return &cobra.Command{
		Use:    "provider NAME",
		Short:  "Run a built-in provider (started by the host; not for interactive use)",
		Hidden: true,
		Args:   cobra.ExactArgs(1),
		RunE: func(_ *cobra.Command, args []string) error {
			return runProvider(args[0])
		},
	}
}

// runProvider serves a built-in provider; the host launches it as a
// go-plugin subprocess.
func runProvider(name string) error {
	b, ok := builtin.Registered().Lookup(name)
	if !ok {
		return fmt.Errorf("no built-in provider %q; this build has: %v", name, builtin.Registered().Names())
	}
	if os.Getenv(plugin.Handshake.MagicCookieKey) != plugin.Handshake.MagicCookieValue {
		return fmt.Errorf("\"provider %s\" is started by the host itself; run \"openhuman-host serve\" instead", name)
	}
	log := sdk.Logger("provider." + name)
	stop := startProviderTelemetry(name, log)
	defer stop()
	sdk.Serve(b.New(log), sdk.WithLogger(log))
	return nil
}

// writeJSON writes v to w as JSON indented by two spaces, followed by a
// newline: the output of every --json flag.
func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}
