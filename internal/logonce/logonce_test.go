package logonce

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/openhuman/openhuman-host/internal/fakeclock"
)

func newLogger(level hclog.Level, o *Options) (hclog.Logger, *bytes.Buffer) {
	var buf bytes.Buffer
	base := hclog.New(&hclog.LoggerOptions{Name: "host", Output: &buf, Level: level, DisableTime: true})
	return Wrap(base, o), &buf
}

func lines(buf *bytes.Buffer) []string {
	s := strings.TrimSpace(buf.String())
	if s == "" {
		return nil
	}
	return strings.Split(s, "\n")
}

func TestRepeatsCollapse(t *testing.T) {
	t.Parallel()
	c := fakeclock.New(time.Unix(1_000_000, 0))
	log, buf := newLogger(hclog.Info, &Options{Window: time.Minute, Now: c.Now})
	for range 3 {
		log.Warn("pattern matches no tool", "pattern", "memroy_x")
	}
	log.Warn("pattern matches no tool", "pattern", "other")
	log.Named("reload").Warn("pattern matches no tool", "pattern", "memroy_x")
	log.With("provider", "kit").Warn("pattern matches no tool", "pattern", "memroy_x")
	log.Error("pattern matches no tool", "pattern", "memroy_x")
	for range 2 {
		log.Info("config reloaded")
	}
	got := lines(buf)
	want := []string{
		`[WARN]  host: pattern matches no tool: pattern=memroy_x`,
		`[WARN]  host: pattern matches no tool: pattern=other`,
		`[WARN]  host.reload: pattern matches no tool: pattern=memroy_x`,
		`[WARN]  host: pattern matches no tool: provider=kit pattern=memroy_x`,
		`[ERROR] host: pattern matches no tool: pattern=memroy_x`,
		`[INFO]  host: config reloaded`,
		`[INFO]  host: config reloaded`,
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("got:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}

	buf.Reset()
	c.Advance(59 * time.Second)
	log.Warn("pattern matches no tool", "pattern", "memroy_x")
	if got := lines(buf); len(got) != 0 {
		t.Fatalf("a repeat within the window was written: %q", got)
	}
	c.Advance(time.Second)
	log.Warn("pattern matches no tool", "pattern", "memroy_x")
	log.Warn("pattern matches no tool", "pattern", "memroy_x")
	want = []string{`[WARN]  host: pattern matches no tool: pattern=memroy_x repeated=3`}
	if got := lines(buf); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("after the window got %q, want %q", got, want)
	}
	buf.Reset()
	c.Advance(time.Minute)
	log.Warn("pattern matches no tool", "pattern", "memroy_x")
	if got := lines(buf); len(got) != 1 || !strings.HasSuffix(got[0], RepeatedKey+"=1") {
		t.Fatalf("after a window with one repeat held back got %q, want it counted", got)
	}
	buf.Reset()
	c.Advance(time.Minute)
	log.Warn("pattern matches no tool", "pattern", "memroy_x")
	if got := lines(buf); len(got) != 1 || strings.Contains(got[0], RepeatedKey) {
		t.Fatalf("after a window without repeats got %q, want the line without a count", got)
	}
}

// TestBelowLevel: lines the logger drops are not remembered, so raising
// its level later does not hide their first showing.
func TestBelowLevel(t *testing.T) {
	t.Parallel()
	c := fakeclock.New(time.Unix(1_000_000, 0))
	log, buf := newLogger(hclog.Error, &Options{Now: c.Now})
	log.Warn("dropped")
	log.SetLevel(hclog.Warn)
	log.Warn("dropped")
	if got := lines(buf); len(got) != 1 || !strings.Contains(got[0], "dropped") || strings.Contains(got[0], RepeatedKey) {
		t.Fatalf("got %q", got)
	}
}

func TestDisabled(t *testing.T) {
	t.Parallel()
	log, buf := newLogger(hclog.Info, &Options{Window: -1})
	log.Warn("again")
	log.Warn("again")
	if got := lines(buf); len(got) != 2 {
		t.Fatalf("got %q, want both lines", got)
	}
}

func TestForgetsOldest(t *testing.T) {
	t.Parallel()
	c := fakeclock.New(time.Unix(1_000_000, 0))
	log, buf := newLogger(hclog.Info, &Options{Now: c.Now})
	for i := range maxLines + 1 {
		c.Advance(time.Millisecond)
		log.Warn("line", "i", i)
	}
	buf.Reset()
	log.Warn("line", "i", 0)
	log.Warn("line", "i", maxLines)
	if got := lines(buf); len(got) != 1 || !strings.Contains(got[0], "i=0") {
		t.Fatalf("got %q, want only the forgotten first line again", got)
	}
}
