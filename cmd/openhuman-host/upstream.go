package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/hashicorp/go-hclog"
	"github.com/spf13/cobra"

	"github.com/openhuman/openhuman-host/host/config"
	"github.com/openhuman/openhuman-host/providers/upstream"
)

// newUpstreamCmd builds the upstream command and its subcommands.
func newUpstreamCmd(g *globalFlags) *cobra.Command {
	cmd := newGroupCmd("upstream", "List and check the upstream MCP servers of [[upstream.servers]]")
	cmd.AddCommand(newUpstreamListCmd(g), newUpstreamCheckCmd(g), newUpstreamLoginCmd(g), newUpstreamLogoutCmd(g))
	return cmd
}

// findUpstream returns the [[upstream.servers]] entry called name, or
// an error listing the configured ones.
func findUpstream(cfg *config.Config, name string) (config.UpstreamServer, error) {
	i := slices.IndexFunc(cfg.Upstream.Checked, func(s config.UpstreamServer) bool { return s.Name == name })
	if i >= 0 {
		return cfg.Upstream.Checked[i], nil
	}
	var names []string
	for _, s := range cfg.Upstream.Checked {
		names = append(names, s.Name)
	}
	if len(names) == 0 {
		return config.UpstreamServer{}, fmt.Errorf("no upstream server %q: none is configured; add an [[upstream.servers]] entry to %s", name, configName(cfg))
	}
	return config.UpstreamServer{}, fmt.Errorf("no upstream server %q; the configured ones are %s", name, strings.Join(names, ", "))
}

// resolvedUpstream is one [[upstream.servers]] entry with its secrets read
// from the environment, as the host passes it to the upstream provider.
type resolvedUpstream struct {
	log         hclog.Logger
	server      config.UpstreamServer
	headers     map[string]string
	endpoint    string
	oauth       *config.OAuthSettings
	providerDir string // <data dir>/upstream
}

// resolveUpstream loads the config and resolves the upstream server name.
func resolveUpstream(g *globalFlags, name string) (*resolvedUpstream, error) {
	cfg, log, err := loadConfig(g)
	if err != nil {
		return nil, err
	}
	u := &resolvedUpstream{log: log}
	if u.server, err = findUpstream(cfg, name); err != nil {
		return nil, err
	}
	if u.headers, u.endpoint, err = u.server.ResolveAuth(os.Getenv); err != nil {
		return nil, err
	}
	if u.oauth, err = u.server.ResolveOAuth(os.Getenv); err != nil {
		return nil, err
	}
	dataDir, err := cfg.DataDir()
	if err != nil {
		return nil, err
	}
	u.providerDir = filepath.Join(dataDir, upstream.Name)
	return u, nil
}

func newUpstreamLoginCmd(g *globalFlags) *cobra.Command {
	var noBrowser bool
	cmd := &cobra.Command{
		Use:   "login NAME",
		Short: "Sign in to an upstream server that uses OAuth, and keep its tokens for the servers",
		Long: "login signs in to the upstream server NAME, whose auth kind is oauth: it opens the authorization\n" +
			"page in a browser ($BROWSER, else the system's) and prints its URL, waits up to 5 minutes for the\n" +
			"authorization server to send the browser back to a loopback address, and stores the tokens in\n" +
			"<data dir>/upstream/oauth (readable by you only). Running servers take the new sign-in up at\n" +
			"their next request. For kind oauth_client_credentials it checks that the client can get a token.",
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			u, err := resolveUpstream(g, args[0])
			if err != nil {
				return err
			}
			s := u.server
			stderr := cmd.ErrOrStderr()
			open := func(ctx context.Context, url string) error {
				fmt.Fprintf(stderr, "Open this page to sign in to %s:\n\n  %s\n\n", s.Name, url)
				if noBrowser {
					return nil
				}
				return upstream.OpenBrowser(ctx, url)
			}
			ctx, stop := signalContext(cmd.Context())
			defer stop()
			res, err := upstream.Login(ctx, s, u.oauth, u.headers, u.endpoint, u.providerDir,
				&upstream.LoginOptions{Open: open, Logger: u.log.Named("upstream")})
			if err != nil {
				return err
			}
			_, err = fmt.Fprintf(cmd.OutOrStdout(), "Signed in to %s: %s listed.\n", s.Name, plural(res.Tools, "tool"))
			return err
		},
	}
	cmd.Flags().BoolVar(&noBrowser, "no-browser", false, "only print the authorization URL (to open it on another device)")
	return cmd
}

func newUpstreamLogoutCmd(g *globalFlags) *cobra.Command {
	return &cobra.Command{
		Use:   "logout NAME",
		Short: "Forget the stored sign-in of an upstream server",
		Long: "logout deletes the tokens login stored for the upstream server NAME. The authorization server is\n" +
			"not told; revoke the grant there to end it everywhere.",
		Args: cobra.ExactArgs(1),
		RunE: configured(g, func(cmd *cobra.Command, args []string, cfg *config.Config, _ hclog.Logger) error {
			if _, err := findUpstream(cfg, args[0]); err != nil {
				return err
			}
			dataDir, err := cfg.DataDir()
			if err != nil {
				return err
			}
			had, err := upstream.Logout(filepath.Join(dataDir, upstream.Name), args[0])
			if err != nil {
				return err
			}
			if !had {
				_, err = fmt.Fprintf(cmd.OutOrStdout(), "%s had no stored sign-in.\n", args[0])
				return err
			}
			_, err = fmt.Fprintf(cmd.OutOrStdout(), "Signed out of %s.\n", args[0])
			return err
		}),
	}
}

// upstreamEntry is one server as upstream list --json prints it; secrets
// (env values, auth values) are left out, endpoints are redacted.
type upstreamEntry struct {
	Name            string   `json:"name"`
	Transport       string   `json:"transport"`
	Enabled         bool     `json:"enabled"`
	Target          string   `json:"target"`
	Prefix          string   `json:"prefix"`
	TimeoutSecs     int      `json:"timeout_secs"`
	AllowedTools    []string `json:"allowed_tools"`
	DisallowedTools []string `json:"disallowed_tools"`
	Auth            string   `json:"auth,omitempty"`
	// State and Error are the server's state in the newest server
	// running on the data directory (connected, connecting, failed);
	// empty when none runs.
	State string `json:"state,omitempty"`
	Error string `json:"error,omitempty"`
}

func newUpstreamListCmd(g *globalFlags) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List the configured upstream servers (from the config; nothing is contacted)",
		Long: "list prints every [[upstream.servers]] entry: its transport, whether it is enabled, its target\n" +
			"(an HTTP endpoint reduced to scheme://host[:port], or a stdio command line), the prefix of its\n" +
			"tools, its call timeout and its allowed_tools and disallowed_tools. When a server runs on the\n" +
			"data directory, STATE is what that server reports for it (connected, connecting, failed, with the\n" +
			"error below the table). Use \"upstream check NAME\" to connect to one.",
		Args: cobra.NoArgs,
		RunE: configured(g, func(cmd *cobra.Command, _ []string, cfg *config.Config, _ hclog.Logger) error {
			live := map[string]upstream.ServerStatus{}
			if dataDir, err := cfg.DataDir(); err == nil {
				if reports, err := readStatusReports(dataDir); err == nil && len(reports) > 0 {
					for _, u := range reports[len(reports)-1].Upstream {
						live[u.Name] = u
					}
				}
			}
			entries := make([]upstreamEntry, 0, len(cfg.Upstream.Checked))
			for _, s := range cfg.Upstream.Checked {
				e := newUpstreamEntry(s)
				if u, ok := live[s.Name]; ok && s.Enabled {
					e.State, e.Error = u.State, u.Error
				}
				entries = append(entries, e)
			}
			out := cmd.OutOrStdout()
			if asJSON {
				return writeJSON(out, entries)
			}
			if len(entries) == 0 {
				_, err := fmt.Fprintf(out, "No upstream servers are configured; add [[upstream.servers]] entries to %s.\n", configName(cfg))
				return err
			}
			w := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
			fmt.Fprintln(w, "NAME\tTRANSPORT\tSTATE\tTARGET\tPREFIX\tTIMEOUT\tALLOWED\tDENIED")
			var failures []string
			for _, e := range entries {
				state := "enabled"
				if !e.Enabled {
					state = "disabled"
				}
				if e.State != "" {
					state = e.State
				}
				if e.Error != "" {
					failures = append(failures, fmt.Sprintf("%s: %s", e.Name, oneLine(e.Error, 300)))
				}
				prefix := e.Prefix
				if prefix == "" {
					prefix = `""`
				}
				fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t%ds\t%s\t%s\n", e.Name, e.Transport, state, oneLine(e.Target, 120),
					prefix, e.TimeoutSecs, toolList(e.AllowedTools, "all"), toolList(e.DisallowedTools, "-"))
			}
			if err := w.Flush(); err != nil {
				return err
			}
			for _, f := range failures {
				fmt.Fprintln(out, f)
			}
			return nil
		}),
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the servers as a JSON array")
	return cmd
}

// newUpstreamEntry describes s without its secrets.
func newUpstreamEntry(s config.UpstreamServer) upstreamEntry {
	e := upstreamEntry{
		Name: s.Name, Transport: "http", Enabled: s.Enabled, Target: upstream.RedactEndpoint(s.Endpoint),
		Prefix: s.ToolPrefix(), TimeoutSecs: s.TimeoutSecs, AllowedTools: s.AllowedTools, DisallowedTools: s.DisallowedTools,
	}
	if s.Command != "" {
		e.Transport = "stdio"
		e.Target = commandLine(s.Command, s.Args)
	}
	if s.Auth != nil {
		e.Auth = s.Auth.Kind
	}
	return e
}

// commandLine joins a command and its arguments, quoting those a shell
// would split or expand.
func commandLine(command string, args []string) string {
	parts := make([]string, 0, 1+len(args))
	for _, a := range append([]string{command}, args...) {
		if a == "" || strings.ContainsAny(a, " \t\n\"'\\$`*?[]{}()<>|&;#~") {
			a = strconv.Quote(a)
		}
		parts = append(parts, a)
	}
	return strings.Join(parts, " ")
}

// toolList shows an allowed_tools or disallowed_tools list; unset shows
// as unset, an empty list as "none".
func toolList(list []string, unset string) string {
	switch {
	case list == nil:
		return unset
	case len(list) == 0:
		return "none"
	}
	return oneLine(strings.Join(list, ","), 80)
}

func newUpstreamCheckCmd(g *globalFlags) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "check NAME",
		Short: "Connect to one upstream server, list its tools and report what authentication it wants",
		Long: "check connects to the upstream server NAME the way the host does (its auth resolved from the\n" +
			"environment), lists its tools and shows the names the host exposes them under and those that\n" +
			"allowed_tools and disallowed_tools filter out. When the server answers 401 it reports what the\n" +
			"server says about authentication (WWW-Authenticate, protected-resource metadata, authorization\n" +
			"server metadata) and what to configure. It exits 1 when the check fails.",
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runUpstreamCheck(cmd, g, args[0], asJSON)
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the report as JSON")
	return cmd
}

// checkOutput is the report as upstream check --json prints it.
type checkOutput struct {
	upstream.Report
	Enabled bool   `json:"enabled"`
	OK      bool   `json:"ok"`
	Error   string `json:"error,omitempty"`
}

func runUpstreamCheck(cmd *cobra.Command, g *globalFlags, name string, asJSON bool) error {
	u, err := resolveUpstream(g, name)
	if err != nil {
		return err
	}
	s := u.server
	r := upstream.CheckWith(cmd.Context(), s, u.headers, u.endpoint, u.log, &upstream.CheckOptions{OAuth: u.oauth, DataDir: u.providerDir})
	out := cmd.OutOrStdout()
	if asJSON {
		o := checkOutput{Report: r, Enabled: s.Enabled, OK: r.Err == nil}
		if r.Err != nil {
			o.Error = r.Err.Error()
		}
		if err := writeJSON(out, o); err != nil {
			return err
		}
	} else {
		printCheck(out, r, s.Enabled)
	}
	if r.Err != nil {
		return &exitError{code: 1}
	}
	return nil
}

// printCheck writes a check report for a terminal; text that comes from
// the server is made safe for it first.
func printCheck(out io.Writer, r upstream.Report, enabled bool) {
	state := ""
	if !enabled {
		state = " (disabled in the config)"
	}
	fmt.Fprintf(out, "upstream server %q%s: %s %s\n", r.Name, state, r.Transport, oneLine(r.Endpoint, 200))
	if r.Err != nil {
		fmt.Fprintf(out, "check failed: %s\n", oneLine(r.Err.Error(), 1000))
		if a := r.Auth; a != nil {
			printAuth(out, a)
		}
		return
	}
	fmt.Fprintf(out, "%d tools, %d exposed, %d filtered out\n", len(r.Tools), len(r.Exposed), len(r.Denied))
	if len(r.Exposed) > 0 {
		fmt.Fprintln(out, "\nexposed:")
		w := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
		for _, t := range r.Tools {
			if _, denied := r.Reasons[t]; !denied {
				fmt.Fprintf(w, "  %s\t← %s\n", oneLine(r.Prefix+t, 200), oneLine(t, 200))
			}
		}
		_ = w.Flush()
	}
	if len(r.Denied) > 0 {
		fmt.Fprintln(out, "\nfiltered out:")
		w := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
		for _, t := range r.Denied {
			fmt.Fprintf(w, "  %s\t%s\n", oneLine(t, 200), oneLine(r.Reasons[t], 300))
		}
		_ = w.Flush()
	}
}

// printAuth writes the auth discovery result.
func printAuth(out io.Writer, a *upstream.AuthReport) {
	scheme := a.Scheme
	if scheme == "" {
		scheme = "no WWW-Authenticate challenge"
	}
	fmt.Fprintf(out, "\nthe server answered 401 Unauthorized (%s)\n", oneLine(scheme, 64))
	w := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	row := func(label, value string) {
		if value != "" {
			fmt.Fprintf(w, "  %s\t%s\n", label, oneLine(value, 300))
		}
	}
	row("resource metadata:", a.ResourceMetadataURL)
	row("authorization servers:", strings.Join(a.AuthorizationServers, ", "))
	row("scopes:", strings.Join(a.Scopes, " "))
	row("authorization endpoint:", a.AuthorizationEndpoint)
	row("token endpoint:", a.TokenEndpoint)
	for _, p := range a.Problems {
		row("problem:", p)
	}
	_ = w.Flush()
	fmt.Fprintf(out, "\nhint: %s\n", oneLine(a.Hint, 1000))
}

// configName names the config file for messages.
func configName(cfg *config.Config) string {
	if cfg.Source == config.DefaultSource {
		return "the config file"
	}
	return cfg.Source
}
