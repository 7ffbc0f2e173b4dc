package upstream

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/openhuman/openhuman-host/sdk"
)

// In the host's process (ConfigureRequest.Env set), a stdio server starts
// from the provider's environment, not the process's, and leads a process
// group of its own, which Close ends.
func TestInHostStdioServerEnvAndGroup(t *testing.T) {
	p := New(nil)
	t.Cleanup(func() { _ = p.Close() })
	raw, _ := json.Marshal(map[string]any{"servers": []any{map[string]any{"name": "s", "command": stdioServer}}})
	env := []string{"PATH=" + os.Getenv("PATH"), "LANG=C.in-host-test"}
	if err := p.Configure(context.Background(), &sdk.ConfigureRequest{Config: raw, Env: env}); err != nil {
		t.Fatal(err)
	}
	pid := p.conns["s"].cmd.Process.Pid
	environ, err := os.ReadFile(fmt.Sprintf("/proc/%d/environ", pid))
	if err != nil {
		t.Fatal(err)
	}
	vars := strings.Split(string(bytes.TrimRight(environ, "\x00")), "\x00")
	if !slices.Contains(vars, "LANG=C.in-host-test") || slices.ContainsFunc(vars, func(kv string) bool { return strings.HasPrefix(kv, "HOME=") }) {
		t.Errorf("the stdio server's environment is %v, want the provider's LANG and no HOME", vars)
	}
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		t.Fatal(err)
	}
	// Fields after the command's ")": state, ppid, pgrp.
	fields := strings.Fields(string(stat[bytes.LastIndexByte(stat, ')')+1:]))
	if len(fields) < 3 || fields[2] != fmt.Sprint(pid) {
		t.Errorf("the stdio server's process group is %v, want its own (%d)", fields[2:3], pid)
	}
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(fmt.Sprintf("/proc/%d", pid)); err == nil {
		t.Errorf("stdio server %d still there after Close", pid)
	}
}
