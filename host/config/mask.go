package config

import (
	"bytes"
	"fmt"
	"maps"
	"net/url"
	"regexp"
	"slices"
	"strings"

	"github.com/pelletier/go-toml/v2"
)

// Mask replaces secret values in Config.Masked.
const Mask = "********"

// secretWords mark a key whose value is a secret.
var secretWords = []string{"token", "secret", "password", "passwd", "api_key", "apikey", "private_key", "credential"}

// isSecretKey reports whether the value of key must be masked: its name
// contains a secret word and it is not an "_env" key, which only names a
// variable.
func isSecretKey(key string) bool {
	k := strings.ToLower(key)
	if strings.HasSuffix(k, secretEnvSuffix) {
		return false
	}
	for _, w := range secretWords {
		if strings.Contains(k, w) {
			return true
		}
	}
	return false
}

// maskedDoc is the rendered shape of a Config.
type maskedDoc struct {
	Server    ServerConfig              `toml:"server"`
	Autonomy  AutonomyConfig            `toml:"autonomy"`
	Audit     AuditConfig               `toml:"audit"`
	Storage   StorageConfig             `toml:"storage"`
	Telemetry TelemetryConfig           `toml:"telemetry"`
	Profiles  map[string]ProfileConfig  `toml:"profiles,omitempty"`
	Tools     map[string]ToolOverride   `toml:"tools,omitempty"`
	Providers map[string]map[string]any `toml:"providers"`
	Upstream  *UpstreamConfig           `toml:"upstream,omitempty"`
	Discovery *DiscoveryConfig          `toml:"discovery,omitempty"`
}

// Masked renders the effective configuration as a TOML document that Parse
// accepts, preceded by a comment naming Source. Every value under a key
// containing token, secret, password, api_key (and a few similar words) is
// replaced by Mask, whatever its type, except in keys ending in "_env", which
// only name a variable. Unset keys (such as an unlimited
// max_actions_per_hour) are left out. It fails only if encoding fails.
func (c *Config) Masked() (string, error) {
	doc := maskedDoc{
		Server:    c.Server,
		Autonomy:  c.Autonomy,
		Audit:     c.Audit,
		Storage:   c.Storage,
		Telemetry: c.Telemetry,
		Profiles:  c.Profiles,
		Tools:     c.Tools,
		Providers: map[string]map[string]any{},
	}
	for name, p := range c.Providers {
		t := map[string]any{keyEnabled: p.Enabled}
		for k, v := range p.Settings {
			t[k] = v
		}
		if p.Command != "" {
			t[keyCommand] = p.Command
		}
		if p.Args != nil {
			t[keyArgs] = p.Args
		}
		if p.StartTimeoutSecs != 0 {
			t[keyStartTimeout] = p.StartTimeoutSecs
		}
		if p.ToolTimeoutSecs != 0 {
			t[keyToolTimeout] = p.ToolTimeoutSecs
		}
		if p.SHA256 != "" {
			t[keySHA256] = p.SHA256
		}
		if p.Process != "" {
			t[keyProcess] = p.Process
		}
		doc.Providers[name] = maskTable(t)
	}
	if len(c.Upstream.Servers) > 0 || c.Upstream.Process != "" {
		u := &UpstreamConfig{Process: c.Upstream.Process}
		for _, s := range c.Upstream.Servers {
			t := maskTable(s)
			if env, ok := s["env"].(map[string]any); ok {
				t["env"] = maskEnv(env)
			}
			u.Servers = append(u.Servers, t)
		}
		doc.Upstream = u
	}
	if e := c.Discovery.Embeddings; e != nil {
		// api_key_env only names the variable; the key is never in the
		// config. base_url was checked to hold no credentials, masked
		// still for a Config built by hand.
		masked := *e
		masked.BaseURL = maskURL(masked.BaseURL)
		doc.Discovery = &DiscoveryConfig{Embeddings: &masked}
	}
	var buf bytes.Buffer
	fmt.Fprintf(&buf, "# Effective configuration from %q; secret values are masked.\n\n", c.Source)
	if err := toml.NewEncoder(&buf).Encode(doc); err != nil {
		return "", fmt.Errorf("render config: %w", err)
	}
	return buf.String(), nil
}

// maskTable copies m with secret values replaced.
func maskTable(m map[string]any) map[string]any {
	out := make(map[string]any, len(m))
	for k, v := range m {
		if isSecretKey(k) {
			out[k] = Mask
			continue
		}
		out[k] = maskValue(v)
	}
	return out
}

func maskValue(v any) any {
	switch v := v.(type) {
	case string:
		return maskURL(v)
	case map[string]any:
		return maskTable(v)
	case []any:
		out := make([]any, len(v))
		for i, e := range v {
			out[i] = maskValue(e)
		}
		return out
	}
	return v
}

// maskEnv masks the values of a stdio server's environment, which are
// often credentials whatever their names: only a value made of nothing but
// ${NAME} references, which name variables rather than hold secrets, is
// shown.
func maskEnv(env map[string]any) map[string]any {
	out := make(map[string]any, len(env))
	for k, v := range env {
		out[k] = Mask
		if s, ok := v.(string); ok && onlyRefs.MatchString(s) {
			out[k] = s
		}
	}
	return out
}

// onlyRefs matches a value made only of ${NAME} references.
var onlyRefs = regexp.MustCompile(`^(\$\{[A-Za-z_][A-Za-z0-9_]*\})+$`)

// maskURL masks the user information and the query values of s when it is
// a URL with either ("https://user:pw@h/p?key=v" becomes
// "https://********@h/p?key=********"); any other string is returned as it
// is.
func maskURL(s string) string {
	if !strings.Contains(s, "://") {
		return s
	}
	u, err := url.Parse(s)
	if err != nil || u.Host == "" || (u.User == nil && u.RawQuery == "") {
		return s
	}
	out := u.Scheme + "://"
	if u.User != nil {
		out += Mask + "@"
	}
	out += u.Host + u.EscapedPath()
	if u.RawQuery != "" {
		q := u.Query()
		keys := slices.Sorted(maps.Keys(q))
		parts := make([]string, len(keys))
		for i, k := range keys {
			parts[i] = url.QueryEscape(k) + "=" + Mask
		}
		out += "?" + strings.Join(parts, "&")
	}
	if u.Fragment != "" {
		out += "#" + u.EscapedFragment()
	}
	return out
}
