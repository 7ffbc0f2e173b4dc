package main

import (
	"testing"

	"github.com/openhuman/openhuman-host/host"
	"github.com/openhuman/openhuman-host/host/config"
	"github.com/openhuman/openhuman-host/providers/memory"
)

// TestSharedStorageSecretsMatch: the secrets the host passes on
// PostgreSQL are the ones the memory provider reads, and memory's manifest
// asks for them.
func TestSharedStorageSecretsMatch(t *testing.T) {
	cfg, err := config.Parse([]byte("[storage]\ndriver = \"postgres\"\ndsn_env = \"TEST_MEMORY_SECRETS_DSN\"\n"), "test")
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv("TEST_MEMORY_SECRETS_DSN", "postgres://u:p@db.example/x")
	got, err := host.SharedStorageSecrets(cfg, map[string]string{"embeddings.api_key": "k"})
	if err != nil {
		t.Fatal(err)
	}
	if !memory.Manifest().SharedStorage {
		t.Error("the memory provider's manifest does not ask for the shared storage")
	}
	if got[memory.SecretStorageDriver] != "postgres" || got[memory.SecretStorageDSN] != "postgres://u:p@db.example/x" || got["embeddings.api_key"] != "k" {
		t.Errorf("secrets = %v", got)
	}
}
