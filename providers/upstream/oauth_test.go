package upstream

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/modelcontextprotocol/go-sdk/oauthex"

	"github.com/openhuman/openhuman-host/internal/testwait"
	"github.com/openhuman/openhuman-host/sdk"
)

// oauthServer is an MCP server behind an OAuth 2.1 authorization server,
// both on one origin: protected resource metadata (RFC 9728), server
// metadata (RFC 8414), dynamic client registration (RFC 7591), an
// authorization endpoint that approves at once, and a token endpoint that
// checks PKCE and the resource indicator and refreshes.
type oauthServer struct {
	*httptest.Server
	mu         sync.Mutex
	codes      map[string]string // code → PKCE challenge
	access     map[string]bool   // valid access tokens
	refresh    map[string]bool   // valid refresh tokens
	n          int
	registered atomic.Int32
	refreshed  atomic.Int32
}

func newOAuthServer(t *testing.T) *oauthServer {
	o := &oauthServer{codes: map[string]string{}, access: map[string]bool{}, refresh: map[string]bool{}}
	srv := mcp.NewServer(&mcp.Implementation{Name: "protected", Version: "1"}, nil)
	mcp.AddTool(srv, &mcp.Tool{Name: "whoami"}, func(ctx context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "signed-in user"}}}, nil, nil
	})
	mux := http.NewServeMux()
	o.Server = httptest.NewServer(mux)
	t.Cleanup(o.Close)
	base := o.URL
	verify := func(_ context.Context, token string, _ *http.Request) (*auth.TokenInfo, error) {
		o.mu.Lock()
		defer o.mu.Unlock()
		if !o.access[token] {
			return nil, auth.ErrInvalidToken
		}
		return &auth.TokenInfo{Expiration: time.Now().Add(time.Hour)}, nil
	}
	mcpHandler := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil)
	mux.Handle("/mcp", auth.RequireBearerToken(verify, &auth.RequireBearerTokenOptions{
		ResourceMetadataURL: base + "/.well-known/oauth-protected-resource/mcp"})(mcpHandler))
	mux.Handle("/.well-known/oauth-protected-resource/mcp", auth.ProtectedResourceMetadataHandler(&oauthex.ProtectedResourceMetadata{
		Resource: base + "/mcp", AuthorizationServers: []string{base}}))
	mux.HandleFunc("/.well-known/oauth-authorization-server", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{
			"issuer": base, "authorization_endpoint": base + "/authorize", "token_endpoint": base + "/token",
			"registration_endpoint": base + "/register", "response_types_supported": []string{"code"},
			"grant_types_supported": []string{"authorization_code", "refresh_token"}, "code_challenge_methods_supported": []string{"S256"},
			"token_endpoint_auth_methods_supported": []string{"none"},
		})
	})
	mux.HandleFunc("/register", func(w http.ResponseWriter, r *http.Request) {
		var md map[string]any
		_ = json.NewDecoder(r.Body).Decode(&md)
		o.registered.Add(1)
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusCreated)
		_ = json.NewEncoder(w).Encode(map[string]any{"client_id": fmt.Sprintf("client-%d", o.registered.Load()),
			"redirect_uris": md["redirect_uris"], "token_endpoint_auth_method": "none"})
	})
	mux.HandleFunc("/authorize", func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		if q.Get("code_challenge_method") != "S256" || q.Get("resource") != base+"/mcp" {
			http.Error(w, "PKCE S256 and the resource indicator are required", http.StatusBadRequest)
			return
		}
		o.mu.Lock()
		o.n++
		code := fmt.Sprintf("code-%d", o.n)
		o.codes[code] = q.Get("code_challenge")
		o.mu.Unlock()
		to, _ := url.Parse(q.Get("redirect_uri"))
		v := url.Values{"code": {code}, "state": {q.Get("state")}}
		to.RawQuery = v.Encode()
		http.Redirect(w, r, to.String(), http.StatusFound)
	})
	mux.HandleFunc("/token", func(w http.ResponseWriter, r *http.Request) {
		_ = r.ParseForm()
		o.mu.Lock()
		defer o.mu.Unlock()
		switch r.Form.Get("grant_type") {
		case "authorization_code":
			sum := sha256.Sum256([]byte(r.Form.Get("code_verifier")))
			challenge, ok := o.codes[r.Form.Get("code")]
			delete(o.codes, r.Form.Get("code"))
			if !ok || base64.RawURLEncoding.EncodeToString(sum[:]) != challenge || r.Form.Get("resource") != base+"/mcp" {
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(http.StatusBadRequest)
				_, _ = w.Write([]byte(`{"error":"invalid_grant"}`))
				return
			}
		case "refresh_token":
			if !o.refresh[r.Form.Get("refresh_token")] {
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(http.StatusBadRequest)
				_, _ = w.Write([]byte(`{"error":"invalid_grant"}`))
				return
			}
			o.refreshed.Add(1)
		default:
			http.Error(w, "unsupported grant", http.StatusBadRequest)
			return
		}
		o.n++
		at, rt := fmt.Sprintf("at-secret-%d", o.n), fmt.Sprintf("rt-secret-%d", o.n)
		o.access[at], o.refresh[rt] = true, true
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{"access_token": at, "token_type": "Bearer", "expires_in": 3600, "refresh_token": rt})
	})
	return o
}

// revokeAccess makes every access token issued so far invalid.
func (o *oauthServer) revokeAccess() {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.access = map[string]bool{}
}

// revokeAll makes every token issued so far invalid.
func (o *oauthServer) revokeAll() {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.access, o.refresh = map[string]bool{}, map[string]bool{}
}

// testBrowser plays the user's browser: it follows the authorization URL
// to the redirect, as a user who approves at once would.
type testBrowser struct{ opened atomic.Int32 }

func (b *testBrowser) open(ctx context.Context, authURL string) error {
	b.opened.Add(1)
	go func() {
		client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
		resp, err := client.Get(authURL)
		if err != nil {
			return
		}
		resp.Body.Close()
		if loc := resp.Header.Get("Location"); loc != "" {
			if r, err := http.Get(loc); err == nil {
				r.Body.Close()
			}
		}
	}()
	return nil
}

// oauthProvider configures a provider with one server of kind oauth on dir.
func oauthProvider(t *testing.T, o *oauthServer, dir string, b *testBrowser, interactive bool, logs *bytes.Buffer) *Provider {
	t.Helper()
	log := hclog.New(&hclog.LoggerOptions{Output: logs, Level: hclog.Trace})
	p := New(&Options{Logger: log, OpenBrowser: b.open})
	t.Cleanup(func() { _ = p.Close() })
	raw, _ := json.Marshal(map[string]any{"servers": []any{map[string]any{"name": "web", "endpoint": o.URL + "/mcp",
		"oauth": map[string]any{"kind": "oauth", "interactive": interactive}}}, "wait_for_servers": true})
	if err := p.Configure(testwait.Context(t), &sdk.ConfigureRequest{Config: raw, DataDir: dir}); err != nil {
		t.Fatalf("Configure: %v", err)
	}
	return p
}

func callWhoami(t *testing.T, p *Provider) (*sdk.CallToolResult, error) {
	return p.CallTool(testwait.Context(t), &sdk.CallToolRequest{Name: "web__whoami", Arguments: json.RawMessage(`{}`)})
}

// TestOAuthSignInStoresAndRenewsTokens signs in to a protected server in
// the browser (dynamic client registration, PKCE, resource indicator),
// keeps the tokens in a private file, uses them again after a restart
// without the browser, renews a revoked access token with the refresh
// token, and never logs a token.
func TestOAuthSignInStoresAndRenewsTokens(t *testing.T) {
	o := newOAuthServer(t)
	dir := t.TempDir()
	b := &testBrowser{}
	var logs bytes.Buffer
	p := oauthProvider(t, o, dir, b, true, &logs)
	if st := p.Servers(); len(st) != 1 || st[0].State != StateConnected {
		t.Fatalf("Servers() after signing in = %+v", st)
	}
	if res, err := callWhoami(t, p); err != nil || res.IsError || text(res) != "signed-in user" {
		t.Fatalf("call after signing in: %v %+v", err, res)
	}
	if b.opened.Load() != 1 || o.registered.Load() != 1 {
		t.Errorf("browser opened %d times and %d clients registered, want 1 and 1", b.opened.Load(), o.registered.Load())
	}
	file := filepath.Join(dir, tokenDirName, "web.json")
	info, err := os.Stat(file)
	if err != nil {
		t.Fatalf("no token file: %v", err)
	}
	if runtime.GOOS != "windows" && info.Mode().Perm() != 0o600 {
		t.Errorf("token file mode %04o, want 0600", info.Mode().Perm())
	}
	rec, err := tokenStore{dir: filepath.Join(dir, tokenDirName)}.load("web", o.URL+"/mcp")
	if err != nil || rec == nil || rec.Token.RefreshToken == "" || rec.ClientID != "client-1" {
		t.Fatalf("stored sign-in = %+v, %v", rec, err)
	}
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}

	// A restart signs in with the stored token: no browser, no new client.
	p = oauthProvider(t, o, dir, b, true, &logs)
	if res, err := callWhoami(t, p); err != nil || res.IsError {
		t.Fatalf("call after a restart: %v %+v", err, res)
	}
	if b.opened.Load() != 1 || o.registered.Load() != 1 {
		t.Errorf("after a restart: browser opened %d times and %d clients registered, want still 1 and 1", b.opened.Load(), o.registered.Load())
	}

	// The server revokes the access token: the refresh token renews it.
	o.revokeAccess()
	if res, err := callWhoami(t, p); err != nil || res.IsError {
		t.Fatalf("call after the access token was revoked: %v %+v", err, res)
	}
	if o.refreshed.Load() != 1 || b.opened.Load() != 1 {
		t.Errorf("refreshed %d times, browser opened %d times; want 1 and 1", o.refreshed.Load(), b.opened.Load())
	}
	for _, secret := range []string{"at-secret-", "rt-secret-"} {
		if strings.Contains(logs.String(), secret) {
			t.Errorf("the log holds a token (%s…)", secret)
		}
	}
}

// TestOAuthExpiredSignInDidNotRun: when the sign-in cannot be renewed and
// the server may not open a browser, a call says what to run and that it
// did not run.
func TestOAuthExpiredSignInDidNotRun(t *testing.T) {
	o := newOAuthServer(t)
	dir := t.TempDir()
	b := &testBrowser{}
	var logs bytes.Buffer
	p := oauthProvider(t, o, dir, b, true, &logs)
	if res, err := callWhoami(t, p); err != nil || res.IsError {
		t.Fatalf("call after signing in: %v %+v", err, res)
	}
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	p = oauthProvider(t, o, dir, b, false, &logs)
	o.revokeAll()
	res, err := callWhoami(t, p)
	if err != nil || !res.IsError || !strings.Contains(text(res), "run `openhuman-host upstream login web`") ||
		!strings.Contains(text(res), "the call did not run") || strings.Contains(text(res), "may or may not have run") {
		t.Fatalf("call with a revoked sign-in: %v %+v", err, res)
	}
	if b.opened.Load() != 1 {
		t.Errorf("browser opened %d times, want only the first sign-in's", b.opened.Load())
	}
}
