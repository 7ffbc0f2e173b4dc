package upstream

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/openhuman/openhuman-host/providers/upstream/upstreamwire"
)

// abcServer is a Streamable HTTP MCP server with tools a, b and c.
func abcServer(t *testing.T) string {
	t.Helper()
	s := mcp.NewServer(&mcp.Implementation{Name: "abc", Version: "1"}, nil)
	for _, name := range []string{"a", "b", "c"} {
		mcp.AddTool(s, &mcp.Tool{Name: name, Description: "Tool " + name + "."},
			func(_ context.Context, _ *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
				return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: name}}}, nil, nil
			})
	}
	srv := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, nil))
	t.Cleanup(srv.Close)
	return srv.URL + "/mcp"
}

func TestCheckHTTPAllowDeny(t *testing.T) {
	endpoint := abcServer(t)
	s := upstreamwire.Server{Name: "abc", Endpoint: endpoint, Enabled: true, TimeoutSecs: 10, DisallowedTools: []string{"c"}}
	r := Check(context.Background(), s, nil, "", nil)
	if r.Err != nil {
		t.Fatalf("Check: %v", r.Err)
	}
	if r.Transport != "http" || r.Endpoint != strings.TrimSuffix(endpoint, "/mcp") || r.Prefix != "abc__" {
		t.Errorf("report = %+v", r)
	}
	if !reflect.DeepEqual(r.Tools, []string{"a", "b", "c"}) || !reflect.DeepEqual(r.Exposed, []string{"abc__a", "abc__b"}) ||
		!reflect.DeepEqual(r.Denied, []string{"c"}) || r.Reasons["c"] != "matched by disallowed_tools" || r.Auth != nil {
		t.Errorf("tools %v exposed %v denied %v reasons %v auth %+v", r.Tools, r.Exposed, r.Denied, r.Reasons, r.Auth)
	}

	// An allow list refuses what it does not match.
	s.AllowedTools, s.DisallowedTools = []string{"a"}, nil
	empty := ""
	s.Prefix = &empty
	r = Check(context.Background(), s, nil, "", nil)
	if r.Err != nil || !reflect.DeepEqual(r.Exposed, []string{"a"}) || r.Reasons["b"] != "not matched by allowed_tools" {
		t.Errorf("allow list: %+v", r)
	}
}

func TestCheckStdio(t *testing.T) {
	s := upstreamwire.Server{Name: "local", Command: stdioServer, Enabled: true, TimeoutSecs: 10}
	r := Check(context.Background(), s, nil, "", nil)
	if r.Err != nil {
		t.Fatalf("Check: %v", r.Err)
	}
	if r.Transport != "stdio" || r.Endpoint != stdioServer || !reflect.DeepEqual(r.Exposed, []string{"local__echo", "local__hang"}) || len(r.Denied) != 0 {
		t.Errorf("report = %+v", r)
	}

	s.Command = "openhuman-no-such-command"
	if r := Check(context.Background(), s, nil, "", nil); r.Err == nil || !strings.Contains(r.Err.Error(), "not found on PATH") || r.Auth != nil {
		t.Errorf("missing command: %+v", r)
	}
}

func TestCheckAuthDiscovery(t *testing.T) {
	var base string
	mux := http.NewServeMux()
	mux.HandleFunc("/mcp", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("WWW-Authenticate", `Bearer resource_metadata="`+base+`/meta/prm", scope="read write"`)
		http.Error(w, "unauthorized", http.StatusUnauthorized)
	})
	serveJSON := func(path string, doc func() any) {
		mux.HandleFunc(path, func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			_ = json.NewEncoder(w).Encode(doc())
		})
	}
	serveJSON("/meta/prm", func() any {
		return map[string]any{
			"resource":              base + "/mcp",
			"authorization_servers": []string{base + "/issuer"},
			"scopes_supported":      []string{"read", "write", "admin"},
		}
	})
	serveJSON("/.well-known/oauth-authorization-server/issuer", func() any {
		return map[string]any{
			"issuer":                           base + "/issuer",
			"authorization_endpoint":           base + "/issuer/authorize",
			"token_endpoint":                   base + "/issuer/token",
			"response_types_supported":         []string{"code"},
			"code_challenge_methods_supported": []string{"S256"},
		}
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	base = srv.URL

	s := upstreamwire.Server{Name: "secure-mcp", Endpoint: base + "/mcp?key=s3cret", Enabled: true, TimeoutSecs: 10}
	r := Check(context.Background(), s, map[string]string{"X-Trace": "1"}, "", nil)
	if r.Err == nil {
		t.Fatal("Check succeeded against a server that answers 401")
	}
	if strings.Contains(r.Err.Error(), "s3cret") || strings.Contains(r.Err.Error(), "/mcp") {
		t.Errorf("error not redacted: %v", r.Err)
	}
	a := r.Auth
	if a == nil {
		t.Fatalf("no auth report; error %v", r.Err)
	}
	want := AuthReport{
		Scheme:                "Bearer",
		ResourceMetadataURL:   base + "/meta/prm",
		AuthorizationServers:  []string{base + "/issuer"},
		Scopes:                []string{"read", "write"},
		TokenEndpoint:         base + "/issuer/token",
		AuthorizationEndpoint: base + "/issuer/authorize",
		Hint:                  a.Hint,
	}
	if !reflect.DeepEqual(*a, want) {
		t.Errorf("auth report\n got %+v\nwant %+v", *a, want)
	}
	for _, part := range []string{"OAuth", "authorization server " + base + "/issuer", `kind = "oauth"`, "upstream login secure-mcp", `name = "secure-mcp"`} {
		if !strings.Contains(a.Hint, part) {
			t.Errorf("hint %q lacks %q", a.Hint, part)
		}
	}
}

func TestCheckAuthDiscoveryWellKnown(t *testing.T) {
	// No resource_metadata: the metadata is found at the well-known
	// location for the endpoint's path; a refused configured token says so.
	var base string
	mux := http.NewServeMux()
	mux.HandleFunc("/mcp", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("WWW-Authenticate", `Bearer error="invalid_token"`)
		w.WriteHeader(http.StatusUnauthorized)
	})
	mux.HandleFunc("/.well-known/oauth-protected-resource/mcp", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{"resource": base + "/mcp", "authorization_servers": []string{base}})
	})
	mux.HandleFunc("/.well-known/openid-configuration", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{
			"issuer": base, "authorization_endpoint": base + "/auth", "token_endpoint": base + "/token",
			"response_types_supported": []string{"code"}, "code_challenge_methods_supported": []string{"S256"},
			"scopes_supported": []string{"openid"},
		})
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	base = srv.URL

	s := upstreamwire.Server{Name: "x", Endpoint: base + "/mcp", Enabled: true, TimeoutSecs: 10,
		Auth: &upstreamwire.Auth{Kind: "bearer_token", TokenEnv: "X_TOKEN"}}
	r := Check(context.Background(), s, map[string]string{"Authorization": "Bearer old"}, "", nil)
	a := r.Auth
	if r.Err == nil || a == nil {
		t.Fatalf("report = %+v", r)
	}
	if a.ResourceMetadataURL != base+"/.well-known/oauth-protected-resource/<endpoint path>" || a.TokenEndpoint != base+"/token" ||
		a.AuthorizationEndpoint != base+"/auth" || !reflect.DeepEqual(a.Scopes, []string{"openid"}) || len(a.Problems) != 0 {
		t.Errorf("auth report = %+v", *a)
	}
	if !strings.Contains(a.Hint, "were refused") || !strings.Contains(a.Hint, "bearer_token") || strings.Contains(a.Hint, "old") {
		t.Errorf("hint = %q", a.Hint)
	}
}

func TestCheckBadSettings(t *testing.T) {
	s := upstreamwire.Server{Name: "bad", Endpoint: "https://user:pw@example.com/mcp", Enabled: true, TimeoutSecs: 10, AllowedTools: []string{"["}}
	r := Check(context.Background(), s, nil, "", nil)
	if r.Err == nil || !strings.Contains(r.Err.Error(), "allowed_tools") || r.Endpoint != "<redacted>" {
		t.Errorf("report = %+v", r)
	}
}
