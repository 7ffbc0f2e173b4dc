package upstream

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/oauthex"

	"github.com/openhuman/openhuman-host/providers/upstream/upstreamwire"
)

// discoveryTimeout bounds the whole auth discovery after a 401: the probe
// request and the metadata fetches.
const discoveryTimeout = 15 * time.Second

// Report is the result of checking one upstream server.
type Report struct {
	// Name is the server's name.
	Name string `json:"name"`
	// Transport is "stdio" or "http".
	Transport string `json:"transport"`
	// Endpoint is the redacted endpoint (scheme://host[:port]) of an HTTP
	// server, or the command of a stdio server.
	Endpoint string `json:"endpoint"`
	// Prefix goes before every exposed tool name.
	Prefix string `json:"prefix"`
	// Tools are the upstream tool names, in the server's order.
	Tools []string `json:"tools"`
	// Exposed are the names the host would expose, <prefix><tool>, for the
	// tools that pass the server's lists and checks, in the same order.
	Exposed []string `json:"exposed"`
	// Denied are the upstream tools that would not be exposed; Reasons
	// says why for each.
	Denied  []string          `json:"denied"`
	Reasons map[string]string `json:"reasons,omitempty"`
	// Err is why the check failed (nil when the tools were listed).
	Err error `json:"-"`
	// Auth is what the server said about authentication when it answered
	// 401; nil otherwise.
	Auth *AuthReport `json:"auth,omitempty"`
}

// AuthReport is what auth discovery found out about a server that
// answered 401: its WWW-Authenticate challenge, its protected-resource
// metadata (RFC 9728) and its authorization server's metadata (RFC 8414 or
// OpenID Connect discovery).
type AuthReport struct {
	// Scheme is the scheme of the first challenge, such as "Bearer".
	Scheme string `json:"scheme,omitempty"`
	// ResourceMetadataURL is the challenge's resource_metadata, else the
	// well-known location where the protected-resource metadata was found
	// (the endpoint's path in it shown as <endpoint path>).
	ResourceMetadataURL string `json:"resource_metadata_url,omitempty"`
	// AuthorizationServers are the metadata's authorization_servers.
	AuthorizationServers []string `json:"authorization_servers,omitempty"`
	// Scopes are the challenge's scope, else the metadata's
	// scopes_supported.
	Scopes []string `json:"scopes,omitempty"`
	// TokenEndpoint and AuthorizationEndpoint come from the first
	// authorization server's metadata.
	TokenEndpoint         string `json:"token_endpoint,omitempty"`
	AuthorizationEndpoint string `json:"authorization_endpoint,omitempty"`
	// Hint tells the user what to configure.
	Hint string `json:"hint"`
	// Problems are the discovery steps that failed, one line each.
	Problems []string `json:"problems,omitempty"`
}

// Check connects to s the way the provider does, with the resolved auth
// headers and endpoint (see [upstreamwire.Server.ResolveAuth]; an empty
// endpoint means s.Endpoint), lists its tools, says which the host would
// expose and under which names, and closes the connection. When an HTTP
// server answers 401, Report.Auth holds the auth discovery result. A stdio
// server's stderr goes to log at debug level; nil discards it.
func Check(ctx context.Context, s upstreamwire.Server, headers map[string]string, endpoint string, log hclog.Logger) Report {
	return CheckWith(ctx, s, headers, endpoint, log, nil)
}

// CheckOptions is what [CheckWith] needs besides [Check]'s arguments.
type CheckOptions struct {
	// OAuth is the server's resolved sign-in settings
	// ([upstreamwire.Server.ResolveOAuth]), for the oauth auth kinds;
	// nil for others.
	OAuth *upstreamwire.OAuthSettings
	// DataDir is the upstream provider's data directory (<data
	// dir>/upstream), whose stored sign-in is used. The check never
	// starts a sign-in: without a valid one it fails saying to run
	// `openhuman-host upstream login NAME`.
	DataDir string
}

// CheckWith is [Check] for a server that signs in with OAuth, using its
// stored sign-in (see [CheckOptions]); nil opts is Check.
func CheckWith(ctx context.Context, s upstreamwire.Server, headers map[string]string, endpoint string, log hclog.Logger, opts *CheckOptions) Report {
	r := Report{Name: s.Name, Transport: "http", Endpoint: redactString(s.Endpoint)}
	if s.Command != "" {
		r.Transport, r.Endpoint = "stdio", s.Command
	}
	if log == nil {
		log = hclog.NewNullLogger()
	}
	if endpoint == "" {
		endpoint = s.Endpoint
	}
	srv, err := checkedServer(s, headers, endpoint)
	if err != nil {
		r.Err = err
		return r
	}
	r.Prefix = srv.prefix
	if opts != nil && opts.OAuth != nil && srv.endpoint != nil {
		o := opts.OAuth
		srv.oauth = &oauthSettings{Kind: o.Kind, ClientID: o.ClientID, ClientSecret: o.ClientSecret,
			ClientMetadataURL: o.ClientMetadataURL, Scopes: o.Scopes}
		store, err := newTokenStore(TokenDir(opts.DataDir))
		if err != nil {
			r.Err = err
			return r
		}
		if srv.oauthHandler, err = newOAuthHandler(srv, oauthFlow{store: store, log: log}); err != nil {
			r.Err = err
			return r
		}
	}

	cctx, cancel := context.WithTimeout(ctx, srv.timeout)
	c, err := connect(cctx, log, srv, nil)
	cancel()
	if err != nil {
		r.Err = err
		if srv.endpoint != nil {
			r.Auth = probeAuth(ctx, s, srv)
		}
		return r
	}
	defer c.close()
	tools, err := listTools(ctx, c)
	if err != nil {
		r.Err = err
		return r
	}
	r.Tools, r.Exposed, r.Denied = []string{}, []string{}, []string{}
	r.Reasons = map[string]string{}
	seen := map[string]route{}
	for _, t := range tools {
		r.Tools = append(r.Tools, t.Name)
		reason := ""
		exposed := srv.exposedName(t.Name)
		if ok, key := srv.toolAllowed(t.Name); !ok {
			if strings.HasSuffix(key, "disallowed_tools") {
				reason = "matched by disallowed_tools"
			} else {
				reason = "not matched by allowed_tools"
			}
		} else if exposed == "" {
			reason = "it has no name"
		} else if prev, dup := seen[exposed]; dup {
			reason = takenReason(srv, exposed, prev)
		} else if _, why := exposeTool(srv, exposed, t); why != "" {
			reason = why
		}
		if reason != "" {
			r.Denied = append(r.Denied, t.Name)
			r.Reasons[t.Name] = reason
			continue
		}
		seen[exposed] = route{srv: srv, name: t.Name}
		r.Exposed = append(r.Exposed, exposed)
	}
	return r
}

// checkedServer turns a config entry into the provider's server type the
// way the host passes it to the provider: the entry as JSON with the
// resolved endpoint and headers, read by the provider's own settings code.
func checkedServer(s upstreamwire.Server, headers map[string]string, endpoint string) (*server, error) {
	s.Endpoint = endpoint
	s.Enabled = true
	raw, err := json.Marshal(struct {
		upstreamwire.Server
		Headers map[string]string `json:"headers,omitempty"`
	}{s, headers})
	if err != nil {
		return nil, fmt.Errorf("upstream server %q: %v", s.Name, err)
	}
	return parseServer(0, raw)
}

// probeAuth sends srv an initialize request with its headers; when the
// answer is 401 it runs auth discovery, otherwise it returns nil.
func probeAuth(ctx context.Context, s upstreamwire.Server, srv *server) *AuthReport {
	ctx, cancel := context.WithTimeout(ctx, discoveryTimeout)
	defer cancel()
	body := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18",` +
		`"capabilities":{},"clientInfo":{"name":"openhuman-host-upstream","version":"` + Version + `"}}}`
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, srv.endpoint.String(), strings.NewReader(body))
	if err != nil {
		return nil
	}
	for k, v := range srv.headers {
		req.Header.Set(k, v)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	client := &http.Client{Timeout: discoveryTimeout}
	res, err := client.Do(req)
	if err != nil {
		return nil
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(res.Body, 1<<16))
	_ = res.Body.Close()
	if res.StatusCode != http.StatusUnauthorized {
		if id := res.Header.Get("Mcp-Session-Id"); id != "" {
			// The probe opened a session after all: end it.
			if del, err := http.NewRequestWithContext(ctx, http.MethodDelete, srv.endpoint.String(), nil); err == nil {
				for k, v := range srv.headers {
					del.Header.Set(k, v)
				}
				del.Header.Set("Mcp-Session-Id", id)
				if res, err := client.Do(del); err == nil {
					_ = res.Body.Close()
				}
			}
		}
		return nil
	}
	return discoverAuth(ctx, s, srv.endpoint, res.Header.Values("WWW-Authenticate"))
}

// discoverAuth reads the WWW-Authenticate challenges of a 401 from
// endpoint, fetches the protected-resource metadata and the first
// authorization server's metadata, and says what to configure.
func discoverAuth(ctx context.Context, s upstreamwire.Server, endpoint *url.URL, challenges []string) *AuthReport {
	a := &AuthReport{}
	// The resource is the endpoint without user information, query or
	// fragment, which may hold secrets.
	resource := *endpoint
	resource.User, resource.RawQuery, resource.ForceQuery, resource.Fragment, resource.RawFragment = nil, "", false, "", ""
	origin := url.URL{Scheme: resource.Scheme, Host: resource.Host}

	cs, err := oauthex.ParseWWWAuthenticate(challenges)
	if err != nil {
		a.Problems = append(a.Problems, "WWW-Authenticate: "+sanitise(err.Error(), 300))
	}
	metadataURL, bearer, basic := "", false, false
	for i, c := range cs {
		if i == 0 {
			a.Scheme = schemeName(c.Scheme)
		}
		switch c.Scheme {
		case "bearer":
			bearer = true
			if a.Scopes == nil && c.Params["scope"] != "" {
				a.Scopes = strings.Fields(c.Params["scope"])
			}
		case "basic":
			basic = true
		}
		if metadataURL == "" && c.Params["resource_metadata"] != "" {
			metadataURL = c.Params["resource_metadata"]
			bearer = true
		}
	}
	if basic && !bearer {
		a.Hint = hint(s, "basic")
		return a
	}

	// Protected-resource metadata: where the challenge says, else at the
	// endpoint's path, else at the root. The endpoint's path is shown as
	// <endpoint path>, as endpoints are elsewhere.
	type candidate struct{ metadata, resource string }
	var candidates []candidate
	hidePath := strings.NewReplacer()
	if p := strings.TrimSuffix(resource.Path, "/"); p != "" {
		atPath := origin
		atPath.Path = "/.well-known/oauth-protected-resource" + p
		hidePath = strings.NewReplacer(
			atPath.String(), origin.String()+"/.well-known/oauth-protected-resource/<endpoint path>",
			resource.String(), origin.String()+"/<endpoint path>")
	}
	if metadataURL != "" {
		candidates = append(candidates, candidate{metadataURL, resource.String()})
	} else {
		atPath := origin
		atPath.Path = "/.well-known/oauth-protected-resource" + strings.TrimSuffix(resource.Path, "/")
		candidates = append(candidates, candidate{atPath.String(), resource.String()})
		if strings.TrimSuffix(resource.Path, "/") != "" {
			atRoot := origin
			atRoot.Path = "/.well-known/oauth-protected-resource"
			candidates = append(candidates, candidate{atRoot.String(), origin.String()})
		}
	}
	var prm *oauthex.ProtectedResourceMetadata
	for _, c := range candidates {
		m, err := oauthex.GetProtectedResourceMetadata(ctx, c.metadata, c.resource, nil)
		if err != nil {
			a.Problems = append(a.Problems, "protected-resource metadata: "+sanitise(hidePath.Replace(err.Error()), 300))
			continue
		}
		a.ResourceMetadataURL, prm = hidePath.Replace(c.metadata), m
		break
	}
	if metadataURL != "" {
		a.ResourceMetadataURL = metadataURL
	}
	issuer := ""
	if prm != nil {
		a.AuthorizationServers = prm.AuthorizationServers
		if a.Scopes == nil {
			a.Scopes = prm.ScopesSupported
		}
		if len(prm.AuthorizationServers) == 0 {
			a.Problems = append(a.Problems, "protected-resource metadata lists no authorization_servers")
		} else {
			issuer = prm.AuthorizationServers[0]
		}
	} else if bearer || len(cs) == 0 {
		// Servers from before RFC 9728 was adopted act as their own
		// authorization server.
		issuer = origin.String()
	}
	if issuer != "" {
		asm, err := auth.GetAuthServerMetadata(ctx, issuer, nil)
		switch {
		case err != nil:
			a.Problems = append(a.Problems, "authorization server metadata: "+sanitise(err.Error(), 300))
		case asm == nil:
			a.Problems = append(a.Problems, "authorization server metadata: "+issuer+" serves none at /.well-known/oauth-authorization-server or /.well-known/openid-configuration")
		default:
			a.TokenEndpoint, a.AuthorizationEndpoint = asm.TokenEndpoint, asm.AuthorizationEndpoint
			if a.Scopes == nil {
				a.Scopes = asm.ScopesSupported
			}
			if prm == nil {
				a.AuthorizationServers = []string{issuer}
			}
		}
	}
	switch {
	case prm != nil || metadataURL != "" || a.TokenEndpoint != "":
		a.Hint = hint(s, "oauth", a.AuthorizationServers...)
	case bearer:
		a.Hint = hint(s, "bearer")
	default:
		a.Hint = hint(s, "")
	}
	return a
}

// schemeName spells an authentication scheme the usual way.
func schemeName(s string) string {
	switch s {
	case "bearer":
		return "Bearer"
	case "basic":
		return "Basic"
	case "digest":
		return "Digest"
	}
	return s
}

// hint says what to set in the server's config entry for kind "oauth",
// "bearer", "basic" or "" (the server did not say).
func hint(s upstreamwire.Server, kind string, authServers ...string) string {
	env := strings.ToUpper(strings.ReplaceAll(s.Name, "-", "_"))
	entry := fmt.Sprintf("in [[upstream.servers]] name = %q", s.Name)
	refused := ""
	if s.Auth != nil {
		refused = fmt.Sprintf("the credentials configured (auth kind %q) were refused; ", s.Auth.Kind)
	}
	bearer := fmt.Sprintf("set auth = { kind = \"bearer_token\", token_env = \"%s_TOKEN\" } %s", env, entry)
	switch kind {
	case "oauth":
		where := ""
		if len(authServers) > 0 {
			where = " (authorization server " + authServers[0] + ")"
		}
		if s.Auth != nil && (s.Auth.Kind == "oauth" || s.Auth.Kind == "oauth_client_credentials") {
			return fmt.Sprintf("this server wants OAuth%s and has no valid sign-in: run `openhuman-host upstream login %s`", where, s.Name)
		}
		return refused + "this server wants OAuth" + where +
			fmt.Sprintf(": set auth = { kind = \"oauth\" } %s, then run `openhuman-host upstream login %s`", entry, s.Name)
	case "bearer":
		return refused + "this server wants a bearer token: " + bearer
	case "basic":
		return refused + fmt.Sprintf("this server wants HTTP basic authentication: set auth = { kind = \"basic\", username_env = \"%s_USERNAME\", password_env = \"%s_PASSWORD\" } %s", env, env, entry)
	}
	return refused + fmt.Sprintf("this server answered 401 without saying how to authenticate; ask its operator which credential it expects and set auth = { kind = \"bearer_token\", token_env = \"%s_TOKEN\" } or { kind = \"header\", header = \"...\", value_env = \"%s_KEY\" } %s", env, env, entry)
}

// RedactEndpoint reduces an endpoint URL to scheme://host[:port], or
// "<redacted>" when it carries user information or does not parse.
func RedactEndpoint(endpoint string) string { return redactString(endpoint) }
