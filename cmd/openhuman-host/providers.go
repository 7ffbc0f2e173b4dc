package main

import (
	"github.com/spf13/cobra"
)

// newProvidersCmd builds the providers command and its subcommands.
func newProvidersCmd(g *globalFlags) *cobra.Command {
	cmd := newGroupCmd("providers", "Show provider status and add third-party providers")
	cmd.AddCommand(newProvidersStatusCmd(g), newProvidersAddCmd(g))
	return cmd
}
