// Package config loads, validates and renders the host's TOML configuration.
//
// A config file is merged over the embedded defaults (default.toml followed by
// the built-in providers' tables, returned parsed by [Default]): keys the file
// leaves out keep their default, and a [providers.<name>] table extends that
// provider's default entry. Decoding is strict: unknown keys, values of the
// wrong type and values out of range are errors, each reported as an [*Error]
// that names the file, the line and the dotted key path, several joined with
// [errors.Join] so a user sees every problem at once. After the file, the
// environment variables [EnvLogLevel] and [EnvDataDir] override their keys and
// are validated the same way.
//
// Secrets never live in the config: a provider setting whose key ends in _env
// names an environment variable, and [ProviderConfig.ResolveSecrets] reads it
// when the provider is configured. [Config.Masked] renders the effective
// configuration for `openhuman-host config check` with secret-looking values
// hidden.
package config
