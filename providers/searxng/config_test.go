package searxng

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/openhuman/openhuman-host/sdk"
)

func TestParseSettings(t *testing.T) {
	tests := []struct {
		config   string
		base     string
		max      int
		language string
		timeout  time.Duration
	}{
		{`{"base_url":"http://127.0.0.1:8888"}`, "http://127.0.0.1:8888", 10, "", 10 * time.Second},
		{`{"base_url":" HTTPS://search.example.org/searxng/ ","max_results":25,"default_language":"de-ch","timeout_secs":120}`,
			"https://search.example.org/searxng", 25, "de-CH", 120 * time.Second},
		{`{"base_url":"http://[::1]:8888/","max_results":1.0,"timeout_secs":1,"default_language":""}`, "http://[::1]:8888", 1, "", time.Second},
		{`{"base_url":"http://localhost","max_results":50,"default_language":"all"}`, "http://localhost", 50, "all", 10 * time.Second},
		{`{"base_url":"http://localhost","default_language":"zh-hant"}`, "http://localhost", 10, "zh-Hant", 10 * time.Second},
	}
	for _, tt := range tests {
		s, err := parseSettings(json.RawMessage(tt.config))
		if err != nil {
			t.Errorf("%s: %v", tt.config, err)
			continue
		}
		if s.base.String() != tt.base || s.maxResults != tt.max || s.language != tt.language || s.timeout() != tt.timeout {
			t.Errorf("%s: got %s %d %q %v", tt.config, s.base, s.maxResults, s.language, s.timeout())
		}
	}
}

func TestParseSettingsErrors(t *testing.T) {
	tests := []struct {
		config string
		want   string
	}{
		{`{}`, "[providers.searxng] base_url is required: the URL of your SearXNG instance's root, such as http://127.0.0.1:8888"},
		{``, "[providers.searxng] base_url is required: the URL of your SearXNG instance's root, such as http://127.0.0.1:8888"},
		{`[]`, "[providers.searxng] must be a table, not an array"},
		{`{"base_url":"http://x","url":"http://y"}`, `[providers.searxng] has unknown key "url"; the valid keys are base_url, max_results, default_language, timeout_secs`},
		{`{"base_url":"http://x","timeout":3,"lang":"en"}`, `[providers.searxng] has unknown keys "lang", "timeout"; the valid keys are base_url, max_results, default_language, timeout_secs`},
		{`{"base_url":8888}`, "[providers.searxng] base_url must be a string, not a number"},
		{`{"base_url":""}`, "[providers.searxng] base_url is empty: set it to the URL of your SearXNG instance's root, such as http://127.0.0.1:8888"},
		{`{"base_url":"127.0.0.1:8888"}`, `[providers.searxng] base_url must start with http:// or https://; got "127.0.0.1:8888"`},
		{`{"base_url":"ftp://example.org"}`, `[providers.searxng] base_url must start with http:// or https://; got "ftp://example.org"`},
		{`{"base_url":"/searxng"}`, `[providers.searxng] base_url must start with http:// or https://; got "/searxng"`},
		{`{"base_url":"http:///searxng"}`, "[providers.searxng] base_url has no host; use a URL such as http://127.0.0.1:8888"},
		{`{"base_url":"http://admin:hunter2@example.org"}`, "[providers.searxng] base_url must not contain a user name or password (user:password@): credentials in the URL are refused"},
		{`{"base_url":"http://example.org/?format=json"}`, "[providers.searxng] base_url must not have a query (?…); give the instance's root, such as http://example.org"},
		{`{"base_url":"http://example.org?"}`, "[providers.searxng] base_url must not have a query (?…); give the instance's root, such as http://example.org"},
		{`{"base_url":"http://example.org/#top"}`, "[providers.searxng] base_url must not have a fragment (#…); give the instance's root, such as http://example.org"},
		{`{"base_url":"http://example.org:99999"}`, `[providers.searxng] base_url has an invalid port "99999"`},
		{`{"base_url":"http://example.org/search"}`, "[providers.searxng] base_url must be the instance's root, not its /search endpoint: use http://example.org"},
		{`{"base_url":"http://example.org/searx/search/"}`, "[providers.searxng] base_url must be the instance's root, not its /search endpoint: use http://example.org/searx"},
		{`{"base_url":"http://x","max_results":0}`, "[providers.searxng] max_results must be an integer from 1 to 50; got 0"},
		{`{"base_url":"http://x","max_results":51}`, "[providers.searxng] max_results must be an integer from 1 to 50; got 51"},
		{`{"base_url":"http://x","max_results":2.5}`, "[providers.searxng] max_results must be an integer from 1 to 50; got 2.5"},
		{`{"base_url":"http://x","max_results":"10"}`, "[providers.searxng] max_results must be an integer from 1 to 50, not a string"},
		{`{"base_url":"http://x","timeout_secs":0}`, "[providers.searxng] timeout_secs must be an integer from 1 to 120; got 0"},
		{`{"base_url":"http://x","timeout_secs":121}`, "[providers.searxng] timeout_secs must be an integer from 1 to 120; got 121"},
		{`{"base_url":"http://x","timeout_secs":true}`, "[providers.searxng] timeout_secs must be an integer from 1 to 120, not a boolean"},
		{`{"base_url":"http://x","default_language":"English"}`, `[providers.searxng] default_language = "English" is not a language: use "all", "auto", a code such as "en", or a code with a region such as "de-CH"`},
		{`{"base_url":"http://x","default_language":["en"]}`, "[providers.searxng] default_language must be a string, not an array"},
		{`{"base_url":"http://x","embeddings":{}}`, `[providers.searxng] has unknown key "embeddings"; the valid keys are base_url, max_results, default_language, timeout_secs`},
	}
	for _, tt := range tests {
		_, err := parseSettings(json.RawMessage(tt.config))
		if err == nil || err.Error() != tt.want {
			t.Errorf("%s:\n got %v\nwant %s", tt.config, err, tt.want)
		}
	}
}

func TestConfigureRefusesBadSettings(t *testing.T) {
	p := New(nil)
	err := p.Configure(context.Background(), &sdk.ConfigureRequest{Config: json.RawMessage(`{"base_url":"http://x","enabled":true}`)})
	if err == nil || err.Error() != `[providers.searxng] has unknown key "enabled"; the valid keys are base_url, max_results, default_language, timeout_secs` {
		t.Errorf("got %v", err)
	}
	// A failed Configure leaves the provider unconfigured.
	if _, err := p.CallTool(context.Background(), &sdk.CallToolRequest{Name: ToolSearch, Arguments: json.RawMessage(`{"query":"x"}`)}); err == nil {
		t.Error("a provider whose Configure failed ran a search")
	}
}
