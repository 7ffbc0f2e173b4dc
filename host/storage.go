package host

import (
	"context"
	"crypto/rand"
	"fmt"
	"path/filepath"

	"github.com/openhuman/openhuman-host/host/audit"
	"github.com/openhuman/openhuman-host/host/config"
	"github.com/openhuman/openhuman-host/sdk"
)

// AuditFile is the name, in the data directory, of the audit log's SQLite
// database ([storage] driver = "sqlite").
const AuditFile = "audit.db"

// OpenAudit opens the audit log where cfg's [storage] table says: the
// SQLite file [AuditFile] in dataDir, or the PostgreSQL database whose
// connection string is in the environment variable storage.dsn_env names.
// opts are passed on. It fails when that variable is unset, or as
// [audit.Open] and [audit.OpenPostgres] do.
func OpenAudit(ctx context.Context, cfg *config.Config, dataDir string, opts *audit.Options) (*audit.Log, error) {
	if cfg.Storage.Driver == config.StoragePostgres {
		dsn, err := cfg.Storage.DSN(nil)
		if err != nil {
			return nil, err
		}
		return audit.OpenPostgres(ctx, dsn, opts)
	}
	return audit.Open(ctx, filepath.Join(dataDir, AuditFile), opts)
}

// stateKeyName is the name of the requestState key in the shared database.
const stateKeyName = "mrtr-state"

// sharedStateKey returns the key that seals requestStates: the data
// directory's [StateKeyFile] on SQLite, or on PostgreSQL the one every
// replica shares, stored in the database by the first replica to start.
func sharedStateKey(ctx context.Context, cfg *config.Config, dataDir string, log *audit.Log) ([]byte, error) {
	if cfg.Storage.Driver != config.StoragePostgres {
		return stateKey(dataDir)
	}
	candidate := make([]byte, 32)
	if _, err := rand.Read(candidate); err != nil {
		return nil, fmt.Errorf("make a state key: %w", err)
	}
	key, err := log.SharedKey(ctx, stateKeyName, candidate)
	if err != nil {
		return nil, fmt.Errorf("state key: %w; the shared PostgreSQL database must be reachable when the host starts", err)
	}
	return key, nil
}

// SharedStorageSecrets returns secrets with what a built-in provider
// whose manifest sets [sdk.Manifest].SharedStorage needs to keep its data
// where cfg's [storage] table says: with driver = "postgres", the driver
// and the connection string (read from the environment variable
// storage.dsn_env names, as the audit log does) as [sdk.SecretStorageDriver]
// and [sdk.SecretStorageDSN], so that every replica's data is the shared
// database; otherwise secrets unchanged, and the provider keeps its data
// in its data directory. Only such a built-in may be given them: the
// connection string is the shared database's credential. It fails when
// the variable is unset.
func SharedStorageSecrets(cfg *config.Config, secrets map[string]string) (map[string]string, error) {
	if cfg.Storage.Driver != config.StoragePostgres {
		return secrets, nil
	}
	dsn, err := cfg.Storage.DSN(nil)
	if err != nil {
		return nil, err
	}
	out := make(map[string]string, len(secrets)+2)
	for k, v := range secrets {
		out[k] = v
	}
	out[sdk.SecretStorageDriver] = config.StoragePostgres
	out[sdk.SecretStorageDSN] = dsn
	return out, nil
}
