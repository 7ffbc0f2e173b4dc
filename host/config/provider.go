package config

import (
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"regexp"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/openhuman/openhuman-host/host/builtin"
	"github.com/openhuman/openhuman-host/sdk"
)

// BuiltinProviders names the built-in providers configured by a
// [providers.<name>] table, in the order they are started and listed: the
// registered ones ([builtin.Registered]) less those whose settings come
// from a section of their own, such as [[upstream.servers]]. A new slice
// each call; empty when no built-in is registered.
func BuiltinProviders() []string {
	return builtin.Registered().Tabled()
}

// IsBuiltin reports whether name is one of BuiltinProviders.
func IsBuiltin(name string) bool {
	return builtin.Registered().IsTabled(name)
}

// Keys of a [providers.<name>] table that the host reads itself; every other
// key is a provider setting.
const (
	keyEnabled = "enabled"
	keyCommand = "command"
	keyArgs    = "args"
	keySHA256  = "sha256"
	// keyStartTimeout and keyToolTimeout override [server]
	// provider_start_timeout_secs and tool_timeout_secs for one provider.
	keyStartTimeout = "start_timeout_secs"
	keyToolTimeout  = "tool_timeout_secs"
	// keyProcess says where a built-in runs.
	keyProcess = "process"
)

// Values of a built-in's process setting ([providers.<name>] process,
// [upstream] process).
const (
	// ProcessHost runs the built-in in the host's own process, called
	// directly: no plugin process, no gRPC.
	ProcessHost = "host"
	// ProcessPlugin runs the built-in as a plugin process of its own,
	// like a third-party provider.
	ProcessPlugin = "plugin"
)

// checkProcess checks a process setting at path: "", [ProcessHost] or
// [ProcessPlugin].
func (d *decoder) checkProcess(path, v string) {
	if v != "" && v != ProcessHost && v != ProcessPlugin {
		d.fail(path, "must be %q (in the host's process) or %q (a process of its own); got %q", ProcessHost, ProcessPlugin, v)
	}
}

// secretEnvSuffix marks a setting whose value names an environment variable.
const secretEnvSuffix = "_env"

var (
	providerName = regexp.MustCompile(`^[a-z][a-z0-9_-]{0,31}$`)
	sha256Hex    = regexp.MustCompile(`^[0-9a-f]{64}$`)
	envName      = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)
)

// ProviderConfig is one [providers.<name>] table.
type ProviderConfig struct {
	// Name is the table's name: ^[a-z][a-z0-9_-]{0,31}$.
	Name string
	// Enabled starts the provider. A table in the config file without an
	// enabled key enables its provider; the embedded defaults say which
	// built-ins are enabled.
	Enabled bool
	// Command is the path of a third-party provider's executable, used as
	// written (required for those, refused for built-ins).
	Command string
	// Args are extra arguments for Command; nil when absent. Built-ins take
	// none.
	Args []string
	// SHA256 is the expected SHA-256 of Command's file as 64 lowercase hex
	// digits (refused for built-ins). A third-party provider without one is
	// not loaded: the host refuses it with the file's actual hash, which
	// `openhuman-host providers add` writes here.
	SHA256 string
	// StartTimeoutSecs bounds the provider's start (handshake, Configure,
	// Describe) in seconds, 1..600; 0 when unset, which means [server]
	// provider_start_timeout_secs.
	StartTimeoutSecs int
	// ToolTimeoutSecs is the deadline of every call to the provider's
	// tools in seconds, 1..86400; it wins over a tool's own timeout and
	// [server] tool_timeout_secs. 0 when unset.
	ToolTimeoutSecs int
	// Process is where a built-in runs: [ProcessHost], [ProcessPlugin],
	// or "" (unset) for what its manifest says (sdk.Manifest.InProcess).
	// Refused for third-party providers, which always run as processes
	// of their own.
	Process string
	// Settings holds every other key of the table, nested tables included,
	// as decoded from TOML (string, int64, float64, bool, []any,
	// map[string]any, or a go-toml date/time); nil when there are none. Keys
	// ending in "_env" name environment variables: see ResolveSecrets.
	Settings map[string]any
}

// ResolveSecrets reads the environment variables that the Settings keys
// ending in "_env" name, in nested tables and arrays of tables too. The result
// maps each such key path without the suffix to the variable's value: for
// llm.api_key_env = "OPENAI_API_KEY" it holds "llm.api_key" → the value of
// OPENAI_API_KEY ("" when unset). Elements of arrays are written "items[0]".
// Non-string "_env" values are skipped (Load rejects them). A nil getenv means
// os.Getenv. The result is never nil.
func (p ProviderConfig) ResolveSecrets(getenv func(string) string) map[string]string {
	if getenv == nil {
		getenv = os.Getenv
	}
	out := map[string]string{}
	walkSettings("", p.Settings, func(path, key string, v any) {
		if s, ok := v.(string); ok && isEnvKey(key) {
			out[strings.TrimSuffix(path, secretEnvSuffix)] = getenv(s)
		}
	})
	return out
}

// StartTimeout returns StartTimeoutSecs as a duration; zero when unset.
func (p ProviderConfig) StartTimeout() time.Duration {
	return time.Duration(p.StartTimeoutSecs) * time.Second
}

// ToolTimeout returns ToolTimeoutSecs as a duration; zero when unset.
func (p ProviderConfig) ToolTimeout() time.Duration {
	return time.Duration(p.ToolTimeoutSecs) * time.Second
}

// SettingsJSON returns Settings as a JSON object, "{}" when there are none.
// It fails only for values JSON cannot hold, such as a NaN or infinite float.
func (p ProviderConfig) SettingsJSON() (json.RawMessage, error) {
	if len(p.Settings) == 0 {
		return json.RawMessage("{}"), nil
	}
	b, err := json.Marshal(p.Settings)
	if err != nil {
		return nil, fmt.Errorf("provider %s settings as JSON: %w", p.Name, err)
	}
	return b, nil
}

// isEnvKey reports whether a settings key names an environment variable.
func isEnvKey(key string) bool {
	return len(key) > len(secretEnvSuffix) && strings.HasSuffix(key, secretEnvSuffix)
}

// walkSettings calls fn for every leaf and table value under m, with its
// dotted path relative to m and its own key, parents before children.
func walkSettings(prefix string, m map[string]any, fn func(path, key string, v any)) {
	keys := slices.Sorted(maps.Keys(m))
	for _, k := range keys {
		path := joinKey(prefix, k)
		fn(path, k, m[k])
		walkValue(path, m[k], fn)
	}
}

func walkValue(path string, v any, fn func(path, key string, v any)) {
	switch v := v.(type) {
	case map[string]any:
		walkSettings(path, v, fn)
	case []any:
		for i, e := range v {
			walkValue(index(path, i), e, fn)
		}
	}
}

// provider merges the file's table for name over base (the default entry,
// or the zero value) and type-checks the keys the host reads.
func (d *decoder) provider(name string, base ProviderConfig, table map[string]any) ProviderConfig {
	prefix := joinKey("providers", name)
	p := base
	p.Name = name
	p.Enabled = true
	p.Args = slices.Clone(base.Args)
	settings := cloneTable(base.Settings)
	for _, k := range slices.Sorted(maps.Keys(table)) {
		v := table[k]
		path := joinKey(prefix, k)
		switch k {
		case keyEnabled:
			p.Enabled, _ = d.boolean(path, v)
		case keyCommand:
			p.Command, _ = d.str(path, v)
		case keySHA256:
			p.SHA256, _ = d.str(path, v)
		case keyArgs:
			p.Args = d.stringList(path, v)
		case keyStartTimeout:
			p.StartTimeoutSecs = d.secs(path, v, maxProviderStartSecs)
		case keyToolTimeout:
			p.ToolTimeoutSecs = d.secs(path, v, maxToolTimeoutSecs)
		case keyProcess:
			p.Process, _ = d.str(path, v)
		default:
			if settings == nil {
				settings = map[string]any{}
			}
			settings[k] = mergeValue(settings[k], v)
		}
	}
	p.Settings = settings
	return p
}

// str returns the decoded TOML value v as a string, reporting at path that
// it must be one when it is not (then "" and false).
func (d *decoder) str(path string, v any) (string, bool) {
	return typed[string](d, path, v, "a string")
}

// boolean returns the decoded TOML value v as a bool, reporting at path
// that it must be one when it is not (then false and false).
func (d *decoder) boolean(path string, v any) (b, ok bool) {
	return typed[bool](d, path, v, "a boolean")
}

// typed returns v as a T, reporting at path that it must be what (such as
// "a string") when it is not; then the zero T and false.
func typed[T any](d *decoder, path string, v any, what string) (T, bool) {
	t, ok := v.(T)
	if !ok {
		d.fail(path, "must be %s; got %s", what, sdk.DescribeValue(v))
	}
	return t, ok
}

// secs converts a decoded TOML integer of seconds in 1..max.
func (d *decoder) secs(path string, v any, max int64) int {
	n, ok := v.(int64)
	if !ok {
		d.fail(path, "must be an integer number of seconds; got %s", sdk.DescribeValue(v))
		return 0
	}
	if n < 1 || n > max {
		d.fail(path, "must be between 1 and %d; got %d", max, n)
		return 0
	}
	return int(n)
}

// stringList converts a decoded TOML array of strings, reporting the first
// element that is not a string.
func (d *decoder) stringList(path string, v any) []string {
	arr, ok := v.([]any)
	if !ok {
		d.fail(path, "must be an array of strings; got %s", sdk.DescribeValue(v))
		return nil
	}
	out := make([]string, 0, len(arr))
	for i, e := range arr {
		s, ok := d.str(index(path, i), e)
		if !ok {
			return nil
		}
		out = append(out, s)
	}
	return out
}

// reservedDirNames are provider names whose data directory,
// <data dir>/<name>, would be one the host keeps for itself, with the
// reason; the built-ins' config directories ([sdk.ConfigDir]) are
// reserved too (see reservedName).
var reservedDirNames = map[string]string{
	"run": "<data dir>/run holds the status files of running servers",
}

// reservedName says why no [providers.<name>] table may be called name:
// a built-in provider configured by a section of its own has it, or its
// data directory would be one the host or a built-in keeps. Both are ""
// for a name free to use.
func reservedName(name string) (section, dir string) {
	if why, ok := reservedDirNames[name]; ok {
		dir = why
	}
	for _, b := range builtin.Registered().Providers() {
		m := b.Manifest
		if m.Section != "" && m.Name == name {
			section = m.Section
		}
		if d := m.ConfigDir; d != nil && d.Default == name {
			dir = "<config dir>/" + d.Default + " holds " + d.Holds + ", and on macOS the config and data directories are one"
		}
	}
	return section, dir
}

// validateProvider checks one merged provider entry.
func (d *decoder) validateProvider(p ProviderConfig) {
	prefix := joinKey("providers", p.Name)
	if !providerName.MatchString(p.Name) {
		d.fail(prefix, "provider names must match %s (a lowercase letter, then up to 31 lowercase letters, digits, _ or -)", providerName)
	}
	section, dir := reservedName(p.Name)
	if section != "" {
		d.fail(prefix, "the name %q is reserved for the provider that serves %s; rename the table", p.Name, section)
	}
	if dir != "" {
		d.fail(prefix, "the name %q is reserved: a provider's data directory is <data dir>/<name>, and %s; rename the table", p.Name, dir)
	}
	if IsBuiltin(p.Name) {
		builtins := strings.Join(BuiltinProviders(), ", ")
		if p.Command != "" {
			d.fail(joinKey(prefix, keyCommand), "built-in providers (%s) run inside openhuman-host and take no command; remove the key, or rename the table for a third-party provider", builtins)
		}
		if p.Args != nil {
			d.fail(joinKey(prefix, keyArgs), "built-in providers (%s) take no args; remove the key", builtins)
		}
		if p.SHA256 != "" {
			d.fail(joinKey(prefix, keySHA256), "built-in providers (%s) take no sha256; remove the key", builtins)
		}
		d.checkProcess(joinKey(prefix, keyProcess), p.Process)
	} else {
		if p.Process != "" {
			d.fail(joinKey(prefix, keyProcess), "third-party providers always run as a process of their own; remove the key (only built-in providers, %s, take it)", strings.Join(BuiltinProviders(), ", "))
		}
		if strings.TrimSpace(p.Command) == "" {
			d.fail(joinKey(prefix, keyCommand), "required for a third-party provider: the path of its executable (built-in providers are %s)", strings.Join(BuiltinProviders(), ", "))
		}
		if p.SHA256 != "" && !sha256Hex.MatchString(p.SHA256) {
			d.fail(joinKey(prefix, keySHA256), "must be 64 lowercase hex digits (the output of sha256sum); got %q", p.SHA256)
		}
	}
	walkSettings(prefix, p.Settings, func(path, key string, v any) {
		if !isEnvKey(key) {
			return
		}
		s, ok := v.(string)
		switch {
		case !ok:
			d.fail(path, "must be a string naming an environment variable; got %s", sdk.DescribeValue(v))
		case !envName.MatchString(s):
			d.fail(path, "must name an environment variable (letters, digits and _, not starting with a digit); got %q", s)
		}
	})
}

// mergeValue merges a file value over a default one: tables merge key by key,
// anything else is replaced.
func mergeValue(base, v any) any {
	bt, ok1 := base.(map[string]any)
	vt, ok2 := v.(map[string]any)
	if !ok1 || !ok2 {
		return v
	}
	out := cloneTable(bt)
	for k, x := range vt {
		out[k] = mergeValue(out[k], x)
	}
	return out
}

// cloneTable deep-copies nested tables and arrays so merges never alias the
// defaults.
func cloneTable(m map[string]any) map[string]any {
	if m == nil {
		return nil
	}
	out := make(map[string]any, len(m))
	for k, v := range m {
		out[k] = cloneValue(v)
	}
	return out
}

func cloneValue(v any) any {
	switch v := v.(type) {
	case map[string]any:
		return cloneTable(v)
	case []any:
		out := make([]any, len(v))
		for i, e := range v {
			out[i] = cloneValue(e)
		}
		return out
	}
	return v
}

// sortedProviderNames lists the names in providers, sorted.
func sortedProviderNames(providers map[string]ProviderConfig) []string {
	names := slices.Collect(maps.Keys(providers))
	sort.Strings(names)
	return names
}
