package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/openhuman/openhuman-host/providers/upstream/oauthtest"
)

func TestUpstreamList(t *testing.T) {
	cliHome(t, `
[[upstream.servers]]
name = "remote"
endpoint = "https://alice:hunter2@mcp.example.com:8443/secret-path/mcp?key=k3y"
disallowed_tools = ["delete_*", "drop"]
timeout_secs = 45

[[upstream.servers]]
name = "files"
command = "npx"
args = ["-y", "@modelcontextprotocol/server-filesystem", "/home/me/My Docs"]
enabled = false
prefix = ""
allowed_tools = ["read_file"]
`)
	out, err := runCLI(t, "upstream", "list")
	if err != nil {
		t.Fatalf("upstream list: %v\n%s", err, out)
	}
	for _, secret := range []string{"alice", "hunter2", "secret-path", "k3y", "example.com"} {
		if strings.Contains(out, secret) {
			t.Errorf("list shows %q:\n%s", secret, out)
		}
	}
	for _, re := range []string{
		`(?m)^NAME\s+TRANSPORT\s+STATE\s+TARGET\s+PREFIX\s+TIMEOUT\s+ALLOWED\s+DENIED$`,
		`(?m)^remote\s+http\s+enabled\s+<redacted>\s+remote__\s+45s\s+all\s+delete_\*,drop$`,
		`(?m)^files\s+stdio\s+disabled\s+npx -y @modelcontextprotocol/server-filesystem "/home/me/My Docs"\s+""\s+30s\s+read_file\s+-$`,
	} {
		if !regexpMatch(t, re, out) {
			t.Errorf("list lacks %s:\n%s", re, out)
		}
	}

	out, err = runCLI(t, "upstream", "list", "--json")
	if err != nil {
		t.Fatalf("upstream list --json: %v", err)
	}
	var entries []upstreamEntry
	if err := json.Unmarshal([]byte(out), &entries); err != nil || len(entries) != 2 {
		t.Fatalf("list --json: %v\n%s", err, out)
	}
	if e := entries[0]; e.Target != "<redacted>" || !e.Enabled || e.Transport != "http" || e.Prefix != "remote__" {
		t.Errorf("entry 0 = %+v", e)
	}
	if e := entries[1]; e.Enabled || e.Transport != "stdio" || e.Prefix != "" || e.AllowedTools[0] != "read_file" {
		t.Errorf("entry 1 = %+v", e)
	}
}

func TestUpstreamCheck(t *testing.T) {
	s := mcp.NewServer(&mcp.Implementation{Name: "abc", Version: "1"}, nil)
	for _, name := range []string{"a", "b", "c"} {
		mcp.AddTool(s, &mcp.Tool{Name: name, Description: "Tool " + name + "."},
			func(_ context.Context, _ *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
				return &mcp.CallToolResult{}, nil, nil
			})
	}
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, nil)
	var mu sync.Mutex
	var auths []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		auths = append(auths, r.Header.Get("Authorization"))
		mu.Unlock()
		if r.Header.Get("Authorization") != "Bearer tok-123" {
			w.Header().Set("WWW-Authenticate", `Bearer realm="abc"`)
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	cliHome(t, fmt.Sprintf(`
[[upstream.servers]]
name = "abc"
endpoint = %q
disallowed_tools = ["c"]
auth = { kind = "bearer_token", token_env = "ABC_TOKEN" }

[[upstream.servers]]
name = "other"
command = "true"
`, srv.URL+"/mcp"))

	// The token's variable is unset: the error names it.
	t.Setenv("ABC_TOKEN", "")
	if out, err := runCLI(t, "upstream", "check", "abc"); err == nil || !strings.Contains(err.Error(), "ABC_TOKEN") {
		t.Errorf("check without the token: %v\n%s", err, out)
	}

	t.Setenv("ABC_TOKEN", "tok-123")
	out, err := runCLI(t, "upstream", "check", "abc")
	if err != nil {
		t.Fatalf("upstream check: %v\n%s", err, out)
	}
	for _, re := range []string{
		`upstream server "abc": http http://127\.0\.0\.1:\d+\n`,
		`3 tools, 2 exposed, 1 filtered out`,
		`(?m)^  abc__a\s+← a$`,
		`(?m)^  abc__b\s+← b$`,
		`(?m)^  c\s+matched by disallowed_tools$`,
	} {
		if !regexpMatch(t, re, out) {
			t.Errorf("check output lacks %s:\n%s", re, out)
		}
	}
	if strings.Contains(out, "tok-123") || strings.Contains(out, "/mcp") {
		t.Errorf("check output shows a secret or the endpoint's path:\n%s", out)
	}
	mu.Lock()
	sent := len(auths) > 0 && auths[0] == "Bearer tok-123"
	mu.Unlock()
	if !sent {
		t.Errorf("the token was not sent: %q", auths)
	}

	out, err = runCLI(t, "upstream", "check", "abc", "--json")
	if err != nil {
		t.Fatalf("upstream check --json: %v\n%s", err, out)
	}
	var rep struct {
		OK      bool     `json:"ok"`
		Exposed []string `json:"exposed"`
		Denied  []string `json:"denied"`
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil || !rep.OK || strings.Join(rep.Exposed, ",") != "abc__a,abc__b" || strings.Join(rep.Denied, ",") != "c" {
		t.Errorf("check --json: %v %+v\n%s", err, rep, out)
	}

	// A refused token: exit 1 with the auth discovery result and a hint.
	t.Setenv("ABC_TOKEN", "wrong")
	out, err = runCLI(t, "upstream", "check", "abc")
	var ee *exitError
	if !errors.As(err, &ee) || ee.code != 1 {
		t.Fatalf("check with a refused token: err %v\n%s", err, out)
	}
	for _, part := range []string{"check failed:", "401 Unauthorized (Bearer)", "hint:", "were refused", `kind = "bearer_token"`} {
		if !strings.Contains(out, part) {
			t.Errorf("refused check lacks %q:\n%s", part, out)
		}
	}
	if strings.Contains(out, "wrong") || strings.Contains(out, "/mcp") {
		t.Errorf("refused check shows the token or the endpoint's path:\n%s", out)
	}

	// An unknown name lists the configured ones.
	if _, err := runCLI(t, "upstream", "check", "nope"); err == nil || !strings.Contains(err.Error(), "the configured ones are abc, other") {
		t.Errorf("unknown name: %v", err)
	}
}

// TestToolsCallStartsOnlyTheOwner: `tools call` of an upstream tool starts
// the server whose prefix the name has, not the others (here one that
// would leave a mark and never answer).
func TestToolsCallStartsOnlyTheOwner(t *testing.T) {
	t.Parallel()
	srv := mcp.NewServer(&mcp.Implementation{Name: "owner", Version: "1"}, nil)
	mcp.AddTool(srv, &mcp.Tool{Name: "hello"}, func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "hello from the owner"}}}, nil, nil
	})
	hs := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil))
	defer hs.Close()
	marker := filepath.Join(t.TempDir(), "started")
	cfgPath := serveConfigWith(t, t.TempDir(), fmt.Sprintf(`
[[upstream.servers]]
name = "owner"
endpoint = %q

[[upstream.servers]]
name = "other"
command = "sh"
args = ["-c", "touch \"$0\"; exec sleep 600", %q]
`, hs.URL, marker))
	cmd := exec.Command(testExe(t), "--config", cfgPath, "tools", "call", "owner__hello")
	cmd.Env = append(os.Environ(), cliEnv+"=1")
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "hello from the owner") {
		t.Fatalf("tools call owner__hello: %v\n%s", err, out)
	}
	if _, err := os.Stat(marker); err == nil {
		t.Error("tools call started the other upstream server too")
	}
}

// TestUpstreamLoginThenCall signs in to a server behind OAuth with
// `upstream login`, calls its tool from the command line with the stored
// sign-in, and signs out.
func TestUpstreamLoginThenCall(t *testing.T) {
	t.Parallel()
	as := oauthtest.New(t)
	dataDir := t.TempDir()
	cfgPath := serveConfigWith(t, dataDir, noBuiltins+fmt.Sprintf("[[upstream.servers]]\nname = \"web\"\nendpoint = %q\nauth = { kind = \"oauth\", interactive = false }\n",
		as.URL+"/mcp"))
	cli := func(args ...string) (string, error) {
		cmd := exec.Command(testExe(t), append([]string{"--config", cfgPath}, args...)...)
		cmd.Env = append(os.Environ(), cliEnv+"=1", "BROWSER="+testExe(t)+" "+browserArg)
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	out, err := cli("tools", "call", "web__whoami")
	if err == nil || !strings.Contains(out, `it belongs to upstream server "web", which is down (`) ||
		!strings.Contains(out, "run `openhuman-host upstream login web`") {
		t.Fatalf("tools call before signing in: %v\n%s", err, out)
	}
	if out, err := cli("providers", "status"); err == nil || !strings.Contains(out, "upstream servers:") ||
		!regexp.MustCompile(`\n  web +failed +\d{4}-\d\d-\d\d [0-9:]+ +upstream server "web" .*needs you to sign in`).MatchString(out) {
		t.Fatalf("providers status before signing in: %v\n%s", err, out)
	}
	if out, err := cli("upstream", "login", "web"); err != nil || !strings.Contains(out, "Signed in to web: 1 tool listed.") ||
		!strings.Contains(out, "Open this page to sign in to web:") {
		t.Fatalf("upstream login: %v\n%s", err, out)
	}
	info, err := os.Stat(filepath.Join(dataDir, "upstream", "oauth", "web.json"))
	if err != nil || (runtime.GOOS != "windows" && info.Mode().Perm() != 0o600) {
		t.Fatalf("token file: %v %v", info, err)
	}
	if out, err := cli("tools", "call", "web__whoami"); err != nil || !strings.Contains(out, "signed-in user") {
		t.Fatalf("tools call once signed in: %v\n%s", err, out)
	}
	if out, err := cli("upstream", "check", "web"); err != nil || !strings.Contains(out, "1 tools, 1 exposed") {
		t.Fatalf("upstream check once signed in: %v\n%s", err, out)
	}
	if out, err := cli("upstream", "logout", "web"); err != nil || !strings.Contains(out, "Signed out of web.") {
		t.Fatalf("upstream logout: %v\n%s", err, out)
	}
	if out, err := cli("upstream", "logout", "web"); err != nil || !strings.Contains(out, "web had no stored sign-in.") {
		t.Fatalf("upstream logout again: %v\n%s", err, out)
	}
}
