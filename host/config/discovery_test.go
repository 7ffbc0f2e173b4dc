package config

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/openhuman/openhuman-host/sdk/embeddings"
)

// TestDiscoveryEmbeddings: [discovery.embeddings] is decoded with the
// shared defaults applied, rendered by Masked without the key, and
// resolves its key from the variable api_key_env names.
func TestDiscoveryEmbeddings(t *testing.T) {
	t.Parallel()
	if Default().Discovery.Embeddings != nil {
		t.Fatal("the defaults configure discovery embeddings; they must not")
	}
	doc := lines(
		"[discovery.embeddings]",
		`base_url = "https://api.openai.com/v1"`,
		`model = "text-embedding-3-small"`,
		`api_key_env = "DISCOVERY_KEY"`,
	)
	c, err := parse([]byte(doc), "config.toml", noEnv("/home/u"))
	if err != nil {
		t.Fatal(err)
	}
	want := &embeddings.Config{
		BaseURL: "https://api.openai.com/v1", Model: "text-embedding-3-small", APIKeyEnv: "DISCOVERY_KEY",
		BatchSize: embeddings.DefaultBatchSize, TimeoutSecs: embeddings.DefaultTimeoutSecs,
	}
	if diff := cmp.Diff(want, c.Discovery.Embeddings); diff != "" {
		t.Errorf("discovery.embeddings mismatch (-want +got):\n%s", diff)
	}

	const secret = "sk-live-do-not-print"
	getenv := func(name string) string {
		if name == "DISCOVERY_KEY" {
			return secret
		}
		return ""
	}
	out, err := c.Masked()
	if err != nil {
		t.Fatal(err)
	}
	wantBlock := "[discovery]\n[discovery.embeddings]\nbase_url = 'https://api.openai.com/v1'\nmodel = 'text-embedding-3-small'\n" +
		"api_key_env = 'DISCOVERY_KEY'\nbatch_size = 64\ntimeout_secs = 30\ndimensions = 0\n"
	if !strings.Contains(out, wantBlock) || strings.Contains(out, secret) {
		t.Errorf("Masked() =\n%s\nwant it to hold\n%s", out, wantBlock)
	}

	key, err := c.Discovery.EmbeddingsAPIKey(getenv)
	if err != nil || key != secret {
		t.Errorf("EmbeddingsAPIKey = %q, %v; want the variable's value", key, err)
	}
	_, err = c.Discovery.EmbeddingsAPIKey(func(string) string { return "" })
	wantErr := "[discovery.embeddings] api_key_env names the environment variable DISCOVERY_KEY, which is unset or empty: " +
		"set it to the API key, or remove api_key_env for an endpoint that needs none"
	if err == nil || err.Error() != wantErr {
		t.Errorf("EmbeddingsAPIKey with the variable unset = %v, want %s", err, wantErr)
	}
	for _, d := range []DiscoveryConfig{{}, {Embeddings: &embeddings.Config{BaseURL: "http://x", Model: "m"}}} {
		if key, err := d.EmbeddingsAPIKey(getenv); key != "" || err != nil {
			t.Errorf("EmbeddingsAPIKey without api_key_env = %q, %v; want none", key, err)
		}
	}
}
