package plugins

import (
	"strings"
	"testing"

	"github.com/hashicorp/go-hclog"

	"github.com/openhuman/openhuman-host/sdk/testwait"
)

func TestStderrLog(t *testing.T) {
	t.Parallel()
	var out testwait.Buffer
	s := &stderrLog{log: hclog.New(&hclog.LoggerOptions{Output: &out, Level: hclog.Trace, DisableTime: true})}
	input := strings.Join([]string{
		`{"@level":"warn","@message":"disk low","@timestamp":"2026-11-30T08:00:00.000000Z","free_mb":12,"@module":"p"}`,
		`{"@message":42,"@level":7}`,
		`{"@message":"no level"}`,
		`[ERROR] prefixed text`,
		`plain text`,
		`panic: boom`,
		`goroutine 1 [running]:`,
		"",
	}, "\n")
	// go-plugin writes a line and its newline separately; split anywhere.
	for i := 0; i < len(input); i += 7 {
		if _, err := s.Write([]byte(input[i:min(i+7, len(input))])); err != nil {
			t.Fatal(err)
		}
	}
	_, _ = s.Write([]byte(strings.Repeat("x", maxStderrLine+10) + "\n"))
	got := strings.Split(strings.TrimSpace(out.String()), "\n")
	want := []string{
		"[WARN]  disk low: free_mb=12",
		`[DEBUG] {"@message":42,"@level":7}`,
		"[DEBUG] no level",
		"[ERROR] [ERROR] prefixed text",
		"[DEBUG] plain text",
		"[ERROR] panic: boom",
		"[ERROR] goroutine 1 [running]:",
	}
	if len(got) != len(want)+1 {
		t.Fatalf("got %d lines:\n%s", len(got), out.String())
	}
	for i, w := range want {
		if got[i] != w {
			t.Errorf("line %d = %q, want %q", i, got[i], w)
		}
	}
	if last := got[len(want)]; !strings.HasSuffix(last, "truncated_at_bytes=65536") || len(last) > maxStderrLine+100 {
		t.Errorf("long line logged as %d bytes ending %q", len(last), last[max(0, len(last)-40):])
	}
}
