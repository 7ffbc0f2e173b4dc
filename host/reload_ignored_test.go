package host

import (
	"slices"
	"testing"

	"github.com/openhuman/openhuman-host/host/config"
)

// TestIgnoredChangesNameStorage: a reload cannot move the shared state to
// another database, and says so.
func TestIgnoredChangesNameStorage(t *testing.T) {
	old, next := config.Default(), config.Default()
	next.Storage.Driver, next.Storage.DSNEnv = config.StoragePostgres, "TEAM_DB"
	next.Server.Port = old.Server.Port + 1
	got := ignoredChanges(old, next)
	if want := []string{"server.port", "storage.driver", "storage.dsn_env"}; !slices.Equal(got, want) {
		t.Errorf("ignoredChanges = %v, want %v", got, want)
	}
	if got := ignoredChanges(old, config.Default()); len(got) != 0 {
		t.Errorf("ignoredChanges of equal configs = %v, want none", got)
	}
}
