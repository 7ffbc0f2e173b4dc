//go:build !windows

package config

// knownFolder is nil: only Windows has known folders.
var knownFolder func(id string) (string, error)
