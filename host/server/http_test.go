package server

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/openhuman/openhuman-host/host/policy"
)

const initBody = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"http-test","version":"1"}}}`

func TestHTTPHandlerGuards(t *testing.T) {
	t.Parallel()
	s, _ := newTestServer(t, policy.Supervised, true)
	ts := serveHTTP(t, s, &HTTPOptions{Token: "s3cret", AllowedOrigins: []string{"https://app.example.com"}})

	tests := map[string]struct {
		auth, origin, host, path string
		want                     int
	}{
		"other path":                {auth: "Bearer s3cret", path: "/mcp", want: http.StatusNotFound},
		"no token":                  {want: http.StatusUnauthorized},
		"wrong token":               {auth: "Bearer nope", want: http.StatusUnauthorized},
		"token of other length":     {auth: "Bearer s3cretX", want: http.StatusUnauthorized},
		"right token":               {auth: "Bearer s3cret", want: http.StatusOK},
		"foreign origin":            {auth: "Bearer s3cret", origin: "http://evil.example", want: http.StatusForbidden},
		"loopback origin":           {auth: "Bearer s3cret", origin: "http://localhost:5173", want: http.StatusOK},
		"configured origin":         {auth: "Bearer s3cret", origin: "https://app.example.com", want: http.StatusOK},
		"origin before auth":        {origin: "http://evil.example", want: http.StatusForbidden},
		"dns rebinding host":        {auth: "Bearer s3cret", host: "evil.example", want: http.StatusForbidden},
		"dns rebinding before auth": {host: "evil.example:8080", want: http.StatusForbidden},
		"loopback host with port":   {auth: "Bearer s3cret", host: "localhost:9300", want: http.StatusOK},
		"null origin is foreign":    {auth: "Bearer s3cret", origin: "null", want: http.StatusForbidden},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			path := tc.path
			if path == "" {
				path = "/"
			}
			req, _ := http.NewRequest(http.MethodPost, ts.URL+path, strings.NewReader(initBody))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Accept", "application/json, text/event-stream")
			if tc.auth != "" {
				req.Header.Set("Authorization", tc.auth)
			}
			if tc.origin != "" {
				req.Header.Set("Origin", tc.origin)
			}
			if tc.host != "" {
				req.Host = tc.host
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			_ = resp.Body.Close()
			if resp.StatusCode != tc.want {
				t.Errorf("status = %d, want %d", resp.StatusCode, tc.want)
			}
			if got := resp.Header.Get("WWW-Authenticate"); (resp.StatusCode == http.StatusUnauthorized) != (got == `Bearer realm="openhuman-host"`) {
				t.Errorf("status %d with WWW-Authenticate %q", resp.StatusCode, got)
			}
		})
	}
}

func TestCheckBind(t *testing.T) {
	t.Parallel()
	tests := map[string]struct {
		host, token string
		force       bool
		wantErr     bool
	}{
		"loopback v4":           {host: "127.0.0.1"},
		"loopback v6":           {host: "::1"},
		"localhost":             {host: "localhost"},
		"all interfaces":        {host: "0.0.0.0", wantErr: true},
		"all interfaces, token": {host: "0.0.0.0", token: "t"},
		"lan address, forced":   {host: "192.0.2.10", force: true},
		"lan address":           {host: "192.0.2.10", wantErr: true},
	}
	for name, tc := range tests {
		err := CheckBind(tc.host, tc.token, tc.force)
		if (err != nil) != tc.wantErr || (err != nil && !errors.Is(err, ErrInsecureBind)) {
			t.Errorf("%s: CheckBind = %v, wantErr %v", name, err, tc.wantErr)
		}
	}
}

// TestHTTPSessions: an oversize body is 413, an unknown session 404, and
// DELETE ends a session, after which its id is unknown.
func TestHTTPSessions(t *testing.T) {
	t.Parallel()
	s, _ := newTestServer(t, policy.Supervised, true)
	ts := serveHTTP(t, s, &HTTPOptions{Token: "s3cret", MaxBodyBytes: 4096})
	do := func(method, session, body string) *http.Response {
		t.Helper()
		req, _ := http.NewRequest(method, ts.URL+"/", strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Authorization", "Bearer s3cret")
		if session != "" {
			req.Header.Set("Mcp-Session-Id", session)
		}
		resp, _ := send(t, req)
		return resp
	}
	big := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"pad":"` + strings.Repeat("x", 5000) + `"}}`
	if resp := do(http.MethodPost, "", big); resp.StatusCode != http.StatusRequestEntityTooLarge {
		t.Errorf("oversize body: status %d, want 413", resp.StatusCode)
	}
	const list = `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`
	if resp := do(http.MethodPost, "no-such-session", list); resp.StatusCode != http.StatusNotFound {
		t.Errorf("unknown session: status %d, want 404", resp.StatusCode)
	}
	resp := do(http.MethodPost, "", initBody)
	id := resp.Header.Get("Mcp-Session-Id")
	if resp.StatusCode != http.StatusOK || id == "" {
		t.Fatalf("initialize: status %d, session %q", resp.StatusCode, id)
	}
	if resp := do(http.MethodPost, id, `{"jsonrpc":"2.0","method":"notifications/initialized"}`); resp.StatusCode != http.StatusAccepted {
		t.Fatalf("initialized: status %d", resp.StatusCode)
	}
	if resp := do(http.MethodPost, id, list); resp.StatusCode != http.StatusOK {
		t.Errorf("tools/list in the session: status %d", resp.StatusCode)
	}
	if resp := do(http.MethodDelete, id, ""); resp.StatusCode/100 != 2 {
		t.Errorf("DELETE: status %d, want 2xx", resp.StatusCode)
	}
	if resp := do(http.MethodPost, id, list); resp.StatusCode != http.StatusNotFound {
		t.Errorf("after DELETE: status %d, want 404", resp.StatusCode)
	}
}

// TestHTTPProvenanceAndOneRowPerCall: over Streamable HTTP, ten
// connections of a client named "Claude Desktop" make 100 calls at once:
// exactly 100 audit rows, each with source type mcp:claude-desktop and
// the client's name and version. On 2025-11-25 each of the ten sessions
// has its own hash; on 2026-07-28, which has no sessions, the rows carry
// the one hash of the client (its token's identity, name and version).
func TestHTTPProvenanceAndOneRowPerCall(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		version string
		hashes  int
	}{{"2025-11-25", 10}, {"2026-07-28", 1}} {
		t.Run(tc.version, func(t *testing.T) {
			t.Parallel()
			testProvenance(t, tc.version, tc.hashes)
		})
	}
}

func testProvenance(t *testing.T, version string, wantHashes int) {
	s, a := newTestServer(t, policy.Supervised, true)
	ts := serveHTTP(t, s, &HTTPOptions{Token: "s3cret"})
	client := &http.Client{Transport: &bearer{token: "s3cret", next: http.DefaultTransport}}
	ctx := context.Background()
	const sessions, perSession = 10, 10
	var wg sync.WaitGroup
	errs := make(chan error, sessions*perSession+sessions)
	for range sessions {
		wg.Go(func() {
			cs, err := mcp.NewClient(&mcp.Implementation{Name: "Claude Desktop", Version: "9.9"}, nil).
				Connect(ctx, &mcp.StreamableClientTransport{Endpoint: ts.URL + "/", HTTPClient: client}, &mcp.ClientSessionOptions{ProtocolVersion: version})
			if err != nil {
				errs <- err
				return
			}
			defer cs.Close()
			var calls sync.WaitGroup
			for i := range perSession {
				calls.Go(func() {
					res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "fake.store", Arguments: map[string]any{"title": fmt.Sprint(i)}})
					if err != nil {
						errs <- err
					} else if res.IsError {
						errs <- fmt.Errorf("call %d: isError", i)
					}
				})
			}
			calls.Wait()
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	rows := a.all()
	if len(rows) != sessions*perSession {
		t.Fatalf("%d audit rows for %d calls", len(rows), sessions*perSession)
	}
	hashes := map[string]int{}
	for _, r := range rows {
		if r.SourceType != "mcp:claude-desktop" || r.ClientName != "Claude Desktop" || r.ClientVersion != "9.9" || !strings.HasPrefix(r.SessionHash, "sha256:") {
			t.Fatalf("row = %+v", r)
		}
		hashes[r.SessionHash]++
	}
	if len(hashes) != wantHashes {
		t.Errorf("%d distinct session hashes, want %d", len(hashes), wantHashes)
	}
	for h, n := range hashes {
		if n != sessions*perSession/wantHashes {
			t.Errorf("session %s has %d rows, want %d", h, n, sessions*perSession/wantHashes)
		}
	}
}

// bearer adds an Authorization header to every request.
type bearer struct {
	token string
	next  http.RoundTripper
}

func (b *bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return b.next.RoundTrip(r)
}
