package searxng

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/openhuman/openhuman-host/sdk"
)

// Bounds and defaults of the settings and of the tool's max_results.
const (
	minResults         = 1
	maxResults         = 50
	defaultMaxResults  = 10
	minTimeoutSecs     = 1
	maxTimeoutSecs     = 120
	defaultTimeoutSecs = 10
)

// table is how messages name the provider's config table.
const table = "[providers.searxng]"

// Names of the settings in [providers.searxng].
const (
	keyBaseURL         = "base_url"
	keyMaxResults      = "max_results"
	keyDefaultLanguage = "default_language"
	keyTimeoutSecs     = "timeout_secs"
)

// settingKeys lists the accepted settings in the order messages list them.
var settingKeys = []string{keyBaseURL, keyMaxResults, keyDefaultLanguage, keyTimeoutSecs}

// settings are the checked [providers.searxng] settings.
type settings struct {
	// base is the instance's root, without a trailing slash.
	base *url.URL
	// maxResults is the default of the tool's max_results.
	maxResults int
	// language is sent when a call names none; empty sends none.
	language string
	// timeoutSecs bounds one search, in seconds.
	timeoutSecs int
}

// timeout is timeoutSecs as a duration.
func (s settings) timeout() time.Duration { return time.Duration(s.timeoutSecs) * time.Second }

// parseSettings decodes and checks the [providers.searxng] table: a JSON
// object with only the keys in settingKeys. Every error names the key and
// says what it must be.
func parseSettings(raw json.RawMessage) (settings, error) {
	s := settings{maxResults: defaultMaxResults, timeoutSecs: defaultTimeoutSecs}
	fields, err := sdk.ConfigTable(table, raw, settingKeys...)
	if err != nil {
		return s, err
	}

	rawBase, ok := fields[keyBaseURL]
	if !ok {
		return s, fmt.Errorf("%s %s is required: the URL of your SearXNG instance's root, such as http://127.0.0.1:8888", table, keyBaseURL)
	}
	base, err := stringSetting(keyBaseURL, rawBase)
	if err != nil {
		return s, err
	}
	if s.base, err = parseBaseURL(base); err != nil {
		return s, err
	}
	if v, ok := fields[keyMaxResults]; ok {
		if s.maxResults, err = intSetting(keyMaxResults, v, minResults, maxResults); err != nil {
			return s, err
		}
	}
	if v, ok := fields[keyTimeoutSecs]; ok {
		if s.timeoutSecs, err = intSetting(keyTimeoutSecs, v, minTimeoutSecs, maxTimeoutSecs); err != nil {
			return s, err
		}
	}
	if v, ok := fields[keyDefaultLanguage]; ok {
		lang, err := stringSetting(keyDefaultLanguage, v)
		if err != nil {
			return s, err
		}
		if lang = strings.TrimSpace(lang); lang != "" {
			if s.language, ok = canonicalLanguage(lang); !ok {
				return s, fmt.Errorf("%s %s = %s is not a language: use \"all\", \"auto\", a code such as \"en\", or a code with a region such as \"de-CH\"",
					table, keyDefaultLanguage, quoteShort(lang))
			}
		}
	}
	return s, nil
}

// stringSetting decodes a setting that must be a string.
func stringSetting(key string, raw json.RawMessage) (string, error) {
	var v string
	if sdk.JSONKind(raw) != "a string" || json.Unmarshal(raw, &v) != nil {
		return "", fmt.Errorf("%s %s must be a string, not %s", table, key, sdk.JSONKind(raw))
	}
	return v, nil
}

// intSetting decodes a setting that must be an integer in [lo, hi].
// Integral numbers such as 10.0 are accepted; fractions and values out of
// range are refused, never clamped.
func intSetting(key string, raw json.RawMessage, lo, hi int) (int, error) {
	if sdk.JSONKind(raw) != "a number" {
		return 0, fmt.Errorf("%s %s must be an integer from %d to %d, not %s", table, key, lo, hi, sdk.JSONKind(raw))
	}
	text := string(bytes.TrimSpace(raw))
	f, err := strconv.ParseFloat(text, 64)
	if err != nil || f != math.Trunc(f) || f < float64(lo) || f > float64(hi) {
		return 0, fmt.Errorf("%s %s must be an integer from %d to %d; got %s", table, key, lo, hi, text)
	}
	return int(f), nil
}

// parseBaseURL checks base_url: an absolute http or https URL with a host,
// without credentials, query or fragment. The path, if any, is kept (an
// instance served under a prefix) without its trailing slash.
func parseBaseURL(s string) (*url.URL, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return nil, fmt.Errorf("%s %s is empty: set it to the URL of your SearXNG instance's root, such as http://127.0.0.1:8888", table, keyBaseURL)
	}
	if !strings.Contains(s, "://") {
		return nil, fmt.Errorf("%s %s must start with http:// or https://; got %s", table, keyBaseURL, quoteShort(s))
	}
	u, err := url.Parse(s)
	if err != nil {
		// url.Error quotes the URL, which may hold credentials: say less.
		return nil, fmt.Errorf("%s %s is not a valid URL; use one such as http://127.0.0.1:8888", table, keyBaseURL)
	}
	if u.User != nil {
		return nil, fmt.Errorf("%s %s must not contain a user name or password (user:password@): credentials in the URL are refused", table, keyBaseURL)
	}
	u.Scheme = strings.ToLower(u.Scheme)
	if u.Scheme != "http" && u.Scheme != "https" {
		return nil, fmt.Errorf("%s %s must start with http:// or https://; got %s", table, keyBaseURL, quoteShort(s))
	}
	if u.Opaque != "" || u.Host == "" || u.Hostname() == "" {
		return nil, fmt.Errorf("%s %s has no host; use a URL such as http://127.0.0.1:8888", table, keyBaseURL)
	}
	if p := u.Port(); p != "" {
		if n, err := strconv.Atoi(p); err != nil || n < 1 || n > 65535 {
			return nil, fmt.Errorf("%s %s has an invalid port %q", table, keyBaseURL, p)
		}
	}
	if u.RawQuery != "" || u.ForceQuery {
		return nil, fmt.Errorf("%s %s must not have a query (?…); give the instance's root, such as %s", table, keyBaseURL, endpoint(u))
	}
	if u.Fragment != "" || strings.Contains(s, "#") {
		return nil, fmt.Errorf("%s %s must not have a fragment (#…); give the instance's root, such as %s", table, keyBaseURL, endpoint(u))
	}
	u.Path = strings.TrimRight(u.Path, "/")
	u.RawPath = ""
	if u.Path == "/search" || strings.HasSuffix(u.Path, "/search") {
		return nil, fmt.Errorf("%s %s must be the instance's root, not its /search endpoint: use %s",
			table, keyBaseURL, endpoint(u)+strings.TrimSuffix(u.Path, "/search"))
	}
	return u, nil
}

// endpoint reduces u to scheme://host[:port] for messages: no path,
// query or credentials.
func endpoint(u *url.URL) string {
	if u == nil {
		return "the instance"
	}
	return u.Scheme + "://" + u.Host
}
