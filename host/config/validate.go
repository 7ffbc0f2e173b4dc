package config

import (
	"errors"
	"fmt"
	"maps"
	"net"
	"net/url"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/openhuman/openhuman-host/host/builtin"
	"github.com/openhuman/openhuman-host/sdk"
	"github.com/openhuman/openhuman-host/sdk/embeddings"
)

// logLevels are the accepted server.log_level values, quietest last.
var logLevels = []string{"trace", "debug", "info", "warn", "error", "off"}

var hostName = regexp.MustCompile(`^[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?(\.[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*$`)

// validate checks the merged configuration. Values the file did not set come
// from the defaults, which are valid, so every error points into the file.
func (d *decoder) validate(c *Config) {
	s := &c.Server
	d.check("server.transport", oneOf(s.Transport, TransportStdio, TransportHTTP))
	d.check("server.host", checkHost(s.Host))
	d.check("server.port", between(int64(s.Port), 1, 65535))
	d.check("server.tool_timeout_secs", between(int64(s.ToolTimeoutSecs), 1, maxToolTimeoutSecs))
	d.check("server.provider_start_timeout_secs", between(int64(s.ProviderStartTimeoutSecs), 1, maxProviderStartSecs))
	d.check("server.log_level", oneOf(s.LogLevel, logLevels...))
	d.check("server.data_dir", checkDataDir(s.DataDir))
	d.check("server.max_request_body_bytes", atLeast(s.MaxRequestBodyBytes, 1))
	d.check("server.session_idle_timeout_secs", between(int64(s.SessionIdleTimeoutSecs), 0, maxSessionIdleSecs))
	d.check("server.stdio_close_grace_secs", between(int64(s.StdioCloseGraceSecs), 0, maxStdioShutdownSecs))
	d.check("server.stdio_exit_timeout_secs", between(int64(s.StdioExitTimeoutSecs), 1, maxStdioShutdownSecs))
	d.check("server.max_sessions", between(int64(s.MaxSessions), 1, maxSessions))
	d.check("server.max_connections", between(int64(s.MaxConnections), 1, maxConnections))
	d.checkEach("server.allowed_origins", s.AllowedOrigins, checkOrigin)
	if s.Replica != "" {
		d.check("server.replica", checkReplica(s.Replica))
	}
	for i, msg := range checkClientNames(s.StructuredContentClients) {
		d.check(index("server.structured_content_clients", i), msg)
	}

	a := &c.Autonomy
	d.check("autonomy.level", oneOf(a.Level, LevelReadOnly, LevelSupervised, LevelFull))
	if a.MaxActionsPerHour != nil {
		d.check("autonomy.max_actions_per_hour", atLeast(int64(*a.MaxActionsPerHour), 0))
	}
	d.checkEach("autonomy.allowed_tools", a.AllowedTools, checkToolName)
	d.checkEach("autonomy.denied_tools", a.DeniedTools, checkToolName)
	d.check("autonomy.confirm_acts", oneOf(a.ConfirmActs, ConfirmOff, ConfirmWhenSupported, ConfirmRequired))

	d.check("audit.retain_days", atLeast(int64(c.Audit.RetainDays), 0))
	d.check("audit.queue_size", atLeast(int64(c.Audit.QueueSize), 1))

	d.validateProfiles(c.Profiles)
	d.validateToolOverrides(c.Tools)

	d.check("storage.driver", oneOf(c.Storage.Driver, StorageSQLite, StoragePostgres))
	if !envName.MatchString(c.Storage.DSNEnv) {
		d.fail("storage.dsn_env", "%q is not an environment variable name: use letters, digits and underscores, not starting with a digit", c.Storage.DSNEnv)
	}

	t := &c.Telemetry
	d.check("telemetry.otlp_protocol", oneOf(t.OTLPProtocol, OTLPHTTP, OTLPGRPC))
	if t.OTLPEndpoint != "" {
		d.check("telemetry.otlp_endpoint", checkOTLPEndpoint(t.OTLPEndpoint))
	}
	if t.SampleRatio < 0 || t.SampleRatio > 1 {
		d.fail("telemetry.sample_ratio", "must be between 0 and 1; got %g", t.SampleRatio)
	}
	d.check("telemetry.metric_interval_secs", between(int64(t.MetricIntervalSecs), 1, 3600))
	if t.PrometheusListen != "" {
		d.check("telemetry.prometheus_listen", checkLoopbackListen(t.PrometheusListen))
	}

	for _, name := range sortedProviderNames(c.Providers) {
		d.validateProvider(c.Providers[name])
	}

	d.checkProcess("upstream.process", c.Upstream.Process)
	c.Upstream.Checked = d.upstreamServers(c.Upstream.Servers)

	if e := c.Discovery.Embeddings; e != nil {
		// Validate applies the defaults; its messages never repeat a
		// value that may be a secret.
		var ce *embeddings.ConfigError
		if err := e.Validate(DiscoveryEmbeddingsTable); errors.As(err, &ce) {
			d.fail("discovery.embeddings."+ce.Key, "%s", ce.Msg)
		} else if err != nil {
			d.fail("discovery.embeddings", "%v", err)
		}
	}
}

// checkOTLPEndpoint checks telemetry.otlp_endpoint: an http or https URL
// with a host and nothing a secret could hide in.
func checkOTLPEndpoint(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return "must be an http or https URL such as \"http://127.0.0.1:4318\""
	}
	if u.User != nil {
		return "must not contain a user name or password; put credentials in the OTEL_EXPORTER_OTLP_HEADERS environment variable"
	}
	if u.RawQuery != "" || u.Fragment != "" {
		return "must not have a query or fragment"
	}
	return ""
}

// checkLoopbackListen checks a host:port listen address that must be on a
// loopback interface.
func checkLoopbackListen(v string) string {
	host, port, err := net.SplitHostPort(v)
	if err != nil {
		return fmt.Sprintf("must be a loopback host:port such as \"127.0.0.1:9464\"; got %q", v)
	}
	if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
		return fmt.Sprintf("port must be between 1 and 65535; got %q", port)
	}
	if ip := net.ParseIP(host); host != "localhost" && (ip == nil || !ip.IsLoopback()) {
		return fmt.Sprintf("must be a loopback address (127.0.0.1, ::1 or localhost), as it has no authentication; "+
			"to scrape from another machine, set prometheus = true and scrape /metrics on the http transport with its token; got %q", v)
	}
	return ""
}

// replicaName is what server.replica may hold.
var replicaName = regexp.MustCompile(`^[A-Za-z0-9._:@-]{1,64}$`)

// checkReplica checks a server.replica value.
func checkReplica(v string) string {
	if !replicaName.MatchString(v) {
		return fmt.Sprintf("must be 1 to 64 letters, digits and . _ : @ -, such as \"web1:9300\"; got %q", v)
	}
	return ""
}

// check records msg, when not empty, as an error about path.
func (d *decoder) check(path, msg string) {
	if msg != "" {
		d.fail(path, "%s", msg)
	}
}

// checkEach checks every element of list, the array at path, with check.
func (d *decoder) checkEach(path string, list []string, check func(string) string) {
	for i, v := range list {
		d.check(index(path, i), check(v))
	}
}

// eachNamed calls check, in name order, on every table of tables, those
// under [section.<name>], whose name valid matches, with its key
// ("section.<name>"); a name it does not match gets the error format
// (with %q for the name) and no further checks.
func eachNamed[T any](d *decoder, section string, tables map[string]T, valid *regexp.Regexp, format string, check func(key, name string, table T)) {
	for _, n := range slices.Sorted(maps.Keys(tables)) {
		key := section + "." + n
		if !valid.MatchString(n) {
			d.fail(key, format, n)
			continue
		}
		check(key, n, tables[n])
	}
}

// applyEnv applies the environment overrides to c, validating them.
func applyEnv(c *Config, env environ) []*Error {
	var errs []*Error
	override := func(variable, key string, check func(string) string, set func(string)) {
		v := env.getenv(variable)
		if v == "" {
			return
		}
		if msg := check(v); msg != "" {
			errs = append(errs, &Error{Env: variable, Key: key, Msg: msg})
			return
		}
		set(v)
	}
	override(EnvLogLevel, "server.log_level",
		func(v string) string { return oneOf(v, logLevels...) },
		func(v string) { c.Server.LogLevel = v })
	override(EnvDataDir, "server.data_dir", checkDataDir,
		func(v string) { c.Server.DataDir = v })
	override(EnvReplica, "server.replica", checkReplica,
		func(v string) { c.Server.Replica = v })
	for _, b := range builtin.Registered().Providers() {
		for _, e := range b.Manifest.Env {
			override(e.Var, joinKey(joinKey("providers", b.Manifest.Name), e.Key),
				func(v string) string { return checkEnvOverride(e, v) },
				func(v string) { setProviderKey(c, b.Manifest.Name, e, v) })
		}
	}
	return errs
}

// checkEnvOverride checks the value v of a built-in provider's
// environment override e, returning "" when it reads as e.Kind.
func checkEnvOverride(e sdk.EnvOverride, v string) string {
	switch e.Kind {
	case sdk.EnvBool:
		if _, ok := parseBool(v); !ok {
			return fmt.Sprintf("must be true or false; got %q", v)
		}
	case sdk.EnvInt:
		if _, err := strconv.ParseInt(v, 10, 64); err != nil {
			return fmt.Sprintf("must be a whole number; got %q", v)
		}
	case sdk.EnvURL:
		if u, err := url.Parse(v); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			if e.Example == "" {
				return fmt.Sprintf("must be an http or https URL; got %q", v)
			}
			return fmt.Sprintf("must be an http or https URL such as %s; got %q", e.Example, v)
		}
	}
	return ""
}

// setProviderKey sets the key of [providers.<name>] that e overrides to
// the checked value v: enabled, or one provider setting.
func setProviderKey(c *Config, name string, e sdk.EnvOverride, v string) {
	p := c.Providers[name]
	p.Name = name
	switch {
	case e.Key == keyEnabled && e.Kind == sdk.EnvBool:
		p.Enabled, _ = parseBool(v)
	default:
		settings := cloneTable(p.Settings)
		if settings == nil {
			settings = map[string]any{}
		}
		settings[e.Key] = envValue(e.Kind, v)
		p.Settings = settings
	}
	if c.Providers == nil {
		c.Providers = map[string]ProviderConfig{}
	}
	c.Providers[name] = p
}

// envValue is a checked override value as TOML would have decoded it.
func envValue(kind sdk.EnvKind, v string) any {
	switch kind {
	case sdk.EnvBool:
		b, _ := parseBool(v)
		return b
	case sdk.EnvInt:
		n, _ := strconv.ParseInt(v, 10, 64)
		return n
	}
	return v
}

// parseBool reads the boolean spellings environment variables use.
func parseBool(v string) (bool, bool) {
	switch strings.ToLower(strings.TrimSpace(v)) {
	case "1", "true", "yes", "on":
		return true, true
	case "0", "false", "no", "off":
		return false, true
	}
	return false, false
}

// The check functions return "" for a valid value, else what is wrong.

func oneOf(v string, allowed ...string) string {
	if slices.Contains(allowed, v) {
		return ""
	}
	return fmt.Sprintf("must be one of %s; got %q", strings.Join(allowed, ", "), v)
}

func between(v, lo, hi int64) string {
	if v < lo || v > hi {
		return fmt.Sprintf("must be between %d and %d; got %d", lo, hi, v)
	}
	return ""
}

func atLeast(v, lo int64) string {
	if v < lo {
		return fmt.Sprintf("must be at least %d; got %d", lo, v)
	}
	return ""
}

func checkHost(h string) string {
	if net.ParseIP(h) != nil || hostName.MatchString(h) {
		return ""
	}
	return fmt.Sprintf("must be an IP address or host name, such as 127.0.0.1 or localhost; got %q", h)
}

func checkDataDir(p string) string {
	if p == "" || homePrefixed(p) || filepath.IsAbs(p) {
		return ""
	}
	return fmt.Sprintf("must be an absolute path, a path starting with ~/, or empty for the default; got %q", p)
}

func checkOrigin(o string) string {
	u, err := url.Parse(o)
	if err == nil && (u.Scheme == "http" || u.Scheme == "https") && u.Host != "" &&
		u.User == nil && u.Path == "" && u.RawQuery == "" && u.Fragment == "" && !u.ForceQuery {
		return ""
	}
	return fmt.Sprintf("must be an origin: http or https, a host and an optional port, such as https://example.com:8443; got %q", o)
}

// checkToolName checks an allowed_tools or denied_tools entry: a tool name
// or a path.Match glob such as "notes_*".
func checkToolName(t string) string {
	if t == "" || strings.TrimSpace(t) != t {
		return fmt.Sprintf("tool names must be non-empty without surrounding spaces; got %q", t)
	}
	if _, err := path.Match(t, ""); err != nil {
		return fmt.Sprintf("%q is not a valid pattern (* ? [a-z] as in path.Match; tool names are case-sensitive)", t)
	}
	return ""
}

// anyClient, in a list of MCP client names, names every client.
const anyClient = "*"

// maxClientNameChars is the longest client name the host keeps: the
// server cuts the clientInfo.name a client sends to this many characters
// (host/server's cleanClientText), so a longer entry could never match.
const maxClientNameChars = 128

// checkClientNames checks a list of MCP clientInfo.name values matched
// exactly, such as [server] structured_content_clients, and returns what
// is wrong with each entry by its index ("" when nothing is). An entry
// the host could never match (empty, surrounded by spaces, with control
// characters, longer than the names the host keeps) is refused, not
// corrected, and so are repeats, and "*" next to other names, which it
// already covers.
func checkClientNames(names []string) []string {
	msgs := make([]string, len(names))
	seen := map[string]int{}
	for i, n := range names {
		switch {
		case n == "" || strings.TrimSpace(n) != n:
			msgs[i] = fmt.Sprintf(`client names must be non-empty without surrounding spaces, as the client sends clientInfo.name; got %q`, n)
		case strings.ContainsFunc(n, func(r rune) bool { return unicode.IsControl(r) || r == utf8.RuneError }):
			msgs[i] = fmt.Sprintf("client names cannot hold control characters or invalid UTF-8, which the host drops from the names clients send; got %q", n)
		case utf8.RuneCountInString(n) > maxClientNameChars:
			msgs[i] = fmt.Sprintf("client names are at most %d characters (the host cuts longer ones, so this one could never match); got %d", maxClientNameChars, utf8.RuneCountInString(n))
		case n == anyClient && len(names) > 1:
			msgs[i] = `"*" names every client; list it alone or remove it`
		}
		if j, dup := seen[n]; dup && msgs[i] == "" {
			msgs[i] = fmt.Sprintf("%q is listed twice (first at [%d]); remove one", n, j)
		}
		if _, dup := seen[n]; !dup {
			seen[n] = i
		}
	}
	return msgs
}

// Upper bounds of the durations, so that converting them to a
// time.Duration cannot overflow and a typo cannot make a limit endless.
const (
	maxToolTimeoutSecs   = 86400
	maxProviderStartSecs = 600
	maxSessionIdleSecs   = 30 * 86400
	maxStdioShutdownSecs = 600
	maxSessions          = 100000
	maxConnections       = 100000
)

// profileName is what a [profiles.<name>] may be called: it is a URL path
// segment (/profile/<name>) and an audit column value.
var profileName = regexp.MustCompile(`^[a-z0-9][a-z0-9_-]{0,31}$`)

// validateProfiles checks every [profiles.<name>] table, and that no
// client name selects two profiles.
func (d *decoder) validateProfiles(profiles map[string]ProfileConfig) {
	clientOf := map[string]string{}
	eachNamed(d, "profiles", profiles, profileName,
		"profile names are 1 to 32 of a-z, 0-9, _ and -, starting with a letter or digit (they appear in the URL /profile/<name>); got %q",
		func(key, n string, p ProfileConfig) {
			if p.Level != "" {
				d.check(key+".level", oneOf(p.Level, LevelReadOnly, LevelSupervised, LevelFull))
			}
			if p.ConfirmActs != "" {
				d.check(key+".confirm_acts", oneOf(p.ConfirmActs, ConfirmOff, ConfirmWhenSupported, ConfirmRequired))
			}
			if p.MaxActionsPerHour != nil {
				d.check(key+".max_actions_per_hour", atLeast(int64(*p.MaxActionsPerHour), 0))
			}
			d.checkEach(key+".tools", p.Tools, checkToolName)
			d.checkEach(key+".exclude_tools", p.ExcludeTools, checkToolName)
			d.checkEach(key+".resources", p.Resources, checkURIGlob)
			d.checkEach(key+".exclude_resources", p.ExcludeResources, checkURIGlob)
			d.checkEach(key+".pinned_tools", p.PinnedTools, checkToolName)
			if len(p.PinnedTools) > 0 && !p.Discovery {
				d.fail(key+".pinned_tools", "pins tools for discovery mode, which this profile does not use: set discovery = true or remove pinned_tools")
			}
			msgs := checkClientNames(p.Clients)
			for i, c := range p.Clients {
				if msgs[i] == "" && c == anyClient {
					msgs[i] = `"*" cannot select a profile: name the clients, or leave clients out and choose the profile by path or --profile`
				}
				if other, dup := clientOf[c]; dup && msgs[i] == "" {
					msgs[i] = fmt.Sprintf("client %q already selects profile %q; a client name may select one profile", c, other)
				}
				if msgs[i] == "" {
					clientOf[c] = n
				}
				d.check(index(key+".clients", i), msgs[i])
			}
		})
}

// toolName is what a client-visible tool name may be (the names Claude
// Desktop accepts).
var toolName = regexp.MustCompile(`^[a-zA-Z0-9_-]{1,64}$`)

// validateToolOverrides checks every [tools.<name>] table.
func (d *decoder) validateToolOverrides(tools map[string]ToolOverride) {
	eachNamed(d, "tools", tools, toolName,
		"tables under [tools] are named by a tool's advertised name (1 to 64 of A-Z, a-z, 0-9, _ and -, as tools/list shows it); got %q",
		func(key, _ string, o ToolOverride) {
			if o.Title != nil {
				d.check(key+".title", checkText(*o.Title, 128, false))
			}
			if o.Description != nil {
				d.check(key+".description", checkText(*o.Description, 8192, true))
			}
		})
}

// checkText checks a text shown to clients: not blank, at most max
// characters, valid UTF-8, no control characters but (when multiline)
// newlines and tabs.
func checkText(s string, max int, multiline bool) string {
	switch {
	case strings.TrimSpace(s) == "":
		return "must not be blank: leave the key out to keep the provider's"
	case !utf8.ValidString(s):
		return "must be valid UTF-8"
	case utf8.RuneCountInString(s) > max:
		return fmt.Sprintf("must be at most %d characters; got %d", max, utf8.RuneCountInString(s))
	case strings.ContainsFunc(s, func(r rune) bool { return unicode.IsControl(r) && !(multiline && (r == '\n' || r == '\t')) }):
		return "must not hold control characters"
	}
	return ""
}

// checkURIGlob checks a resource URI or URI glob.
func checkURIGlob(g string) string {
	if g == "" || strings.TrimSpace(g) != g || strings.ContainsFunc(g, unicode.IsControl) {
		return fmt.Sprintf("resource URIs and globs must be non-empty, without surrounding spaces or control characters; got %q", g)
	}
	return ""
}
