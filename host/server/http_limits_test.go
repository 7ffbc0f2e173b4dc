package server

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/openhuman/openhuman-host/host/policy"
	"github.com/openhuman/openhuman-host/sdk"
	"github.com/openhuman/openhuman-host/sdk/testwait"
)

// post sends an MCP POST with body, the token and session id when set.
func post(t *testing.T, url, token, session, body string) *http.Response {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	if session != "" {
		req.Header.Set("Mcp-Session-Id", session)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

func TestHTTPSessionCap(t *testing.T) {
	t.Parallel()
	s, _ := newTestServer(t, policy.Supervised, true)
	ts := serveHTTP(t, s, &HTTPOptions{MaxSessions: 2})

	var sessions []string
	for range 2 {
		resp := post(t, ts.URL, "", "", initBody)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("initialize within the cap: status %d", resp.StatusCode)
		}
		sessions = append(sessions, resp.Header.Get("Mcp-Session-Id"))
	}
	resp := post(t, ts.URL, "", "", initBody)
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") != "30" ||
		!strings.Contains(string(body), "[server] max_sessions") {
		t.Fatalf("initialize beyond the cap = %d (Retry-After %q) %q, want 503 with Retry-After naming max_sessions",
			resp.StatusCode, resp.Header.Get("Retry-After"), body)
	}
	// A session's own requests still pass.
	resp = post(t, ts.URL, "", sessions[0], `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	resp.Body.Close()
	if resp.StatusCode != http.StatusAccepted {
		t.Errorf("a request of an open session at the cap: status %d, want 202", resp.StatusCode)
	}

	req, _ := http.NewRequest(http.MethodDelete, ts.URL, nil)
	req.Header.Set("Mcp-Session-Id", sessions[1])
	if resp, err := http.DefaultClient.Do(req); err != nil {
		t.Fatal(err)
	} else {
		resp.Body.Close()
	}
	testwait.Until(t, "a new session once one was closed", func() bool {
		resp := post(t, ts.URL, "", "", initBody)
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	})
}

// TestHTTPBodyTimeout: a body that never arrives whole loses its
// connection, with a wrong token or the right one, while a call that runs
// longer than the body timeout, once its body is in, is not cut.
func TestHTTPBodyTimeout(t *testing.T) {
	t.Parallel()
	const bodyTimeout = 100 * time.Millisecond
	token := strings.Repeat("0123456789abcdef", 4)
	pol := testPolicy(t, policy.Options{})
	slow := &fakeProvider{call: func(ctx context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
		select {
		case <-time.After(5 * bodyTimeout):
			return sdk.TextResult("done"), nil
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}}
	s, err := New(testCatalog(), map[string]Dispatcher{"fake": slow}, &Options{Policy: pol})
	if err != nil {
		t.Fatal(err)
	}
	ts := serveHTTP(t, s, &HTTPOptions{Token: token, BodyTimeout: bodyTimeout})

	for name, auth := range map[string]string{"wrong token": "nope", "right token": token} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			conn, err := net.Dial("tcp", ts.Listener.Addr().String())
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			fmt.Fprintf(conn, "POST / HTTP/1.1\r\nHost: %s\r\nAuthorization: Bearer %s\r\nContent-Type: application/json\r\n"+
				"Accept: application/json, text/event-stream\r\nContent-Length: 100000\r\n\r\n{\"jsonrpc\":", ts.Listener.Addr(), auth)
			// The server answers (401) or waits for the body; either way it
			// closes the connection once the body timeout passes.
			if err := conn.SetReadDeadline(testwait.Deadline(t)); err != nil {
				t.Fatal(err)
			}
			_, err = io.Copy(io.Discard, conn)
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				t.Fatal("the connection with an unfinished body stayed open")
			}
		})
	}

	t.Run("long call", func(t *testing.T) {
		t.Parallel()
		resp := post(t, ts.URL, token, "", initBody)
		resp.Body.Close()
		session := resp.Header.Get("Mcp-Session-Id")
		resp = post(t, ts.URL, token, session, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
		resp.Body.Close()
		resp = post(t, ts.URL, token, session, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"fake_search","arguments":{"query":"x"}}}`)
		defer resp.Body.Close()
		sc := bufio.NewScanner(resp.Body)
		var got string
		for sc.Scan() {
			if data, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
				got = data
			}
		}
		var msg struct {
			Result struct {
				IsError bool
				Content []struct{ Text string }
			}
		}
		if err := json.Unmarshal([]byte(got), &msg); err != nil || msg.Result.IsError || len(msg.Result.Content) != 1 || msg.Result.Content[0].Text != "done" {
			t.Errorf("a call longer than the body timeout = %s (%v), want it done", got, err)
		}
	})
}

func TestHTTPAuthBackoff(t *testing.T) {
	t.Parallel()
	var logs testwait.Buffer
	b := newAuthBackoff(hclog.New(&hclog.LoggerOptions{Output: &logs, Level: hclog.Warn}))
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	b.now = func() time.Time { return now }
	const secret = "the-token-guess-0123456789"
	h := b.wrap(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer right" {
			http.Error(w, "Unauthorized", http.StatusUnauthorized)
			return
		}
		w.WriteHeader(http.StatusOK)
	}))
	do := func(addr, auth string) *httptest.ResponseRecorder {
		req := httptest.NewRequest(http.MethodPost, "/", nil)
		req.RemoteAddr = addr
		req.Header.Set("Authorization", auth)
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		return rec
	}

	var codes []int
	for range freeFailures + 1 {
		codes = append(codes, do("192.0.2.7:4000", "Bearer "+secret).Code)
	}
	if want := []int{401, 401, 401, 401, 401, 401}; fmt.Sprint(codes) != fmt.Sprint(want) {
		t.Errorf("first %d guesses = %v, want %v", freeFailures+1, codes, want)
	}
	rec := do("192.0.2.7:4001", "Bearer right")
	if rec.Code != http.StatusTooManyRequests || rec.Header().Get("Retry-After") != "1" {
		t.Errorf("request while waiting = %d (Retry-After %q), want 429 after 1 s", rec.Code, rec.Header().Get("Retry-After"))
	}
	if rec := do("198.51.100.1:5000", "Bearer right"); rec.Code != http.StatusOK {
		t.Errorf("another address = %d, want 200", rec.Code)
	}
	now = now.Add(time.Second)
	if rec := do("192.0.2.7:4002", "Bearer "+secret); rec.Code != http.StatusUnauthorized {
		t.Errorf("after the wait = %d, want the token checked (401)", rec.Code)
	}
	if rec := do("192.0.2.7:4003", "Bearer right"); rec.Code != http.StatusTooManyRequests || rec.Header().Get("Retry-After") != "2" {
		t.Errorf("after one more failure = %d (Retry-After %q), want 429 after 2 s", rec.Code, rec.Header().Get("Retry-After"))
	}
	now = now.Add(2 * time.Second)
	if rec := do("192.0.2.7:4004", "Bearer right"); rec.Code != http.StatusOK {
		t.Errorf("right token after the wait = %d, want 200", rec.Code)
	}
	if rec := do("192.0.2.7:4005", "Bearer "+secret); rec.Code != http.StatusUnauthorized {
		t.Errorf("a failure after a success = %d, want 401 (the count starts again)", rec.Code)
	}
	out := logs.String()
	if strings.Count(out, "wrong bearer tokens: slowing this client address down") != 1 || !strings.Contains(out, "address=192.0.2.7") {
		t.Errorf("log = %q, want one warning naming the address", out)
	}
	if strings.Contains(out, secret) {
		t.Errorf("the log holds the guessed token: %q", out)
	}
}

func TestCheckToken(t *testing.T) {
	t.Parallel()
	hex64 := strings.Repeat("0123456789abcdef", 4)
	for token, ok := range map[string]bool{
		"x":                                  false,
		hex64[:32]:                           false, // 32 hex digits: 128 bits
		hex64:                                true,  // what openssl rand -hex 32 prints
		hex64 + " ":                          false, // HTTP drops the space
		strings.Repeat("a", 64):              false, // one character
		strings.Repeat("0123456789", 8)[:78]: true,  // digits only: 78 × 3.3 bits
		strings.Repeat("0123456789", 7):      false,
		strings.Repeat("Ab9_Xy3-Qz", 5)[:44]: true, // 44 base64url characters
		strings.Repeat("Ab9_Xy3-Qz", 4):      false,
		string([]rune(strings.Repeat("€£¥₩₽¢₹₺", 3))[:22]): false, // 22 characters, counted as characters, not bytes
	} {
		if err := CheckToken(token); (err == nil) != ok || (err != nil && !errors.Is(err, ErrWeakToken)) {
			t.Errorf("CheckToken(%q) = %v, want ok %v", token, err, ok)
		}
	}
	if err := CheckToken("short"); err == nil || !strings.Contains(err.Error(), "openssl rand -hex 32") {
		t.Errorf("CheckToken error = %v, want it to say how to make a token", err)
	}
}
