package config

import (
	"maps"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"unicode"

	"github.com/openhuman/openhuman-host/providers/upstream/upstreamwire"
	"github.com/openhuman/openhuman-host/sdk"
)

// UpstreamSection is the config section of the upstream servers: the
// built-in provider whose [sdk.Manifest].Section it is serves them.
const UpstreamSection = "[[upstream.servers]]"

// UpstreamServer is one checked [[upstream.servers]] entry: an MCP server
// whose tools the host re-exposes through its own policy and audit. The
// type is shared with the upstream provider, which reads it as JSON.
type UpstreamServer = upstreamwire.Server

// UpstreamAuth is an [[upstream.servers]] auth table. Secrets come only
// from environment variables, named by the *_env keys.
type UpstreamAuth = upstreamwire.Auth

// OAuthSettings is what the upstream provider needs to sign in to a
// server of an oauth auth kind, with the client secret read from the
// environment. It travels to the provider as its settings' "oauth" object.
type OAuthSettings = upstreamwire.OAuthSettings

// ExpandEnv replaces each ${NAME} in s with the value lookup gives the
// variable NAME, and each $$ with $; a "$" followed by anything else stays
// as it is. It fails, naming the variable, when lookup reports NAME unset,
// and for a "${" that does not start a well-formed reference.
func ExpandEnv(s string, lookup func(string) (string, bool)) (string, error) {
	return upstreamwire.ExpandEnv(s, lookup)
}

var upstreamKeys = []string{"allowed_tools", "args", "auth", "command", "cwd", "disallowed_tools", "enabled", "endpoint", "env",
	"name", "ping_interval_secs", "prefix", "read_only_tools", "session_idle_secs", "start_timeout_secs", "timeout_secs", "trust_annotations"}

var (
	headerName = regexp.MustCompile(`^[A-Za-z0-9!#$%&'*+.^_` + "`" + `|~-]+$`)
	prefixText = regexp.MustCompile(`^[A-Za-z0-9_.-]{0,64}$`)
)

// upstreamServers checks the decoded [[upstream.servers]] entries and
// returns them; problems are reported through d with the entry's key.
func (d *decoder) upstreamServers(raw []map[string]any) []UpstreamServer {
	var out []UpstreamServer
	seen := map[string]bool{}
	for i, m := range raw {
		at := index("upstream.servers", i)
		s := UpstreamServer{Enabled: true, TimeoutSecs: 30}
		for _, k := range slices.Sorted(maps.Keys(m)) {
			v := m[k]
			path := joinKey(at, k)
			switch k {
			case "name", "command", "cwd", "endpoint":
				str, ok := d.str(path, v)
				if !ok {
					continue
				}
				switch k {
				case "name":
					s.Name = str
				case "command":
					s.Command = str
				case "cwd":
					s.Cwd = str
				case "endpoint":
					s.Endpoint = str
				}
			case "args":
				s.Args = d.stringList(path, v)
			case "allowed_tools":
				s.AllowedTools = d.stringList(path, v)
			case "disallowed_tools":
				s.DisallowedTools = d.stringList(path, v)
			case "read_only_tools":
				s.ReadOnlyTools = d.stringList(path, v)
			case "enabled", "trust_annotations":
				b, ok := d.boolean(path, v)
				if !ok {
					continue
				}
				if k == "enabled" {
					s.Enabled = b
				} else {
					s.TrustAnnotations = b
				}
			case "timeout_secs":
				s.TimeoutSecs = d.secs(path, v, 3600)
			case "start_timeout_secs":
				s.StartTimeoutSecs = d.secs(path, v, 3600)
			case "session_idle_secs":
				s.SessionIdleSecs = d.secsOrNever(path, v, 86400)
			case "ping_interval_secs":
				s.PingIntervalSecs = d.secsOrNever(path, v, 3600)
			case "prefix":
				str, ok := v.(string)
				if !ok || !prefixText.MatchString(str) {
					d.fail(path, "must be a string of at most 64 letters, digits, _, . or -; got %s", sdk.DescribeValue(v))
					continue
				}
				s.Prefix = &str
			case "env":
				t, ok := v.(map[string]any)
				if !ok {
					d.fail(path, "must be a table of environment variables; got %s", sdk.DescribeValue(v))
					continue
				}
				s.Env = map[string]string{}
				for name, val := range t {
					str, ok := val.(string)
					if !ok || !envName.MatchString(name) {
						d.fail(joinKey(path, name), "must be a string, under a variable name of letters, digits and _")
						continue
					}
					if _, err := ExpandEnv(str, func(string) (string, bool) { return "", true }); err != nil {
						d.fail(joinKey(path, name), "%v", err)
						continue
					}
					s.Env[name] = str
				}
			case "auth":
				s.Auth = d.upstreamAuth(path, v)
			default:
				d.fail(path, "unknown key; valid keys in [[upstream.servers]] are %s", strings.Join(upstreamKeys, ", "))
			}
		}
		switch {
		case !providerName.MatchString(s.Name):
			d.fail(joinKey(at, "name"), "required: a lowercase letter, then up to 31 lowercase letters, digits, _ or -; got %q", s.Name)
		case seen[s.Name]:
			d.fail(joinKey(at, "name"), "%q names two upstream servers; names must be unique", s.Name)
		}
		seen[s.Name] = true
		switch {
		case (s.Command == "") == (s.Endpoint == ""):
			d.fail(at, "set exactly one of command (a stdio server) and endpoint (a Streamable HTTP server)")
		case s.Endpoint != "":
			u, err := url.Parse(s.Endpoint)
			switch {
			case err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "":
				d.fail(joinKey(at, "endpoint"), "must be an http or https URL such as https://mcp.example.com/mcp")
			case strings.ContainsFunc(s.Endpoint, unicode.IsSpace):
				d.fail(joinKey(at, "endpoint"), "must not contain spaces; percent-encode them (%%20)")
			default:
				if _, err := url.ParseQuery(u.RawQuery); err != nil {
					d.fail(joinKey(at, "endpoint"), "has a query that is not valid URL encoding; percent-encode its values")
				}
			}
		}
		if s.Auth != nil && s.Endpoint == "" {
			d.fail(joinKey(at, "auth"), "applies to HTTP servers (endpoint) only; pass a stdio server's secrets through env")
		}
		out = append(out, s)
	}
	return out
}

func (d *decoder) upstreamAuth(path string, v any) *UpstreamAuth {
	t, ok := v.(map[string]any)
	if !ok {
		d.fail(path, "must be a table such as { kind = \"bearer_token\", token_env = \"MY_TOKEN\" }; got %s", sdk.DescribeValue(v))
		return nil
	}
	a := &UpstreamAuth{}
	str := func(key string) string {
		raw, present := t[key]
		if !present {
			return ""
		}
		s, _ := d.str(joinKey(path, key), raw)
		return s
	}
	a.Kind = str("kind")
	need := map[string][]string{
		"bearer_token":             {"token_env"},
		"basic":                    {"username_env", "password_env"},
		"header":                   {"header", "value_env"},
		"headers":                  {"headers"},
		"query_param":              {"param", "value_env"},
		"oauth":                    {},
		"oauth_client_credentials": {"client_id", "client_secret_env"},
	}
	optional := map[string][]string{
		"oauth":                    {"client_id", "client_secret_env", "client_metadata_url", "scopes", "interactive"},
		"oauth_client_credentials": {"scopes"},
	}
	keys, known := need[a.Kind]
	if !known {
		d.fail(joinKey(path, "kind"), "must be one of bearer_token, basic, header, headers, query_param, oauth, oauth_client_credentials; got %q", a.Kind)
		return nil
	}
	allowed := append(append([]string{"kind"}, keys...), optional[a.Kind]...)
	for k := range t {
		if !slices.Contains(allowed, k) {
			d.fail(joinKey(path, k), "unknown key for kind %q; it takes %s", a.Kind, strings.Join(allowed[1:], ", "))
		}
	}
	for _, k := range keys {
		if _, ok := t[k]; !ok {
			d.fail(joinKey(path, k), "required for kind %q", a.Kind)
		}
	}
	a.TokenEnv, a.UsernameEnv, a.PasswordEnv = str("token_env"), str("username_env"), str("password_env")
	a.Header, a.Param, a.ValueEnv = str("header"), str("param"), str("value_env")
	a.ClientID, a.ClientSecretEnv, a.ClientMetadataURL = str("client_id"), str("client_secret_env"), str("client_metadata_url")
	if a.ClientSecretEnv != "" && a.ClientID == "" {
		d.fail(joinKey(path, "client_secret_env"), "needs client_id: a secret belongs to a registered client")
	}
	if u := a.ClientMetadataURL; u != "" {
		parsed, err := url.Parse(u)
		if err != nil || parsed.Scheme != "https" || parsed.Host == "" || parsed.Path == "" || parsed.Path == "/" {
			d.fail(joinKey(path, "client_metadata_url"), "must be an https URL with a path (where this client's metadata document is served); got %q", u)
		}
	}
	if raw, ok := t["scopes"]; ok {
		a.Scopes = d.stringList(joinKey(path, "scopes"), raw)
	}
	a.Interactive = a.Kind == "oauth"
	if raw, ok := t["interactive"]; ok {
		a.Interactive, _ = d.boolean(joinKey(path, "interactive"), raw)
	}
	for _, k := range []string{"token_env", "username_env", "password_env", "value_env", "client_secret_env"} {
		if s := str(k); s != "" && !envName.MatchString(s) {
			d.fail(joinKey(path, k), "must name an environment variable; got %q", s)
		}
	}
	if a.Header != "" && !headerName.MatchString(a.Header) {
		d.fail(joinKey(path, "header"), "must be an HTTP header name; got %q", a.Header)
	}
	if raw, ok := t["headers"]; ok {
		ht, ok := raw.(map[string]any)
		if !ok {
			d.fail(joinKey(path, "headers"), "must be a table of header name = environment variable; got %s", sdk.DescribeValue(raw))
		}
		a.Headers = map[string]string{}
		for name, env := range ht {
			s, ok := env.(string)
			if !ok || !headerName.MatchString(name) || !envName.MatchString(s) {
				d.fail(joinKey(joinKey(path, "headers"), name), "must map an HTTP header name to an environment variable's name")
				continue
			}
			a.Headers[name] = s
		}
	}
	return a
}

// secsOrNever converts a setting of 0 (never) to max seconds, reporting
// anything else; nil when it was reported.
func (d *decoder) secsOrNever(path string, v any, max int64) *int {
	n, ok := v.(int64)
	got := sdk.DescribeValue(v)
	if ok {
		got = strconv.FormatInt(n, 10)
	}
	if !ok || n < 0 || n > max {
		d.fail(path, "must be an integer number of seconds from 0 (never) to %d; got %s", max, got)
		return nil
	}
	secs := int(n)
	return &secs
}
