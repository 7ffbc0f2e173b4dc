package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/spf13/cobra"

	"github.com/openhuman/openhuman-host/host"
	"github.com/openhuman/openhuman-host/host/audit"
	"github.com/openhuman/openhuman-host/host/builtin"
	"github.com/openhuman/openhuman-host/host/config"
	"github.com/openhuman/openhuman-host/host/plugins"
	"github.com/openhuman/openhuman-host/host/server"
)

// statusTimeout bounds each request and check of the status command.
const statusTimeout = 10 * time.Second

// statusOutput is what status --json prints.
type statusOutput struct {
	// Transport is "http" (the endpoints of a running server were read)
	// or "stdio" (local state only).
	Transport string `json:"transport"`
	// URL is the server's base URL (http).
	URL string `json:"url,omitempty"`
	// Live is whether GET /healthz answered 200 (http).
	Live bool `json:"live"`
	// Health is the /healthz answer (http).
	Health *server.Health `json:"health,omitempty"`
	// Ready is the /readyz answer (http).
	Ready *server.Readiness `json:"ready,omitempty"`
	// Checks are the local checks (stdio).
	Checks []server.ReadyCheck `json:"checks,omitempty"`
	// Servers are the status reports of the servers running on the data
	// directory (stdio).
	Servers []host.StatusReport `json:"servers,omitempty"`
	// OK is whether the server is ready (http) or every local check
	// passed (stdio); status exits 1 when it is false.
	OK bool `json:"ok"`
	// Error is why the server could not be asked (http).
	Error string `json:"error,omitempty"`
}

func newStatusCmd(g *globalFlags) *cobra.Command {
	var (
		rawURL, token string
		asJSON        bool
	)
	cmd := &cobra.Command{
		Use:   "status",
		Short: "Report whether the server is live and ready (HTTP), or what a stdio server would find",
		Long: "status asks a running HTTP server for GET /healthz (is it live) and GET /readyz (are its providers\n" +
			"running, does its audit log take rows, is its data directory writable) and prints a summary. The\n" +
			"URL is --url, else http://[server] host:[server] port/ of the config when [server] transport is\n" +
			"http. Without a token /readyz says only which checks failed; --auth-token (default\n" +
			"$OPENHUMAN_MCP_TOKEN) gets the details.\n\n" +
			"A stdio server has no endpoint: it runs inside its MCP client, which starts and stops it. For\n" +
			"one, status reports what it can read here: the config, the data directory, the audit database,\n" +
			"the providers' executables, and the servers running on the data directory.\n\n" +
			"It exits 1 when the server is not ready or cannot be reached, or a local check fails.",
		Args: cobra.NoArgs,
		RunE: configured(g, func(cmd *cobra.Command, _ []string, cfg *config.Config, _ hclog.Logger) error {
			if !cmd.Flags().Changed("auth-token") {
				token = os.Getenv("OPENHUMAN_MCP_TOKEN")
			}
			ctx := cmd.Context()
			if ctx == nil {
				ctx = context.Background()
			}
			var out statusOutput
			if rawURL != "" || cfg.Server.Transport == config.TransportHTTP {
				if rawURL == "" {
					rawURL = serverURL(cfg.Server.Host, cfg.Server.Port)
				}
				out = httpStatus(ctx, rawURL, token)
			} else {
				out = localStatus(ctx, cfg)
			}
			w := cmd.OutOrStdout()
			if asJSON {
				if err := writeJSON(w, out); err != nil {
					return err
				}
			} else {
				printServerStatus(w, out)
			}
			if !out.OK {
				return &exitError{code: 1}
			}
			return nil
		}),
	}
	cmd.Flags().StringVar(&rawURL, "url", "", "the server's base URL (default from [server] host and port when [server] transport is http)")
	cmd.Flags().StringVar(&token, "auth-token", "", "bearer token for the details of /readyz (default $OPENHUMAN_MCP_TOKEN)")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the report as JSON")
	return cmd
}

// serverURL is the base URL of a server listening on host:port; a
// wildcard address is reached on loopback.
func serverURL(host string, port int) string {
	if host == "" || host == "0.0.0.0" || host == "::" || host == "[::]" {
		host = "127.0.0.1"
	}
	return "http://" + net.JoinHostPort(strings.Trim(host, "[]"), strconv.Itoa(port)) + "/"
}

// httpStatus reads /healthz and /readyz of the server at base.
func httpStatus(ctx context.Context, base, token string) statusOutput {
	out := statusOutput{Transport: config.TransportHTTP, URL: base}
	u, err := url.Parse(base)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		out.Error = fmt.Sprintf("--url %q: give the server's base URL, such as http://127.0.0.1:9300/", base)
		return out
	}
	get := func(path string, v any) (int, error) {
		ctx, cancel := context.WithTimeout(ctx, statusTimeout)
		defer cancel()
		ref := *u
		ref.Path = strings.TrimSuffix(u.Path, "/") + path
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, ref.String(), nil)
		if err != nil {
			return 0, err
		}
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return 0, err
		}
		defer resp.Body.Close()
		body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
		if err != nil {
			return resp.StatusCode, err
		}
		if resp.StatusCode != http.StatusOK && resp.StatusCode != http.StatusServiceUnavailable {
			return resp.StatusCode, fmt.Errorf("GET %s answered %s", path, resp.Status)
		}
		if err := json.Unmarshal(body, v); err != nil {
			return resp.StatusCode, fmt.Errorf("GET %s: not an openhuman-host answer: %w", path, err)
		}
		return resp.StatusCode, nil
	}
	var health server.Health
	code, err := get(server.HealthPath, &health)
	if err != nil {
		out.Error = fmt.Sprintf("cannot reach the server: %v", err)
		return out
	}
	out.Live, out.Health = code == http.StatusOK, &health
	var ready server.Readiness
	if _, err := get(server.ReadyPath, &ready); err != nil {
		out.Error = fmt.Sprintf("readiness: %v", err)
		return out
	}
	out.Ready = &ready
	out.OK = out.Live && ready.Status == server.StatusReady
	return out
}

// localStatus checks what a stdio server started with cfg would find.
func localStatus(ctx context.Context, cfg *config.Config) statusOutput {
	out := statusOutput{Transport: config.TransportStdio, OK: true}
	add := func(name, detail string, err error) {
		c := server.ReadyCheck{Name: name, OK: err == nil, Detail: detail}
		if err != nil {
			c.Detail, out.OK = err.Error(), false
		}
		out.Checks = append(out.Checks, c)
	}
	source := cfg.Source
	if source == config.DefaultSource {
		source = "embedded defaults (no config file)"
	}
	add("config", source, nil)
	dataDir, err := cfg.DataDir()
	if err != nil {
		add("data directory", "", err)
		return out
	}
	dirOK := false
	switch fi, err := os.Stat(dataDir); {
	case errors.Is(err, fs.ErrNotExist):
		add("data directory", dataDir+" does not exist yet; the first server or command creates it", nil)
	case err != nil:
		add("data directory", "", err)
	case !fi.IsDir():
		add("data directory", "", fmt.Errorf("%s is not a directory", dataDir))
	default:
		f, err := os.CreateTemp(dataDir, ".status-*")
		if err == nil {
			_ = f.Close()
			_ = os.Remove(f.Name())
			dirOK = true
		}
		add("data directory", dataDir+" is writable", err)
	}
	detail, err := localAudit(ctx, cfg, dataDir, dirOK)
	add("audit", detail, err)
	for _, p := range cfg.EnabledProviders() {
		detail, err := providerRunnable(p)
		add("provider "+p.Name, detail, err)
	}
	if n := len(enabledUpstream(cfg)); n > 0 {
		add("upstream", fmt.Sprintf("%d servers enabled; upstream check NAME connects to one", n), nil)
	}
	reports, err := readStatusReports(dataDir)
	if err != nil {
		add("servers", "", err)
		return out
	}
	out.Servers = reports
	for _, r := range reports {
		for _, p := range r.Providers {
			if p.State == plugins.StateFailed {
				out.OK = false
			}
		}
	}
	return out
}

// localAudit checks the audit database: on SQLite, when its file exists
// (a missing one is created by the first server); on PostgreSQL, always.
func localAudit(ctx context.Context, cfg *config.Config, dataDir string, dirOK bool) (string, error) {
	if cfg.Storage.Driver != config.StoragePostgres {
		path := filepath.Join(dataDir, host.AuditFile)
		if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
			return path + " does not exist yet; the first server or command creates it", nil
		} else if err != nil {
			return "", err
		}
		if !dirOK {
			return "", fmt.Errorf("%s: its directory is not writable", path)
		}
	} else if _, err := cfg.Storage.DSN(nil); err != nil {
		return "", err
	}
	ctx, cancel := context.WithTimeout(ctx, statusTimeout)
	defer cancel()
	log, err := host.OpenAudit(ctx, cfg, dataDir, &audit.Options{RetainDays: cfg.Audit.RetainDays})
	if err != nil {
		return "", err
	}
	defer log.Close(context.Background())
	if err := log.Check(ctx); err != nil {
		return "", err
	}
	return log.Where() + " takes rows", nil
}

// providerRunnable checks that an enabled provider can be launched: a
// built-in one is part of this binary; another's command exists, may be
// run, and has the configured SHA-256.
func providerRunnable(p config.ProviderConfig) (string, error) {
	if config.IsBuiltin(p.Name) {
		if _, ok := builtin.Registered().Lookup(p.Name); !ok {
			return "", fmt.Errorf("built-in provider %s is not part of this build", p.Name)
		}
		return "built in", nil
	}
	fi, err := os.Stat(p.Command)
	if err != nil {
		return "", err
	}
	if err := runnable(p.Command, fi); err != nil {
		return "", err
	}
	if p.SHA256 != "" {
		sum, err := plugins.FileSHA256(p.Command)
		if err != nil {
			return "", err
		}
		if !strings.EqualFold(sum, p.SHA256) {
			return "", fmt.Errorf("%s does not match its sha256 (rebuilt? run providers add --force %s)", p.Command, shellQuote(p.Command))
		}
	}
	return p.Command, nil
}

// enabledUpstream lists the enabled [[upstream.servers]] entries.
func enabledUpstream(cfg *config.Config) []string {
	var out []string
	for _, s := range cfg.Upstream.Checked {
		if s.Enabled {
			out = append(out, s.Name)
		}
	}
	return out
}

// printServerStatus writes out for a terminal.
func printServerStatus(w io.Writer, out statusOutput) {
	checks := func(list []server.ReadyCheck) {
		tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
		for _, c := range list {
			result := "ok"
			if !c.OK {
				result = "FAIL"
			}
			detail := oneLine(c.Detail, 300)
			if detail == "" {
				detail = "-"
			}
			fmt.Fprintf(tw, "  %s\t%s\t%s\n", oneLine(c.Name, 64), result, detail)
		}
		_ = tw.Flush()
	}
	if out.Transport == config.TransportHTTP {
		fmt.Fprintf(w, "openhuman-host at %s\n", oneLine(out.URL, 200))
		if out.Health != nil {
			replica := ""
			if out.Health.Replica != "" {
				replica = "replica " + oneLine(out.Health.Replica, 64) + ", "
			}
			fmt.Fprintf(w, "live: %sserving %d tools\n", replica, out.Health.Tools)
		}
		if out.Ready != nil {
			state := "ready"
			if out.Ready.Status != server.StatusReady {
				state = "NOT READY"
			}
			fmt.Fprintln(w, state+":")
			checks(out.Ready.Checks)
			if slices.ContainsFunc(out.Ready.Checks, func(c server.ReadyCheck) bool { return c.Detail == "" }) {
				fmt.Fprintln(w, "(the server has a token: pass --auth-token or set OPENHUMAN_MCP_TOKEN for details)")
			}
		}
		if out.Error != "" {
			fmt.Fprintln(w, "error: "+oneLine(out.Error, 1000))
		}
		return
	}
	fmt.Fprintln(w, "[server] transport is stdio: a stdio server runs inside its MCP client, which starts and stops it,\n"+
		"and has no endpoint to ask. What such a server would find here:")
	checks(out.Checks)
	if len(out.Servers) == 0 {
		fmt.Fprintln(w, "No server is running on this data directory.")
		return
	}
	fmt.Fprintln(w, "Servers running on this data directory:")
	printStatus(w, out.Servers, true)
}
