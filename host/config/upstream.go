package config

import (
	"encoding/base64"
	"errors"
	"fmt"
	"maps"
	"net/url"
	"os"
	"regexp"
	"slices"
	"strings"
	"unicode"

	"github.com/openhuman/openhuman-host/internal/tomltype"
	"github.com/openhuman/openhuman-host/sdk"
)

// UpstreamServer is one checked [[upstream.servers]] entry: an MCP server
// whose tools the host re-exposes through its own policy and audit.
type UpstreamServer struct {
	// Name identifies the server: ^[a-z][a-z0-9_-]{0,31}$, unique.
	Name string `json:"name"`
	// Command, Args, Env and Cwd start a stdio server. An Env value may
	// refer to the host's environment variables as ${NAME} (see
	// [ExpandEnv]), so that secrets stay out of the file; ResolveEnv
	// expands them.
	Command string            `json:"command,omitempty"`
	Args    []string          `json:"args,omitempty"`
	Env     map[string]string `json:"env,omitempty"`
	Cwd     string            `json:"cwd,omitempty"`
	// Endpoint is the URL of a Streamable HTTP server; exactly one of
	// Command and Endpoint is set.
	Endpoint string `json:"endpoint,omitempty"`
	// Enabled connects the server; default true.
	Enabled bool `json:"enabled"`
	// AllowedTools and DisallowedTools filter the upstream tool names
	// (exact names or path.Match globs); denial wins.
	AllowedTools    []string `json:"allowed_tools,omitempty"`
	DisallowedTools []string `json:"disallowed_tools,omitempty"`
	// TimeoutSecs bounds each call, 1..3600; default 30.
	TimeoutSecs int `json:"timeout_secs"`
	// StartTimeoutSecs bounds one attempt to connect (start the command or
	// reach the endpoint, and initialise), 1..3600; 0 leaves the
	// provider's default, 120. A server that is not up within it is
	// retried in the background without holding up the others.
	StartTimeoutSecs int `json:"start_timeout_secs,omitempty"`
	// SessionIdleSecs closes a client's own session with the server (and
	// a stdio server's process for it) once unused this long, 0..86400;
	// 0 never does. Nil leaves the provider's default, 300.
	SessionIdleSecs *int `json:"session_idle_secs,omitempty"`
	// Prefix goes before every tool name; nil means "<name>__".
	Prefix *string `json:"prefix,omitempty"`
	// ReadOnlyTools are upstream tools the operator declares read class.
	ReadOnlyTools []string `json:"read_only_tools,omitempty"`
	// TrustAnnotations makes tools the upstream marks readOnlyHint read
	// class too.
	TrustAnnotations bool `json:"trust_annotations"`
	// Auth says how to authenticate to an HTTP server; nil for none.
	Auth *UpstreamAuth `json:"-"`
}

// UpstreamAuth is an [[upstream.servers]] auth table. Secrets come only
// from environment variables, named by the *_env keys.
type UpstreamAuth struct {
	// Kind is bearer_token (token_env), basic (username_env,
	// password_env), header (header, value_env), headers (headers: a
	// table of header name → environment variable), query_param (param,
	// value_env), oauth (OAuth 2.1 authorization code with PKCE; optional
	// client_id, client_secret_env, client_metadata_url, scopes,
	// interactive) or oauth_client_credentials (client_id,
	// client_secret_env, optional scopes).
	Kind        string
	TokenEnv    string
	UsernameEnv string
	PasswordEnv string
	Header      string
	Param       string
	ValueEnv    string
	Headers     map[string]string
	// ClientID, ClientSecretEnv, ClientMetadataURL, Scopes and
	// Interactive configure the oauth kinds (see [OAuthSettings]).
	ClientID          string
	ClientSecretEnv   string
	ClientMetadataURL string
	Scopes            []string
	// Interactive lets a server (not only `upstream login`) start the
	// sign-in in a browser; default true.
	Interactive bool
}

// OAuthSettings is what the upstream provider needs to sign in to a
// server of an oauth auth kind, with the client secret read from the
// environment. It travels to the provider as its settings' "oauth" object.
type OAuthSettings struct {
	// Kind is "oauth" or "oauth_client_credentials".
	Kind string `json:"kind"`
	// ClientID is a client registered with the authorization server
	// beforehand; empty lets the provider use the client ID metadata
	// document or dynamic client registration (RFC 7591).
	ClientID string `json:"client_id,omitempty"`
	// ClientSecret is the secret of ClientID, if it has one.
	ClientSecret string `json:"client_secret,omitempty"`
	// ClientMetadataURL is the https URL of this client's client ID
	// metadata document, for authorization servers that accept one.
	ClientMetadataURL string `json:"client_metadata_url,omitempty"`
	// Scopes replace the scopes the server asks for; empty asks for those.
	Scopes []string `json:"scopes,omitempty"`
	// Interactive lets the server start a sign-in in the browser.
	Interactive bool `json:"interactive"`
}

var upstreamKeys = []string{"allowed_tools", "args", "auth", "command", "cwd", "disallowed_tools", "enabled", "endpoint", "env",
	"name", "prefix", "read_only_tools", "session_idle_secs", "start_timeout_secs", "timeout_secs", "trust_annotations"}

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
				str, ok := v.(string)
				if !ok {
					d.fail(path, "must be a string; got %s", tomltype.Describe(v))
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
				b, ok := v.(bool)
				if !ok {
					d.fail(path, "must be a boolean; got %s", tomltype.Describe(v))
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
				n, ok := v.(int64)
				if !ok || n < 0 || n > 86400 {
					d.fail(path, "must be an integer number of seconds from 0 (never) to 86400; got %s", tomltype.Describe(v))
					continue
				}
				idle := int(n)
				s.SessionIdleSecs = &idle
			case "prefix":
				str, ok := v.(string)
				if !ok || !prefixText.MatchString(str) {
					d.fail(path, "must be a string of at most 64 letters, digits, _, . or -; got %s", tomltype.Describe(v))
					continue
				}
				s.Prefix = &str
			case "env":
				t, ok := v.(map[string]any)
				if !ok {
					d.fail(path, "must be a table of environment variables; got %s", tomltype.Describe(v))
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
		d.fail(path, "must be a table such as { kind = \"bearer_token\", token_env = \"MY_TOKEN\" }; got %s", tomltype.Describe(v))
		return nil
	}
	a := &UpstreamAuth{}
	str := func(key string) string {
		raw, present := t[key]
		if !present {
			return ""
		}
		s, ok := raw.(string)
		if !ok {
			d.fail(joinKey(path, key), "must be a string; got %s", tomltype.Describe(raw))
		}
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
		b, isBool := raw.(bool)
		if !isBool {
			d.fail(joinKey(path, "interactive"), "must be a boolean; got %s", tomltype.Describe(raw))
		}
		a.Interactive = b
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
			d.fail(joinKey(path, "headers"), "must be a table of header name = environment variable; got %s", tomltype.Describe(raw))
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

// ResolveAuth returns the request headers and the endpoint (with a query
// parameter added for kind query_param) that s's auth asks for, reading
// the named environment variables with getenv (nil means os.Getenv). An
// empty variable is an error naming it. The values are secrets: never log
// them.
func (s UpstreamServer) ResolveAuth(getenv func(string) string) (map[string]string, string, error) {
	if s.Auth == nil {
		return nil, s.Endpoint, nil
	}
	if getenv == nil {
		getenv = osEnviron.getenv
	}
	val := func(env string) (string, error) {
		v := getenv(env)
		if v == "" {
			return "", fmt.Errorf("upstream server %s: environment variable %s (its auth) is empty or unset", s.Name, env)
		}
		return v, nil
	}
	headers := map[string]string{}
	a := s.Auth
	switch a.Kind {
	case "oauth", "oauth_client_credentials":
		// Tokens come from signing in (ResolveOAuth), not from headers.
		return nil, s.Endpoint, nil
	case "bearer_token":
		v, err := val(a.TokenEnv)
		if err != nil {
			return nil, "", err
		}
		headers["Authorization"] = "Bearer " + v
	case "basic":
		u, err := val(a.UsernameEnv)
		if err != nil {
			return nil, "", err
		}
		p, err := val(a.PasswordEnv)
		if err != nil {
			return nil, "", err
		}
		headers["Authorization"] = "Basic " + base64.StdEncoding.EncodeToString([]byte(u+":"+p))
	case "header":
		v, err := val(a.ValueEnv)
		if err != nil {
			return nil, "", err
		}
		headers[a.Header] = v
	case "headers":
		for name, env := range a.Headers {
			v, err := val(env)
			if err != nil {
				return nil, "", err
			}
			headers[name] = v
		}
	case "query_param":
		v, err := val(a.ValueEnv)
		if err != nil {
			return nil, "", err
		}
		u, err := url.Parse(s.Endpoint)
		if err != nil {
			return nil, "", fmt.Errorf("upstream server %s: endpoint: %w", s.Name, err)
		}
		q := u.Query()
		q.Set(a.Param, v)
		u.RawQuery = q.Encode()
		return headers, u.String(), nil
	}
	return headers, s.Endpoint, nil
}

// envRef matches what ExpandEnv replaces: $$, or ${NAME} with NAME a
// variable name; any other "${" is an error.
var envRef = regexp.MustCompile(`\$\$|\$\{([A-Za-z_][A-Za-z0-9_]*)\}|\$\{`)

// ExpandEnv replaces each ${NAME} in s with the value lookup gives the
// variable NAME, and each $$ with $; a "$" followed by anything else stays
// as it is. It fails, naming the variable, when lookup reports NAME unset,
// and for a "${" that does not start a well-formed reference.
func ExpandEnv(s string, lookup func(string) (string, bool)) (string, error) {
	var err error
	out := envRef.ReplaceAllStringFunc(s, func(m string) string {
		switch {
		case err != nil:
			return m
		case m == "$$":
			return "$"
		case m == "${":
			err = errors.New(`"${" must start a reference to an environment variable, ${NAME}; write $$ for a literal $`)
			return m
		}
		name := m[2 : len(m)-1]
		v, ok := lookup(name)
		if !ok {
			err = fmt.Errorf("environment variable %s is not set", name)
		}
		return v
	})
	if err != nil {
		return "", err
	}
	return out, nil
}

// ResolveEnv returns s.Env with its ${NAME} references expanded from
// lookup (nil: the process's environment). An unset variable is an error
// naming the server, the key and the variable.
func (s UpstreamServer) ResolveEnv(lookup func(string) (string, bool)) (map[string]string, error) {
	if lookup == nil {
		lookup = os.LookupEnv
	}
	if len(s.Env) == 0 {
		return s.Env, nil
	}
	out := make(map[string]string, len(s.Env))
	for _, k := range slices.Sorted(maps.Keys(s.Env)) {
		v, err := ExpandEnv(s.Env[k], lookup)
		if err != nil {
			return nil, fmt.Errorf("upstream server %s: env.%s: %w; set it in the environment the MCP client starts openhuman-host with", s.Name, k, err)
		}
		out[k] = v
	}
	return out, nil
}

// ResolveOAuth returns the settings of an oauth auth kind with the client
// secret read through getenv (nil: the process's environment), or nil for
// a server of another kind. An unset or empty client_secret_env variable
// is an error naming the server and the variable.
func (s UpstreamServer) ResolveOAuth(getenv func(string) string) (*OAuthSettings, error) {
	a := s.Auth
	if a == nil || (a.Kind != "oauth" && a.Kind != "oauth_client_credentials") {
		return nil, nil
	}
	if getenv == nil {
		getenv = os.Getenv
	}
	o := &OAuthSettings{Kind: a.Kind, ClientID: a.ClientID, ClientMetadataURL: a.ClientMetadataURL, Scopes: a.Scopes, Interactive: a.Interactive}
	if a.ClientSecretEnv != "" {
		if o.ClientSecret = getenv(a.ClientSecretEnv); o.ClientSecret == "" {
			return nil, fmt.Errorf("upstream server %s: environment variable %s (its auth client_secret_env) is empty or unset", s.Name, a.ClientSecretEnv)
		}
	}
	return o, nil
}

// ToolPrefix is what goes before the names of the server's tools and
// prompts: Prefix, or "<name>__" when it is unset.
func (s UpstreamServer) ToolPrefix() string {
	if s.Prefix != nil {
		return *s.Prefix
	}
	return s.Name + "__"
}

// NamedByPrefix reports whether tool, as clients see it or as written with
// the prefix before it was made client-safe, starts with the server's
// prefix. It is false for a server with the empty prefix, whose tools
// cannot be told apart by name.
func (s UpstreamServer) NamedByPrefix(tool string) bool {
	prefix := s.ToolPrefix()
	return prefix != "" && (strings.HasPrefix(sdk.ClientName(tool), sdk.ClientName(prefix)) || strings.HasPrefix(tool, prefix))
}
