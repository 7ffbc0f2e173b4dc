package config

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestUpstreamServers(t *testing.T) {
	t.Parallel()
	c, err := Parse([]byte(`
[[upstream.servers]]
name = "everything"
command = "npx"
args = ["-y", "@modelcontextprotocol/server-everything", "stdio"]
env = { LOG = "1" }
prefix = ""
disallowed_tools = ["printEnv"]
read_only_tools = ["echo"]

[[upstream.servers]]
name = "company"
endpoint = "https://mcp.example.com/mcp"
enabled = false
timeout_secs = 60
trust_annotations = true
auth = { kind = "query_param", param = "key", value_env = "COMPANY_KEY" }
`), "config.toml")
	if err != nil {
		t.Fatal(err)
	}
	empty := ""
	want := []UpstreamServer{
		{Name: "everything", Command: "npx", Args: []string{"-y", "@modelcontextprotocol/server-everything", "stdio"}, Env: map[string]string{"LOG": "1"},
			Enabled: true, DisallowedTools: []string{"printEnv"}, TimeoutSecs: 30, Prefix: &empty, ReadOnlyTools: []string{"echo"}},
		{Name: "company", Endpoint: "https://mcp.example.com/mcp", Enabled: false, TimeoutSecs: 60, TrustAnnotations: true,
			Auth: &UpstreamAuth{Kind: "query_param", Param: "key", ValueEnv: "COMPANY_KEY"}},
	}
	if diff := cmp.Diff(want, c.Upstream.Checked); diff != "" {
		t.Errorf("servers (-want +got):\n%s", diff)
	}
	env := map[string]string{"COMPANY_KEY": "k 1"}
	headers, endpoint, err := c.Upstream.Checked[1].ResolveAuth(func(k string) string { return env[k] })
	if err != nil || len(headers) != 0 || endpoint != "https://mcp.example.com/mcp?key=k+1" {
		t.Errorf("query_param auth: %v %q %v", headers, endpoint, err)
	}
	for kind, tc := range map[string]struct {
		auth *UpstreamAuth
		want map[string]string
	}{
		"bearer": {&UpstreamAuth{Kind: "bearer_token", TokenEnv: "T"}, map[string]string{"Authorization": "Bearer tok"}},
		"basic":  {&UpstreamAuth{Kind: "basic", UsernameEnv: "U", PasswordEnv: "P"}, map[string]string{"Authorization": "Basic dTpw"}},
		"header": {&UpstreamAuth{Kind: "header", Header: "X-Key", ValueEnv: "T"}, map[string]string{"X-Key": "tok"}},
	} {
		env := map[string]string{"T": "tok", "U": "u", "P": "p"}
		s := UpstreamServer{Name: "x", Endpoint: "https://h/mcp", Auth: tc.auth}
		got, _, err := s.ResolveAuth(func(k string) string { return env[k] })
		if err != nil || !cmp.Equal(tc.want, got) {
			t.Errorf("%s: %v %v", kind, got, err)
		}
	}
	s := UpstreamServer{Name: "x", Endpoint: "https://h/mcp", Auth: &UpstreamAuth{Kind: "bearer_token", TokenEnv: "MISSING"}}
	if _, _, err := s.ResolveAuth(func(string) string { return "" }); err == nil || err.Error() != "upstream server x: environment variable MISSING (its auth) is empty or unset" {
		t.Errorf("missing secret: %v", err)
	}
}
