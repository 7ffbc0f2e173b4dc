package sdk

// Manifest is what a host knows about a built-in provider before it
// launches it: static facts, declared once in the provider's own package
// and read by the host's config, launch, catalog, server and audit code,
// none of which names a provider. A provider run as its own executable has
// no Manifest; everything the host learns of it comes from Configure and
// Describe. The zero value of every field but Name means "none".
type Manifest struct {
	// Name is the provider's name, ^[a-z][a-z0-9_-]{0,31}$: the <name> of
	// its [providers.<name>] table, of `openhuman-host provider <name>` and
	// of its data directory (<data dir>/<name>). Required, and unique among
	// the built-ins.
	Name string
	// Summary says in a few words what the provider gives a client ("a
	// personal memory store"), for the host's MCP instructions; "" for
	// none.
	Summary string
	// Instructions is guidance for the client's model about the
	// provider's tools, whole sentences, which the host's MCP instructions
	// carry after the summaries; "" for none.
	Instructions string
	// Namespaces are prefixes of advertised tool and prompt names that
	// only this provider may serve, each ending in "_" ("notes_"). A name
	// whose prefix is followed by a second "_" ("notes__x") is outside the
	// namespace. Names are unique among the built-ins; nil for none.
	Namespaces []string
	// Section, when set, is the host's own config section the provider's
	// settings are built from ("[[upstream.servers]]"), for a provider
	// that has no [providers.<name>] table: its name is then reserved and
	// no table may use it. "" (the default) for a provider configured by
	// its [providers.<name>] table.
	Section string
	// Env are environment variables that override keys of the provider's
	// [providers.<name>] table after the config file is applied, in this
	// order. Variable names are unique among the built-ins; nil for none.
	Env []EnvOverride
	// DefaultConfig is the provider's part of the host's documented
	// default configuration: a TOML document, ending in a newline, whose
	// only table is the provider's [providers.<Name>] (sub-tables of it
	// included), with each key set to its default or shown commented out,
	// and comments that say what the keys do. The host appends the
	// built-ins' fragments to its own defaults in registration order, each
	// after one blank line, and merges a config file over the result; its
	// keys are the provider's settings, as those of a config file's table
	// are. Only a provider without a Section may have one. "" (the
	// default) for none: the provider then runs only when the config file
	// has its table.
	DefaultConfig string
	// PassEnv names variables of the host's environment that the
	// provider's process gets besides the few every provider gets; nil for
	// none.
	PassEnv []string
	// SharedStorage gives the provider the host's shared storage: with
	// [storage] driver = "postgres" the host passes the driver and the
	// connection string as the secrets [SecretStorageDriver] and
	// [SecretStorageDSN], so that every replica's provider keeps its data
	// in the one database. False (the default) passes neither: the
	// connection string is the shared database's credential.
	SharedStorage bool
	// ConfigDir, when set, is a directory of files the provider reads at
	// Configure; nil for none.
	ConfigDir *ConfigDir
	// Audit says which argument and result values the audit rows of tool
	// calls keep.
	Audit AuditRules
	// InProcess makes the host run the provider in its own process by
	// default, calling it directly, instead of as a plugin process: for a
	// provider that sits on the path of many calls and mostly waits on
	// others (the upstream relay), where the plugin process's gRPC hop
	// costs more than the provider's own work. The operator's setting
	// wins ([providers.<name>] process, or the section's, such as
	// [upstream] process). Such a provider uses the environment of its
	// Configure request ([ConfigureRequest.Environ]), never the
	// process's. False (the default) runs it as a plugin process, isolated
	// from the host.
	InProcess bool
}

// ConfigDir is a directory of files a built-in provider reads, such as
// definitions its users write. The host fingerprints the files' names,
// sizes and modification times, so that a config reload starts the
// provider again when they change, and reserves Default as a provider
// name, since on macOS the config and data directories are one.
type ConfigDir struct {
	// Setting is the key of the provider's table that names the
	// directory ("definitions_dir"). Required.
	Setting string
	// Default is the directory's name in the config file's directory,
	// used when Setting is unset ("definitions"). Required.
	Default string
	// Holds says what the directory holds, for messages ("the
	// definitions"). Required.
	Holds string
}

// EnvKind is how an [EnvOverride] reads and checks its variable.
type EnvKind int

const (
	// EnvString takes the value as it is.
	EnvString EnvKind = iota
	// EnvBool takes true or false (also 1/0, yes/no, on/off, in any
	// case).
	EnvBool
	// EnvInt takes a whole decimal number; the provider checks its range.
	EnvInt
	// EnvURL takes an http or https URL with a host.
	EnvURL
)

// EnvOverride is an environment variable that overrides one key of a
// built-in provider's [providers.<name>] table. An empty value counts as
// unset. A value that does not read as Kind is a config error naming the
// variable and the key.
type EnvOverride struct {
	// Var is the variable's name ("OPENHUMAN_NOTES_URL"). Required.
	Var string
	// Key is the key it overrides. "enabled" with Kind EnvBool enables
	// or disables the provider; any other key is a provider setting.
	// Required.
	Key string
	// Kind is how the value is read; default EnvString.
	Kind EnvKind
	// Example is a value shown in the message that refuses a bad one,
	// such as "http://127.0.0.1:8888" for an EnvURL; "" shows none.
	Example string
}

// AuditRules say which values of a provider's tool calls audit rows keep.
// Argument values not named here are reduced to their length or count;
// see the host's audit package for the whole rule. The host applies the
// rules of all built-ins together to every tool, and keeps each value cut
// short.
type AuditRules struct {
	// Identifiers are argument keys whose string values identify things
	// or are small ("namespace", "document_id"), kept as they are; nil for
	// none.
	Identifiers []string
	// Lists are argument keys whose lists of strings ("tags") are kept;
	// nil for none.
	Lists []string
	// ResultRefs are keys of a result's structured content whose string
	// value names what the call touched ("document_id"), tried in order
	// for the row's result reference when the result sets no
	// [CallToolResult].AuditRef; nil for none.
	ResultRefs []string
}

// Secrets the host passes a provider whose [Manifest].SharedStorage is
// set, when the host keeps its state in PostgreSQL ([storage] driver =
// "postgres").
const (
	// SecretStorageDriver is the storage driver: "postgres".
	SecretStorageDriver = "storage.driver"
	// SecretStorageDSN is the PostgreSQL connection string.
	SecretStorageDSN = "storage.dsn"
)
