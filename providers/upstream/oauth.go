package upstream

import (
	"context"
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"html"
	"io/fs"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/auth/extauth"
	"github.com/modelcontextprotocol/go-sdk/oauthex"
	"golang.org/x/oauth2"
)

// OAuth 2.1 to upstream servers (MCP authorization, 2025-11-25): the
// go-sdk's handlers do the protocol (protected resource metadata, RFC
// 9728; authorization server metadata, RFC 8414 or OpenID Connect; client
// ID metadata documents, pre-registered clients or dynamic client
// registration, RFC 7591; the authorization code grant with PKCE and
// resource indicators, RFC 8707; scope step-up on insufficient_scope;
// refresh; the client credentials grant). This file keeps what they leave
// to the application: where tokens are kept, and how the user reaches the
// authorization server.
const (
	// signInWait bounds the wait for the browser to come back to the
	// loopback redirect.
	signInWait = 5 * time.Minute
	// promptEvery is the least time after a browser sign-in left
	// unfinished before a server starts another by itself for the same
	// upstream server: background reconnects do not open a window each.
	promptEvery = 15 * time.Minute
	// tokenDirName is the folder of the token files in the provider's data
	// directory.
	tokenDirName = "oauth"
)

// oauthSettings is a server's "oauth" settings object, which the host fills
// in from an auth table of kind oauth or oauth_client_credentials, with
// the client secret read from the environment.
type oauthSettings struct {
	Kind              string   `json:"kind"`
	ClientID          string   `json:"client_id"`
	ClientSecret      string   `json:"client_secret"`
	ClientMetadataURL string   `json:"client_metadata_url"`
	Scopes            []string `json:"scopes"`
	Interactive       bool     `json:"interactive"`
}

// ErrSignInRequired is wrapped by the errors of requests to a server that
// needs its user to sign in: no token is stored, the stored one cannot be
// refreshed, or more scopes are needed. The request did not run.
var ErrSignInRequired = errors.New("sign-in required")

// signInError is the error of a request that needs the user to sign in.
type signInError struct {
	server string
	why    string
}

func (e *signInError) Error() string {
	return fmt.Sprintf("upstream server %q needs you to sign in (%s): run `openhuman-host upstream login %s`", e.server, e.why, e.server)
}

func (e *signInError) Unwrap() error { return ErrSignInRequired }

// tokenRecord is what a token file holds for one server: the token, and
// what refreshing it and signing in again with the same client need. The
// file is the user's credential: 0600, in a 0700 folder.
type tokenRecord struct {
	// Server and Endpoint say whose record it is: a record for another
	// endpoint is ignored.
	Server   string `json:"server"`
	Endpoint string `json:"endpoint"`
	// ClientID and ClientSecret are the client the token was issued to
	// (pre-registered, metadata document URL or dynamically registered);
	// RedirectURL is the redirect URI it was registered with.
	ClientID     string `json:"client_id"`
	ClientSecret string `json:"client_secret,omitempty"`
	RedirectURL  string `json:"redirect_url,omitempty"`
	// AuthURL and TokenURL are the authorization server's endpoints;
	// AuthStyle is how the client authenticates at TokenURL
	// (oauth2.AuthStyle).
	AuthURL   string           `json:"auth_url"`
	TokenURL  string           `json:"token_url"`
	AuthStyle oauth2.AuthStyle `json:"auth_style"`
	Scopes    []string         `json:"scopes,omitempty"`
	Token     *oauth2.Token    `json:"token"`
}

// TokenKeyEnv names the environment variable that, when set, holds the key
// the token files are encrypted with: 32 random bytes as 64 hex digits
// (`openssl rand -hex 32`). A file written with a key cannot be read
// without it; one written without stays readable and is encrypted the
// next time it is saved.
const TokenKeyEnv = "OPENHUMAN_TOKEN_KEY"

// tokenStore keeps one token file per server in dir, sealed with key
// (AES-256-GCM) when it is set.
type tokenStore struct {
	dir string
	key []byte
}

// newTokenStore is the store in dir with the key from the environment; a
// malformed key is an error naming the variable.
func newTokenStore(dir string) (tokenStore, error) {
	t := tokenStore{dir: dir}
	raw := os.Getenv(TokenKeyEnv)
	if raw == "" {
		return t, nil
	}
	key, err := hex.DecodeString(strings.TrimSpace(raw))
	if err != nil || len(key) != 32 {
		return t, fmt.Errorf("the environment variable %s must be 32 bytes as 64 hex digits (openssl rand -hex 32)", TokenKeyEnv)
	}
	t.key = key
	return t, nil
}

// sealed is a token file encrypted with the store's key.
type sealed struct {
	Sealed     string `json:"sealed"` // "aes-256-gcm"
	Nonce      []byte `json:"nonce"`
	Ciphertext []byte `json:"ciphertext"`
}

// seal encrypts b when the store has a key; the server name is bound to
// the ciphertext, so a file cannot be passed off as another server's.
func (t tokenStore) seal(server string, b []byte) ([]byte, error) {
	if t.key == nil {
		return b, nil
	}
	aead, err := t.aead()
	if err != nil {
		return nil, err
	}
	nonce := make([]byte, aead.NonceSize())
	if _, err := rand.Read(nonce); err != nil {
		return nil, err
	}
	return json.Marshal(sealed{Sealed: "aes-256-gcm", Nonce: nonce, Ciphertext: aead.Seal(nil, nonce, b, []byte(server))})
}

// open decrypts a sealed file; plain JSON is returned as it is.
func (t tokenStore) open(server string, b []byte) ([]byte, error) {
	var s sealed
	if json.Unmarshal(b, &s) != nil || s.Sealed == "" {
		return b, nil
	}
	if t.key == nil {
		return nil, fmt.Errorf("it is encrypted and %s is not set", TokenKeyEnv)
	}
	aead, err := t.aead()
	if err != nil {
		return nil, err
	}
	out, err := aead.Open(nil, s.Nonce, s.Ciphertext, []byte(server))
	if err != nil {
		return nil, fmt.Errorf("it cannot be decrypted with the key in %s", TokenKeyEnv)
	}
	return out, nil
}

func (t tokenStore) aead() (cipher.AEAD, error) {
	block, err := aes.NewCipher(t.key)
	if err != nil {
		return nil, err
	}
	return cipher.NewGCM(block)
}

func (t tokenStore) path(server string) string { return filepath.Join(t.dir, server+".json") }

// load returns the record of server for endpoint; nil when there is none
// (or it belongs to another endpoint).
func (t tokenStore) load(server, endpoint string) (*tokenRecord, error) {
	if t.dir == "" {
		return nil, nil
	}
	b, err := os.ReadFile(t.path(server))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read the sign-in of upstream server %q: %w", server, err)
	}
	if b, err = t.open(server, b); err != nil {
		return nil, fmt.Errorf("read the sign-in of upstream server %q from %s: %w; sign in again after `openhuman-host upstream logout %s`",
			server, t.path(server), err, server)
	}
	var rec tokenRecord
	if err := json.Unmarshal(b, &rec); err != nil {
		return nil, fmt.Errorf("read the sign-in of upstream server %q: %s is damaged (%v); run `openhuman-host upstream logout %s`",
			server, t.path(server), err, server)
	}
	if rec.Endpoint != endpoint || rec.Token == nil {
		return nil, nil
	}
	return &rec, nil
}

// save writes rec atomically, readable by its owner only.
func (t tokenStore) save(rec *tokenRecord) error {
	if t.dir == "" {
		return nil
	}
	if err := os.MkdirAll(t.dir, 0o700); err != nil {
		return fmt.Errorf("save the sign-in of upstream server %q: %w", rec.Server, err)
	}
	b, err := json.MarshalIndent(rec, "", "  ")
	if err != nil {
		return err
	}
	if b, err = t.seal(rec.Server, b); err != nil {
		return fmt.Errorf("save the sign-in of upstream server %q: encrypt it: %w", rec.Server, err)
	}
	f, err := os.CreateTemp(t.dir, "."+rec.Server+"-*.tmp")
	if err != nil {
		return fmt.Errorf("save the sign-in of upstream server %q: %w", rec.Server, err)
	}
	tmp := f.Name()
	_, err = f.Write(b)
	if err == nil {
		err = f.Chmod(0o600)
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, t.path(rec.Server))
	}
	if err != nil {
		_ = os.Remove(tmp)
		return fmt.Errorf("save the sign-in of upstream server %q: %w", rec.Server, err)
	}
	return nil
}

// remove deletes server's token file; it reports whether there was one.
func (t tokenStore) remove(server string) (bool, error) {
	err := os.Remove(t.path(server))
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	return err == nil, err
}

// savingSource hands out rec's token, refreshing it through base when it
// expires and saving every new one.
type savingSource struct {
	mu     sync.Mutex
	base   oauth2.TokenSource
	rec    *tokenRecord
	store  tokenStore
	log    hclog.Logger
	server string
	// renew makes a token source that refreshes tok at once; nil when
	// the source cannot renew early.
	renew func(tok *oauth2.Token) oauth2.TokenSource
}

// accessToken is the access token in use.
func (s *savingSource) accessToken() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.rec.Token == nil {
		return ""
	}
	return s.rec.Token.AccessToken
}

// renewAfter renews the token when refused is the access token in use and
// a refresh token is held, and reports whether a new one was obtained.
func (s *savingSource) renewAfter(refused string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.renew == nil || s.rec.Token == nil || s.rec.Token.RefreshToken == "" || s.rec.Token.AccessToken != refused {
		return false
	}
	stale := *s.rec.Token
	stale.Expiry = time.Unix(1, 0)
	base := s.renew(&stale)
	tok, err := base.Token()
	if err != nil || tok.AccessToken == refused {
		return false
	}
	s.base, s.rec.Token = base, tok
	if err := s.store.save(s.rec); err != nil {
		s.log.Warn("renewed sign-in not saved", "server", s.server, "error", err)
	}
	return true
}

func (s *savingSource) Token() (*oauth2.Token, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	tok, err := s.base.Token()
	if err != nil {
		var rerr *oauth2.RetrieveError
		if errors.As(err, &rerr) {
			return nil, &signInError{server: s.server, why: "the sign-in has expired and could not be renewed: " + rerr.ErrorCode}
		}
		return nil, fmt.Errorf("renew the sign-in of upstream server %q: %s", s.server, redactText(err.Error()))
	}
	if s.rec.Token == nil || tok.AccessToken != s.rec.Token.AccessToken {
		s.rec.Token = tok
		if err := s.store.save(s.rec); err != nil {
			s.log.Warn("renewed sign-in not saved", "server", s.server, "error", err)
		}
	}
	return tok, nil
}

// oauthFlow is what a server's sign-in needs besides its settings.
type oauthFlow struct {
	store tokenStore
	log   hclog.Logger
	// fetch reaches the authorization server through the user's browser;
	// nil means no interactive sign-in here.
	fetch func(s *server, redirect string) auth.AuthorizationCodeFetcher
	// client makes the OAuth requests.
	client *http.Client
	// fresh ignores a stored token (its client is still used): a sign-in
	// the user asked for.
	fresh bool
}

// newOAuthHandler returns the handler that authorizes s's requests.
func newOAuthHandler(s *server, f oauthFlow) (auth.OAuthHandler, error) {
	o := s.oauth
	httpClient := f.client
	if httpClient == nil {
		httpClient = http.DefaultClient
	}
	if o.Kind == "oauth_client_credentials" {
		return extauth.NewClientCredentialsHandler(&extauth.ClientCredentialsHandlerConfig{
			Credentials: &oauthex.ClientCredentials{ClientID: o.ClientID, ClientSecretAuth: &oauthex.ClientSecretAuth{ClientSecret: o.ClientSecret}},
			HTTPClient:  httpClient,
		})
	}
	endpoint := s.endpoint.String()
	rec, err := f.store.load(s.name, endpoint)
	if err != nil {
		return nil, err
	}
	redirect := ""
	if rec != nil {
		redirect = rec.RedirectURL
	}
	if redirect == "" {
		port, err := freeLoopbackPort()
		if err != nil {
			return nil, fmt.Errorf("choose a loopback port for the sign-in redirect: %w", err)
		}
		redirect = fmt.Sprintf("http://127.0.0.1:%d/callback", port)
	}
	newSource := func(ctx context.Context, cfg *oauth2.Config, tok *oauth2.Token) (oauth2.TokenSource, error) {
		rec := &tokenRecord{Server: s.name, Endpoint: endpoint, ClientID: cfg.ClientID, ClientSecret: cfg.ClientSecret,
			RedirectURL: redirect, AuthURL: cfg.Endpoint.AuthURL, TokenURL: cfg.Endpoint.TokenURL, AuthStyle: cfg.Endpoint.AuthStyle,
			Scopes: cfg.Scopes, Token: tok}
		if err := f.store.save(rec); err != nil {
			f.log.Warn("sign-in not saved; it lasts until the provider stops", "server", s.name, "error", err)
		}
		f.log.Info("signed in to upstream server", "server", s.name)
		return &savingSource{base: cfg.TokenSource(ctx, tok), rec: rec, store: f.store, log: f.log, server: s.name,
			renew: func(tok *oauth2.Token) oauth2.TokenSource { return cfg.TokenSource(ctx, tok) }}, nil
	}
	cfg := &auth.AuthorizationCodeHandlerConfig{
		RedirectURL: redirect,
		DynamicClientRegistrationConfig: &auth.DynamicClientRegistrationConfig{Metadata: &oauthex.ClientRegistrationMetadata{
			RedirectURIs:            []string{redirect},
			ClientName:              "openhuman-host",
			GrantTypes:              []string{"authorization_code", "refresh_token"},
			ResponseTypes:           []string{"code"},
			TokenEndpointAuthMethod: "none",
		}},
		RequestRefreshToken: true,
		NewTokenSource:      newSource,
		Client:              httpClient,
	}
	if f.fetch != nil {
		cfg.AuthorizationCodeFetcher = f.fetch(s, redirect)
	} else {
		cfg.AuthorizationCodeFetcher = func(context.Context, *auth.AuthorizationArgs) (*auth.AuthorizationResult, error) {
			return nil, &signInError{server: s.name, why: "no valid sign-in is stored, and interactive = false keeps the server from opening a browser"}
		}
	}
	if o.ClientMetadataURL != "" {
		cfg.ClientIDMetadataDocumentConfig = &auth.ClientIDMetadataDocumentConfig{URL: o.ClientMetadataURL}
	}
	switch {
	case o.ClientID != "":
		cfg.PreregisteredClient = &oauthex.ClientCredentials{ClientID: o.ClientID}
		if o.ClientSecret != "" {
			cfg.PreregisteredClient.ClientSecretAuth = &oauthex.ClientSecretAuth{ClientSecret: o.ClientSecret}
		}
	case rec != nil && rec.ClientID != "" && rec.ClientID != o.ClientMetadataURL:
		// The client registered at the last sign-in is used again, rather
		// than registering a new one each time.
		cfg.PreregisteredClient = &oauthex.ClientCredentials{ClientID: rec.ClientID}
		if rec.ClientSecret != "" {
			cfg.PreregisteredClient.ClientSecretAuth = &oauthex.ClientSecretAuth{ClientSecret: rec.ClientSecret}
		}
	}
	if len(o.Scopes) > 0 {
		scopes := o.Scopes
		cfg.ScopeFilter = func([]string) []string { return scopes }
	}
	r := &refreshFirst{log: f.log, server: s.name, endpoint: endpoint, store: f.store, client: httpClient, fresh: f.fresh}
	if rec != nil && !f.fresh {
		r.current = r.sourceOf(rec)
	}
	cfg.NewTokenSource = func(ctx context.Context, c *oauth2.Config, tok *oauth2.Token) (oauth2.TokenSource, error) {
		ts, err := newSource(ctx, c, tok)
		if err == nil {
			r.mu.Lock()
			r.current = ts.(*savingSource)
			r.mu.Unlock()
		}
		return ts, err
	}
	h, err := auth.NewAuthorizationCodeHandler(cfg)
	if err != nil {
		return nil, err
	}
	r.AuthorizationCodeHandler = h
	return r, nil
}

// refreshFirst answers a 401 by renewing the token with its refresh token
// when it can, before the go-sdk's handler starts a whole new sign-in: a
// server that revoked or expired an access token early then costs the user
// nothing.
//
// It also takes up a sign-in another process stored since (`upstream
// login` while the server runs): the token file is read again before a
// new sign-in is started.
type refreshFirst struct {
	*auth.AuthorizationCodeHandler
	log      hclog.Logger
	server   string
	endpoint string
	store    tokenStore
	client   *http.Client
	// fresh never takes up a stored sign-in: the user asked for a new one.
	fresh bool

	mu      sync.Mutex
	current *savingSource // the token in use; nil before any sign-in
}

// sourceOf is the token source of a stored record.
func (r *refreshFirst) sourceOf(rec *tokenRecord) *savingSource {
	oc := &oauth2.Config{ClientID: rec.ClientID, ClientSecret: rec.ClientSecret, Scopes: rec.Scopes,
		Endpoint: oauth2.Endpoint{AuthURL: rec.AuthURL, TokenURL: rec.TokenURL, AuthStyle: rec.AuthStyle}}
	ctx := context.WithValue(context.Background(), oauth2.HTTPClient, r.client)
	return &savingSource{base: oc.TokenSource(ctx, rec.Token), rec: rec, store: r.store, log: r.log, server: r.server,
		renew: func(tok *oauth2.Token) oauth2.TokenSource { return oc.TokenSource(ctx, tok) }}
}

// storedSince returns the stored sign-in when another process stored one
// since: its access token is neither the refused one nor cur's.
func (r *refreshFirst) storedSince(refused string, cur *savingSource) *tokenRecord {
	if r.fresh {
		return nil
	}
	rec, err := r.store.load(r.server, r.endpoint)
	if err != nil || rec == nil || rec.Token.AccessToken == refused || (cur != nil && rec.Token.AccessToken == cur.accessToken()) {
		return nil
	}
	return rec
}

// TokenSource implements auth.OAuthHandler: the token in use, if any.
func (r *refreshFirst) TokenSource(context.Context) (oauth2.TokenSource, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.current == nil {
		return nil, nil
	}
	return r.current, nil
}

// Authorize implements auth.OAuthHandler.
func (r *refreshFirst) Authorize(ctx context.Context, req *http.Request, resp *http.Response) error {
	refused := strings.TrimPrefix(req.Header.Get("Authorization"), "Bearer ")
	if resp.StatusCode == http.StatusUnauthorized {
		r.mu.Lock()
		cur := r.current
		r.mu.Unlock()
		if cur != nil && cur.renewAfter(refused) {
			r.log.Debug("renewed a refused access token", "server", r.server)
			_ = resp.Body.Close()
			return nil
		}
		if rec := r.storedSince(refused, cur); rec != nil {
			r.mu.Lock()
			r.current = r.sourceOf(rec)
			r.mu.Unlock()
			r.log.Info("using a sign-in stored since", "server", r.server)
			_ = resp.Body.Close()
			return nil
		}
	}
	return r.AuthorizationCodeHandler.Authorize(ctx, req, resp)
}

// freeLoopbackPort returns a TCP port free on 127.0.0.1 now.
func freeLoopbackPort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

// browserSignIn is the interactive way to the authorization server: it
// listens on the loopback redirect, opens the authorization URL with open
// (and logs it, for a user without a browser here), and waits up to
// signInWait for the redirect. One sign-in per server runs at a time, and
// when gate is set a server whose last sign-in was left unfinished opens
// the browser again only promptEvery after it.
type browserSignIn struct {
	log  hclog.Logger
	open func(ctx context.Context, url string) error
	gate bool

	mu     sync.Mutex
	locks  map[string]*sync.Mutex
	prompt map[string]time.Time
}

// fetcher returns s's AuthorizationCodeFetcher with redirect.
func (b *browserSignIn) fetcher(s *server, redirect string) auth.AuthorizationCodeFetcher {
	return func(ctx context.Context, args *auth.AuthorizationArgs) (*auth.AuthorizationResult, error) {
		b.mu.Lock()
		if b.locks == nil {
			b.locks, b.prompt = map[string]*sync.Mutex{}, map[string]time.Time{}
		}
		l := b.locks[s.name]
		if l == nil {
			l = &sync.Mutex{}
			b.locks[s.name] = l
		}
		last := b.prompt[s.name]
		if b.gate && !last.IsZero() && time.Since(last) < promptEvery {
			b.mu.Unlock()
			return nil, &signInError{server: s.name, why: "a sign-in in the browser was started less than 15 minutes ago and left unfinished"}
		}
		b.prompt[s.name] = time.Now()
		b.mu.Unlock()
		l.Lock()
		defer l.Unlock()
		res, err := b.run(ctx, s, redirect, args.URL)
		if err == nil {
			// Only a sign-in left unfinished holds the next one back.
			b.mu.Lock()
			delete(b.prompt, s.name)
			b.mu.Unlock()
		}
		return res, err
	}
}

// run serves the redirect and waits for it.
func (b *browserSignIn) run(ctx context.Context, s *server, redirect, authURL string) (*auth.AuthorizationResult, error) {
	u, err := url.Parse(redirect)
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", u.Host)
	if err != nil {
		return nil, fmt.Errorf("listen for the sign-in redirect on %s: %w (another sign-in may be running)", u.Host, err)
	}
	results := make(chan *auth.AuthorizationResult, 1)
	failures := make(chan error, 1)
	mux := http.NewServeMux()
	mux.HandleFunc(u.Path, func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		if e := q.Get("error"); e != "" {
			msg := e
			if d := q.Get("error_description"); d != "" {
				msg += ": " + d
			}
			fmt.Fprintf(w, "<p>Sign-in to %s failed: %s</p>", html.EscapeString(s.name), html.EscapeString(msg))
			select {
			case failures <- fmt.Errorf("the authorization server refused the sign-in to upstream server %q: %s", s.name, sanitise(msg, 300)):
			default:
			}
			return
		}
		fmt.Fprintf(w, "<p>Signed in to %s. You can close this tab.</p>", html.EscapeString(s.name))
		select {
		case results <- &auth.AuthorizationResult{Code: q.Get("code"), State: q.Get("state"), Iss: q.Get("iss")}:
		default:
		}
	})
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	defer srv.Close()

	b.log.Warn("upstream server needs you to sign in: opening the authorization page in a browser (open this URL yourself if none appears)",
		"server", s.name, "url", authURL)
	if err := b.open(ctx, authURL); err != nil {
		b.log.Warn("no browser could be opened; open the URL above", "server", s.name, "error", err)
	}
	t := time.NewTimer(signInWait)
	defer t.Stop()
	select {
	case res := <-results:
		return res, nil
	case err := <-failures:
		return nil, err
	case <-t.C:
		return nil, &signInError{server: s.name, why: fmt.Sprintf("nobody completed the sign-in in the browser within %s", signInWait)}
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// OpenBrowser opens url for the user without waiting for the browser:
// with $BROWSER when set (the first of its colon-separated commands; "%s"
// in it stands for the URL), else with the system's opener (open on macOS,
// rundll32 on Windows, xdg-open elsewhere).
func OpenBrowser(ctx context.Context, url string) error { return openBrowser(ctx, url) }

// openBrowser opens url with $BROWSER when set (the first of its
// colon-separated commands; "%s" in it stands for the URL), else with the
// system's opener: open on macOS, rundll32 on Windows, xdg-open elsewhere.
func openBrowser(ctx context.Context, url string) error {
	var cmd *exec.Cmd
	if b := os.Getenv("BROWSER"); b != "" {
		first, _, _ := strings.Cut(b, string(os.PathListSeparator))
		fields := strings.Fields(first)
		if len(fields) == 0 {
			return errors.New("BROWSER is blank")
		}
		args := fields[1:]
		replaced := false
		for i, a := range args {
			if strings.Contains(a, "%s") {
				args[i], replaced = strings.ReplaceAll(a, "%s", url), true
			}
		}
		if !replaced {
			args = append(args, url)
		}
		cmd = exec.Command(fields[0], args...)
	} else {
		switch runtime.GOOS {
		case "darwin":
			cmd = exec.Command("open", url)
		case "windows":
			cmd = exec.Command("rundll32", "url.dll,FileProtocolHandler", url)
		default:
			cmd = exec.Command("xdg-open", url)
		}
	}
	if err := cmd.Start(); err != nil {
		return err
	}
	go func() { _ = cmd.Wait() }()
	return nil
}
