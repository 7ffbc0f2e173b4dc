package main

import (
	"strings"
	"testing"

	"github.com/hashicorp/go-hclog"

	"github.com/openhuman/openhuman-host/host/config"
	"github.com/openhuman/openhuman-host/internal/logonce"
	"github.com/openhuman/openhuman-host/sdk/testwait"
)

// TestReloadLog: a reload logs each changed key at info level and one
// summary line at the default level (warn); the warning about settings
// that need a restart, repeated by the next reload, is written once.
func TestReloadLog(t *testing.T) {
	t.Parallel()
	h, dataDir := newTestHost(t, "")
	parse := func(extra string) *config.Config { return parseTestConfig(t, dataDir, extra) }
	var buf testwait.Buffer
	log := logonce.Wrap(hclog.New(&hclog.LoggerOptions{Output: &buf, Level: hclog.Info, DisableTime: true}), nil)
	next := parse("port = 9411\n[autonomy]\nlevel = \"readonly\"\n")
	load := func() (*config.Config, error) { return next, nil }
	reload(t.Context(), h, log, load, "SIGHUP")
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	var info, warn []string
	for _, l := range lines {
		switch {
		case strings.HasPrefix(l, "[INFO]"):
			info = append(info, l)
		case strings.HasPrefix(l, "[WARN]"):
			warn = append(warn, l)
		}
	}
	wantInfo := []string{
		"[INFO]  config reload: setting changed: key=autonomy.level",
		"[INFO]  config reload: setting changed: key=server.port",
	}
	if strings.Join(info, "\n") != strings.Join(wantInfo, "\n") {
		t.Errorf("info lines:\n%s\nwant:\n%s", strings.Join(info, "\n"), strings.Join(wantInfo, "\n"))
	}
	wantWarn := []string{
		`[WARN]  these settings take effect only when openhuman-host restarts: keys=server.port`,
		`[WARN]  config reloaded: reason=SIGHUP changed="autonomy.level, server.port" restart_needed=server.port`,
	}
	if strings.Join(warn, "\n") != strings.Join(wantWarn, "\n") {
		t.Errorf("warn lines:\n%s\nwant:\n%s", strings.Join(warn, "\n"), strings.Join(wantWarn, "\n"))
	}

	// The port changed again: the warning says what it said already.
	next = parse("port = 9412\n[autonomy]\nlevel = \"readonly\"\n")
	buf = testwait.Buffer{}
	reload(t.Context(), h, log, load, "the config file changed")
	want := "[INFO]  config reload: setting changed: key=server.port\n" +
		`[WARN]  config reloaded: reason="the config file changed" changed=server.port restart_needed=server.port`
	if got := strings.TrimSpace(buf.String()); got != want {
		t.Errorf("second reload logged:\n%s\nwant:\n%s", got, want)
	}
}
