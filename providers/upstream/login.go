package upstream

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"path/filepath"

	"github.com/hashicorp/go-hclog"

	"github.com/openhuman/openhuman-host/providers/upstream/upstreamwire"
)

// TokenDir is the folder, inside the upstream provider's data directory
// (<data dir>/upstream), that holds the OAuth sign-ins of its servers: one
// file per server, readable by its owner only.
func TokenDir(providerDataDir string) string { return filepath.Join(providerDataDir, tokenDirName) }

// LoginOptions configures [Login].
type LoginOptions struct {
	// Open opens the authorization URL for the user. Nil uses $BROWSER,
	// else the system's opener.
	Open func(ctx context.Context, url string) error
	// Logger receives the sign-in's progress, including the authorization
	// URL to open by hand. Nil discards it.
	Logger hclog.Logger
	// HTTPClient makes the OAuth requests. Nil uses http.DefaultClient.
	HTTPClient *http.Client
}

// LoginResult is what [Login] found once signed in.
type LoginResult struct {
	// Tools counts the tools the server lists to the signed-in user.
	Tools int
}

// Login signs in to the HTTP server s, whose auth kind is oauth or
// oauth_client_credentials, and stores the tokens in TokenDir(dataDir),
// where a running server takes them up at its next request. It always
// asks the user again (through the browser for kind oauth; the client
// credentials grant needs no user), reusing the client registered at an
// earlier sign-in. headers and endpoint are s's resolved auth
// ([upstreamwire.Server.ResolveAuth]). It returns an error naming what
// failed: no oauth auth, a refused sign-in, or nobody completing it within
// 5 minutes.
func Login(ctx context.Context, s upstreamwire.Server, oauth *upstreamwire.OAuthSettings, headers map[string]string, endpoint, dataDir string, opts *LoginOptions) (LoginResult, error) {
	var o LoginOptions
	if opts != nil {
		o = *opts
	}
	if o.Logger == nil {
		o.Logger = hclog.NewNullLogger()
	}
	if o.Open == nil {
		o.Open = openBrowser
	}
	if oauth == nil {
		return LoginResult{}, fmt.Errorf("upstream server %q does not sign in with OAuth; set auth = { kind = \"oauth\" } in its [[upstream.servers]] table", s.Name)
	}
	srv, err := checkedServer(s, headers, endpoint)
	if err != nil {
		return LoginResult{}, err
	}
	srv.oauth = &oauthSettings{Kind: oauth.Kind, ClientID: oauth.ClientID, ClientSecret: oauth.ClientSecret,
		ClientMetadataURL: oauth.ClientMetadataURL, Scopes: oauth.Scopes, Interactive: true}
	b := &browserSignIn{log: o.Logger, open: o.Open}
	store, err := newTokenStore(TokenDir(dataDir))
	if err != nil {
		return LoginResult{}, err
	}
	h, err := newOAuthHandler(srv, oauthFlow{store: store, log: o.Logger, fetch: b.fetcher, client: o.HTTPClient, fresh: true})
	if err != nil {
		return LoginResult{}, err
	}
	srv.oauthHandler = h
	c, err := connect(ctx, o.Logger, srv, nil)
	if err != nil {
		return LoginResult{}, err
	}
	defer c.close()
	tools, err := listTools(ctx, c)
	if err != nil {
		return LoginResult{}, err
	}
	if rec, _ := store.load(srv.name, srv.endpoint.String()); rec == nil && oauth.Kind == "oauth" {
		return LoginResult{}, errors.New("the server accepted the connection without asking to sign in; nothing was stored")
	}
	return LoginResult{Tools: len(tools)}, nil
}

// Logout deletes the stored sign-in of the server named name from
// TokenDir(dataDir); it reports whether there was one. The authorization
// server is not told: revoke the grant there to end it everywhere.
func Logout(dataDir, name string) (bool, error) {
	if !serverNameRE.MatchString(name) {
		return false, fmt.Errorf("%q is not an upstream server's name (a lowercase letter, then up to 31 of a-z, 0-9, _ and -)", name)
	}
	return tokenStore{dir: TokenDir(dataDir)}.remove(name)
}
