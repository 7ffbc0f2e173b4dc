package main

import (
	"bytes"
	"testing"
)

// runCLI runs the command line in this process with args and returns what
// it printed on stdout and the error Execute returned.
func runCLI(t *testing.T, args ...string) (string, error) {
	t.Helper()
	out, _, err := runCLIOutputs(t, args...)
	return out, err
}

// runCLIOutputs is runCLI that also returns what the command printed on
// stderr.
func runCLIOutputs(t *testing.T, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	var out, errOut bytes.Buffer
	cmd := newRootCmd()
	cmd.SetArgs(args)
	cmd.SetOut(&out)
	cmd.SetErr(&errOut)
	err = cmd.Execute()
	return out.String(), errOut.String(), err
}
