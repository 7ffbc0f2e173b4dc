package host

import (
	"strings"
	"testing"

	"github.com/hashicorp/go-hclog"

	"github.com/openhuman/openhuman-host/host/config"
)

// TestDiscoveryEmbeddings: a serving host builds tool_search's embedder
// from [discovery.embeddings] when a profile uses discovery, keeps the
// same one across reloads that change neither the table nor the key (so
// the tools' vectors survive them), and builds none otherwise.
func TestDiscoveryEmbeddings(t *testing.T) {
	t.Setenv("TEST_DISCOVERY_KEY", "sk-one")
	parse := func(t *testing.T, doc string) *config.Config {
		t.Helper()
		cfg, err := config.Parse([]byte(doc), "config.toml")
		if err != nil {
			t.Fatal(err)
		}
		return cfg
	}
	const lean = "[profiles.lean]\ndiscovery = true\n"
	const table = "[discovery.embeddings]\nbase_url = \"http://127.0.0.1:1/v1\"\napi_key_env = \"TEST_DISCOVERY_KEY\"\n"
	logs := &strings.Builder{}
	h := &Host{opts: Options{DiscoveryEmbeddings: true}, log: hclog.New(&hclog.LoggerOptions{Output: logs, Level: hclog.Warn})}

	first := h.discoveryEmbeddings(parse(t, lean+table+"model = \"a\"\n"))
	if first == nil || first.Embedder.Model() != "a" || first.QueryTimeout.Seconds() != 30 {
		t.Fatalf("embeddings = %+v, want model a with a 30 s query timeout", first)
	}
	if again := h.discoveryEmbeddings(parse(t, lean+table+"model = \"a\"\n")); again != first {
		t.Error("an unchanged table built another embedder")
	}
	t.Setenv("TEST_DISCOVERY_KEY", "sk-two")
	second := h.discoveryEmbeddings(parse(t, lean+table+"model = \"a\"\n"))
	if second == first || second == nil {
		t.Error("a changed key kept the embedder")
	}
	if third := h.discoveryEmbeddings(parse(t, lean+table+"model = \"b\"\n")); third == second || third == nil || third.Embedder.Model() != "b" {
		t.Errorf("a changed model gave %+v", third)
	}
	if got := h.discoveryEmbeddings(parse(t, table+"model = \"b\"\n")); got != nil {
		t.Error("built an embedder with no discovery profile")
	}
	if got := h.discoveryEmbeddings(parse(t, lean)); got != nil {
		t.Error("built an embedder without [discovery.embeddings]")
	}
	oneShot := &Host{log: hclog.NewNullLogger()}
	if got := oneShot.discoveryEmbeddings(parse(t, lean+table+"model = \"a\"\n")); got != nil {
		t.Error("a one-shot host built an embedder")
	}

	t.Setenv("TEST_DISCOVERY_KEY", "")
	if got := h.discoveryEmbeddings(parse(t, lean+table+"model = \"a\"\n")); got == nil {
		t.Error("an unset key variable turned embeddings off; requests go without a key instead")
	}
	if l := logs.String(); !strings.Contains(l, "[WARN]") || !strings.Contains(l, "TEST_DISCOVERY_KEY") || strings.Contains(l, "sk-") {
		t.Errorf("logs = %q, want a warning naming the variable and no key", l)
	}
}
