// Package upstreamwire is the upstream relay's contract with the host:
// what the two exchange about the servers of [[upstream.servers]]. It
// holds one server's checked entry ([Server]) with its auth ([Auth]) and
// sign-in settings ([OAuthSettings]), and the state of each server's
// session the relay reports back ([ServerStatus], read from [StatusURI]).
// The host's config package reads the TOML into these types; the relay
// reads them as JSON from its settings, so neither side imports the
// other.
//
// The relay (providers/upstream) owns it, as the memory provider owns
// providers/memory/memorytool. It is a leaf: it imports only the standard
// library and the SDK, so that the host's config package, the host and
// the tests that import it build none of the relay's dependencies.
package upstreamwire

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

	"github.com/openhuman/openhuman-host/sdk"
)

// Server is one checked [[upstream.servers]] entry: an MCP server
// whose tools the host re-exposes through its own policy and audit.
type Server struct {
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
	// PingIntervalSecs is how often the relay pings the session it reads
	// the server's catalog from while no call is in flight on it,
	// 0..3600; two pings in a row unanswered within half of it end the
	// session, and the server is reported failed and reconnected unless
	// another client's session takes over. 0 never pings (the session's
	// end still shows when the connection closes). Nil leaves the relay's
	// default, 30.
	PingIntervalSecs *int `json:"ping_interval_secs,omitempty"`
	// Prefix goes before every tool name; nil means "<name>__".
	Prefix *string `json:"prefix,omitempty"`
	// ReadOnlyTools are upstream tools the operator declares read class.
	ReadOnlyTools []string `json:"read_only_tools,omitempty"`
	// TrustAnnotations makes tools the upstream marks readOnlyHint read
	// class too.
	TrustAnnotations bool `json:"trust_annotations"`
	// Auth says how to authenticate to an HTTP server; nil for none.
	Auth *Auth `json:"-"`
}

// Auth is an [[upstream.servers]] auth table. Secrets come only
// from environment variables, named by the *_env keys.
type Auth struct {
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

// ResolveAuth returns the request headers and the endpoint (with a query
// parameter added for kind query_param) that s's auth asks for, reading
// the named environment variables with getenv (nil means os.Getenv). An
// empty variable is an error naming it. The values are secrets: never log
// them.
func (s Server) ResolveAuth(getenv func(string) string) (map[string]string, string, error) {
	if s.Auth == nil {
		return nil, s.Endpoint, nil
	}
	if getenv == nil {
		getenv = os.Getenv
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
func (s Server) ResolveEnv(lookup func(string) (string, bool)) (map[string]string, error) {
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
func (s Server) ResolveOAuth(getenv func(string) string) (*OAuthSettings, error) {
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
func (s Server) ToolPrefix() string {
	if s.Prefix != nil {
		return *s.Prefix
	}
	return s.Name + "__"
}

// NamedByPrefix reports whether tool, as clients see it or as written with
// the prefix before it was made client-safe, starts with the server's
// prefix. It is false for a server with the empty prefix, whose tools
// cannot be told apart by name.
func (s Server) NamedByPrefix(tool string) bool {
	prefix := s.ToolPrefix()
	return prefix != "" && (strings.HasPrefix(sdk.ClientName(tool), sdk.ClientName(prefix)) || strings.HasPrefix(tool, prefix))
}
