// Package oauthtest serves an MCP server behind an OAuth 2.1
// authorization server, and plays the user's browser, for tests of the
// upstream provider's sign-in.
package oauthtest

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/modelcontextprotocol/go-sdk/oauthex"
)

// Server is an MCP server (its endpoint is URL+"/mcp", with one tool,
// whoami) behind an OAuth 2.1 authorization server,
// both on one origin: protected resource metadata (RFC 9728), server
// metadata (RFC 8414), dynamic client registration (RFC 7591), an
// authorization endpoint that approves at once, and a token endpoint that
// checks PKCE and the resource indicator and refreshes.
type Server struct {
	*httptest.Server
	mu      sync.Mutex
	codes   map[string]string // code → PKCE challenge
	access  map[string]bool   // valid access tokens
	refresh map[string]bool   // valid refresh tokens
	n       int
	// Registered and Refreshed count the clients registered and the
	// refresh grants served.
	Registered atomic.Int32
	Refreshed  atomic.Int32
}

// New starts a Server, stopped when the test ends.
func New(t testing.TB) *Server {
	o := &Server{codes: map[string]string{}, access: map[string]bool{}, refresh: map[string]bool{}}
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
		o.Registered.Add(1)
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusCreated)
		_ = json.NewEncoder(w).Encode(map[string]any{"client_id": fmt.Sprintf("client-%d", o.Registered.Load()),
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
			o.Refreshed.Add(1)
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

// RevokeAccess makes every access token issued so far invalid.
func (o *Server) RevokeAccess() {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.access = map[string]bool{}
}

// RevokeAll makes every token issued so far invalid.
func (o *Server) RevokeAll() {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.access, o.refresh = map[string]bool{}, map[string]bool{}
}

// Browser plays the user's browser: Open follows the authorization URL
// to the redirect, as a user who approves at once would.
type Browser struct {
	// Opened counts the URLs opened.
	Opened atomic.Int32
}

// Open follows authURL in the background, like a browser window.
func (b *Browser) Open(_ context.Context, authURL string) error {
	b.Opened.Add(1)
	go func() { _ = Follow(context.Background(), authURL) }()
	return nil
}

// Follow does what a user who approves at once does in the browser: it
// requests authURL and then the address the authorization server
// redirects to (the client's loopback redirect).
func Follow(ctx context.Context, authURL string) error {
	client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, authURL, nil)
	if err != nil {
		return err
	}
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	resp.Body.Close()
	loc := resp.Header.Get("Location")
	if loc == "" {
		return fmt.Errorf("the authorization server answered %s without a redirect", resp.Status)
	}
	req, err = http.NewRequestWithContext(ctx, http.MethodGet, loc, nil)
	if err != nil {
		return err
	}
	resp, err = http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	return resp.Body.Close()
}
