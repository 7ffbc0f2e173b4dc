package host

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/hashicorp/go-hclog"

	"github.com/openhuman/openhuman-host/host/builtin"
	"github.com/openhuman/openhuman-host/host/config"
	"github.com/openhuman/openhuman-host/host/plugins"
	"github.com/openhuman/openhuman-host/sdk"
)

// planSpec is a provider spec for the reload planning tests.
func planSpec(name string, edit ...func(*plugins.Spec)) plugins.Spec {
	s := plugins.Spec{
		Name: name, Path: "/opt/" + name, Args: []string{"--serve"}, SHA256: "ab12", Config: []byte(`{"x":1}`),
		DataDir: "/data/" + name, Secrets: map[string]string{"TOKEN": "t"}, StartTimeout: time.Minute, Revision: "r1",
	}
	for _, e := range edit {
		e(&s)
	}
	return s
}

func specNames(specs []plugins.Spec) []string {
	var out []string
	for _, s := range specs {
		out = append(out, s.Name)
	}
	return out
}

func TestPlanReload(t *testing.T) {
	t.Parallel()
	running := func(specs ...plugins.Spec) []runningProvider {
		var out []runningProvider
		for _, s := range specs {
			out = append(out, runningProvider{Spec: s})
		}
		return out
	}
	tests := map[string]struct {
		running []runningProvider
		specs   []plugins.Spec
		keep    []string
		stop    []string
		start   []string
	}{
		"nothing before or after": {},
		"the same config keeps every provider": {
			running: running(planSpec("memory"), planSpec("agent")),
			specs:   []plugins.Spec{planSpec("memory"), planSpec("agent")},
			keep:    []string{"memory", "agent"},
		},
		"a new provider starts": {
			running: running(planSpec("memory")),
			specs:   []plugins.Spec{planSpec("memory"), planSpec("web")},
			keep:    []string{"memory"},
			start:   []string{"web"},
		},
		"the first start of all": {
			specs: []plugins.Spec{planSpec("memory"), planSpec("agent")},
			start: []string{"memory", "agent"},
		},
		"a removed or disabled provider stops": {
			running: running(planSpec("memory"), planSpec("web")),
			specs:   []plugins.Spec{planSpec("memory")},
			keep:    []string{"memory"},
			stop:    []string{"web"},
		},
		"every provider removed": {
			running: running(planSpec("memory"), planSpec("web")),
			stop:    []string{"memory", "web"},
		},
		"changed args restart it": {
			running: running(planSpec("memory")),
			specs:   []plugins.Spec{planSpec("memory", func(s *plugins.Spec) { s.Args = []string{"--serve", "-v"} })},
			stop:    []string{"memory"},
			start:   []string{"memory"},
		},
		"a changed config table restarts it": {
			running: running(planSpec("memory")),
			specs:   []plugins.Spec{planSpec("memory", func(s *plugins.Spec) { s.Config = []byte(`{"x":2}`) })},
			stop:    []string{"memory"},
			start:   []string{"memory"},
		},
		"a changed secret restarts it": {
			running: running(planSpec("memory")),
			specs:   []plugins.Spec{planSpec("memory", func(s *plugins.Spec) { s.Secrets = map[string]string{"TOKEN": "u"} })},
			stop:    []string{"memory"},
			start:   []string{"memory"},
		},
		"a new checksum restarts it": {
			running: running(planSpec("hello")),
			specs:   []plugins.Spec{planSpec("hello", func(s *plugins.Spec) { s.SHA256 = "cd34" })},
			stop:    []string{"hello"},
			start:   []string{"hello"},
		},
		"another revision restarts it": {
			running: running(planSpec("agent")),
			specs:   []plugins.Spec{planSpec("agent", func(s *plugins.Spec) { s.Revision = "r2" })},
			stop:    []string{"agent"},
			start:   []string{"agent"},
		},
		"another start timeout restarts it": {
			running: running(planSpec("agent")),
			specs:   []plugins.Spec{planSpec("agent", func(s *plugins.Spec) { s.StartTimeout = time.Second })},
			stop:    []string{"agent"},
			start:   []string{"agent"},
		},
		"moving a built-in into or out of the host's process restarts it": {
			running: running(planSpec("upstream"), planSpec("memory", func(s *plugins.Spec) { s.InProcess = newNoProvider })),
			specs: []plugins.Spec{
				planSpec("upstream", func(s *plugins.Spec) { s.InProcess = newNoProvider }),
				planSpec("memory"),
			},
			stop:  []string{"upstream", "memory"},
			start: []string{"upstream", "memory"},
		},
		"a built-in in the host's process is kept": {
			running: running(planSpec("upstream", func(s *plugins.Spec) { s.InProcess = newNoProvider })),
			specs:   []plugins.Spec{planSpec("upstream", func(s *plugins.Spec) { s.InProcess = newNoProvider })},
			keep:    []string{"upstream"},
		},
		"a failed provider is started again with the same spec": {
			running: []runningProvider{{Spec: planSpec("memory"), Failed: true}, {Spec: planSpec("agent")}},
			specs:   []plugins.Spec{planSpec("memory"), planSpec("agent")},
			keep:    []string{"agent"},
			stop:    []string{"memory"},
			start:   []string{"memory"},
		},
		"changed ones stop in the order of the config, then removed ones": {
			running: running(planSpec("zeta"), planSpec("old"), planSpec("alpha"), planSpec("gone")),
			specs: []plugins.Spec{
				planSpec("alpha", func(s *plugins.Spec) { s.Path = "/usr/bin/alpha" }),
				planSpec("zeta", func(s *plugins.Spec) { s.Path = "/usr/bin/zeta" }),
				planSpec("new"),
			},
			stop:  []string{"alpha", "zeta", "old", "gone"},
			start: []string{"alpha", "zeta", "new"},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			plan := planReload(tc.running, tc.specs)
			empty := cmpopts.EquateEmpty()
			if diff := cmp.Diff(tc.keep, plan.Keep, empty); diff != "" {
				t.Errorf("Keep (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.stop, plan.Stop, empty); diff != "" {
				t.Errorf("Stop (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.start, specNames(plan.Start), empty); diff != "" {
				t.Errorf("Start (-want +got):\n%s", diff)
			}
			// The specs to start are the new config's, not the old ones.
			for _, s := range plan.Start {
				for _, want := range tc.specs {
					if want.Name == s.Name && !sameSpec(want, s) {
						t.Errorf("Start holds %s's old spec", s.Name)
					}
				}
			}
		})
	}
}

func TestReloadPlanSettle(t *testing.T) {
	t.Parallel()
	// memory and agent changed, web was removed.
	plan := planReload(
		[]runningProvider{{Spec: planSpec("memory")}, {Spec: planSpec("agent")}, {Spec: planSpec("web")}},
		[]plugins.Spec{
			planSpec("memory", func(s *plugins.Spec) { s.Revision = "r2" }),
			planSpec("agent", func(s *plugins.Spec) { s.Revision = "r2" }),
		})
	tests := map[string]struct {
		started, failed map[string]bool
		stay, stop      []string
	}{
		"every replacement started": {
			started: map[string]bool{"memory": true, "agent": true},
			stop:    []string{"memory", "agent", "web"},
		},
		"a replacement that did not start leaves the old one running": {
			started: map[string]bool{"agent": true},
			stay:    []string{"memory"},
			stop:    []string{"agent", "web"},
		},
		"no replacement started": {
			stay: []string{"memory", "agent"},
			stop: []string{"web"},
		},
		"an old one that failed meanwhile stops all the same": {
			started: map[string]bool{"agent": true},
			failed:  map[string]bool{"memory": true},
			stop:    []string{"memory", "agent", "web"},
		},
		"a removed provider stops even when it failed": {
			started: map[string]bool{"memory": true, "agent": true},
			failed:  map[string]bool{"web": true},
			stop:    []string{"memory", "agent", "web"},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			stay, stop := plan.settle(tc.started, tc.failed)
			empty := cmpopts.EquateEmpty()
			if diff := cmp.Diff(tc.stay, stay, empty); diff != "" {
				t.Errorf("stay (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.stop, stop, empty); diff != "" {
				t.Errorf("stop (-want +got):\n%s", diff)
			}
		})
	}
}

// newNoProvider stands for a built-in's constructor in specs that run it
// in the host's process; planning never calls it.
func newNoProvider(hclog.Logger) sdk.Provider { return nil }

// The operator's process setting wins over a built-in's manifest.
func TestInHost(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		manifest bool
		setting  string
		want     bool
	}{
		{false, "", false}, {true, "", true},
		{false, config.ProcessHost, true}, {true, config.ProcessPlugin, false},
		{true, config.ProcessHost, true}, {false, config.ProcessPlugin, false},
	} {
		b := builtin.Provider{Manifest: sdk.Manifest{Name: "x", InProcess: tc.manifest}}
		if got := inHost(b, tc.setting); got != tc.want {
			t.Errorf("manifest InProcess %v, setting %q: in the host %v, want %v", tc.manifest, tc.setting, got, tc.want)
		}
	}
}
