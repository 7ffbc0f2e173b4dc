package upstream

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/hashicorp/go-hclog"
	"golang.org/x/oauth2"

	"github.com/openhuman/openhuman-host/providers/upstream/oauthtest"
	"github.com/openhuman/openhuman-host/sdk"
	"github.com/openhuman/openhuman-host/sdk/testwait"
)

// oauthSetup is what the providers of one test share, as a host restarted
// on the same data directory would: the protected server, the data
// directory, the browser and the log.
type oauthSetup struct {
	o    *oauthtest.Server
	dir  string
	b    *oauthtest.Browser
	logs bytes.Buffer
}

func newOAuthSetup(t *testing.T) *oauthSetup {
	return &oauthSetup{o: oauthtest.New(t), dir: t.TempDir(), b: &oauthtest.Browser{}}
}

// signIn configures a provider that may open the browser and checks that a
// call reaches the server as the signed-in user.
func (s *oauthSetup) signIn(t *testing.T) *Provider {
	t.Helper()
	p := s.provider(t, true)
	if res, err := callWhoami(t, p); err != nil || res.IsError || res.Text() != "signed-in user" {
		t.Fatalf("call after signing in: %v %+v", err, res)
	}
	return p
}

// provider configures a provider with one server of kind oauth on s.dir.
func (s *oauthSetup) provider(t *testing.T, interactive bool) *Provider {
	t.Helper()
	log := hclog.New(&hclog.LoggerOptions{Output: &s.logs, Level: hclog.Trace})
	p := New(&Options{Logger: log, OpenBrowser: s.b.Open})
	t.Cleanup(func() { _ = p.Close() })
	raw, _ := json.Marshal(map[string]any{"servers": []any{map[string]any{"name": "web", "endpoint": s.o.URL + "/mcp",
		"oauth": map[string]any{"kind": "oauth", "interactive": interactive}}}, "wait_for_servers": true})
	if err := p.Configure(testwait.Context(t), &sdk.ConfigureRequest{Config: raw, DataDir: s.dir}); err != nil {
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
	s := newOAuthSetup(t)
	o, dir, b := s.o, s.dir, s.b
	p := s.signIn(t)
	if st := p.Servers(); len(st) != 1 || st[0].State != StateConnected {
		t.Fatalf("Servers() after signing in = %+v", st)
	}
	if b.Opened.Load() != 1 || o.Registered.Load() != 1 {
		t.Errorf("browser opened %d times and %d clients registered, want 1 and 1", b.Opened.Load(), o.Registered.Load())
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
	p = s.provider(t, true)
	if res, err := callWhoami(t, p); err != nil || res.IsError {
		t.Fatalf("call after a restart: %v %+v", err, res)
	}
	if b.Opened.Load() != 1 || o.Registered.Load() != 1 {
		t.Errorf("after a restart: browser opened %d times and %d clients registered, want still 1 and 1", b.Opened.Load(), o.Registered.Load())
	}

	// The server revokes the access token: the refresh token renews it.
	o.RevokeAccess()
	if res, err := callWhoami(t, p); err != nil || res.IsError {
		t.Fatalf("call after the access token was revoked: %v %+v", err, res)
	}
	if o.Refreshed.Load() != 1 || b.Opened.Load() != 1 {
		t.Errorf("refreshed %d times, browser opened %d times; want 1 and 1", o.Refreshed.Load(), b.Opened.Load())
	}
	for _, secret := range []string{"at-secret-", "rt-secret-"} {
		if strings.Contains(s.logs.String(), secret) {
			t.Errorf("the log holds a token (%s…)", secret)
		}
	}
}

// TestOAuthExpiredSignInDidNotRun: when the sign-in cannot be renewed and
// the server may not open a browser, a call says what to run and that it
// did not run.
func TestOAuthExpiredSignInDidNotRun(t *testing.T) {
	s := newOAuthSetup(t)
	p := s.signIn(t)
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	p = s.provider(t, false)
	s.o.RevokeAll()
	res, err := callWhoami(t, p)
	if err != nil || !res.IsError || !strings.Contains(res.Text(), "run `openhuman-host upstream login web`") ||
		!strings.Contains(res.Text(), "the call did not run") || strings.Contains(res.Text(), "may or may not have run") {
		t.Fatalf("call with a revoked sign-in: %v %+v", err, res)
	}
	if s.b.Opened.Load() != 1 {
		t.Errorf("browser opened %d times, want only the first sign-in's", s.b.Opened.Load())
	}
}

// TestTokenStoreEncryption: with a key, a token file holds no token in
// the clear, is bound to its server, and cannot be read without the key or
// with another; a file written without a key stays readable.
func TestTokenStoreEncryption(t *testing.T) {
	dir := t.TempDir()
	key := bytes.Repeat([]byte{7}, 32)
	rec := &tokenRecord{Server: "web", Endpoint: "https://h/mcp", ClientID: "c", Token: &oauth2.Token{AccessToken: "at-plain-secret", RefreshToken: "rt-plain-secret"}}
	sealedStore := tokenStore{dir: dir, key: key}
	if err := sealedStore.save(rec); err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(sealedStore.path("web"))
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(raw, []byte("plain-secret")) {
		t.Fatalf("the sealed file holds a token in the clear: %s", raw)
	}
	got, err := sealedStore.load("web", "https://h/mcp")
	if err != nil || got == nil || got.Token.AccessToken != "at-plain-secret" {
		t.Fatalf("load with the key = %+v, %v", got, err)
	}
	for name, s := range map[string]tokenStore{"no key": {dir: dir}, "another key": {dir: dir, key: bytes.Repeat([]byte{8}, 32)}} {
		if _, err := s.load("web", "https://h/mcp"); err == nil || !strings.Contains(err.Error(), TokenKeyEnv) {
			t.Errorf("load with %s: %v, want an error naming %s", name, err, TokenKeyEnv)
		}
	}
	if err := os.Rename(sealedStore.path("web"), sealedStore.path("other")); err != nil {
		t.Fatal(err)
	}
	if _, err := sealedStore.load("other", "https://h/mcp"); err == nil {
		t.Error("a file sealed for one server was read as another's")
	}
	plain := tokenStore{dir: dir}
	if err := plain.save(rec); err != nil {
		t.Fatal(err)
	}
	if got, err := sealedStore.load("web", "https://h/mcp"); err != nil || got == nil {
		t.Errorf("a file written without a key, read with one: %+v, %v", got, err)
	}
	t.Setenv(TokenKeyEnv, "not hex")
	if _, err := newTokenStore(dir); err == nil || !strings.Contains(err.Error(), "64 hex digits") {
		t.Errorf("a malformed key: %v", err)
	}
}

// TestBadTokenKeyStopsOnlyOAuthServers: a malformed OPENHUMAN_TOKEN_KEY
// makes the servers that sign in unavailable, saying so, and the others
// run.
func TestBadTokenKeyStopsOnlyOAuthServers(t *testing.T) {
	t.Setenv(TokenKeyEnv, "abc")
	o := oauthtest.New(t)
	p := New(nil)
	defer p.Close()
	raw, _ := json.Marshal(map[string]any{"servers": []any{
		map[string]any{"name": "web", "endpoint": o.URL + "/mcp", "oauth": map[string]any{"kind": "oauth", "interactive": false}},
		map[string]any{"name": "local", "command": stdioServer},
	}, "wait_for_servers": true})
	if err := p.Configure(testwait.Context(t), &sdk.ConfigureRequest{Config: raw, DataDir: t.TempDir()}); err != nil {
		t.Fatalf("Configure with a malformed key: %v", err)
	}
	st := p.Servers()
	if len(st) != 2 || st[0].State != StateFailed || !strings.Contains(st[0].Error, "the environment variable "+TokenKeyEnv) || st[1].State != StateConnected {
		t.Fatalf("Servers() = %+v", st)
	}
	if _, err := Logout(t.TempDir(), "../../victim"); err == nil {
		t.Error("Logout of a path succeeded")
	}
}
