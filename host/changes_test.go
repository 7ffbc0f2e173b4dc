package host

import (
	"strings"
	"testing"

	"github.com/openhuman/openhuman-host/host/config"
)

func TestChangedKeys(t *testing.T) {
	t.Parallel()
	parse := func(doc string) *config.Config {
		t.Helper()
		c, err := config.Parse([]byte(doc), "test.toml")
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	settings := `
[autonomy]
level = "supervised"
denied_tools = ["notes_forget"]
[providers.searxng]
enabled = true
[providers.searxng.settings]
base_url = "http://127.0.0.1:8888"
`
	docs := `
[[upstream.servers]]
name = "docs"
endpoint = "http://127.0.0.1:1/mcp"
`
	gone := `
[[upstream.servers]]
name = "gone"
command = "true"
`
	old := parse(settings + docs + gone)
	same := parse(settings + gone + docs)
	same.Source = "elsewhere.toml"
	if got := ChangedKeys(old, same); len(got) != 0 {
		t.Errorf("the same settings (servers reordered, another file): %v", got)
	}
	next := parse(`
[server]
log_level = "debug"
[autonomy]
level = "readonly"
denied_tools = ["notes_forget", "notes_store"]
[providers.searxng]
enabled = true
[providers.searxng.settings]
base_url = "http://127.0.0.1:9999"
[profiles.agents]
level = "readonly"
[[upstream.servers]]
name = "docs"
endpoint = "http://127.0.0.1:2/mcp"
timeout_secs = 5
`)
	want := []string{
		"autonomy.denied_tools",
		"autonomy.level",
		"profiles.agents (added)",
		"providers.searxng.settings.base_url",
		"server.log_level",
		"upstream.servers.docs.endpoint",
		"upstream.servers.docs.timeout_secs",
		"upstream.servers.gone (removed)",
	}
	got := ChangedKeys(old, next)
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("ChangedKeys() =\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	for _, k := range got {
		if strings.Contains(k, "9999") || strings.Contains(k, "127.0.0.1") {
			t.Errorf("a value leaked into %q", k)
		}
	}
}
