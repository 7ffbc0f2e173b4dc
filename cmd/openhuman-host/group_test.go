package main

import (
	"strings"
	"testing"
)

// A typo after a command that only groups subcommands is an error naming the closest subcommand,
// not help text with exit status 0.
func TestGroupCommandsRejectUnknownSubcommands(t *testing.T) {
	t.Parallel()
	for group, typo := range map[string]string{
		"memory": "exprt", "tools": "lst", "config": "chek", "audit": "lst",
		"upstream": "lst", "providers": "stauts",
	} {
		_, err := runCLI(t, group, typo)
		if err == nil || !strings.Contains(err.Error(), `unknown command "`+typo+`"`) || !strings.Contains(err.Error(), "did you mean") {
			t.Errorf("%s %s: error %v, want an unknown command with a suggestion", group, typo, err)
		}
	}
}
