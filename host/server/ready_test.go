package server

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
)

// TestReadyz: GET /readyz answers 200 when every check passes and 503
// with the failing check otherwise, without a token; a caller without the
// server's token gets the names and results only, one with it the
// details; other methods get 405, and without Ready the path is 404.
func TestReadyz(t *testing.T) {
	t.Parallel()
	s := newFakeServer(t, &Options{Replica: "web2:9301"})
	var failing atomic.Bool
	ready := func(ctx context.Context) []ReadyCheck {
		if _, ok := ctx.Deadline(); !ok {
			t.Error("the checks run without a deadline")
		}
		audit := ReadyCheck{Name: "audit", OK: true, Detail: "/data/audit.db takes rows"}
		if failing.Load() {
			audit = ReadyCheck{Name: "audit", Detail: "the audit database PostgreSQL db.example:5432/openhuman: connection refused"}
		}
		return []ReadyCheck{{Name: "providers", OK: true, Detail: "1 running: memory"}, audit}
	}
	token := strings.Repeat("0123456789abcdef", 4)
	ts := serveHTTP(t, s, &HTTPOptions{Token: token, Ready: ready})
	get := func(auth string) (int, Readiness) {
		t.Helper()
		req, _ := http.NewRequest(http.MethodGet, ts.URL+ReadyPath, nil)
		if auth != "" {
			req.Header.Set("Authorization", "Bearer "+auth)
		}
		resp, body := send(t, req)
		var r Readiness
		if err := json.Unmarshal([]byte(body), &r); err != nil {
			t.Fatalf("GET %s = %d %s: not a readiness body", ReadyPath, resp.StatusCode, body)
		}
		if resp.Header.Get("Cache-Control") != "no-store" {
			t.Errorf("Cache-Control = %q", resp.Header.Get("Cache-Control"))
		}
		return resp.StatusCode, r
	}

	code, r := get("")
	want := `{"status":"ready","replica":"web2:9301","checks":[{"name":"providers","ok":true},{"name":"audit","ok":true}]}`
	if b, _ := json.Marshal(r); code != http.StatusOK || string(b) != want {
		t.Errorf("without a token: %d %s, want 200 %s", code, b, want)
	}
	code, r = get(token)
	if code != http.StatusOK || r.Checks[1].Detail != "/data/audit.db takes rows" {
		t.Errorf("with the token: %d %+v", code, r)
	}
	failing.Store(true)
	code, r = get("")
	want = `{"status":"not ready","replica":"web2:9301","checks":[{"name":"providers","ok":true},{"name":"audit","ok":false}]}`
	if b, _ := json.Marshal(r); code != http.StatusServiceUnavailable || string(b) != want {
		t.Errorf("failing, without a token: %d %s, want 503 %s", code, b, want)
	}
	if code, r = get("wrong" + token); r.Checks[1].Detail != "" {
		t.Errorf("failing, with a wrong token: %d %+v, want no details", code, r)
	}
	code, r = get(token)
	if code != http.StatusServiceUnavailable || !strings.Contains(r.Checks[1].Detail, "db.example:5432/openhuman: connection refused") {
		t.Errorf("failing, with the token: %d %+v", code, r)
	}

	if resp, _ := fetch(t, http.MethodPost, ts.URL+ReadyPath, ""); resp.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("POST %s = %d, want 405", ReadyPath, resp.StatusCode)
	}

	plain := serveHTTP(t, s, nil)
	if resp, _ := fetch(t, http.MethodGet, plain.URL+ReadyPath, ""); resp.StatusCode != http.StatusNotFound {
		t.Errorf("GET %s without Ready = %d, want 404", ReadyPath, resp.StatusCode)
	}
}

// TestReadyzWithoutToken: a server without a token gives every caller the
// details.
func TestReadyzWithoutToken(t *testing.T) {
	t.Parallel()
	s := newFakeServer(t, nil)
	ready := func(context.Context) []ReadyCheck {
		return []ReadyCheck{{Name: "storage", OK: true, Detail: "writable"}}
	}
	ts := serveHTTP(t, s, &HTTPOptions{Ready: ready})
	_, body := fetch(t, http.MethodGet, ts.URL+ReadyPath, "")
	if want := `{"status":"ready","checks":[{"name":"storage","ok":true,"detail":"writable"}]}` + "\n"; body != want {
		t.Errorf("GET %s = %s, want %s", ReadyPath, body, want)
	}
}
