package host

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// StateKeyFile is the name, in the data directory, of the key that seals
// the requestState of multi-round-trip results (MCP 2026-07-28, SEP-2322):
// 64 hex digits, readable by its owner only (0600). Replicas that serve
// the same clients need the same file.
const StateKeyFile = "state.key"

// stateKey reads the data directory's state key, creating it on first use.
// Two processes creating it at once agree on one: the key is written to a
// temporary file and linked into place, which fails when another process
// got there first, whose key is then read.
func stateKey(dataDir string) ([]byte, error) {
	path := filepath.Join(dataDir, StateKeyFile)
	key, err := readStateKey(path)
	if !errors.Is(err, fs.ErrNotExist) {
		return key, err
	}
	buf := make([]byte, 32)
	if _, err := rand.Read(buf); err != nil {
		return nil, fmt.Errorf("state key: %w", err)
	}
	tmp, err := os.CreateTemp(dataDir, StateKeyFile+".*")
	if err != nil {
		return nil, fmt.Errorf("create the state key: %w", err)
	}
	defer os.Remove(tmp.Name())
	if err := tmp.Chmod(0o600); err != nil && !errors.Is(err, errors.ErrUnsupported) {
		_ = tmp.Close()
		return nil, fmt.Errorf("create the state key: %w", err)
	}
	_, err = tmp.WriteString(hex.EncodeToString(buf) + "\n")
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return nil, fmt.Errorf("write the state key %s: %w", tmp.Name(), err)
	}
	if err := os.Link(tmp.Name(), path); err != nil && !errors.Is(err, fs.ErrExist) {
		return nil, fmt.Errorf("put the state key in place at %s: %w", path, err)
	}
	return readStateKey(path)
}

// readStateKey reads and checks a state key file.
func readStateKey(path string) ([]byte, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	key, err := hex.DecodeString(strings.TrimSpace(string(raw)))
	if err != nil || len(key) < 32 {
		return nil, fmt.Errorf("state key %s is damaged (want 64 hex digits); delete it and restart: "+
			"multi-round-trip questions that are still open will then be refused and asked again", path)
	}
	return key, nil
}
