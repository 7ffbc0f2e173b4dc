package main

import (
	"strings"
	"testing"
	"time"

	"github.com/openhuman/openhuman-host/providers/memory/memorytool"
)

// TestMemoryForgetCommand forgets a namespace from the command line: the
// dry run changes nothing, the real run removes the document, search no
// longer finds it, and the audit log records the call with ids and counts
// but not the text.
func TestMemoryForgetCommand(t *testing.T) {
	t.Parallel()
	exe := testExe(t)
	cfgPath := serveConfig(t, t.TempDir())
	run := func(args ...string) string {
		t.Helper()
		out, errOut, err := memoryCLI(t, exe, cfgPath, nil, args...)
		if err != nil {
			t.Fatalf("%s: %v\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), err, out, errOut)
		}
		return out
	}
	run("tools", "call", memorytool.Store, `{"title":"Wifi","namespace":"home","content":"The wifi password is tangerine."}`)
	run("tools", "call", memorytool.Store, `{"title":"Plan","namespace":"work","content":"Ship the tangerine release."}`)

	if out := run("memory", "forget", "--dry-run", "--namespace", "home"); !strings.HasPrefix(out, "Dry run: this would forget 1 document, 1 chunk, 1 source (documents removed or shortened: home/mcp-store-wifi)") {
		t.Errorf("dry run printed %q", out)
	}
	if out := run("tools", "call", memorytool.Search, `{"query":"tangerine"}`); strings.Count(out, "chk_") != 2 {
		t.Errorf("after the dry run, search found:\n%s", out)
	}
	if out := run("memory", "forget", "--namespace", "home"); !strings.HasPrefix(out, "Forgot 1 document, 1 chunk, 1 source (documents removed or shortened: home/mcp-store-wifi)") {
		t.Errorf("forget printed %q", out)
	}
	if out := run("tools", "call", memorytool.Search, `{"query":"tangerine"}`); strings.Count(out, "chk_") != 1 || strings.Contains(out, "wifi") {
		t.Errorf("after forget, search found:\n%s", out)
	}
	audit := run("audit", "list", "--tool", memorytool.Forget, "--json")
	if strings.Count(audit, "\n") != 2 || !strings.Contains(audit, `"result_ref":"forgot 1 document, 1 chunk, 1 source: home/mcp-store-wifi"`) ||
		strings.Contains(audit, "tangerine") {
		t.Errorf("audit records of "+memorytool.Forget+":\n%s", audit)
	}
	for _, bad := range [][]string{{"memory", "forget"}, {"memory", "forget", "--before", "soon"}, {"memory", "forget", "--before", time.Now().Add(48 * time.Hour).Format("2006-01-02")}} {
		if _, errOut, err := memoryCLI(t, exe, cfgPath, nil, bad...); err == nil || errOut == "" {
			t.Errorf("%v: not refused (%v, %q)", bad, err, errOut)
		}
	}
}
