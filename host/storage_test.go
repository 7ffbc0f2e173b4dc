package host

import (
	"fmt"
	"testing"

	"github.com/hashicorp/go-hclog"

	"github.com/openhuman/openhuman-host/host/builtin"
	"github.com/openhuman/openhuman-host/host/config"
	"github.com/openhuman/openhuman-host/host/plugins"
	"github.com/openhuman/openhuman-host/sdk"
)

// TestProviderSpecsStorageSecrets: with [storage] driver = "postgres",
// the built-in providers whose manifest asks for the shared storage, and
// no other provider, get the driver and the connection string as secrets;
// with SQLite, nobody does.
func TestProviderSpecsStorageSecrets(t *testing.T) {
	const dsn = "postgres://memory:pw@db.example:5432/openhuman"
	var shared, tables string
	for _, b := range builtin.Registered().Providers() {
		if b.Manifest.Section == "" {
			tables += fmt.Sprintf("[providers.%s]\nenabled = true\n", b.Manifest.Name)
		}
		if b.Manifest.SharedStorage {
			shared = b.Manifest.Name
		}
	}
	if shared == "" {
		t.Fatal("no built-in provider asks for the shared storage")
	}
	t.Setenv("TEST_MEMORY_DSN", dsn)
	for _, tc := range []struct {
		name    string
		storage string
		want    map[string]string
	}{
		{"postgres", "[storage]\ndriver = \"postgres\"\ndsn_env = \"TEST_MEMORY_DSN\"\n",
			map[string]string{sdk.SecretStorageDriver: "postgres", sdk.SecretStorageDSN: dsn}},
		{"sqlite", "", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg, err := config.Parse([]byte(tc.storage+tables+`
[providers.other]
enabled = true
command = "/bin/true"
`), "test")
			if err != nil {
				t.Fatal(err)
			}
			var failed []plugins.Failure
			specs, err := providerSpecs(cfg, t.TempDir(), Options{Executable: "/bin/openhuman-host", Builtins: builtin.Registered(), Logger: hclog.NewNullLogger()}, &failed)
			if err != nil {
				t.Fatal(err)
			}
			seen := 0
			for _, s := range specs {
				switch s.Name {
				case shared:
					seen++
					for k, v := range tc.want {
						if s.Secrets[k] != v {
							t.Errorf("%s secret %s = %q, want %q", shared, k, s.Secrets[k], v)
						}
					}
					if tc.want == nil && (s.Secrets[sdk.SecretStorageDriver] != "" || s.Secrets[sdk.SecretStorageDSN] != "") {
						t.Errorf("%s got storage secrets on SQLite: %v", shared, s.Secrets)
					}
				default:
					if s.Secrets[sdk.SecretStorageDSN] != "" || s.Secrets[sdk.SecretStorageDriver] != "" {
						t.Errorf("provider %s got the storage secrets", s.Name)
					}
				}
			}
			if seen != 1 {
				t.Fatalf("specs = %+v, want provider %s once", specs, shared)
			}
		})
	}
}
