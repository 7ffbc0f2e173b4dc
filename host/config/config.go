package config

import (
	"bytes"
	_ "embed"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"sort"
	"strconv"
	"time"

	"github.com/openhuman/openhuman-host/host/builtin"
	"github.com/openhuman/openhuman-host/sdk/embeddings"
)

// defaultTOML is the host's part of the documented default configuration;
// defaultText adds the built-in providers' parts to it.
//
//go:embed default.toml
var defaultTOML []byte

// defaultText returns the documented default configuration, which Default
// parses: default.toml, then the Manifest.DefaultConfig of every built-in
// provider registered ([builtin.Registered]) that has one, in registration
// order, each after a blank line. A new slice each call.
func defaultText() []byte {
	out := bytes.Clone(defaultTOML)
	for _, b := range builtin.Registered().Providers() {
		if frag := b.Manifest.DefaultConfig; frag != "" {
			out = append(out, '\n')
			out = append(out, frag...)
		}
	}
	return out
}

// DefaultSource is Config.Source for a configuration built from the embedded
// defaults alone.
const DefaultSource = "embedded defaults"

// Environment variables that override config keys after the file is applied.
// An empty value counts as unset. The built-in providers add their own
// ([sdk.Manifest].Env), applied after these.
const (
	// EnvLogLevel overrides server.log_level.
	EnvLogLevel = "OPENHUMAN_LOG_LEVEL"
	// EnvDataDir overrides server.data_dir.
	EnvDataDir = "OPENHUMAN_DATA_DIR"
	// EnvReplica overrides server.replica.
	EnvReplica = "OPENHUMAN_REPLICA"
)

// Values of server.transport.
const (
	TransportStdio = "stdio"
	TransportHTTP  = "http"
)

// Values of autonomy.level.
const (
	// LevelReadOnly allows read tools only.
	LevelReadOnly = "readonly"
	// LevelSupervised allows reads and acts within the configured limits.
	LevelSupervised = "supervised"
	// LevelFull allows reads and acts.
	LevelFull = "full"
)

// Values of autonomy.confirm_acts.
const (
	// ConfirmOff never asks the user before an act.
	ConfirmOff = "off"
	// ConfirmWhenSupported asks when the client can ask the user.
	ConfirmWhenSupported = "when_supported"
	// ConfirmRequired refuses acts the client cannot ask the user about,
	// and leaves them out of that client's tools/list and tool_search.
	ConfirmRequired = "required"
)

// Config is the host's effective configuration: the embedded defaults, then a
// config file, then environment overrides. Build it with Load, Parse or
// Default; a Config built by hand is not validated.
type Config struct {
	// Server holds the [server] table: transports, timeouts, logging, storage.
	Server ServerConfig
	// Autonomy holds the [autonomy] table: what tools may do.
	Autonomy AutonomyConfig
	// Audit holds the [audit] table.
	Audit AuditConfig
	// Storage holds the [storage] table: where the shared state lives.
	Storage StorageConfig
	// Telemetry holds the [telemetry] table: traces and metrics.
	Telemetry TelemetryConfig
	// Profiles holds every [profiles.<name>] table, keyed by name. Default
	// none: every client gets the [autonomy] policy and every tool.
	Profiles map[string]ProfileConfig
	// Tools holds every [tools.<name>] table, keyed by the tool's
	// advertised name. Default none: clients see what providers declare.
	Tools map[string]ToolOverride
	// Providers holds every [providers.<name>] table, enabled or not, keyed by
	// name. The defaults hold the built-in providers' tables of the embedded
	// default.toml.
	Providers map[string]ProviderConfig
	// Upstream holds the [upstream] table.
	Upstream UpstreamConfig
	// Discovery holds the [discovery] table: how tool_search ranks for
	// profiles with discovery = true.
	Discovery DiscoveryConfig
	// Source is the path of the file the config was loaded from, or
	// DefaultSource when no file was read.
	Source string
}

// ServerConfig is the [server] table.
type ServerConfig struct {
	// Transport is TransportStdio (default) or TransportHTTP.
	Transport string `toml:"transport"`
	// Host is the address the http transport listens on: an IP address or a
	// host name. Default "127.0.0.1".
	Host string `toml:"host"`
	// Port is the TCP port of the http transport, 1 to 65535. Default 9300.
	Port int `toml:"port"`
	// ToolTimeoutSecs bounds one tool call, in seconds, at least 1. Default 120.
	ToolTimeoutSecs int `toml:"tool_timeout_secs"`
	// ProviderStartTimeoutSecs bounds a provider's launch, handshake and
	// Describe, in seconds, at least 1. Default 10.
	ProviderStartTimeoutSecs int `toml:"provider_start_timeout_secs"`
	// LogLevel is "trace", "debug", "info", "warn" (default), "error" or "off".
	LogLevel string `toml:"log_level"`
	// DataDir is an absolute path, a path starting with "~/", or "" (default)
	// for the operating system's data directory ([DefaultDataDir]);
	// Config.DataDir resolves it.
	DataDir string `toml:"data_dir"`
	// MaxRequestBodyBytes caps an HTTP request body, at least 1. Default
	// 4194304 (4 MiB).
	MaxRequestBodyBytes int64 `toml:"max_request_body_bytes"`
	// SessionIdleTimeoutSecs closes an HTTP session idle this long, in
	// seconds; 0 never closes idle sessions. Default 600.
	SessionIdleTimeoutSecs int `toml:"session_idle_timeout_secs"`
	// StdioCloseGraceSecs is how long, in seconds, a stdio server lets tool
	// calls still running finish after the client closed its stdin (which
	// is how MCP clients shut a stdio server down); then they are
	// cancelled. 0 to 600; 0 cancels them at once. Default 10.
	StdioCloseGraceSecs int `toml:"stdio_close_grace_secs"`
	// StdioExitTimeoutSecs bounds, in seconds, how long a stdio server
	// that is shutting down (its calls cancelled, after
	// StdioCloseGraceSecs or a signal) takes to answer them and end:
	// halfway it stops waiting for their answers, and past it, its writes
	// still blocked on a client that no longer reads stdout, it stops its
	// providers and exits with status 1. 1 to 600. Default 10.
	StdioExitTimeoutSecs int `toml:"stdio_exit_timeout_secs"`
	// MaxSessions caps the MCP sessions open at once over HTTP, at least 1;
	// a client that would open one more gets 503 with Retry-After.
	// Default 256.
	MaxSessions int `toml:"max_sessions"`
	// MaxConnections caps the TCP connections the http transport holds at
	// once, at least 1; further clients wait in the kernel's accept queue
	// until one closes. Default 1024.
	MaxConnections int `toml:"max_connections"`
	// AllowedOrigins lists the browser origins ("scheme://host[:port]") the
	// http transport accepts besides loopback ones. Default empty: loopback
	// origins only.
	AllowedOrigins []string `toml:"allowed_origins"`
	// StructuredContentClients lists the MCP clients, by the
	// clientInfo.name they send in initialize (exact, case-sensitive),
	// that hand a tool result's structuredContent to their model (MCP
	// 2025-06-18 and later, server/tools "Structured Content"); "*"
	// names every client and then stands alone. Their results carry the
	// data once: a text block that repeats structuredContent as JSON
	// becomes a one-line note, providers are told through
	// sdk.Caller.ReadsStructuredContent and may send a one-line summary
	// instead of their text. Default empty: every client gets the full
	// text, which is what a client that reads only text needs.
	StructuredContentClients []string `toml:"structured_content_clients"`
	// Replica names this server among the replicas that share one
	// PostgreSQL database ([storage] driver = "postgres") behind a load
	// balancer: `providers status`, the http transport's /healthz answer
	// and its Openhuman-Replica response header show it. 1 to 64 of
	// [A-Za-z0-9._:@-]. Empty (default): [ServerConfig.ReplicaName]
	// makes one from the host name and the port.
	Replica string `toml:"replica"`
}

// ReplicaName returns the name of this server among replicas:
// [ServerConfig.Replica] when set, else the machine's host name and port
// (listening on port, "web1:9300"; port 0 or below, the host name alone).
func (s ServerConfig) ReplicaName(port int) string {
	if s.Replica != "" {
		return s.Replica
	}
	name, err := os.Hostname()
	if err != nil || name == "" {
		name = "localhost"
	}
	if port <= 0 {
		return name
	}
	return name + ":" + strconv.Itoa(port)
}

// ToolTimeout returns ToolTimeoutSecs as a duration.
func (s ServerConfig) ToolTimeout() time.Duration {
	return time.Duration(s.ToolTimeoutSecs) * time.Second
}

// ProviderStartTimeout returns ProviderStartTimeoutSecs as a duration.
func (s ServerConfig) ProviderStartTimeout() time.Duration {
	return time.Duration(s.ProviderStartTimeoutSecs) * time.Second
}

// SessionIdleTimeout returns SessionIdleTimeoutSecs as a duration; zero means
// sessions never expire.
func (s ServerConfig) SessionIdleTimeout() time.Duration {
	return time.Duration(s.SessionIdleTimeoutSecs) * time.Second
}

// StdioCloseGrace returns StdioCloseGraceSecs as a duration.
func (s ServerConfig) StdioCloseGrace() time.Duration {
	return time.Duration(s.StdioCloseGraceSecs) * time.Second
}

// StdioExitTimeout returns StdioExitTimeoutSecs as a duration.
func (s ServerConfig) StdioExitTimeout() time.Duration {
	return time.Duration(s.StdioExitTimeoutSecs) * time.Second
}

// AutonomyConfig is the [autonomy] table.
type AutonomyConfig struct {
	// Level is LevelReadOnly, LevelSupervised (default) or LevelFull.
	Level string `toml:"level"`
	// MaxActionsPerHour caps act tool calls in any sliding hour. Nil (the
	// default) means no limit; 0 refuses every act.
	MaxActionsPerHour *int `toml:"max_actions_per_hour"`
	// AllowedTools lists the tool names clients may call; empty (default)
	// allows all.
	AllowedTools []string `toml:"allowed_tools"`
	// DeniedTools lists tool names clients may never call; it wins over
	// AllowedTools. Default empty.
	DeniedTools []string `toml:"denied_tools"`
	// ConfirmActs is ConfirmOff (default), ConfirmWhenSupported or
	// ConfirmRequired.
	ConfirmActs string `toml:"confirm_acts"`
}

// AuditConfig is the [audit] table.
type AuditConfig struct {
	// RecordReads records read tool calls too; acts are always recorded.
	// Default true.
	RecordReads bool `toml:"record_reads"`
	// RetainDays is how many days audit rows are kept; 0 (default) keeps them
	// forever.
	RetainDays int `toml:"retain_days"`
	// QueueSize is how many audit rows may wait for the writer, at least 1;
	// beyond it rows of reads and outcomes of acts are dropped, counted and
	// logged (calls never wait; acts get their row before they run).
	// Default 1024.
	QueueSize int `toml:"queue_size"`
}

// ProfileConfig is one [profiles.<name>] table: what the clients of one
// profile may see and do. Keys it leaves out keep the [autonomy] values.
type ProfileConfig struct {
	// Name is the table's name: 1 to 32 of a-z, 0-9, _ and -, starting
	// with a letter or digit. Over HTTP the profile is served at
	// /profile/<name>.
	Name string `toml:"-"`
	// Level overrides [autonomy] level; "" keeps it.
	Level string `toml:"level"`
	// ConfirmActs overrides [autonomy] confirm_acts; "" keeps it.
	ConfirmActs string `toml:"confirm_acts"`
	// MaxActionsPerHour caps the acts of this profile's clients in any
	// sliding hour, counted over every replica and process on the same
	// audit log; [autonomy] max_actions_per_hour still caps all acts
	// together. Nil (default) adds no cap of its own; 0 refuses every act.
	MaxActionsPerHour *int `toml:"max_actions_per_hour"`
	// Tools lists the tool names or globs the profile serves, matched as
	// in [autonomy] allowed_tools; empty serves every tool [autonomy]
	// allows.
	Tools []string `toml:"tools"`
	// ExcludeTools lists tool names or globs the profile never serves; it
	// wins over Tools.
	ExcludeTools []string `toml:"exclude_tools"`
	// Resources lists the resource URIs, or globs of them in which * and ?
	// also match "/", the profile serves (resources/list and
	// resources/read); empty serves every resource.
	Resources []string `toml:"resources"`
	// ExcludeResources lists resource URIs or globs the profile never
	// serves; it wins over Resources.
	ExcludeResources []string `toml:"exclude_resources"`
	// Clients lists the MCP clients, by the clientInfo.name they send
	// (exact, case-sensitive), that get this profile when neither the
	// HTTP path (/profile/<name>) nor serve --profile chooses one. A client name may appear
	// in one profile only.
	Clients []string `toml:"clients"`
	// Discovery lists only PinnedTools and three tools to search the
	// catalog (tool_search), read a tool's definition (tool_describe) and
	// call it (tool_call), instead of every tool: for clients with large
	// catalogs. Default false.
	Discovery bool `toml:"discovery"`
	// PinnedTools are tool names or globs a Discovery profile still
	// lists, as in [autonomy] allowed_tools. Default none.
	PinnedTools []string `toml:"pinned_tools"`
}

// DiscoveryEmbeddingsTable names [DiscoveryConfig].Embeddings in
// messages.
const DiscoveryEmbeddingsTable = "[discovery.embeddings]"

// DiscoveryConfig is the [discovery] table: settings of progressive
// discovery shared by every profile with discovery = true.
type DiscoveryConfig struct {
	// Embeddings points tool_search at an OpenAI-compatible embeddings
	// endpoint: each served tool's name, title and description is
	// embedded in the background and each query when it is searched,
	// and the cosine ranking is fused with the keyword (BM25) ranking.
	// Its keys and bounds are those of [providers.memory.embeddings]
	// (base_url and model required; api_key_env names the variable
	// holding the key, which never goes in the file; batch_size 1..2048,
	// default 64; timeout_secs 1..600, default 30, also bounds embedding
	// one query; dimensions 0..16384, 0 the model's default); validation
	// applies the defaults. Nil (default): keyword ranking only.
	Embeddings *embeddings.Config `toml:"embeddings"`
}

// EmbeddingsAPIKey returns the value of the environment variable that
// [DiscoveryConfig].Embeddings api_key_env names, read with getenv (nil
// means os.Getenv): "" when no table, no api_key_env or an empty
// variable. It fails, naming the variable and never a value, when
// api_key_env is set but the variable is unset or empty.
func (d DiscoveryConfig) EmbeddingsAPIKey(getenv func(string) string) (string, error) {
	if d.Embeddings == nil || d.Embeddings.APIKeyEnv == "" {
		return "", nil
	}
	if getenv == nil {
		getenv = os.Getenv
	}
	name := d.Embeddings.APIKeyEnv
	if v := getenv(name); v != "" {
		return v, nil
	}
	return "", fmt.Errorf("%s api_key_env names the environment variable %s, which is unset or empty: set it to the API key, "+
		"or remove api_key_env for an endpoint that needs none", DiscoveryEmbeddingsTable, name)
}

// ToolOverride is one [tools.<name>] table: what clients are told about
// one tool in place of what its provider declares, such as an upstream
// server's description that misleads or steers the model. Unset keys keep
// the provider's. The annotations are hints to clients; the tool's policy
// class (read or act) stays the provider's.
type ToolOverride struct {
	// Name is the table's name: the tool's advertised name.
	Name string `toml:"-"`
	// Title replaces the tool's title, at most 128 characters.
	Title *string `toml:"title"`
	// Description replaces the tool's description, at most 8192
	// characters.
	Description *string `toml:"description"`
	// ReadOnlyHint replaces annotations.readOnlyHint.
	ReadOnlyHint *bool `toml:"read_only_hint"`
	// DestructiveHint replaces annotations.destructiveHint.
	DestructiveHint *bool `toml:"destructive_hint"`
	// IdempotentHint replaces annotations.idempotentHint.
	IdempotentHint *bool `toml:"idempotent_hint"`
	// OpenWorldHint replaces annotations.openWorldHint.
	OpenWorldHint *bool `toml:"open_world_hint"`
}

// Values of storage.driver.
const (
	// StorageSQLite keeps the audit log, the act budget and provider data
	// in SQLite files in the data directory: one machine.
	StorageSQLite = "sqlite"
	// StoragePostgres keeps the audit log, the act budget, the
	// single-use state records and the data of the built-in providers
	// that ask for the shared storage (sdk.Manifest.SharedStorage) in one
	// PostgreSQL database that several replicas share.
	StoragePostgres = "postgres"
)

// DefaultDSNEnv is the default storage.dsn_env.
const DefaultDSNEnv = "OPENHUMAN_POSTGRES_DSN"

// StorageConfig is the [storage] table.
type StorageConfig struct {
	// Driver is StorageSQLite (default) or StoragePostgres.
	Driver string `toml:"driver"`
	// DSNEnv names the environment variable that holds the PostgreSQL
	// connection string (a postgres:// URL or key=value list, as libpq
	// reads them); it is read only when Driver is StoragePostgres. The
	// string itself never goes in the file. Default DefaultDSNEnv.
	DSNEnv string `toml:"dsn_env"`
}

// DSN returns the PostgreSQL connection string from the environment
// variable DSNEnv names (a nil getenv means os.Getenv). It fails, naming
// the variable and never its value, when the variable is unset or empty.
func (s StorageConfig) DSN(getenv func(string) string) (string, error) {
	if getenv == nil {
		getenv = os.Getenv
	}
	name := s.DSNEnv
	if name == "" {
		name = DefaultDSNEnv
	}
	v := getenv(name)
	if v == "" {
		return "", fmt.Errorf("storage.driver is %q but the environment variable %s (storage.dsn_env) is unset or empty: "+
			"set it to the PostgreSQL connection string, such as postgres://openhuman@db.example:5432/openhuman?sslmode=verify-full",
			StoragePostgres, name)
	}
	return v, nil
}

// Values of telemetry.otlp_protocol.
const (
	// OTLPHTTP is OTLP over HTTP with protobuf bodies (port 4318).
	OTLPHTTP = "http/protobuf"
	// OTLPGRPC is OTLP over gRPC (port 4317).
	OTLPGRPC = "grpc"
)

// TelemetryConfig is the [telemetry] table: OpenTelemetry traces and
// metrics, all off by default. Spans and metrics never carry tool
// arguments, results or secrets. Changes take effect at the next start.
type TelemetryConfig struct {
	// Traces exports a span per MCP request and per tool call, continued
	// into provider processes and upstream servers, over OTLP. Default
	// false.
	Traces bool `toml:"traces"`
	// Metrics exports metrics over OTLP every MetricIntervalSecs. Default
	// false.
	Metrics bool `toml:"metrics"`
	// Prometheus serves the metrics in Prometheus's text format at
	// GET /metrics on the http transport, behind the same authentication
	// as MCP. Default false.
	Prometheus bool `toml:"prometheus"`
	// PrometheusListen, when set, serves GET /metrics on a listener of
	// its own instead, at a loopback address such as "127.0.0.1:9464"
	// (also for stdio servers), without authentication. Default "".
	PrometheusListen string `toml:"prometheus_listen"`
	// OTLPEndpoint is the OTLP receiver's base URL, such as
	// "http://127.0.0.1:4318"; "" (default) leaves it to
	// OTEL_EXPORTER_OTLP_ENDPOINT and the exporters' default. Headers
	// such as an API key come only from OTEL_EXPORTER_OTLP_HEADERS.
	OTLPEndpoint string `toml:"otlp_endpoint"`
	// OTLPProtocol is OTLPHTTP (default) or OTLPGRPC.
	OTLPProtocol string `toml:"otlp_protocol"`
	// SampleRatio is the fraction of traces starting here that are
	// recorded, 0 to 1; a client's sampled trace is always continued.
	// Default 1.
	SampleRatio float64 `toml:"sample_ratio"`
	// MetricIntervalSecs is how often metrics are exported over OTLP,
	// 1 to 3600 seconds. Default 60.
	MetricIntervalSecs int `toml:"metric_interval_secs"`
}

// UpstreamConfig is the [upstream] table.
type UpstreamConfig struct {
	// Process is where the provider that relays the servers runs:
	// [ProcessHost], [ProcessPlugin], or "" (the default) for what its
	// manifest says (sdk.Manifest.InProcess).
	Process string `toml:"process,omitempty"`
	// Servers holds the [[upstream.servers]] entries as decoded.
	Servers []map[string]any `toml:"servers"`
	// Checked holds the same entries, checked, in file order.
	Checked []UpstreamServer `toml:"-"`
}

// Default returns the embedded default configuration (default.toml and
// the built-in providers' tables, see defaultText) with Source set to
// DefaultSource. Environment overrides are not applied. Each
// call returns a fresh value the caller may modify.
func Default() *Config {
	c := &Config{Providers: map[string]ProviderConfig{}}
	if err := decodeInto(c, defaultText(), DefaultSource); err != nil {
		if len(builtin.Registered().Names()) == 0 {
			// The defaults name the built-in providers, which a program
			// registers by importing them.
			panic(fmt.Sprintf("config: embedded defaults are invalid: %v (no built-in provider is registered: "+
				"import _ \"github.com/openhuman/openhuman-host/internal/builtins\")", err))
		}
		panic(fmt.Sprintf("config: embedded defaults are invalid: %v", err))
	}
	c.Source = DefaultSource
	return c
}

// Load reads the config file at path, merges it over the defaults and applies
// the environment overrides. An empty path means DefaultPath if that file
// exists and the embedded defaults otherwise. A file that cannot be read
// (including an explicit path that does not exist; errors.Is(err,
// fs.ErrNotExist) then holds) is an error; invalid content yields one *Error
// per problem, joined.
func Load(path string) (*Config, error) {
	return load(path, osEnviron)
}

// Parse merges the TOML document data over the defaults and applies the
// environment overrides, exactly as Load does for a file. source names data
// in errors and becomes Config.Source; it is usually the file path.
func Parse(data []byte, source string) (*Config, error) {
	return parse(data, source, osEnviron)
}

// DefaultPath returns the config file path used when none is given:
// config.toml in the config directory, which follows the conventions of
// the operating system (see [DefaultConfigDir]). The file need not exist.
func DefaultPath() (string, error) {
	return defaultPath(osEnviron)
}

// DataDir returns the absolute data directory: server.data_dir with a leading
// "~/" expanded, or when it is empty the operating system's default (see
// [DefaultDataDir]). It does not create the directory. It fails when the
// home directory is needed and unknown, or when data_dir is relative.
func (c *Config) DataDir() (string, error) {
	return dataDir(c.Server.DataDir, osEnviron)
}

// EnabledProviders returns the enabled providers: built-ins first in
// BuiltinProviders order, then third-party providers sorted by name.
func (c *Config) EnabledProviders() []ProviderConfig {
	var out []ProviderConfig
	for _, name := range BuiltinProviders() {
		if p, ok := c.Providers[name]; ok && p.Enabled {
			out = append(out, p)
		}
	}
	var third []string
	for name, p := range c.Providers {
		if p.Enabled && !IsBuiltin(name) {
			third = append(third, name)
		}
	}
	sort.Strings(third)
	for _, name := range third {
		out = append(out, c.Providers[name])
	}
	return out
}

func load(path string, env environ) (*Config, error) {
	if path == "" {
		p, err := defaultPath(env)
		if err != nil {
			// No home directory (nor an XDG or Windows folder): no
			// default file can exist.
			return withEnv(Default(), env)
		}
		data, err := os.ReadFile(p)
		switch {
		case err == nil:
			return parse(data, p, env)
		case errors.Is(err, fs.ErrNotExist):
			return withEnv(Default(), env)
		default:
			return nil, fmt.Errorf("read config: %w", err)
		}
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read config: %w", err)
	}
	return parse(data, path, env)
}

func parse(data []byte, source string, env environ) (*Config, error) {
	// Some editors start UTF-8 files with a byte order mark; TOML does not
	// allow one, but it carries no meaning, so it is dropped.
	data = bytes.TrimPrefix(data, []byte("\xef\xbb\xbf"))
	c := Default()
	if err := decodeInto(c, data, source); err != nil {
		return nil, err
	}
	c.Source = source
	return withEnv(c, env)
}

// withEnv applies the environment overrides to c.
func withEnv(c *Config, env environ) (*Config, error) {
	if errs := applyEnv(c, env); len(errs) > 0 {
		return nil, joinErrors(errs)
	}
	return c, nil
}
