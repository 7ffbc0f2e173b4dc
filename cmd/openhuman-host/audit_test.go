package main

import (
	"context"
	"encoding/json"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/openhuman/openhuman-host/host"
	"github.com/openhuman/openhuman-host/host/audit"
	"github.com/openhuman/openhuman-host/providers/memory/memorytool"
	"github.com/openhuman/openhuman-host/sdk/testwait"
)

func TestParseSince(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	tests := map[string]struct {
		in      string
		want    time.Time
		wantErr string
	}{
		"empty":         {in: "", want: time.Time{}},
		"minutes":       {in: "90m", want: now.Add(-90 * time.Minute)},
		"hours":         {in: "24h", want: now.Add(-24 * time.Hour)},
		"days":          {in: "7d", want: now.Add(-7 * 24 * time.Hour)},
		"date":          {in: "2026-11-29", want: time.Date(2026, 11, 29, 0, 0, 0, 0, time.UTC)},
		"RFC 3339":      {in: "2026-11-30T08:00:00Z", want: time.Date(2026, 11, 30, 8, 0, 0, 0, time.UTC)},
		"negative":      {in: "-1h", wantErr: `--since "-1h": give how long ago as a positive duration, such as 24h`},
		"future":        {in: "2027-01-01", wantErr: `--since "2027-01-01" is in the future`},
		"not a time":    {in: "yesterday", wantErr: `--since "yesterday": give a duration ago (90m, 24h, 7d) or a time (2026-11-30 or 2026-11-30T08:00:00Z)`},
		"negative days": {in: "-2d", wantErr: `--since "-2d": give a duration ago (90m, 24h, 7d) or a time (2026-11-30 or 2026-11-30T08:00:00Z)`},
	}
	for name, tc := range tests {
		got, err := parseTimeAgo("--since", tc.in, now)
		switch {
		case tc.wantErr != "":
			if err == nil || err.Error() != tc.wantErr {
				t.Errorf("%s: parseTimeAgo(%q) error = %v, want %s", name, tc.in, err, tc.wantErr)
			}
		case err != nil || !got.Equal(tc.want):
			t.Errorf("%s: parseTimeAgo(%q) = %v, %v; want %v", name, tc.in, got, err, tc.want)
		}
	}
}

func TestCLIAuditListAndStats(t *testing.T) {
	cliHome(t, "")
	if _, err := runCLI(t, "tools", "call", memorytool.Store, `{"title":"Audit trail","content":"private body text"}`); err != nil {
		t.Fatal(err)
	}
	if _, err := runCLI(t, "tools", "call", memorytool.Search, `{"query":"x","k":99}`); err == nil {
		t.Fatal("k 99 accepted")
	}
	out, err := runCLI(t, "audit", "list", "--json")
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 2 {
		t.Fatalf("audit list --json: %d lines:\n%s", len(lines), out)
	}
	var newest, oldest map[string]any
	if err := json.Unmarshal([]byte(lines[0]), &newest); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal([]byte(lines[1]), &oldest); err != nil {
		t.Fatal(err)
	}
	if newest["tool"] != memorytool.Search || newest["decision"] != "denied:invalid_arguments" || newest["success"] != false || newest["source_type"] != "cli" {
		t.Errorf("newest record = %v", newest)
	}
	if oldest["tool"] != memorytool.Store || oldest["decision"] != "allowed" || oldest["success"] != true {
		t.Errorf("oldest record = %v", oldest)
	}
	if strings.Contains(out, "private body text") {
		t.Error("the audit log holds a raw body")
	}
	if sum, _ := json.Marshal(oldest["args_summary"]); string(sum) != `{"content":{"len":17},"title":"Audit trail"}` {
		t.Errorf("args_summary = %s", sum)
	}
	for args, want := range map[string]int{"--failed": 1, "--tool " + memorytool.Store: 1, "--client cli": 2, "--client mcp:other": 0, "--since 1h": 2, "--limit 1": 1} {
		out, err := runCLI(t, append([]string{"audit", "list"}, strings.Fields(args)...)...)
		if err != nil {
			t.Fatalf("audit list %s: %v", args, err)
		}
		if got := len(strings.Split(strings.TrimSpace(out), "\n")) - 1; got != want {
			t.Errorf("audit list %s: %d records, want %d:\n%s", args, got, want, out)
		}
	}
	if _, err := runCLI(t, "audit", "list", "--limit", "0"); err == nil || err.Error() != "--limit must be from 1 to 10000, got 0" {
		t.Errorf("--limit 0: %v", err)
	}
	out, err = runCLI(t, "audit", "stats")
	if err != nil {
		t.Fatal(err)
	}
	fields := map[string][]string{}
	for _, l := range strings.Split(strings.TrimSpace(out), "\n")[1:] {
		f := strings.Fields(l)
		fields[f[0]] = f[1:5] // calls, failed, pending, denied
	}
	if strings.Join(fields[memorytool.Search], " ") != "1 0 0 1" || strings.Join(fields[memorytool.Store], " ") != "1 0 0 0" {
		t.Errorf("audit stats:\n%s", out)
	}
}

// TestCLIAuditFollow: audit list --follow prints the newest records, then
// those committed while it runs, with filters and --json, until its
// context ends.
func TestCLIAuditFollow(t *testing.T) {
	cliHome(t, "")
	cfg, err := (&globalFlags{}).load()
	if err != nil {
		t.Fatal(err)
	}
	dataDir, err := cfg.DataDir()
	if err != nil {
		t.Fatal(err)
	}
	log, err := host.OpenAudit(t.Context(), cfg, dataDir, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer log.Close(context.Background())
	record := func(tool string, success bool) {
		t.Helper()
		if err := log.Record(t.Context(), audit.Record{Tool: tool, SourceType: "cli", Decision: audit.DecisionAllowed, Success: success, ArgsSummary: "{}"}); err != nil {
			t.Fatal(err)
		}
		if err := log.Flush(t.Context()); err != nil {
			t.Fatal(err)
		}
	}
	record("before_one", true)
	record("before_two", false)

	follow := func(args ...string) (*testwait.Buffer, func() error) {
		ctx, cancel := context.WithCancel(t.Context())
		out := &testwait.Buffer{}
		cmd := newRootCmd()
		cmd.SetArgs(append([]string{"audit", "list", "--follow", "--interval", "10ms"}, args...))
		cmd.SetOut(out)
		cmd.SetErr(io.Discard)
		done := make(chan error, 1)
		go func() { done <- cmd.ExecuteContext(ctx) }()
		return out, sync.OnceValue(func() error {
			cancel()
			return testwait.Recv(t, done, "audit list --follow to end")
		})
	}
	text, stopText := follow("--limit", "1")
	failedJSON, stopJSON := follow("--failed", "--json")
	testwait.Until(t, "the newest record listed", func() bool { return strings.Contains(text.String(), "before_two") })
	testwait.Until(t, "the failed record listed as JSON", func() bool { return strings.Contains(failedJSON.String(), "before_two") })
	record("after_ok", true)
	record("after_failed", false)
	testwait.Until(t, "the new records followed", func() bool { return strings.Contains(text.String(), "after_failed") })
	testwait.Until(t, "the new failed record followed", func() bool { return strings.Contains(failedJSON.String(), "after_failed") })
	if err := stopText(); err != nil {
		t.Errorf("audit list --follow after cancel: %v", err)
	}
	if err := stopJSON(); err != nil {
		t.Errorf("audit list --follow --json after cancel: %v", err)
	}
	lines := strings.Split(strings.TrimSpace(text.String()), "\n")
	var tools []string
	for _, l := range lines[1:] {
		tools = append(tools, strings.Fields(l)[3])
	}
	if !strings.HasPrefix(lines[0], "TIME (UTC)") || strings.Join(tools, " ") != "before_two after_ok after_failed" {
		t.Errorf("audit list --follow --limit 1 printed:\n%s", text)
	}
	var names []string
	for _, l := range strings.Split(strings.TrimSpace(failedJSON.String()), "\n") {
		var r map[string]any
		if err := json.Unmarshal([]byte(l), &r); err != nil {
			t.Fatalf("not JSON: %q", l)
		}
		names = append(names, r["tool"].(string))
	}
	if strings.Join(names, " ") != "before_two after_failed" {
		t.Errorf("audit list --follow --failed --json printed tools %v", names)
	}
	if _, err := runCLI(t, "audit", "list", "--follow", "--interval", "1ms"); err == nil || !strings.Contains(err.Error(), "--interval must be from") {
		t.Errorf("--interval 1ms: %v", err)
	}
}
