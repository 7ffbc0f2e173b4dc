package host

import (
	"runtime"
	"slices"
	"testing"

	"github.com/openhuman/openhuman-host/host/config"
)

// InHostBuiltins names the enabled built-ins that run in the host's
// process: by their manifests, as the operator's process settings say,
// and the relay only when a server is configured.
func TestInHostBuiltins(t *testing.T) {
	relay := []string{"upstream"}
	if runtime.GOOS == "windows" {
		relay = nil
	}
	const server = "[[upstream.servers]]\nname = \"s\"\ncommand = \"x\"\n"
	for _, tc := range []struct {
		doc  string
		want []string
	}{
		{"", []string{"memory"}},
		{"[providers.memory]\nprocess = \"plugin\"\n", nil},
		{"[providers.memory]\nenabled = false\n[providers.agent]\nprocess = \"host\"\n", []string{"agent"}},
		{server, append([]string{"memory"}, relay...)},
		{"[upstream]\nprocess = \"host\"\n" + server, []string{"memory", "upstream"}},
		{"[upstream]\nprocess = \"plugin\"\n" + server + "[providers.memory]\nprocess = \"plugin\"\n", nil},
		{"[upstream]\nprocess = \"host\"\n[[upstream.servers]]\nname = \"s\"\ncommand = \"x\"\nenabled = false\n", []string{"memory"}},
	} {
		cfg, err := config.Parse([]byte(tc.doc), "test.toml")
		if err != nil {
			t.Fatalf("%q: %v", tc.doc, err)
		}
		if got := InHostBuiltins(cfg, nil); !slices.Equal(got, tc.want) {
			t.Errorf("%q: InHostBuiltins = %v, want %v", tc.doc, got, tc.want)
		}
	}
}
