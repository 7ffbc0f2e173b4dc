package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/hashicorp/go-hclog"
	"github.com/spf13/cobra"

	"github.com/openhuman/openhuman-host/host"
	"github.com/openhuman/openhuman-host/host/config"
	"github.com/openhuman/openhuman-host/host/server"
	"github.com/openhuman/openhuman-host/providers/memory/memorytool"
	"github.com/openhuman/openhuman-host/sdk"
	"github.com/openhuman/openhuman-host/sdk/storage"
)

func newToolsCmd(g *globalFlags) *cobra.Command {
	tools := newGroupCmd("tools", "List and call tools from the command line, through the same policy and audit as MCP clients")
	var listJSON bool
	list := &cobra.Command{
		Use:   "list",
		Short: "List tools, one per line: name, class, provider, description",
		Long: "list prints one line per tool: name, policy class, provider and description, tab-separated;\n" +
			"the name is the one MCP clients see. --json prints every tool as MCP's tools/list describes\n" +
			"it (input and output schemas, annotations) plus its class, provider and, when clients see\n" +
			"another name, the name its provider declared. It exits with status 1 when an enabled provider did\n" +
			"not load (the reason is on stderr).",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return withHost(g, func(_ context.Context, h *host.Host) error {
				out := cmd.OutOrStdout()
				if listJSON {
					if err := writeToolsJSON(out, h); err != nil {
						return err
					}
				}
				for _, t := range h.Server.Catalog().Tools() {
					if listJSON {
						break
					}
					desc, _, _ := strings.Cut(t.Description, "\n")
					if _, err := fmt.Fprintf(out, "%s\t%s\t%s\t%s\n", t.Name, t.Class, t.Provider, desc); err != nil {
						return err
					}
				}
				for _, f := range h.Failed {
					fmt.Fprintf(cmd.ErrOrStderr(), "provider %s did not load: %v\n", f.Name, f.Err)
				}
				if len(h.Failed) > 0 {
					return &exitError{code: 1}
				}
				return nil
			})
		},
	}
	list.Flags().BoolVar(&listJSON, "json", false, "print the tools as JSON, with their schemas and annotations")
	tools.AddCommand(list)
	var asJSON bool
	call := &cobra.Command{
		Use:   "call NAME [JSON]",
		Short: "Call a tool with JSON arguments (default {}); exit status 1 on an error result",
		Long: "call runs one tool through the host's full pipeline (validation, security policy, audit) with\n" +
			"source type \"cli\" and prints its text result on stdout; --json prints the whole result.\n" +
			"NAME is a name from \"tools list\"; the old dotted names (" + strings.Replace(memorytool.Store, "_", ".", 1) + ") work too.\n" +
			"An error result is printed on stderr and the exit status is 1. Use - as JSON to read stdin.",
		Example: `  openhuman-host tools call ` + memorytool.Store + ` '{"title":"Reef","content":"The reef is north."}'` + "\n" +
			`  openhuman-host tools call ` + memorytool.Search + ` '{"query":"reef","k":3}'`,
		Args: cobra.RangeArgs(1, 2),
		RunE: func(cmd *cobra.Command, args []string) error {
			raw := "{}"
			if len(args) == 2 {
				raw = args[1]
			}
			if raw == "-" {
				b, err := io.ReadAll(os.Stdin)
				if err != nil {
					return fmt.Errorf("read arguments from stdin: %w", err)
				}
				raw = string(b)
			}
			if !json.Valid([]byte(raw)) {
				return fmt.Errorf("arguments are not valid JSON: %s", raw)
			}
			return withHostFor(g, args[0], func(ctx context.Context, h *host.Host) error {
				res, err := h.Server.Call(ctx, server.Call{
					Tool:      args[0],
					Arguments: json.RawMessage(raw),
					Caller:    sdk.Caller{SourceType: "cli", ClientName: "openhuman-host", ClientVersion: hostVersion()},
				})
				if errors.Is(err, server.ErrUnknownTool) && len(h.Failed) == 0 {
					return fmt.Errorf("%w; run \"openhuman-host tools list\" to see the tools", err)
				}
				if err != nil {
					return err
				}
				return printResult(cmd.OutOrStdout(), cmd.ErrOrStderr(), res, asJSON)
			})
		},
	}
	call.Flags().BoolVar(&asJSON, "json", false, "print the whole result (content, structuredContent, isError) as JSON")
	tools.AddCommand(call)
	return tools
}

func printResult(stdout, stderr io.Writer, res *sdk.CallToolResult, asJSON bool) error {
	if asJSON {
		out := server.MCPResult(res)
		if err := writeJSON(stdout, out); err != nil {
			return err
		}
	} else {
		w := stdout
		if res.IsError {
			w = stderr
		}
		for _, c := range res.Content {
			if c.Type == "text" {
				if _, err := fmt.Fprintln(w, c.Text); err != nil {
					return err
				}
			}
		}
	}
	if res.IsError {
		return &exitError{code: 1}
	}
	return nil
}

func newConfigCmd(g *globalFlags) *cobra.Command {
	cfgCmd := newGroupCmd("config", "Inspect the configuration")
	cfgCmd.AddCommand(&cobra.Command{
		Use:   "check",
		Short: "Validate the config, load every enabled provider, print the effective config with secrets masked",
		Long: "check validates the config file, then starts every enabled provider and has it check its own\n" +
			"settings, as serve would (each upstream server is connected once, and its state printed). It\n" +
			"prints the effective config with secrets masked and exits non-zero when the config is invalid or a\n" +
			"provider does not load; an upstream server that cannot be reached is shown, not an error.",
		Args: cobra.NoArgs,
		RunE: configured(g, func(cmd *cobra.Command, _ []string, cfg *config.Config, _ hclog.Logger) error {
			text, err := cfg.Masked()
			if err != nil {
				return err
			}
			if _, err := fmt.Fprint(cmd.OutOrStdout(), text); err != nil {
				return err
			}
			if dir, err := cfg.DataDir(); err == nil {
				// data_dir may be empty in the file; say where data really goes.
				if _, err := fmt.Fprintf(cmd.OutOrStdout(), "\n# data directory in effect: %s\n", dir); err != nil {
					return err
				}
			}
			if cfg.Storage.Driver == config.StoragePostgres {
				// The server and database only: the string holds the password.
				where := "unset: set " + cfg.Storage.DSNEnv
				if dsn, err := cfg.Storage.DSN(nil); err == nil {
					where = storage.Describe(dsn) + " (from " + cfg.Storage.DSNEnv + ")"
				}
				if _, err := fmt.Fprintf(cmd.OutOrStdout(), "# shared PostgreSQL database: %s\n", where); err != nil {
					return err
				}
			}
			return withHost(g, func(_ context.Context, h *host.Host) error {
				// One line per provider, in the file's comment syntax.
				for _, p := range h.Providers {
					c := p.Catalog()
					where := "a plugin process of its own"
					if p.Status().InHost {
						where = "the host's process"
					}
					fmt.Fprintf(cmd.OutOrStdout(), "# provider %s loads: %d tools, %d resources (version %s), in %s\n", p.Name, len(c.Tools), len(c.Resources), nonEmptyVersion(c.Version), where)
				}
				// Upstream servers that cannot be reached are no config error;
				// they are shown with their state.
				for _, u := range h.UpstreamServers() {
					line := fmt.Sprintf("# upstream server %s: %s", u.Name, u.State)
					if u.Error != "" {
						line += " (" + oneLine(u.Error, 300) + ")"
					}
					fmt.Fprintln(cmd.OutOrStdout(), line)
				}
				for _, f := range h.Failed {
					fmt.Fprintf(cmd.ErrOrStderr(), "provider %s does not load: %v\n", f.Name, f.Err)
				}
				if len(h.Failed) > 0 {
					return &exitError{code: 1}
				}
				return nil
			})
		}),
	})
	cfgCmd.AddCommand(newConfigPathsCmd(g))
	return cfgCmd
}

func nonEmptyVersion(v string) string {
	if v == "" {
		return "unset"
	}
	return v
}

// newGroupCmd returns the command use that only groups subcommands (added
// by the caller), with short as its one-line help: run alone it prints its
// help, and run with an argument it fails (see unknownSubcommand).
func newGroupCmd(use, short string) *cobra.Command {
	return &cobra.Command{
		Use:   use,
		Short: short,
		Args:  unknownSubcommand,
		RunE:  func(cmd *cobra.Command, _ []string) error { return cmd.Help() },
	}
}

// unknownSubcommand rejects arguments to a command that only groups
// subcommands, so a typo such as "tools lst" is an error, not help text
// with exit status 0.
func unknownSubcommand(cmd *cobra.Command, args []string) error {
	if len(args) == 0 {
		return nil
	}
	msg := fmt.Sprintf("unknown command %q for %q", args[0], cmd.CommandPath())
	if cmd.SuggestionsMinimumDistance <= 0 {
		cmd.SuggestionsMinimumDistance = 2
	}
	if s := cmd.SuggestionsFor(args[0]); len(s) > 0 {
		msg += fmt.Sprintf("; did you mean %q?", s[0])
	}
	return errors.New(msg)
}

// toolJSON is one tool in "tools list --json": MCP's tools/list fields
// (MCP 2025-11-25, Tool) plus the host's class and provider, and the name
// the provider declared when clients see another (sdk.ClientName).
type toolJSON struct {
	Name         string          `json:"name"`
	Title        string          `json:"title,omitempty"`
	Description  string          `json:"description"`
	InputSchema  json.RawMessage `json:"inputSchema"`
	OutputSchema json.RawMessage `json:"outputSchema,omitempty"`
	Annotations  map[string]any  `json:"annotations,omitempty"`
	Class        sdk.PolicyClass `json:"class"`
	Provider     string          `json:"provider"`
	Declared     string          `json:"declared,omitempty"`
}

// writeToolsJSON writes the catalog as an indented JSON array.
func writeToolsJSON(w io.Writer, h *host.Host) error {
	var list []toolJSON
	for _, t := range h.Server.Catalog().Tools() {
		ann := map[string]any{}
		if t.Annotations.Title != "" {
			ann["title"] = t.Annotations.Title
		}
		for k, v := range map[string]*bool{
			"readOnlyHint": t.Annotations.ReadOnlyHint, "destructiveHint": t.Annotations.DestructiveHint,
			"idempotentHint": t.Annotations.IdempotentHint, "openWorldHint": t.Annotations.OpenWorldHint,
		} {
			if v != nil {
				ann[k] = *v
			}
		}
		entry := toolJSON{
			Name: t.Name, Title: t.Title, Description: t.Description, InputSchema: t.InputSchema,
			OutputSchema: t.OutputSchema, Annotations: ann, Class: t.Class, Provider: t.Provider,
		}
		if t.Declared != t.Name {
			entry.Declared = t.Declared
		}
		list = append(list, entry)
	}
	return writeJSON(w, list)
}
