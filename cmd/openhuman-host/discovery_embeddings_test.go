package main

import (
	"strings"
	"testing"
)

// TestConfigCheckDiscoveryEmbeddings: config check shows the
// [discovery.embeddings] table with the variable's name and never the key;
// an invalid table fails naming the key and its line.
func TestConfigCheckDiscoveryEmbeddings(t *testing.T) {
	const secret = "sk-live-discovery-secret"
	t.Setenv("TEST_DISCOVERY_KEY", secret)
	table := "\n[profiles.lean]\ndiscovery = true\n\n[discovery.embeddings]\nbase_url = \"http://127.0.0.1:9/v1\"\n" +
		"model = \"text-embedding-3-small\"\napi_key_env = \"TEST_DISCOVERY_KEY\"\n"
	cliHome(t, table)
	out, err := runCLI(t, "config", "check")
	if err != nil {
		t.Fatalf("config check: %v\n%s", err, out)
	}
	if !strings.Contains(out, "[discovery.embeddings]\nbase_url = 'http://127.0.0.1:9/v1'\nmodel = 'text-embedding-3-small'\napi_key_env = 'TEST_DISCOVERY_KEY'\n") {
		t.Errorf("config check does not show the table:\n%s", out)
	}
	if strings.Contains(out, secret) {
		t.Errorf("config check printed the key:\n%s", out)
	}

	cliHome(t, "\n[discovery.embeddings]\nbase_url = \"http://127.0.0.1:9/v1\"\nmodel = \"m\"\napi_key_env = \""+secret+"\"\n")
	out, err = runCLI(t, "config", "check")
	if err == nil || !strings.Contains(err.Error(), ":7: discovery.embeddings.api_key_env: must be the name of an environment variable") ||
		strings.Contains(err.Error(), secret) || strings.Contains(out, secret) {
		t.Errorf("config check of a key in api_key_env = %v\n%s", err, out)
	}
}
