package upstream

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/url"
	"path"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"

	"github.com/openhuman/openhuman-host/sdk"
)

// table is how errors name the provider's settings.
const table = "upstream"

const (
	defaultTimeoutSecs = 30
	minTimeoutSecs     = 1
	maxTimeoutSecs     = 3600
	// defaultStartSecs is start_timeout_secs when unset: long enough for
	// `npx -y` or `uvx` to download a server on its first start.
	defaultStartSecs = 120
	// defaultIdleSecs is session_idle_secs when unset.
	defaultIdleSecs = 300
	maxIdleSecs     = 86400
	// maxPingSecs bounds ping_interval_secs; unset, the provider's
	// Options.KeepAlive (30 s by default) applies.
	maxPingSecs  = 3600
	maxPrefixLen = 64
)

// topKeys are the keys of the provider's settings: the servers, and
// wait_for_servers, which the host sets for one-shot commands (see
// Provider.Configure).
var topKeys = []string{"servers", "wait_for_servers"}

// serverKeys are the keys of one [[upstream.servers]] entry.
var serverKeys = []string{
	"name", "command", "args", "env", "cwd", "endpoint", "enabled",
	"allowed_tools", "disallowed_tools", "timeout_secs", "prefix",
	"read_only_tools", "trust_annotations", "headers", "start_timeout_secs",
	"session_idle_secs", "ping_interval_secs", "unavailable", "oauth",
}

var (
	serverNameRE = regexp.MustCompile(`^[a-z][a-z0-9_-]{0,31}$`)
	prefixRE     = regexp.MustCompile(`^[A-Za-z0-9_.-]*$`)
	headerNameRE = regexp.MustCompile("^[!#$%&'*+.^_`|~0-9A-Za-z-]+$")
)

// reservedHeaders are set by the MCP transport itself and may not be
// configured.
var reservedHeaders = []string{
	"Accept", "Content-Type", "Content-Length", "Host", "Connection",
	"Transfer-Encoding", "Mcp-Session-Id", "Mcp-Protocol-Version", "Last-Event-Id",
}

// server is one parsed [[upstream.servers]] entry.
type server struct {
	index    int
	name     string
	command  string
	args     []string
	env      map[string]string
	cwd      string
	endpoint *url.URL
	enabled  bool
	allowed  []string
	denied   []string
	timeout  time.Duration
	// start bounds one attempt to connect (start the command or reach the
	// endpoint, and initialise).
	start time.Duration
	// idle closes a client's session with the server once unused this
	// long (0: never), unless the client subscribed through it.
	idle time.Duration
	// ping is how often the session the server's catalog is read from
	// is pinged (see watchCatalog); 0 never pings, and -1 (unset) leaves
	// the provider's keepAlive.
	ping time.Duration
	// unavailable, set by the host, is why the server cannot be started
	// (a variable its settings need is unset): it is reported, never
	// connected.
	unavailable string
	// oauth, set for an HTTP server of an oauth auth kind, is how to sign
	// in to it.
	oauth *oauthSettings
	// oauthHandler authorizes the requests of a server with oauth; the
	// provider makes it at Configure, shared by the server's sessions.
	oauthHandler auth.OAuthHandler
	prefix       string
	readOnly     map[string]bool
	trust        bool
	headers      map[string]string
	// environ is the environment a stdio server's process starts from
	// (before its env), the provider's own (sdk.ConfigureRequest.Environ);
	// nil means this process's.
	environ []string
	// trace makes its requests traced ([tracesEnv]).
	trace bool
	// ownGroup starts a stdio server in a process group of its own, which
	// closing it kills: set when the provider runs in the host's process,
	// whose group is the host's (in a process of its own, the provider's
	// group is the server's, and the host kills it with the provider).
	ownGroup bool
}

// key names one of the server's settings in errors, as
// upstream.servers[i].<key>.
func (s *server) key(k string) string {
	return fmt.Sprintf("%s.servers[%d].%s", table, s.index, k)
}

// where says which server a message is about, naming its endpoint in
// redacted form.
func (s *server) where() string {
	if s.endpoint != nil {
		return fmt.Sprintf("upstream server %q (%s)", s.name, redactURL(s.endpoint))
	}
	return fmt.Sprintf("upstream server %q (command %s)", s.name, s.command)
}

// toolAllowed reports whether the upstream tool name passes the server's
// lists, and when it does not, the key that refuses it.
func (s *server) toolAllowed(name string) (bool, string) {
	if matchAny(s.denied, name) {
		return false, s.key("disallowed_tools")
	}
	if s.allowed != nil && !matchAny(s.allowed, name) {
		return false, s.key("allowed_tools")
	}
	return true, ""
}

// matchAny reports whether name equals one of patterns or matches it as a
// path.Match glob.
func matchAny(patterns []string, name string) bool {
	for _, p := range patterns {
		if p == name {
			return true
		}
		if ok, err := path.Match(p, name); err == nil && ok {
			return true
		}
	}
	return false
}

// parseSettings reads the provider's settings: {"servers": [...],
// "wait_for_servers": bool}.
func parseSettings(raw json.RawMessage) (servers []*server, wait bool, err error) {
	fields, err := sdk.ConfigTable(table, raw, topKeys...)
	if err != nil {
		return nil, false, err
	}
	if v, ok := fields["wait_for_servers"]; ok {
		if wait, err = decode[bool](table+".wait_for_servers", v, "a boolean"); err != nil {
			return nil, false, err
		}
	}
	servers, err = parseServers(fields)
	return servers, wait, err
}

// parseServers reads the servers of the provider's settings.
func parseServers(fields map[string]json.RawMessage) ([]*server, error) {
	rawServers, ok := fields["servers"]
	if !ok {
		return nil, nil
	}
	var list []json.RawMessage
	if err := json.Unmarshal(rawServers, &list); err != nil || list == nil {
		return nil, fmt.Errorf("%s.servers must be an array of tables ([[upstream.servers]])", table)
	}
	var out []*server
	names := map[string]int{}
	for i, r := range list {
		s, err := parseServer(i, r)
		if err != nil {
			return nil, err
		}
		if j, dup := names[s.name]; dup {
			return nil, fmt.Errorf("%s = %q is already the name of %s.servers[%d]; server names must be unique",
				s.key("name"), s.name, table, j)
		}
		names[s.name] = i
		out = append(out, s)
	}
	return out, nil
}

// decode unmarshals a setting into a T, failing with "<key> must be
// <want>" when it has another type (null included).
func decode[T any](key string, raw json.RawMessage, want string) (T, error) {
	var v T
	if bytes.Equal(bytes.TrimSpace(raw), []byte("null")) {
		return v, fmt.Errorf("%s must be %s", key, want)
	}
	if err := json.Unmarshal(raw, &v); err != nil {
		return v, fmt.Errorf("%s must be %s", key, want)
	}
	return v, nil
}

func parseServer(i int, raw json.RawMessage) (*server, error) {
	s := &server{index: i, enabled: true, timeout: defaultTimeoutSecs * time.Second,
		start: defaultStartSecs * time.Second, idle: defaultIdleSecs * time.Second, ping: -1}
	fields, err := sdk.ConfigTable(fmt.Sprintf("%s.servers[%d]", table, i), raw, serverKeys...)
	if err != nil {
		return nil, err
	}
	str := func(k string) (string, bool, error) {
		v, ok := fields[k]
		if !ok {
			return "", false, nil
		}
		out, err := decode[string](s.key(k), v, "a string")
		return out, true, err
	}
	strs := func(k string) ([]string, error) {
		v, ok := fields[k]
		if !ok {
			return nil, nil
		}
		out, err := decode[[]string](s.key(k), v, "an array of strings")
		if err == nil && out == nil {
			out = []string{}
		}
		return out, err
	}
	strMap := func(k string) (map[string]string, error) {
		v, ok := fields[k]
		if !ok {
			return nil, nil
		}
		return decode[map[string]string](s.key(k), v, "a table of strings")
	}
	boolean := func(k string, def bool) (bool, error) {
		v, ok := fields[k]
		if !ok {
			return def, nil
		}
		return decode[bool](s.key(k), v, "true or false")
	}

	name, ok, err := str("name")
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, fmt.Errorf("%s is required: a short name such as \"github\" (lower-case letters, digits, _ and -)", s.key("name"))
	}
	if !serverNameRE.MatchString(name) {
		return nil, fmt.Errorf("%s = %s is not a valid name: use a lower-case letter followed by at most 31 lower-case letters, digits, _ or -",
			s.key("name"), strconv.Quote(name))
	}
	s.name = name

	command, hasCommand, err := str("command")
	if err != nil {
		return nil, err
	}
	endpoint, hasEndpoint, err := str("endpoint")
	if err != nil {
		return nil, err
	}
	switch {
	case hasCommand && hasEndpoint:
		return nil, fmt.Errorf("%s sets both command and endpoint; set command for a stdio server or endpoint for a Streamable HTTP server, not both",
			fmt.Sprintf("%s.servers[%d]", table, i))
	case !hasCommand && !hasEndpoint:
		return nil, fmt.Errorf("%s sets neither command nor endpoint; set command (a stdio server, such as \"npx\") or endpoint (a Streamable HTTP URL)",
			fmt.Sprintf("%s.servers[%d]", table, i))
	}
	if hasCommand {
		if strings.TrimSpace(command) == "" {
			return nil, fmt.Errorf("%s must not be empty", s.key("command"))
		}
		s.command = command
		if s.args, err = strs("args"); err != nil {
			return nil, err
		}
		if s.env, err = strMap("env"); err != nil {
			return nil, err
		}
		for k := range s.env {
			if k == "" || strings.ContainsAny(k, "=\x00") {
				return nil, fmt.Errorf("%s has an invalid variable name %s", s.key("env"), strconv.Quote(k))
			}
		}
		if s.cwd, _, err = str("cwd"); err != nil {
			return nil, err
		}
		if _, ok := fields["headers"]; ok {
			return nil, fmt.Errorf("%s applies to endpoint servers only; this server has a command", s.key("headers"))
		}
	} else {
		for _, k := range []string{"args", "env", "cwd"} {
			if _, ok := fields[k]; ok {
				return nil, fmt.Errorf("%s applies to command (stdio) servers only; this server has an endpoint", s.key(k))
			}
		}
		u, err := url.Parse(endpoint)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return nil, fmt.Errorf("%s = %s is not an http or https URL such as https://mcp.example.com/mcp",
				s.key("endpoint"), redactString(endpoint))
		}
		s.endpoint = u
		if s.headers, err = strMap("headers"); err != nil {
			return nil, err
		}
		for k, v := range s.headers {
			if !headerNameRE.MatchString(k) {
				return nil, fmt.Errorf("%s has an invalid header name %s", s.key("headers"), strconv.Quote(k))
			}
			for _, r := range reservedHeaders {
				if strings.EqualFold(k, r) {
					return nil, fmt.Errorf("%s may not set %s: the MCP transport sets it", s.key("headers"), r)
				}
			}
			if strings.ContainsAny(v, "\r\n\x00") {
				return nil, fmt.Errorf("%s: the value of header %s contains a line break or NUL", s.key("headers"), k)
			}
		}
	}

	if s.enabled, err = boolean("enabled", true); err != nil {
		return nil, err
	}
	if s.trust, err = boolean("trust_annotations", false); err != nil {
		return nil, err
	}
	for _, k := range []string{"allowed_tools", "disallowed_tools"} {
		list, err := strs(k)
		if err != nil {
			return nil, err
		}
		for _, p := range list {
			if _, err := path.Match(p, ""); err != nil {
				return nil, fmt.Errorf("%s: %s is not a valid pattern (an exact tool name or a glob such as \"read_*\")", s.key(k), strconv.Quote(p))
			}
		}
		if k == "allowed_tools" {
			s.allowed = list
		} else {
			s.denied = list
		}
	}
	readOnly, err := strs("read_only_tools")
	if err != nil {
		return nil, err
	}
	s.readOnly = map[string]bool{}
	for _, n := range readOnly {
		s.readOnly[n] = true
	}
	for key, bound := range map[string]struct {
		to       *time.Duration
		min, max int64
	}{
		"timeout_secs":       {&s.timeout, minTimeoutSecs, maxTimeoutSecs},
		"start_timeout_secs": {&s.start, minTimeoutSecs, maxTimeoutSecs},
		"session_idle_secs":  {&s.idle, 0, maxIdleSecs},
		"ping_interval_secs": {&s.ping, 0, maxPingSecs},
	} {
		v, ok := fields[key]
		if !ok {
			continue
		}
		n, err := decode[json.Number](s.key(key), v, "a whole number of seconds")
		if err != nil {
			return nil, err
		}
		secs, err := strconv.ParseInt(n.String(), 10, 64)
		if err != nil || secs < bound.min || secs > bound.max {
			return nil, fmt.Errorf("%s = %s must be a whole number from %d to %d", s.key(key), n, bound.min, bound.max)
		}
		*bound.to = time.Duration(secs) * time.Second
	}
	if s.unavailable, _, err = str("unavailable"); err != nil {
		return nil, err
	}
	if v, ok := fields["oauth"]; ok {
		o, err := decode[oauthSettings](s.key("oauth"), v, `an object such as {"kind": "oauth"}`)
		if err != nil {
			return nil, err
		}
		if o.Kind != "oauth" && o.Kind != "oauth_client_credentials" {
			return nil, fmt.Errorf("%s.kind must be oauth or oauth_client_credentials, got %q", s.key("oauth"), o.Kind)
		}
		if s.endpoint == nil {
			return nil, fmt.Errorf("%s applies to HTTP servers only", s.key("oauth"))
		}
		s.oauth = &o
	}
	prefix, ok, err := str("prefix")
	if err != nil {
		return nil, err
	}
	if !ok {
		prefix = name + "__"
	}
	if len(prefix) > maxPrefixLen || !prefixRE.MatchString(prefix) {
		return nil, fmt.Errorf("%s = %s is not valid: use at most %d letters, digits, _, . or -", s.key("prefix"), strconv.Quote(prefix), maxPrefixLen)
	}
	s.prefix = prefix
	return s, nil
}

// redactURL reduces u to scheme://host[:port], or "<redacted>" when it
// carries user information.
func redactURL(u *url.URL) string {
	if u == nil || u.User != nil || u.Host == "" {
		return "<redacted>"
	}
	return u.Scheme + "://" + u.Host
}

// redactString is redactURL for a URL given as text.
func redactString(s string) string {
	u, err := url.Parse(s)
	if err != nil {
		return "<redacted>"
	}
	return redactURL(u)
}

var urlInTextRE = regexp.MustCompile(`(?i)[a-z][a-z0-9+.-]*://[^\s"'<>]+`)

// redactText replaces every URL in an error text with its redacted form.
// Punctuation that ends a sentence or closes a bracket the URL did not
// open stays after it, so the text keeps its shape ("(http://h:1): x"
// becomes "(http://h:1): x", not "(<redacted> x"), and redacting again
// changes nothing.
func redactText(s string) string {
	return urlInTextRE.ReplaceAllStringFunc(s, func(m string) string {
		u, tail := splitTrailing(m)
		return redactString(u) + tail
	})
}

// splitTrailing splits the punctuation after a URL found in text from it.
func splitTrailing(m string) (string, string) {
	end := len(m)
	for end > 0 {
		c := m[end-1]
		switch {
		case strings.IndexByte(".,;:!?", c) >= 0:
		case c == ')' && strings.Count(m[:end], "(") < strings.Count(m[:end], ")"):
		case c == ']' && strings.Count(m[:end], "[") < strings.Count(m[:end], "]"):
		case c == '}' && strings.Count(m[:end], "{") < strings.Count(m[:end], "}"):
		default:
			return m[:end], m[end:]
		}
		end--
	}
	return m[:end], m[end:]
}
