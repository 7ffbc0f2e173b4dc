package config

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"runtime"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/pelletier/go-toml/v2"

	"github.com/openhuman/openhuman-host/host/builtin"
)

const testSHA = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

// lines joins TOML lines so that the line numbers in a test are the element
// positions (1-based).
func lines(ls ...string) string {
	return strings.Join(ls, "\n") + "\n"
}

// wantDefault is the documented default configuration, written out.
func wantDefault() *Config {
	return &Config{
		Server: ServerConfig{
			Transport:                "stdio",
			Host:                     "127.0.0.1",
			Port:                     9300,
			ToolTimeoutSecs:          120,
			ProviderStartTimeoutSecs: 10,
			LogLevel:                 "warn",
			DataDir:                  "",
			MaxRequestBodyBytes:      4194304,
			SessionIdleTimeoutSecs:   600,
			StdioCloseGraceSecs:      10,
			StdioExitTimeoutSecs:     10,
			MaxSessions:              256,
			MaxConnections:           1024,
			AllowedOrigins:           []string{},
		},
		Autonomy: AutonomyConfig{
			Level:             "supervised",
			MaxActionsPerHour: nil,
			AllowedTools:      []string{},
			DeniedTools:       []string{},
			ConfirmActs:       "off",
		},
		Audit:     AuditConfig{RecordReads: true, RetainDays: 0, QueueSize: 1024},
		Storage:   StorageConfig{Driver: StorageSQLite, DSNEnv: DefaultDSNEnv},
		Telemetry: TelemetryConfig{OTLPProtocol: OTLPHTTP, SampleRatio: 1, MetricIntervalSecs: 60},
		Providers: map[string]ProviderConfig{
			"memory":  {Name: "memory", Enabled: true},
			"agent":   {Name: "agent", Enabled: true},
			"searxng": {Name: "searxng", Enabled: false},
		},
		Source: DefaultSource,
	}
}

// noEnv is an environment with no variables and the home directory home
// ("" for none).
func noEnv(home string) environ {
	return fakeEnv(nil, home)
}

// fakeEnv is an environment with vars and home, following Linux
// conventions.
func fakeEnv(vars map[string]string, home string) environ {
	return environ{
		goos:   "linux",
		getenv: func(k string) string { return vars[k] },
		home: func() (string, error) {
			if home == "" {
				return "", errors.New("$HOME is not defined")
			}
			return home, nil
		},
	}
}

// mustParse parses doc as the file source in an environment with no
// variables and the home directory /home/u, failing the test on an error.
func mustParse(t *testing.T, doc, source string) *Config {
	t.Helper()
	c, err := parse([]byte(doc), source, noEnv("/home/u"))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// errorStrings flattens a joined error into its parts' messages, checking
// each part is an *Error.
func errorStrings(t *testing.T, err error) []string {
	t.Helper()
	if err == nil {
		return nil
	}
	parts := []error{err}
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		parts = j.Unwrap()
	}
	var out []string
	for _, e := range parts {
		var ce *Error
		if !errors.As(e, &ce) {
			t.Errorf("error %q is a %T, want *Error", e, e)
		}
		out = append(out, e.Error())
	}
	return out
}

func intPtr(i int) *int { return &i }

func TestDefault(t *testing.T) {
	t.Parallel()
	got := Default()
	if diff := cmp.Diff(wantDefault(), got, cmpopts.EquateEmpty()); diff != "" {
		t.Errorf("Default() mismatch (-want +got):\n%s", diff)
	}
	// Each call is independent: changing one result leaves the next intact.
	got.Autonomy.AllowedTools = append(got.Autonomy.AllowedTools, "x")
	got.Providers["memory"] = ProviderConfig{Name: "memory"}
	if diff := cmp.Diff(wantDefault(), Default(), cmpopts.EquateEmpty()); diff != "" {
		t.Errorf("second Default() mismatch (-want +got):\n%s", diff)
	}
}

// TestDefaultTOMLDocumentsEveryKey keeps default.toml in step with the
// schema: every key appears, set or commented out, in a paragraph that opens
// with a comment.
func TestDefaultTOMLDocumentsEveryKey(t *testing.T) {
	t.Parallel()
	sections := map[string]reflect.Type{
		"server":   reflect.TypeFor[ServerConfig](),
		"autonomy": reflect.TypeFor[AutonomyConfig](),
		"audit":    reflect.TypeFor[AuditConfig](),
	}
	text := string(defaultTOML)
	for section, typ := range sections {
		start := strings.Index(text, "\n["+section+"]\n")
		if start < 0 {
			t.Fatalf("default.toml has no [%s] table", section)
		}
		body := text[start+len(section)+4:]
		if end := strings.Index(body, "\n\n["); end >= 0 {
			body = body[:end]
		}
		paragraphs := strings.Split(body, "\n\n")
		for _, key := range fieldKeys(typ) {
			keyLine := regexp.MustCompile(`(?m)^(# )?` + regexp.QuoteMeta(key) + ` = `)
			found := false
			for _, para := range paragraphs {
				if keyLine.MatchString(para) {
					found = true
					if !strings.HasPrefix(para, "#") {
						t.Errorf("default.toml: [%s] %s has no comment", section, key)
					}
				}
			}
			if !found {
				t.Errorf("default.toml: [%s] %s is missing", section, key)
			}
		}
	}
}

// TestHostDefaultsNameNoBuiltin keeps the host's part of the defaults
// free of the built-in providers, whose tables and tool names live in
// their own packages: default.toml has no [providers.<name>] table and no
// word in a built-in's namespace, and the composed defaults are it
// followed by the built-ins' tables in registration order.
func TestHostDefaultsNameNoBuiltin(t *testing.T) {
	t.Parallel()
	var doc map[string]any
	if err := toml.Unmarshal(defaultTOML, &doc); err != nil {
		t.Fatal(err)
	}
	if p, ok := doc["providers"]; ok {
		t.Errorf("default.toml has [providers] tables: %v", p)
	}
	want := string(defaultTOML)
	for _, b := range builtin.Registered().Providers() {
		m := b.Manifest
		for _, ns := range m.Namespaces {
			if re := regexp.MustCompile(`\b` + regexp.QuoteMeta(ns) + `\w+`); re.MatchString(string(defaultTOML)) {
				t.Errorf("default.toml names %q, in the namespace of built-in provider %s", re.FindString(string(defaultTOML)), m.Name)
			}
		}
		if strings.Contains(string(defaultTOML), "[providers."+m.Name) {
			t.Errorf("default.toml names [providers.%s], a built-in provider's table", m.Name)
		}
		if m.DefaultConfig != "" {
			want += "\n" + m.DefaultConfig
		}
	}
	if got := string(defaultText()); got != want {
		t.Errorf("defaultText() is not default.toml followed by the built-ins' tables:\n%s", got)
	}
}

func TestParseMergesOverDefaults(t *testing.T) {
	t.Parallel()
	tests := map[string]struct {
		doc  string
		want func(c *Config)
	}{
		"empty file keeps every default": {
			doc:  "",
			want: func(c *Config) {},
		},
		"server keys override, the others keep their default": {
			doc: lines(
				"[server]",
				`transport = "http"`,
				"port = 9400",
				`allowed_origins = ["https://inspector.example.com", "http://localhost:6274"]`,
				`data_dir = "~/oh-data"`,
				`structured_content_clients = ["claude-code", "Claude Desktop"]`,
			),
			want: func(c *Config) {
				c.Server.Transport = "http"
				c.Server.Port = 9400
				c.Server.AllowedOrigins = []string{"https://inspector.example.com", "http://localhost:6274"}
				c.Server.DataDir = "~/oh-data"
				c.Server.StructuredContentClients = []string{"claude-code", "Claude Desktop"}
			},
		},
		"every client reads structured content": {
			doc:  lines("[server]", `structured_content_clients = ["*"]`),
			want: func(c *Config) { c.Server.StructuredContentClients = []string{"*"} },
		},
		"autonomy lists replace and an unlimited budget becomes zero": {
			doc: lines(
				"[autonomy]",
				`level = "readonly"`,
				"max_actions_per_hour = 0",
				`allowed_tools = ["notes_search", "notes_recall"]`,
				`confirm_acts = "off"`,
			),
			want: func(c *Config) {
				c.Autonomy.Level = "readonly"
				c.Autonomy.MaxActionsPerHour = intPtr(0)
				c.Autonomy.AllowedTools = []string{"notes_search", "notes_recall"}
			},
		},
		"audit with dotted keys": {
			doc:  lines("audit.record_reads = false", "audit.retain_days = 30", "audit.queue_size = 16"),
			want: func(c *Config) { c.Audit = AuditConfig{RecordReads: false, RetainDays: 30, QueueSize: 16} },
		},
		"a provider table without enabled enables its provider": {
			doc: lines(
				"[providers.searxng]",
				`base_url = "http://127.0.0.1:8888"`,
				"timeout_secs = 5",
			),
			want: func(c *Config) {
				c.Providers["searxng"] = ProviderConfig{Name: "searxng", Enabled: true, Settings: map[string]any{
					"base_url":     "http://127.0.0.1:8888",
					"timeout_secs": int64(5),
				}}
			},
		},
		"enabled = false disables a default provider": {
			doc: lines("[providers.memory]", "enabled = false"),
			want: func(c *Config) {
				c.Providers["memory"] = ProviderConfig{Name: "memory", Enabled: false}
			},
		},
		"nested provider tables become nested settings": {
			doc: lines(
				"[providers.memory.embeddings]",
				`base_url = "https://api.openai.com/v1"`,
				`model = "text-embedding-3-small"`,
				`api_key_env = "OPENAI_API_KEY"`,
				"",
				"[providers.agent]",
				"llm = { model = \"gpt-4.1\", temperature = 0.2, max_tokens = 4096, stop = [\"END\"] }",
			),
			want: func(c *Config) {
				c.Providers["memory"] = ProviderConfig{Name: "memory", Enabled: true, Settings: map[string]any{
					"embeddings": map[string]any{
						"base_url":    "https://api.openai.com/v1",
						"model":       "text-embedding-3-small",
						"api_key_env": "OPENAI_API_KEY",
					},
				}}
				c.Providers["agent"] = ProviderConfig{Name: "agent", Enabled: true, Settings: map[string]any{
					"llm": map[string]any{"model": "gpt-4.1", "temperature": 0.2, "max_tokens": int64(4096), "stop": []any{"END"}},
				}}
			},
		},
		"third-party provider": {
			doc: lines(
				"[providers.weather]",
				`command = "/opt/weather/provider"`,
				`args = ["--units", "metric"]`,
				`sha256 = "`+testSHA+`"`,
				"enabled = false",
				`api_key_env = "WEATHER_KEY"`,
				"start_timeout_secs = 30",
				"tool_timeout_secs = 900",
			),
			want: func(c *Config) {
				c.Providers["weather"] = ProviderConfig{
					Name:             "weather",
					Enabled:          false,
					Command:          "/opt/weather/provider",
					Args:             []string{"--units", "metric"},
					SHA256:           testSHA,
					StartTimeoutSecs: 30,
					ToolTimeoutSecs:  900,
					Settings:         map[string]any{"api_key_env": "WEATHER_KEY"},
				}
			},
		},
		"empty upstream is accepted": {
			doc:  lines("[upstream]", "servers = []"),
			want: func(c *Config) { c.Upstream.Servers = []map[string]any{} },
		},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			want := wantDefault()
			tt.want(want)
			want.Source = "config.toml"
			got, err := parse([]byte(tt.doc), "config.toml", noEnv("/home/u"))
			if err != nil {
				t.Fatalf("parse: %v", err)
			}
			if diff := cmp.Diff(want, got, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("config mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

// TestProviderMergesOverDefaultEntry covers a default entry with settings:
// file tables merge into them key by key and the default stays untouched.
func TestProviderMergesOverDefaultEntry(t *testing.T) {
	t.Parallel()
	base := ProviderConfig{Name: "agent", Enabled: false, Settings: map[string]any{
		"llm":     map[string]any{"model": "small", "base_url": "https://llm.example/v1"},
		"servers": []any{map[string]any{"url": "a"}},
		"retries": int64(2),
	}}
	baseCopy := cloneTable(base.Settings)
	table := map[string]any{
		"llm":     map[string]any{"model": "large"},
		"servers": []any{map[string]any{"url": "b"}},
		"verbose": true,
	}
	d := &decoder{source: "config.toml", ix: indexPositions(nil)}
	got := d.provider("agent", base, table)
	want := ProviderConfig{Name: "agent", Enabled: true, Settings: map[string]any{
		"llm":     map[string]any{"model": "large", "base_url": "https://llm.example/v1"},
		"servers": []any{map[string]any{"url": "b"}},
		"retries": int64(2),
		"verbose": true,
	}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("merged provider mismatch (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(baseCopy, base.Settings); diff != "" {
		t.Errorf("default settings changed (-want +got):\n%s", diff)
	}
	if len(d.errs) != 0 {
		t.Errorf("unexpected errors: %v", d.errs)
	}
}

func TestParseErrors(t *testing.T) {
	t.Parallel()
	const serverKeys = "allowed_origins, data_dir, host, log_level, max_connections, max_request_body_bytes, max_sessions, port, provider_start_timeout_secs, replica, session_idle_timeout_secs, stdio_close_grace_secs, stdio_exit_timeout_secs, structured_content_clients, tool_timeout_secs, transport"
	tests := map[string]struct {
		doc  string
		want []string
	}{
		"unknown top-level key": {
			doc:  lines(`log_level = "debug"`),
			want: []string{"config.toml:1: log_level: unknown key; valid top-level tables are audit, autonomy, discovery, profiles, providers, server, storage, telemetry, tools, upstream"},
		},
		"durations that would overflow": {
			doc: lines("[server]", "tool_timeout_secs = 18446744074", "provider_start_timeout_secs = 601", "session_idle_timeout_secs = 2592001",
				"stdio_close_grace_secs = 601", "stdio_exit_timeout_secs = 0"),
			want: []string{
				"config.toml:2: server.tool_timeout_secs: must be between 1 and 86400; got 18446744074",
				"config.toml:3: server.provider_start_timeout_secs: must be between 1 and 600; got 601",
				"config.toml:4: server.session_idle_timeout_secs: must be between 0 and 2592000; got 2592001",
				"config.toml:5: server.stdio_close_grace_secs: must be between 0 and 600; got 601",
				"config.toml:6: server.stdio_exit_timeout_secs: must be between 1 and 600; got 0",
			},
		},
		"bad tool pattern": {
			doc:  lines("[autonomy]", `denied_tools = ["pages.*", "[abc"]`),
			want: []string{`config.toml:2: autonomy.denied_tools[1]: "[abc" is not a valid pattern (* ? [a-z] as in path.Match; tool names are case-sensitive)`},
		},
		"unknown top-level table": {
			doc:  lines("[server]", "port = 9301", "", "[logging]", `level = "debug"`),
			want: []string{"config.toml:4: logging: unknown key; valid top-level tables are audit, autonomy, discovery, profiles, providers, server, storage, telemetry, tools, upstream"},
		},
		"discovery embeddings without base_url": {
			doc:  lines("[discovery.embeddings]", `model = "text-embedding-3-small"`),
			want: []string{`config.toml:1: discovery.embeddings.base_url: is required, e.g. base_url = "https://api.openai.com/v1"`},
		},
		"discovery embeddings with a key in api_key_env": {
			doc: lines("[discovery.embeddings]", `base_url = "https://api.openai.com/v1"`, `model = "m"`, `api_key_env = "sk-proj-abc123"`),
			want: []string{"config.toml:4: discovery.embeddings.api_key_env: must be the name of an environment variable holding the key " +
				"(letters, digits and _, not starting with a digit, e.g. OPENAI_API_KEY), not the key itself"},
		},
		"discovery embeddings out of range": {
			doc:  lines("[discovery]", "embeddings = { base_url = \"http://127.0.0.1:11434/v1\", model = \"m\", timeout_secs = 601 }"),
			want: []string{"config.toml:2: discovery.embeddings.timeout_secs: must be between 1 and 600, got 601"},
		},
		"discovery embeddings with a password in base_url": {
			doc:  lines("[discovery.embeddings]", `base_url = "https://u:sk-pass@api.example.com/v1"`, `model = "m"`),
			want: []string{"config.toml:2: discovery.embeddings.base_url: must not contain a user name or password; name the environment variable holding the API key in api_key_env"},
		},
		"discovery embeddings with a wrong type": {
			doc:  lines("[discovery.embeddings]", `base_url = "https://api.openai.com/v1"`, `model = "m"`, `batch_size = "64"`),
			want: []string{"config.toml:4: discovery.embeddings.batch_size: must be an integer; got a string"},
		},
		"unknown key in discovery embeddings": {
			doc:  lines("[discovery.embeddings]", `base_url = "https://api.openai.com/v1"`, `model = "m"`, `api_key = "sk-live"`),
			want: []string{"config.toml:4: discovery.embeddings.api_key: unknown key; valid keys in [discovery.embeddings] are api_key_env, base_url, batch_size, dimensions, model, timeout_secs"},
		},
		"unknown nested key": {
			doc:  lines("[autonomy]", `level = "full"`, "max_actions = 5"),
			want: []string{"config.toml:3: autonomy.max_actions: unknown key; valid keys in [autonomy] are allowed_tools, confirm_acts, denied_tools, level, max_actions_per_hour"},
		},
		"unknown dotted key is reported once, at its first line": {
			doc:  lines("[server]", `tls.cert = "a.pem"`, `tls.key = "a.key"`),
			want: []string{"config.toml:2: server.tls: unknown key; valid keys in [server] are " + serverKeys},
		},
		"unknown key in an inline table": {
			doc:  lines("", "audit = { record_reads = false, rotate = true }"),
			want: []string{"config.toml:2: audit.rotate: unknown key; valid keys in [audit] are queue_size, record_reads, retain_days"},
		},
		"unknown key under upstream": {
			doc:  lines("[upstream]", "timeout = 3"),
			want: []string{"config.toml:2: upstream.timeout: unknown key; valid keys in [upstream] are process, servers"},
		},
		"bad enum value names key and line": {
			doc: lines(
				"# My config.",
				"[server]",
				`transport = "stdio"`,
				"",
				"[audit]",
				"record_reads = true",
				"",
				"# Be careful.",
				"[autonomy]",
				`allowed_tools = []`,
				"",
				`level = "bogus"`,
			),
			want: []string{`config.toml:12: autonomy.level: must be one of readonly, supervised, full; got "bogus"`},
		},
		"other enums": {
			doc: lines(
				"[server]",
				`transport = "sse"`,
				`log_level = "verbose"`,
				"[autonomy]",
				`confirm_acts = "always"`,
			),
			want: []string{
				`config.toml:2: server.transport: must be one of stdio, http; got "sse"`,
				`config.toml:3: server.log_level: must be one of trace, debug, info, warn, error, off; got "verbose"`,
				`config.toml:5: autonomy.confirm_acts: must be one of off, when_supported, required; got "always"`,
			},
		},
		"port zero": {
			doc:  lines("[server]", "port = 0"),
			want: []string{"config.toml:2: server.port: must be between 1 and 65535; got 0"},
		},
		"port too large": {
			doc:  lines("[server]", "port = 65536"),
			want: []string{"config.toml:2: server.port: must be between 1 and 65535; got 65536"},
		},
		"port beyond 64 bits": {
			doc:  lines("[server]", "", "port = 99999999999999999999"),
			want: []string{"config.toml:3: server.port: decimal number is too large to fit in a 64-bit signed integer"},
		},
		"negative and zero numbers": {
			doc: lines(
				"[server]",
				"tool_timeout_secs = -1",
				"provider_start_timeout_secs = 0",
				"max_request_body_bytes = 0",
				"session_idle_timeout_secs = -5",
				"[autonomy]",
				"max_actions_per_hour = -1",
				"[audit]",
				"retain_days = -1",
				"queue_size = 0",
			),
			want: []string{
				"config.toml:2: server.tool_timeout_secs: must be between 1 and 86400; got -1",
				"config.toml:3: server.provider_start_timeout_secs: must be between 1 and 600; got 0",
				"config.toml:4: server.max_request_body_bytes: must be at least 1; got 0",
				"config.toml:5: server.session_idle_timeout_secs: must be between 0 and 2592000; got -5",
				"config.toml:7: autonomy.max_actions_per_hour: must be at least 0; got -1",
				"config.toml:9: audit.retain_days: must be at least 0; got -1",
				"config.toml:10: audit.queue_size: must be at least 1; got 0",
			},
		},
		"string where an integer belongs": {
			doc:  lines("[server]", `port = "9300"`),
			want: []string{"config.toml:2: server.port: must be an integer; got a string"},
		},
		"float where an integer belongs": {
			doc:  lines("[autonomy]", "max_actions_per_hour = 2.5"),
			want: []string{"config.toml:2: autonomy.max_actions_per_hour: must be an integer; got a float"},
		},
		"integer where a string belongs": {
			doc:  lines("[autonomy]", "level = 3"),
			want: []string{"config.toml:2: autonomy.level: must be a string; got an integer"},
		},
		"string where a boolean belongs": {
			doc:  lines("[audit]", `record_reads = "yes"`),
			want: []string{"config.toml:2: audit.record_reads: must be a boolean; got a string"},
		},
		"string where an array belongs": {
			doc:  lines("[autonomy]", `denied_tools = "notes_store"`),
			want: []string{"config.toml:2: autonomy.denied_tools: must be an array of strings; got a string"},
		},
		"array element of the wrong type names the element and its line": {
			doc:  lines("[autonomy]", "allowed_tools = [", `  "notes_search",`, "  7,", "]"),
			want: []string{"config.toml:4: autonomy.allowed_tools[1]: must be a string; got an integer"},
		},
		"integer where a table belongs": {
			doc:  lines("autonomy = 1"),
			want: []string{"config.toml:1: autonomy: must be a table; got an integer"},
		},
		"bad strings": {
			doc: lines(
				"[server]",
				`host = "http://localhost"`,
				`data_dir = "data"`,
				"allowed_origins = [",
				`  "https://ok.example:8443",`,
				`  "https://bad.example/path",`,
				"]",
				"[autonomy]",
				`allowed_tools = ["notes_search", ""]`,
				`denied_tools = [" notes_store"]`,
			),
			want: []string{
				`config.toml:2: server.host: must be an IP address or host name, such as 127.0.0.1 or localhost; got "http://localhost"`,
				`config.toml:3: server.data_dir: must be an absolute path, a path starting with ~/, or empty for the default; got "data"`,
				`config.toml:6: server.allowed_origins[1]: must be an origin: http or https, a host and an optional port, such as https://example.com:8443; got "https://bad.example/path"`,
				`config.toml:9: autonomy.allowed_tools[1]: tool names must be non-empty without surrounding spaces; got ""`,
				`config.toml:10: autonomy.denied_tools[0]: tool names must be non-empty without surrounding spaces; got " notes_store"`,
			},
		},
		"structured content clients that could never match, or repeat": {
			doc: lines(
				"[server]",
				"structured_content_clients = [",
				`  "claude-code",`,
				`  "",`,
				`  " cursor",`,
				`  "bad\u0007name",`,
				`  "claude-code",`,
				`  "`+strings.Repeat("n", 129)+`",`,
				`  "`+strings.Repeat("n", 128)+`",`,
				"]",
			),
			want: []string{
				`config.toml:4: server.structured_content_clients[1]: client names must be non-empty without surrounding spaces, as the client sends clientInfo.name; got ""`,
				`config.toml:5: server.structured_content_clients[2]: client names must be non-empty without surrounding spaces, as the client sends clientInfo.name; got " cursor"`,
				`config.toml:6: server.structured_content_clients[3]: client names cannot hold control characters or invalid UTF-8, which the host drops from the names clients send; got "bad\aname"`,
				`config.toml:7: server.structured_content_clients[4]: "claude-code" is listed twice (first at [0]); remove one`,
				`config.toml:8: server.structured_content_clients[5]: client names are at most 128 characters (the host cuts longer ones, so this one could never match); got 129`,
			},
		},
		"every client and a name besides": {
			doc: lines("[server]", `structured_content_clients = ["*", "claude-code"]`),
			want: []string{
				`config.toml:2: server.structured_content_clients[0]: "*" names every client; list it alone or remove it`,
			},
		},
		"structured content clients not a list": {
			doc:  lines("[server]", `structured_content_clients = "claude-code"`),
			want: []string{`config.toml:2: server.structured_content_clients: must be an array of strings; got a string`},
		},
		// A missing sha256 is the provider's load failure, not the
		// config's: the host refuses it with the file's actual hash.
		"third-party provider without command": {
			doc: lines("[providers.memory]", "enabled = true", "", "[providers.weather]", `units = "metric"`),
			want: []string{
				"config.toml:4: providers.weather.command: required for a third-party provider: the path of its executable (built-in providers are memory, agent, searxng)",
			},
		},
		"per-provider timeouts out of range or mistyped": {
			doc: lines("[providers.memory]", "start_timeout_secs = 0", "tool_timeout_secs = 86401", "[providers.searxng]", `tool_timeout_secs = "60"`),
			want: []string{
				"config.toml:2: providers.memory.start_timeout_secs: must be between 1 and 600; got 0",
				"config.toml:3: providers.memory.tool_timeout_secs: must be between 1 and 86400; got 86401",
				"config.toml:5: providers.searxng.tool_timeout_secs: must be an integer number of seconds; got a string",
			},
		},
		"third-party provider with a bad sha256 and an empty command": {
			doc: lines(
				"[providers.weather]",
				`command = ""`,
				`sha256 = "`+strings.ToUpper(testSHA)+`"`,
			),
			want: []string{
				"config.toml:2: providers.weather.command: required for a third-party provider: the path of its executable (built-in providers are memory, agent, searxng)",
				`config.toml:3: providers.weather.sha256: must be 64 lowercase hex digits (the output of sha256sum); got "` + strings.ToUpper(testSHA) + `"`,
			},
		},
		"third-party provider keys of the wrong type": {
			doc: lines(
				"[providers.weather]",
				"command = 42",
				"sha256 = true",
				`args = ["--units", 1]`,
				`enabled = "yes"`,
			),
			want: []string{
				"config.toml:2: providers.weather.command: must be a string; got an integer",
				"config.toml:3: providers.weather.sha256: must be a string; got a boolean",
				"config.toml:4: providers.weather.args[1]: must be a string; got an integer",
				"config.toml:5: providers.weather.enabled: must be a boolean; got a string",
			},
		},
		"built-in provider with command, args and sha256": {
			doc: lines(
				"[providers.agent]",
				`command = "/usr/bin/agent"`,
				`args = ["-v"]`,
				`sha256 = "`+testSHA+`"`,
			),
			want: []string{
				"config.toml:2: providers.agent.command: built-in providers (memory, agent, searxng) run inside openhuman-host and take no command; remove the key, or rename the table for a third-party provider",
				"config.toml:3: providers.agent.args: built-in providers (memory, agent, searxng) take no args; remove the key",
				"config.toml:4: providers.agent.sha256: built-in providers (memory, agent, searxng) take no sha256; remove the key",
			},
		},
		"process settings": {
			doc: lines(
				"[providers.agent]",
				`process = "thread"`,
				"[providers.weather]",
				`command = "/opt/w"`,
				`sha256 = "`+testSHA+`"`,
				`process = "host"`,
				"[upstream]",
				`process = "separate"`,
			),
			want: []string{
				"config.toml:2: providers.agent.process: must be \"host\" (in the host's process) or \"plugin\" (a process of its own); got \"thread\"",
				"config.toml:6: providers.weather.process: third-party providers always run as a process of their own; remove the key (only built-in providers, memory, agent, searxng, take it)",
				"config.toml:8: upstream.process: must be \"host\" (in the host's process) or \"plugin\" (a process of its own); got \"separate\"",
			},
		},
		"bad provider names": {
			doc: lines(
				"[providers.Weather]",
				`command = "/opt/w"`,
				`sha256 = "`+testSHA+`"`,
				`[providers."9lives"]`,
				`command = "/opt/l"`,
				`sha256 = "`+testSHA+`"`,
				"[providers.a123456789012345678901234567890123]",
				`command = "/opt/a"`,
				`sha256 = "`+testSHA+`"`,
				`[providers."my tool"]`,
				`command = "/opt/m"`,
				`sha256 = "`+testSHA+`"`,
			),
			want: []string{
				"config.toml:1: providers.Weather: provider names must match ^[a-z][a-z0-9_-]{0,31}$ (a lowercase letter, then up to 31 lowercase letters, digits, _ or -)",
				"config.toml:4: providers.9lives: provider names must match ^[a-z][a-z0-9_-]{0,31}$ (a lowercase letter, then up to 31 lowercase letters, digits, _ or -)",
				"config.toml:7: providers.a123456789012345678901234567890123: provider names must match ^[a-z][a-z0-9_-]{0,31}$ (a lowercase letter, then up to 31 lowercase letters, digits, _ or -)",
				`config.toml:10: providers."my tool": provider names must match ^[a-z][a-z0-9_-]{0,31}$ (a lowercase letter, then up to 31 lowercase letters, digits, _ or -)`,
			},
		},
		"provider names the host keeps for its directories": {
			doc: lines(
				"[providers.run]",
				`command = "/opt/r"`,
				`sha256 = "`+testSHA+`"`,
				"[providers.agents]",
				`command = "/opt/a"`,
				`sha256 = "`+testSHA+`"`,
			),
			want: []string{
				`config.toml:1: providers.run: the name "run" is reserved: a provider's data directory is <data dir>/<name>, and <data dir>/run holds the status files of running servers; rename the table`,
				`config.toml:4: providers.agents: the name "agents" is reserved: a provider's data directory is <data dir>/<name>, and <config dir>/agents holds the sub-agent definitions, and on macOS the config and data directories are one; rename the table`,
			},
		},
		"provider that is not a table": {
			doc:  lines("[providers]", "memory = true"),
			want: []string{"config.toml:2: providers.memory: must be a table; got a boolean"},
		},
		"_env keys must name environment variables": {
			doc: lines(
				"[providers.agent.llm]",
				`model = "gpt-4.1"`,
				"api_key_env = 3",
				"[providers.memory.embeddings]",
				`api_key_env = "sk-not-a-variable-name"`,
			),
			want: []string{
				"config.toml:3: providers.agent.llm.api_key_env: must be a string naming an environment variable; got an integer",
				`config.toml:5: providers.memory.embeddings.api_key_env: must name an environment variable (letters, digits and _, not starting with a digit); got "sk-not-a-variable-name"`,
			},
		},
		"upstream server errors, each at its line": {
			doc: lines(
				"[[upstream.servers]]",
				`name = "github"`,
				`command = "github-mcp"`,
				`endpoint = "https://x.example/mcp"`,
				"timeout_secs = 0",
				"",
				"[[upstream.servers]]",
				`name = "Linear"`,
				`endpoint = "ftp://x"`,
				`colour = 1`,
				`auth = { kind = "bearer", token_env = "T" }`,
				"",
				"[[upstream.servers]]",
				`name = "files"`,
				`command = "mcp-files"`,
				`auth = { kind = "bearer_token", token_env = "T" }`,
			),
			want: []string{
				"config.toml:1: upstream.servers[0]: set exactly one of command (a stdio server) and endpoint (a Streamable HTTP server)",
				"config.toml:5: upstream.servers[0].timeout_secs: must be between 1 and 3600; got 0",
				"config.toml:8: upstream.servers[1].name: required: a lowercase letter, then up to 31 lowercase letters, digits, _ or -; got \"Linear\"",
				"config.toml:9: upstream.servers[1].endpoint: must be an http or https URL such as https://mcp.example.com/mcp",
				"config.toml:10: upstream.servers[1].colour: unknown key; valid keys in [[upstream.servers]] are allowed_tools, args, auth, command, cwd, disallowed_tools, enabled, endpoint, env, name, ping_interval_secs, prefix, read_only_tools, session_idle_secs, start_timeout_secs, timeout_secs, trust_annotations",
				"config.toml:11: upstream.servers[1].auth.kind: must be one of bearer_token, basic, header, headers, query_param, oauth, oauth_client_credentials; got \"bearer\"",
				"config.toml:16: upstream.servers[2].auth: applies to HTTP servers (endpoint) only; pass a stdio server's secrets through env",
			},
		},
		"upstream server seconds out of range": {
			doc: lines("[[upstream.servers]]", `name = "a"`, `command = "x"`, "session_idle_secs = -1", "ping_interval_secs = 3601"),
			want: []string{
				"config.toml:4: upstream.servers[0].session_idle_secs: must be an integer number of seconds from 0 (never) to 86400; got -1",
				"config.toml:5: upstream.servers[0].ping_interval_secs: must be an integer number of seconds from 0 (never) to 3600; got 3601",
			},
		},
		"upstream servers of the wrong type": {
			doc:  lines("[upstream]", `servers = "github"`),
			want: []string{"config.toml:2: upstream.servers: must be an array of tables; got a string"},
		},
		"syntax error names the key": {
			doc:  lines("[autonomy]", `level = "full"`, "allowed_tools = "),
			want: []string{"config.toml:3: autonomy.allowed_tools: unexpected character U+000A at start of value"},
		},
		"duplicate key": {
			doc:  lines("[autonomy]", `level = "full"`, `level = "readonly"`),
			want: []string{"config.toml:3: autonomy.level: key level is already defined"},
		},
		"unknown keys and bad values are all reported, in file order": {
			doc: lines(
				"[server]",
				"port = 70000",
				"colour = true",
				"[autonomy]",
				`level = "bogus"`,
				"[providers.weather]",
				`command = "/opt/w"`,
			),
			want: []string{
				"config.toml:2: server.port: must be between 1 and 65535; got 70000",
				"config.toml:3: server.colour: unknown key; valid keys in [server] are " + serverKeys,
				`config.toml:5: autonomy.level: must be one of readonly, supervised, full; got "bogus"`,
			},
		},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			c, err := parse([]byte(tt.doc), "config.toml", noEnv("/home/u"))
			if c != nil {
				t.Errorf("parse returned a config with error %v", err)
			}
			if diff := cmp.Diff(tt.want, errorStrings(t, err)); diff != "" {
				t.Errorf("errors mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestErrorFields(t *testing.T) {
	t.Parallel()
	_, err := parse([]byte(lines("[autonomy]", `level = "bogus"`)), "/etc/oh/config.toml", noEnv("/home/u"))
	var got *Error
	if !errors.As(err, &got) {
		t.Fatalf("error %v is a %T, want *Error", err, err)
	}
	want := &Error{Source: "/etc/oh/config.toml", Line: 2, Key: "autonomy.level", Msg: `must be one of readonly, supervised, full; got "bogus"`}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("error mismatch (-want +got):\n%s", diff)
	}
}

func TestEnvOverrides(t *testing.T) {
	t.Parallel()
	tests := map[string]struct {
		env     map[string]string
		doc     string
		want    func(c *Config)
		wantErr []string
	}{
		"log level": {
			env:  map[string]string{EnvLogLevel: "debug"},
			want: func(c *Config) { c.Server.LogLevel = "debug" },
		},
		"env wins over the file": {
			env:  map[string]string{EnvLogLevel: "error", EnvDataDir: "/srv/oh"},
			doc:  lines("[server]", `log_level = "info"`, `data_dir = "/var/lib/oh"`),
			want: func(c *Config) { c.Server.LogLevel = "error"; c.Server.DataDir = "/srv/oh" },
		},
		"empty values count as unset": {
			env:  map[string]string{EnvLogLevel: "", EnvDataDir: ""},
			doc:  lines("[server]", `log_level = "info"`),
			want: func(c *Config) { c.Server.LogLevel = "info" },
		},
		"replica from the file, then the environment": {
			env:  map[string]string{EnvReplica: "web2@eu-1"},
			doc:  lines("[server]", `replica = "web1"`),
			want: func(c *Config) { c.Server.Replica = "web2@eu-1" },
		},
		"invalid replica name in the file": {
			doc: lines("[server]", `replica = "web/1"`),
			wantErr: []string{
				`config.toml:2: server.replica: must be 1 to 64 letters, digits and . _ : @ -, such as "web1:9300"; got "web/1"`,
			},
		},
		"invalid replica name in the environment": {
			env: map[string]string{EnvReplica: "two words"},
			wantErr: []string{
				`environment variable OPENHUMAN_REPLICA: server.replica: must be 1 to 64 letters, digits and . _ : @ -, such as "web1:9300"; got "two words"`,
			},
		},
		"searxng overrides": {
			env: map[string]string{"OPENHUMAN_SEARXNG_ENABLED": "yes", "OPENHUMAN_SEARXNG_URL": "http://127.0.0.1:8888"},
			doc: lines("[providers.searxng]", "enabled = false", "max_results = 5"),
			want: func(c *Config) {
				c.Providers["searxng"] = ProviderConfig{Name: "searxng", Enabled: true, Settings: map[string]any{"max_results": int64(5), "base_url": "http://127.0.0.1:8888"}}
			},
		},
		"invalid searxng overrides": {
			env: map[string]string{"OPENHUMAN_SEARXNG_ENABLED": "maybe", "OPENHUMAN_SEARXNG_URL": "127.0.0.1:8888"},
			wantErr: []string{
				`environment variable OPENHUMAN_SEARXNG_ENABLED: providers.searxng.enabled: must be true or false; got "maybe"`,
				`environment variable OPENHUMAN_SEARXNG_URL: providers.searxng.base_url: must be an http or https URL such as http://127.0.0.1:8888; got "127.0.0.1:8888"`,
			},
		},
		"searxng number overrides, in the registry's order": {
			env: map[string]string{"OPENHUMAN_SEARXNG_TIMEOUT_SECS": "soon", "OPENHUMAN_SEARXNG_MAX_RESULTS": "ten", "OPENHUMAN_SEARXNG_DEFAULT_LANGUAGE": "de"},
			wantErr: []string{
				`environment variable OPENHUMAN_SEARXNG_MAX_RESULTS: providers.searxng.max_results: must be a whole number; got "ten"`,
				`environment variable OPENHUMAN_SEARXNG_TIMEOUT_SECS: providers.searxng.timeout_secs: must be a whole number; got "soon"`,
			},
		},
		"searxng number and text overrides": {
			env: map[string]string{"OPENHUMAN_SEARXNG_TIMEOUT_SECS": "7", "OPENHUMAN_SEARXNG_DEFAULT_LANGUAGE": "de"},
			want: func(c *Config) {
				p := c.Providers["searxng"]
				p.Settings = map[string]any{"timeout_secs": int64(7), "default_language": "de"}
				c.Providers["searxng"] = p
			},
		},
		"the MCP token is not part of the config": {
			env:  map[string]string{"OPENHUMAN_MCP_TOKEN": "s3cret"},
			want: func(c *Config) {},
		},
		"invalid env values name the variable": {
			env: map[string]string{EnvLogLevel: "loud", EnvDataDir: "relative/dir"},
			wantErr: []string{
				`environment variable OPENHUMAN_LOG_LEVEL: server.log_level: must be one of trace, debug, info, warn, error, off; got "loud"`,
				`environment variable OPENHUMAN_DATA_DIR: server.data_dir: must be an absolute path, a path starting with ~/, or empty for the default; got "relative/dir"`,
			},
		},
		"file errors come before env errors": {
			env: map[string]string{EnvLogLevel: "loud"},
			doc: lines("[audit]", "queue_size = -1"),
			wantErr: []string{
				"config.toml:2: audit.queue_size: must be at least 1; got -1",
			},
		},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			got, err := parse([]byte(tt.doc), "config.toml", fakeEnv(tt.env, "/home/u"))
			if diff := cmp.Diff(tt.wantErr, errorStrings(t, err)); diff != "" {
				t.Errorf("errors mismatch (-want +got):\n%s", diff)
			}
			if tt.want == nil {
				return
			}
			want := wantDefault()
			want.Source = "config.toml"
			tt.want(want)
			if diff := cmp.Diff(want, got, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("config mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

// TestEnvOverridesFromProcess goes through the exported API and the real
// environment, so it cannot run in parallel.
func TestEnvOverridesFromProcess(t *testing.T) {
	t.Setenv(EnvLogLevel, "trace")
	t.Setenv(EnvDataDir, "~/oh")
	// No config file where Load("") looks, on any system.
	for _, k := range []string{"XDG_CONFIG_HOME", "HOME", "APPDATA"} {
		t.Setenv(k, t.TempDir())
	}
	t.Setenv("OPENHUMAN_TEST_KEY", "k-123")

	c, err := Parse([]byte(lines("[server]", `log_level = "info"`)), "config.toml")
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	if got := [2]string{c.Server.LogLevel, c.Server.DataDir}; got != [2]string{"trace", "~/oh"} {
		t.Errorf("Parse: log level and data dir = %q, want trace and ~/oh", got)
	}

	c, err = Load("")
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	want := wantDefault()
	want.Server.LogLevel = "trace"
	want.Server.DataDir = "~/oh"
	if diff := cmp.Diff(want, c, cmpopts.EquateEmpty()); diff != "" {
		t.Errorf("Load(\"\") mismatch (-want +got):\n%s", diff)
	}

	t.Setenv(EnvLogLevel, "LOUD")
	_, err = Load("")
	wantErr := []string{`environment variable OPENHUMAN_LOG_LEVEL: server.log_level: must be one of trace, debug, info, warn, error, off; got "LOUD"`}
	if diff := cmp.Diff(wantErr, errorStrings(t, err)); diff != "" {
		t.Errorf("Load(\"\") errors mismatch (-want +got):\n%s", diff)
	}

	p := ProviderConfig{Settings: map[string]any{"api_key_env": "OPENHUMAN_TEST_KEY"}}
	if diff := cmp.Diff(map[string]string{"api_key": "k-123"}, p.ResolveSecrets(nil)); diff != "" {
		t.Errorf("ResolveSecrets(nil) mismatch (-want +got):\n%s", diff)
	}
}

func TestLoad(t *testing.T) {
	t.Parallel()
	const doc = "[server]\nport = 9555\n"
	tests := map[string]struct {
		// files maps paths relative to a temp dir to their contents.
		files map[string]string
		// path is relative to the temp dir; "" asks for the default path.
		path string
		// env values and home are relative to the temp dir.
		env        map[string]string
		home       string
		wantSource string // relative to the temp dir, or DefaultSource
		wantPort   int
		wantErr    string // with the temp dir written as $DIR
		wantNotFnd bool
	}{
		"explicit path": {
			files:      map[string]string{"my.toml": doc},
			path:       "my.toml",
			wantSource: "my.toml",
			wantPort:   9555,
		},
		"explicit path that does not exist": {
			path:       "missing.toml",
			wantErr:    "read config: open $DIR/missing.toml: no such file or directory",
			wantNotFnd: true,
		},
		"explicit path with invalid content names the file": {
			files:   map[string]string{"bad.toml": "[server]\nport = 0\n"},
			path:    "bad.toml",
			wantErr: "$DIR/bad.toml:2: server.port: must be between 1 and 65535; got 0",
		},
		"default path under XDG_CONFIG_HOME": {
			files:      map[string]string{"xdg/openhuman-host/config.toml": doc},
			env:        map[string]string{"XDG_CONFIG_HOME": "xdg"},
			home:       "home",
			wantSource: "xdg/openhuman-host/config.toml",
			wantPort:   9555,
		},
		"default path under the home directory": {
			files:      map[string]string{"home/.config/openhuman-host/config.toml": doc},
			home:       "home",
			wantSource: "home/.config/openhuman-host/config.toml",
			wantPort:   9555,
		},
		"no default file means embedded defaults": {
			files:      map[string]string{"home/.config/openhuman-host/other.toml": doc},
			home:       "home",
			wantSource: DefaultSource,
			wantPort:   9300,
		},
		"no home and no XDG_CONFIG_HOME means embedded defaults": {
			wantSource: DefaultSource,
			wantPort:   9300,
		},
		"env overrides apply to embedded defaults": {
			env:        map[string]string{EnvDataDir: "/srv/oh"},
			home:       "home",
			wantSource: DefaultSource,
			wantPort:   9300,
		},
		"a default path that is a directory is an error": {
			files:   map[string]string{"home/.config/openhuman-host/config.toml/x": ""},
			home:    "home",
			wantErr: "read config: read $DIR/home/.config/openhuman-host/config.toml: is a directory",
		},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			for rel, content := range tt.files {
				p := filepath.Join(dir, rel)
				if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			env := map[string]string{}
			for k, v := range tt.env {
				if strings.HasPrefix(k, "XDG_") {
					v = filepath.Join(dir, v)
				}
				env[k] = v
			}
			home := ""
			if tt.home != "" {
				home = filepath.Join(dir, tt.home)
			}
			path := ""
			if tt.path != "" {
				path = filepath.Join(dir, tt.path)
			}
			c, err := load(path, fakeEnv(env, home))
			if tt.wantErr != "" {
				want := strings.ReplaceAll(tt.wantErr, "$DIR", dir)
				if err == nil || err.Error() != want {
					t.Fatalf("load error = %v, want %s", err, want)
				}
				if got := errors.Is(err, fs.ErrNotExist); got != tt.wantNotFnd {
					t.Errorf("errors.Is(err, fs.ErrNotExist) = %v, want %v", got, tt.wantNotFnd)
				}
				return
			}
			if err != nil {
				t.Fatalf("load: %v", err)
			}
			wantSource := tt.wantSource
			if wantSource != DefaultSource {
				wantSource = filepath.Join(dir, wantSource)
			}
			want := wantDefault()
			want.Source = wantSource
			want.Server.Port = tt.wantPort
			want.Server.DataDir = tt.env[EnvDataDir]
			if diff := cmp.Diff(want, c, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("config mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestPaths(t *testing.T) {
	t.Parallel()
	tests := map[string]struct {
		goos string // default linux
		env  map[string]string
		home string
		// folders are the Windows known folders the shell would give.
		folders     map[string]string
		dataDir     string
		wantConfig  string
		wantData    string
		wantDataErr string
	}{
		"macOS: Application Support, never XDG": {
			goos:       "darwin",
			env:        map[string]string{"XDG_CONFIG_HOME": "/xdg/config", "XDG_DATA_HOME": "/xdg/data"},
			home:       "/Users/u",
			wantConfig: "/Users/u/Library/Application Support/openhuman-host/config.toml",
			wantData:   "/Users/u/Library/Application Support/openhuman-host",
		},
		"macOS: configured data dir with ~": {
			goos:       "darwin",
			home:       "/Users/u",
			dataDir:    "~/oh",
			wantConfig: "/Users/u/Library/Application Support/openhuman-host/config.toml",
			wantData:   "/Users/u/oh",
		},
		"macOS: no home": {
			goos:        "darwin",
			wantDataErr: "find data directory: $HOME is not defined; set server.data_dir",
		},
		"Windows: APPDATA for config, LOCALAPPDATA for data": {
			goos:       "windows",
			env:        map[string]string{"APPDATA": "/u/AppData/Roaming", "LOCALAPPDATA": "/u/AppData/Local", "XDG_DATA_HOME": "/xdg/data"},
			home:       "/u",
			folders:    map[string]string{folderRoaming: "/shell/Roaming", folderLocal: "/shell/Local"},
			wantConfig: "/u/AppData/Roaming/openhuman-host/config.toml",
			wantData:   "/u/AppData/Local/openhuman-host",
		},
		"Windows: known folders when the variables are missing": {
			goos:       "windows",
			home:       "/u",
			folders:    map[string]string{folderRoaming: "/shell/Roaming", folderLocal: "/shell/Local"},
			wantConfig: "/shell/Roaming/openhuman-host/config.toml",
			wantData:   "/shell/Local/openhuman-host",
		},
		"Windows: relative variables are ignored": {
			goos:       "windows",
			env:        map[string]string{"APPDATA": "Roaming", "LOCALAPPDATA": "Local"},
			home:       "/u",
			folders:    map[string]string{folderRoaming: "/shell/Roaming", folderLocal: "/shell/Local"},
			wantConfig: "/shell/Roaming/openhuman-host/config.toml",
			wantData:   "/shell/Local/openhuman-host",
		},
		"Windows: the profile's standard folders when the shell has none": {
			goos:       "windows",
			home:       "/u",
			wantConfig: "/u/AppData/Roaming/openhuman-host/config.toml",
			wantData:   "/u/AppData/Local/openhuman-host",
		},
		"XDG variables": {
			env:        map[string]string{"XDG_CONFIG_HOME": "/xdg/config", "XDG_DATA_HOME": "/xdg/data/"},
			home:       "/home/u",
			wantConfig: "/xdg/config/openhuman-host/config.toml",
			wantData:   "/xdg/data/openhuman-host",
		},
		"home fallbacks": {
			home:       "/home/u",
			wantConfig: "/home/u/.config/openhuman-host/config.toml",
			wantData:   "/home/u/.local/share/openhuman-host",
		},
		"relative XDG variables are ignored": {
			env:        map[string]string{"XDG_CONFIG_HOME": "config", "XDG_DATA_HOME": "data"},
			home:       "/home/u",
			wantConfig: "/home/u/.config/openhuman-host/config.toml",
			wantData:   "/home/u/.local/share/openhuman-host",
		},
		"configured data dir with ~": {
			home:       "/home/u",
			dataDir:    "~/notes/oh",
			wantConfig: "/home/u/.config/openhuman-host/config.toml",
			wantData:   "/home/u/notes/oh",
		},
		"configured absolute data dir is cleaned": {
			env:        map[string]string{"XDG_CONFIG_HOME": "/xdg/config"},
			dataDir:    "/srv/oh/../openhuman/",
			wantConfig: "/xdg/config/openhuman-host/config.toml",
			wantData:   "/srv/openhuman",
		},
		"configured relative data dir": {
			home:        "/home/u",
			dataDir:     "oh",
			wantConfig:  "/home/u/.config/openhuman-host/config.toml",
			wantDataErr: `server.data_dir: must be an absolute path or start with ~/; got "oh"`,
		},
		"no home": {
			dataDir:     "~/oh",
			wantDataErr: "server.data_dir: expand ~: $HOME is not defined",
		},
		"no home and no data dir": {
			wantDataErr: "find data directory: $HOME is not defined; set server.data_dir",
		},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			env := fakeEnv(tt.env, tt.home)
			if tt.goos != "" {
				env.goos = tt.goos
			}
			if tt.folders != nil {
				env.folder = func(id string) (string, error) {
					if d, ok := tt.folders[id]; ok {
						return d, nil
					}
					return "", errors.New("no such folder")
				}
			}
			gotConfig, err := defaultPath(env)
			if tt.wantConfig == "" {
				if err == nil {
					t.Errorf("defaultPath = %q, want an error", gotConfig)
				}
			} else if err != nil || gotConfig != tt.wantConfig {
				t.Errorf("defaultPath = %q, %v; want %q", gotConfig, err, tt.wantConfig)
			}
			gotData, err := dataDir(tt.dataDir, env)
			gotErr := ""
			if err != nil {
				gotErr = err.Error()
			}
			if gotData != tt.wantData || gotErr != tt.wantDataErr {
				t.Errorf("dataDir = %q, %q; want %q, %q", gotData, gotErr, tt.wantData, tt.wantDataErr)
			}
		})
	}
}

// TestPathsFromProcess checks the exported functions read the real
// environment, so it cannot run in parallel.
func TestPathsFromProcess(t *testing.T) {
	if runtime.GOOS == "darwin" || runtime.GOOS == "windows" {
		t.Skip("reads XDG variables, which only Linux and other Unix systems follow")
	}
	t.Setenv("XDG_CONFIG_HOME", "/xdg/config")
	t.Setenv("XDG_DATA_HOME", "/xdg/data")
	got, err := DefaultPath()
	if err != nil || got != "/xdg/config/openhuman-host/config.toml" {
		t.Errorf("DefaultPath() = %q, %v; want /xdg/config/openhuman-host/config.toml", got, err)
	}
	c := Default()
	got, err = c.DataDir()
	if err != nil || got != "/xdg/data/openhuman-host" {
		t.Errorf("DataDir() = %q, %v; want /xdg/data/openhuman-host", got, err)
	}
	t.Setenv("HOME", "/home/p")
	c.Server.DataDir = "~/oh"
	got, err = c.DataDir()
	if err != nil || got != "/home/p/oh" {
		t.Errorf("DataDir() with ~/oh = %q, %v; want /home/p/oh", got, err)
	}
	dirs := [][2]string{}
	for _, f := range []func() (string, error){DefaultConfigDir, DefaultDataDir} {
		d, err := f()
		dirs = append(dirs, [2]string{d, fmt.Sprint(err)})
	}
	want := [][2]string{{"/xdg/config/openhuman-host", "<nil>"}, {"/xdg/data/openhuman-host", "<nil>"}}
	if diff := cmp.Diff(want, dirs); diff != "" {
		t.Errorf("DefaultConfigDir, DefaultDataDir mismatch (-want +got):\n%s", diff)
	}
}

func TestResolveSecrets(t *testing.T) {
	t.Parallel()
	env := map[string]string{"OPENAI_API_KEY": "sk-1", "SEARX_TOKEN": "tok-2", "DB_PASSWORD": "pw-3"}
	getenv := func(k string) string { return env[k] }
	tests := map[string]struct {
		settings map[string]any
		want     map[string]string
	}{
		"no settings": {
			settings: nil,
			want:     map[string]string{},
		},
		"top-level, nested, array and missing variables": {
			settings: map[string]any{
				"api_key_env": "OPENAI_API_KEY",
				"model":       "gpt-4.1",
				"llm": map[string]any{
					"api_key_env": "OPENAI_API_KEY",
					"auth":        map[string]any{"token_env": "SEARX_TOKEN"},
				},
				"databases":   []any{map[string]any{"password_env": "DB_PASSWORD"}, "not a table"},
				"webhook_env": "UNSET_VARIABLE",
			},
			want: map[string]string{
				"api_key":               "sk-1",
				"llm.api_key":           "sk-1",
				"llm.auth.token":        "tok-2",
				"databases[0].password": "pw-3",
				"webhook":               "",
			},
		},
		"non-string and bare _env keys are not secrets": {
			settings: map[string]any{"count_env": int64(3), "_env": "OPENAI_API_KEY"},
			want:     map[string]string{},
		},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			p := ProviderConfig{Name: "agent", Enabled: true, Settings: tt.settings}
			if diff := cmp.Diff(tt.want, p.ResolveSecrets(getenv)); diff != "" {
				t.Errorf("ResolveSecrets mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestResolveSecretsFromParsedConfig(t *testing.T) {
	t.Parallel()
	c := mustParse(t, lines(
		"[providers.agent.llm]",
		`base_url = "https://llm.example/v1"`,
		`api_key_env = "OPENAI_API_KEY"`,
	), "config.toml")
	got := c.Providers["agent"].ResolveSecrets(func(k string) string { return map[string]string{"OPENAI_API_KEY": "sk-9"}[k] })
	if diff := cmp.Diff(map[string]string{"llm.api_key": "sk-9"}, got); diff != "" {
		t.Errorf("ResolveSecrets mismatch (-want +got):\n%s", diff)
	}
}

func TestSettingsJSON(t *testing.T) {
	t.Parallel()
	parsed := mustParse(t, lines(
		"[providers.searxng]",
		`base_url = "http://127.0.0.1:8888"`,
		"timeout_secs = 5",
		"ratio = 0.5",
		"safe = true",
		"since = 2024-05-01",
		`engines = ["ddg", "brave"]`,
		"[providers.searxng.headers]",
		`user_agent = "oh"`,
	), "config.toml")
	tests := map[string]struct {
		settings map[string]any
		want     string
		wantErr  string
	}{
		"nil settings": {
			settings: nil,
			want:     `{}`,
		},
		"decoded TOML values": {
			settings: parsed.Providers["searxng"].Settings,
			want:     `{"base_url":"http://127.0.0.1:8888","engines":["ddg","brave"],"headers":{"user_agent":"oh"},"ratio":0.5,"safe":true,"since":"2024-05-01","timeout_secs":5}`,
		},
		"NaN cannot be JSON": {
			settings: map[string]any{"x": math.NaN()},
			wantErr:  "provider searxng settings as JSON: json: unsupported value: NaN",
		},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			p := ProviderConfig{Name: "searxng", Settings: tt.settings}
			got, err := p.SettingsJSON()
			gotErr := ""
			if err != nil {
				gotErr = err.Error()
			}
			if gotErr != tt.wantErr {
				t.Fatalf("SettingsJSON error = %q, want %q", gotErr, tt.wantErr)
			}
			if tt.wantErr == "" && !json.Valid(got) {
				t.Errorf("SettingsJSON = %s, not valid JSON", got)
			}
			if string(got) != tt.want {
				t.Errorf("SettingsJSON = %s, want %s", got, tt.want)
			}
		})
	}
}

func TestMasked(t *testing.T) {
	t.Parallel()
	doc := lines(
		"[server]",
		`transport = "http"`,
		"[autonomy]",
		"max_actions_per_hour = 20",
		`denied_tools = ["notes_store"]`,
		"[providers.agent.llm]",
		`model = "gpt-4.1"`,
		`api_key_env = "OPENAI_API_KEY"`,
		`api_key = "sk-live-123"`,
		"[providers.weather]",
		`command = "/opt/weather"`,
		`sha256 = "`+testSHA+`"`,
		`auth_token = "tok-abc"`,
		"password = 4242",
		`SECRET_phrase = "open sesame"`,
		"[providers.weather.client_secrets]",
		`id = "leaked-id"`,
		"[[providers.weather.accounts]]",
		`name = "work"`,
		`refresh_token = "rt-xyz"`,
	)
	c := mustParse(t, doc, "/etc/oh/config.toml")
	got, err := c.Masked()
	if err != nil {
		t.Fatal(err)
	}
	want := `# Effective configuration from "/etc/oh/config.toml"; secret values are masked.

[server]
transport = 'http'
host = '127.0.0.1'
port = 9300
tool_timeout_secs = 120
provider_start_timeout_secs = 10
log_level = 'warn'
data_dir = ''
max_request_body_bytes = 4194304
session_idle_timeout_secs = 600
stdio_close_grace_secs = 10
stdio_exit_timeout_secs = 10
max_sessions = 256
max_connections = 1024
allowed_origins = []
structured_content_clients = []
replica = ''

[autonomy]
level = 'supervised'
max_actions_per_hour = 20
allowed_tools = []
denied_tools = ['notes_store']
confirm_acts = 'off'

[audit]
record_reads = true
retain_days = 0
queue_size = 1024

[storage]
driver = 'sqlite'
dsn_env = 'OPENHUMAN_POSTGRES_DSN'

[telemetry]
traces = false
metrics = false
prometheus = false
prometheus_listen = ''
otlp_endpoint = ''
otlp_protocol = 'http/protobuf'
sample_ratio = 1.0
metric_interval_secs = 60

[providers]
[providers.agent]
enabled = true

[providers.agent.llm]
api_key = '********'
api_key_env = 'OPENAI_API_KEY'
model = 'gpt-4.1'

[providers.memory]
enabled = true

[providers.searxng]
enabled = false

[providers.weather]
SECRET_phrase = '********'
auth_token = '********'
client_secrets = '********'
command = '/opt/weather'
enabled = true
password = '********'
sha256 = '` + testSHA + `'

[[providers.weather.accounts]]
name = 'work'
refresh_token = '********'
`
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Masked mismatch (-want +got):\n%s", diff)
	}
	for _, secret := range []string{"sk-live-123", "tok-abc", "4242", "open sesame", "leaked-id", "rt-xyz"} {
		if strings.Contains(got, secret) {
			t.Errorf("Masked output contains the secret %q", secret)
		}
	}
}

// TestMaskedRoundTrip checks that the rendered config parses back to the
// same configuration when it holds no secrets.
func TestMaskedRoundTrip(t *testing.T) {
	t.Parallel()
	tests := map[string]struct {
		doc string
	}{
		"defaults": {doc: ""},
		"everything set": {doc: lines(
			"[server]",
			`transport = "http"`,
			`host = "::1"`,
			"port = 8080",
			`allowed_origins = ["https://a.example"]`,
			`data_dir = "/srv/oh"`,
			`structured_content_clients = ["claude-code", "caf\u00e9 client"]`,
			"[autonomy]",
			`level = "full"`,
			"max_actions_per_hour = 0",
			`allowed_tools = ["notes_search"]`,
			`confirm_acts = "off"`,
			"[audit]",
			"record_reads = false",
			"retain_days = 90",
			"[providers.weather]",
			`command = "/opt/weather"`,
			`args = ["-q"]`,
			`sha256 = "`+testSHA+`"`,
			"retries = 3",
			"[providers.weather.geo]",
			`api_key_env = "GEO_KEY"`,
			"radius = 2.5",
			"[discovery.embeddings]",
			`base_url = "http://127.0.0.1:11434/v1"`,
			`model = "nomic-embed-text"`,
			`api_key_env = "EMBED_KEY"`,
			"dimensions = 256",
		)},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			want := mustParse(t, tt.doc, "config.toml")
			out, err := want.Masked()
			if err != nil {
				t.Fatal(err)
			}
			got, err := parse([]byte(out), "config.toml", noEnv("/home/u"))
			if err != nil {
				t.Fatalf("parse(Masked()): %v\n%s", err, out)
			}
			if diff := cmp.Diff(want, got, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("round trip mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestEnabledProviders(t *testing.T) {
	t.Parallel()
	c := &Config{Providers: map[string]ProviderConfig{
		"zeta":    {Name: "zeta", Enabled: true},
		"searxng": {Name: "searxng", Enabled: true},
		"alpha":   {Name: "alpha", Enabled: true},
		"memory":  {Name: "memory", Enabled: true},
		"beta":    {Name: "beta", Enabled: false},
		"agent":   {Name: "agent", Enabled: false},
	}}
	var got []string
	for _, p := range c.EnabledProviders() {
		got = append(got, p.Name)
	}
	if diff := cmp.Diff([]string{"memory", "searxng", "alpha", "zeta"}, got); diff != "" {
		t.Errorf("EnabledProviders mismatch (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]ProviderConfig{{Name: "memory", Enabled: true}, {Name: "agent", Enabled: true}}, Default().EnabledProviders()); diff != "" {
		t.Errorf("default EnabledProviders mismatch (-want +got):\n%s", diff)
	}
}

func TestIsBuiltin(t *testing.T) {
	t.Parallel()
	tests := map[string]bool{"memory": true, "agent": true, "searxng": true, "upstream": false, "weather": false, "Memory": false, "": false}
	for name, want := range tests {
		if got := IsBuiltin(name); got != want {
			t.Errorf("IsBuiltin(%q) = %v, want %v", name, got, want)
		}
	}
}

func TestDurations(t *testing.T) {
	t.Parallel()
	s := Default().Server
	got := []string{s.ToolTimeout().String(), s.ProviderStartTimeout().String(), s.SessionIdleTimeout().String()}
	if diff := cmp.Diff([]string{"2m0s", "10s", "10m0s"}, got); diff != "" {
		t.Errorf("durations mismatch (-want +got):\n%s", diff)
	}
}

// FuzzParse checks that no document makes Parse panic, and that every
// content error is an *Error with a key or a line.
func FuzzParse(f *testing.F) {
	seeds := []string{
		"",
		string(defaultText()),
		"[[server]]\nport = 1\n",
		"server.port.x = 1\n",
		"[providers.memory]\n[[providers.memory.x]]\na_env = 1\n",
		"[providers.\"\"]\n\"\" = 1\n",
		"upstream = { servers = [[{}]] }\n",
		"audit = { queue_size = \"x\" }\n",
		"[autonomy]\nallowed_tools = [[\"a\"]]\n",
		"a = [1, {b = 2}]\r\n[server\n",
	}
	for _, s := range seeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, doc string) {
		c, err := parse([]byte(doc), "f.toml", noEnv("/home/u"))
		if err == nil {
			if c == nil {
				t.Fatal("nil config without error")
			}
			return
		}
		for _, s := range errorStrings(t, err) {
			if !strings.HasPrefix(s, "f.toml") {
				t.Errorf("error %q does not name the source", s)
			}
		}
	})
}

func TestParseIgnoresByteOrderMark(t *testing.T) {
	t.Parallel()
	c, err := Parse([]byte("\xef\xbb\xbf[server]\nport = 9400\n"), "config.toml")
	if err != nil {
		t.Fatal(err)
	}
	if c.Server.Port != 9400 {
		t.Errorf("port = %d, want 9400", c.Server.Port)
	}
}

// TestMaskedUpstreamSecrets: config check shows no credential of an
// upstream server: user information and query values in endpoints, and
// env values other than ${NAME} references, are masked.
func TestMaskedUpstreamSecrets(t *testing.T) {
	t.Parallel()
	doc := lines(
		"[[upstream.servers]]",
		`name = "web"`,
		`endpoint = "https://alice:hunter2@mcp.example.com/mcp?key=qk-secret&team=x"`,
		"[[upstream.servers]]",
		`name = "gh"`,
		`command = "npx"`,
		`env = { GITHUB_PERSONAL_ACCESS_TOKEN = "ghp_literal", DB = "postgres://u:pw@db/x", REF = "${GH_TOKEN}", PLAIN = "visible?" }`,
		"[providers.searxng]",
		`base_url = "http://user:pass@searx.local:8080/"`,
	)
	c := mustParse(t, doc, "/etc/oh/config.toml")
	got, err := c.Masked()
	if err != nil {
		t.Fatal(err)
	}
	for _, leak := range []string{"alice", "hunter2", "qk-secret", "ghp_literal", "u:pw", "user:pass", "visible?"} {
		if strings.Contains(got, leak) {
			t.Errorf("config check shows %q:\n%s", leak, got)
		}
	}
	for _, want := range []string{"https://********@mcp.example.com/mcp?key=********&team=********", "REF = '${GH_TOKEN}'",
		"http://********@searx.local:8080/"} {
		if !strings.Contains(got, want) {
			t.Errorf("config check lacks %q:\n%s", want, got)
		}
	}
	if _, err := Parse([]byte(got), "masked.toml"); err != nil {
		t.Errorf("the masked config does not parse: %v", err)
	}
}

func TestExpandEnv(t *testing.T) {
	t.Parallel()
	lookup := func(k string) (string, bool) {
		v, ok := map[string]string{"TOKEN": "t0k", "EMPTY": ""}[k]
		return v, ok
	}
	for in, want := range map[string]string{
		"${TOKEN}":             "t0k",
		"Bearer ${TOKEN}!":     "Bearer t0k!",
		"a$$b ${EMPTY}c $HOME": "a$b c $HOME",
		"no refs":              "no refs",
	} {
		if got, err := ExpandEnv(in, lookup); err != nil || got != want {
			t.Errorf("ExpandEnv(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for in, want := range map[string]string{
		"${MISSING}": "environment variable MISSING is not set",
		"${TOKEN":    `"${" must start a reference`,
		"${1X}":      `"${" must start a reference`,
	} {
		if _, err := ExpandEnv(in, lookup); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("ExpandEnv(%q) error = %v, want %q", in, err, want)
		}
	}
	s := UpstreamServer{Name: "gh", Env: map[string]string{"A": "${TOKEN}", "B": "${MISSING}"}}
	if _, err := s.ResolveEnv(lookup); err == nil || err.Error() != "upstream server gh: env.B: environment variable MISSING is not set; set it in the environment the MCP client starts openhuman-host with" {
		t.Errorf("ResolveEnv with an unset variable: %v", err)
	}
	if _, err := parse([]byte(lines("[[upstream.servers]]", `name = "gh"`, `command = "npx"`, `env = { A = "${oops" }`)), "c.toml", noEnv("/home/u")); err == nil ||
		!strings.Contains(err.Error(), "upstream.servers[0].env.A") {
		t.Errorf("a malformed reference in env: %v", err)
	}
}

// TestUpstreamEndpointMustBeWellFormed: an endpoint that would be cut in
// two in logs (a space, a broken escape in its query) is refused, naming
// the key, without repeating the value.
func TestUpstreamEndpointMustBeWellFormed(t *testing.T) {
	t.Parallel()
	for _, endpoint := range []string{"http://127.0.0.1/mcp?key=SEC RET", "http://127.0.0.1/mcp?key=SECRET%zz"} {
		_, err := parse([]byte(lines("[[upstream.servers]]", `name = "a"`, fmt.Sprintf("endpoint = %q", endpoint))), "c.toml", noEnv("/home/u"))
		if err == nil || !strings.Contains(err.Error(), "upstream.servers[0].endpoint") || strings.Contains(err.Error(), "SEC") {
			t.Errorf("endpoint %q: %v", endpoint, err)
		}
	}
}

func TestStorage(t *testing.T) {
	c, err := Parse([]byte("[storage]\ndriver = \"postgres\"\ndsn_env = \"TEAM_DB\"\n"), "config.toml")
	if err != nil {
		t.Fatal(err)
	}
	if c.Storage.Driver != StoragePostgres || c.Storage.DSNEnv != "TEAM_DB" {
		t.Errorf("Storage = %+v, want postgres from TEAM_DB", c.Storage)
	}
	env := map[string]string{"TEAM_DB": "postgres://u:hunter2@db/x"}
	if dsn, err := c.Storage.DSN(func(k string) string { return env[k] }); err != nil || dsn != env["TEAM_DB"] {
		t.Errorf("DSN() = %q, %v; want the value of TEAM_DB", dsn, err)
	}
	_, err = c.Storage.DSN(func(string) string { return "" })
	if err == nil || !strings.Contains(err.Error(), "TEAM_DB") {
		t.Errorf("DSN() with TEAM_DB unset = %v, want an error naming TEAM_DB", err)
	}

	_, err = Parse([]byte("[storage]\ndriver = \"mysql\"\ndsn_env = \"1DB\"\n"), "config.toml")
	want := []string{
		`config.toml:2: storage.driver: must be one of sqlite, postgres; got "mysql"`,
		`config.toml:3: storage.dsn_env: "1DB" is not an environment variable name: use letters, digits and underscores, not starting with a digit`,
	}
	var got []string
	if err != nil {
		got = strings.Split(err.Error(), "\n")
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("errors (-want +got):\n%s", diff)
	}
}

func TestTelemetry(t *testing.T) {
	c, err := Parse([]byte("[telemetry]\ntraces = true\nprometheus_listen = \"127.0.0.1:9464\"\notlp_endpoint = \"http://collector:4318\"\notlp_protocol = \"grpc\"\nsample_ratio = 0.25\n"), "config.toml")
	if err != nil {
		t.Fatal(err)
	}
	want := TelemetryConfig{Traces: true, PrometheusListen: "127.0.0.1:9464", OTLPEndpoint: "http://collector:4318", OTLPProtocol: OTLPGRPC, SampleRatio: 0.25, MetricIntervalSecs: 60}
	if c.Telemetry != want {
		t.Errorf("Telemetry = %+v, want %+v", c.Telemetry, want)
	}
	_, err = Parse([]byte(`[telemetry]
otlp_endpoint = "http://user:hunter2@collector:4318"
otlp_protocol = "zipkin"
sample_ratio = 1.5
metric_interval_secs = 0
prometheus_listen = "0.0.0.0:9464"
`), "config.toml")
	wantErrs := []string{
		`config.toml:2: telemetry.otlp_endpoint: must not contain a user name or password; put credentials in the OTEL_EXPORTER_OTLP_HEADERS environment variable`,
		`config.toml:3: telemetry.otlp_protocol: must be one of http/protobuf, grpc; got "zipkin"`,
		`config.toml:4: telemetry.sample_ratio: must be between 0 and 1; got 1.5`,
		`config.toml:5: telemetry.metric_interval_secs: must be between 1 and 3600; got 0`,
		`config.toml:6: telemetry.prometheus_listen: must be a loopback address (127.0.0.1, ::1 or localhost), as it has no authentication; to scrape from another machine, set prometheus = true and scrape /metrics on the http transport with its token; got "0.0.0.0:9464"`,
	}
	var got []string
	if err != nil {
		got = strings.Split(err.Error(), "\n")
	}
	if diff := cmp.Diff(wantErrs, got); diff != "" {
		t.Errorf("errors (-want +got):\n%s", diff)
	}
	if err != nil && strings.Contains(err.Error(), "hunter2") {
		t.Errorf("an error repeats the password: %v", err)
	}
}

func TestProfiles(t *testing.T) {
	c, err := Parse([]byte(`
[profiles.review]
level = "readonly"
tools = ["notes_*", "pages_*"]
exclude_tools = ["notes_forget"]
clients = ["Cursor"]

[profiles.agents]
max_actions_per_hour = 5
`), "config.toml")
	if err != nil {
		t.Fatal(err)
	}
	five := 5
	want := map[string]ProfileConfig{
		"review": {Name: "review", Level: LevelReadOnly, Tools: []string{"notes_*", "pages_*"}, ExcludeTools: []string{"notes_forget"}, Clients: []string{"Cursor"}},
		"agents": {Name: "agents", MaxActionsPerHour: &five},
	}
	if diff := cmp.Diff(want, c.Profiles); diff != "" {
		t.Errorf("Profiles (-want +got):\n%s", diff)
	}
	masked, err := c.Masked()
	if err != nil {
		t.Fatal(err)
	}
	again, err := Parse([]byte(masked), "masked")
	if err != nil {
		t.Fatalf("Masked() output does not parse: %v\n%s", err, masked)
	}
	if diff := cmp.Diff(c.Profiles, again.Profiles, cmpopts.EquateEmpty()); diff != "" {
		t.Errorf("profiles after Masked and Parse (-want +got):\n%s", diff)
	}

	_, err = Parse([]byte(`
[profiles.Bad_Name]
[profiles.a]
level = "root"
confirm_acts = "maybe"
max_actions_per_hour = -1
tools = [" x"]
clients = ["Cursor", "*"]
[profiles.b]
clients = ["Cursor"]
`), "config.toml")
	wantErrs := []string{
		`config.toml:2: profiles.Bad_Name: profile names are 1 to 32 of a-z, 0-9, _ and -, starting with a letter or digit (they appear in the URL /profile/<name>); got "Bad_Name"`,
		`config.toml:4: profiles.a.level: must be one of readonly, supervised, full; got "root"`,
		`config.toml:5: profiles.a.confirm_acts: must be one of off, when_supported, required; got "maybe"`,
		`config.toml:6: profiles.a.max_actions_per_hour: must be at least 0; got -1`,
		`config.toml:7: profiles.a.tools[0]: tool names must be non-empty without surrounding spaces; got " x"`,
		`config.toml:8: profiles.a.clients[1]: "*" names every client; list it alone or remove it`,
		`config.toml:10: profiles.b.clients[0]: client "Cursor" already selects profile "a"; a client name may select one profile`,
	}
	var got []string
	if err != nil {
		got = strings.Split(err.Error(), "\n")
	}
	if diff := cmp.Diff(wantErrs, got); diff != "" {
		t.Errorf("errors (-want +got):\n%s", diff)
	}
}

func TestToolOverrides(t *testing.T) {
	c, err := Parse([]byte(`
[tools.everything__echo]
description = "Echoes its message back.\nUse it only to test the connection."
read_only_hint = true
`), "config.toml")
	if err != nil {
		t.Fatal(err)
	}
	desc, yes := "Echoes its message back.\nUse it only to test the connection.", true
	want := map[string]ToolOverride{"everything__echo": {Name: "everything__echo", Description: &desc, ReadOnlyHint: &yes}}
	if diff := cmp.Diff(want, c.Tools); diff != "" {
		t.Errorf("Tools (-want +got):\n%s", diff)
	}
	_, err = Parse([]byte(`
[tools."bad.name"]
[tools.x]
title = "   "
description = "bell\u0007"
`), "config.toml")
	wantErrs := []string{
		`config.toml:2: tools.bad.name: tables under [tools] are named by a tool's advertised name (1 to 64 of A-Z, a-z, 0-9, _ and -, as tools/list shows it); got "bad.name"`,
		`config.toml:4: tools.x.title: must not be blank: leave the key out to keep the provider's`,
		`config.toml:5: tools.x.description: must not hold control characters`,
	}
	var got []string
	if err != nil {
		got = strings.Split(err.Error(), "\n")
	}
	if diff := cmp.Diff(wantErrs, got); diff != "" {
		t.Errorf("errors (-want +got):\n%s", diff)
	}
}

func TestReplicaName(t *testing.T) {
	host, err := os.Hostname()
	if err != nil || host == "" {
		host = "localhost"
	}
	for _, tt := range []struct {
		set  string
		port int
		want string
	}{
		{"web1", 9300, "web1"},
		{"", 9301, host + ":9301"},
		{"", 0, host},
	} {
		if got := (ServerConfig{Replica: tt.set}).ReplicaName(tt.port); got != tt.want {
			t.Errorf("ReplicaName(%q, %d) = %q, want %q", tt.set, tt.port, got, tt.want)
		}
	}
}
