package host

import (
	"testing"

	"github.com/hashicorp/go-hclog"

	"github.com/openhuman/openhuman-host/host/config"
	"github.com/openhuman/openhuman-host/host/plugins"
)

// TestProviderSpecsStorageSecrets: with [storage] driver = "postgres",
// the built-in memory provider, and no other provider, gets the driver and
// the connection string as secrets; with SQLite, nobody does.
func TestProviderSpecsStorageSecrets(t *testing.T) {
	const dsn = "postgres://memory:pw@db.example:5432/openhuman"
	t.Setenv("TEST_MEMORY_DSN", dsn)
	for _, tc := range []struct {
		name    string
		storage string
		want    map[string]string
	}{
		{"postgres", "[storage]\ndriver = \"postgres\"\ndsn_env = \"TEST_MEMORY_DSN\"\n",
			map[string]string{memoryStorageDriverSecret: "postgres", memoryStorageDSNSecret: dsn}},
		{"sqlite", "", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg, err := config.Parse([]byte(tc.storage+`
[providers.memory]
enabled = true

[providers.other]
enabled = true
command = "/bin/true"
`), "test")
			if err != nil {
				t.Fatal(err)
			}
			var failed []plugins.Failure
			specs, err := providerSpecs(cfg, t.TempDir(), Options{Executable: "/bin/openhuman-host", Builtins: []string{"memory"}, Logger: hclog.NewNullLogger()}, &failed)
			if err != nil {
				t.Fatal(err)
			}
			seen := 0
			for _, s := range specs {
				switch s.Name {
				case "memory":
					seen++
					for k, v := range tc.want {
						if s.Secrets[k] != v {
							t.Errorf("memory secret %s = %q, want %q", k, s.Secrets[k], v)
						}
					}
					if tc.want == nil && (s.Secrets[memoryStorageDriverSecret] != "" || s.Secrets[memoryStorageDSNSecret] != "") {
						t.Errorf("memory got storage secrets on SQLite: %v", s.Secrets)
					}
				default:
					if s.Secrets[memoryStorageDSNSecret] != "" || s.Secrets[memoryStorageDriverSecret] != "" {
						t.Errorf("provider %s got the storage secrets", s.Name)
					}
				}
			}
			if seen != 1 {
				t.Fatalf("specs = %+v, want the memory provider once", specs)
			}
		})
	}
}
