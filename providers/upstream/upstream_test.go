package upstream

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/openhuman/openhuman-host/sdk"
	"github.com/openhuman/openhuman-host/sdk/sdktest"
	"github.com/openhuman/openhuman-host/sdk/testproc"
	"github.com/openhuman/openhuman-host/sdk/testwait"
)

// stdioServer is the path of the built testdata/stdioserver.
var stdioServer string

func TestMain(m *testing.M) {
	var err error
	if stdioServer, err = testproc.BuildBinary("./testdata/stdioserver"); err != nil {
		panic(err)
	}
	os.Exit(m.Run())
}

type textArgs struct {
	Text string `json:"text"`
}

type addArgs struct {
	A int `json:"a"`
	B int `json:"b"`
}

type sumOut struct {
	Sum int `json:"sum"`
}

// httpUpstream is a Streamable HTTP MCP server with tools echo
// (read-only hint, a description with control characters), add
// (structured output), secret, fail (isError) and slow (waits for
// cancellation). It records the Authorization headers it receives.
type httpUpstream struct {
	url string

	mu    sync.Mutex
	auths []string
}

func (u *httpUpstream) authHeaders() []string {
	u.mu.Lock()
	defer u.mu.Unlock()
	return append([]string(nil), u.auths...)
}

func startHTTP(t *testing.T, desc string) *httpUpstream {
	t.Helper()
	s := mcp.NewServer(&mcp.Implementation{Name: "httpserver", Version: "1"}, nil)
	mcp.AddTool(s, &mcp.Tool{Name: "echo", Description: desc, Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}},
		func(_ context.Context, _ *mcp.CallToolRequest, in textArgs) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "http:" + in.Text}}}, nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "add", Description: "Add two numbers."},
		func(_ context.Context, _ *mcp.CallToolRequest, in addArgs) (*mcp.CallToolResult, sumOut, error) {
			return nil, sumOut{Sum: in.A + in.B}, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "secret", Description: "Reveal a secret."},
		func(_ context.Context, _ *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "s3cret"}}}, nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "fail", Description: "Always fails."},
		func(_ context.Context, _ *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: "it broke"}}}, nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "slow", Description: "Waits."},
		func(ctx context.Context, _ *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
			select {
			case <-ctx.Done():
			case <-time.After(30 * time.Second):
			}
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "late"}}}, nil, nil
		})
	u := &httpUpstream{}
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, nil)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		u.mu.Lock()
		u.auths = append(u.auths, r.Header.Get("Authorization"))
		u.mu.Unlock()
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	u.url = srv.URL + "/mcp"
	return u
}

// start configures a provider with servers through sdktest and closes it
// when the test ends.
func start(t *testing.T, servers ...map[string]any) (*sdktest.Harness, *Provider) {
	t.Helper()
	p := New(nil)
	t.Cleanup(func() { _ = p.Close() })
	h := sdktest.Start(t, p, &sdktest.Options{Config: map[string]any{"servers": servers}})
	return h, p
}

func toolNames(c *sdk.Catalog) []string {
	var out []string
	for _, t := range c.Tools {
		out = append(out, t.Name)
	}
	return out
}

func TestPrefixAndForwarding(t *testing.T) {
	u := startHTTP(t, "Echo.")
	h, _ := start(t,
		map[string]any{"name": "web", "endpoint": u.url},
		map[string]any{"name": "local", "command": stdioServer, "prefix": ""},
	)
	got := strings.Join(toolNames(h.Catalog), ",")
	if got != "web__add,web__echo,web__fail,web__secret,web__slow,echo,hang" {
		t.Fatalf("tools = %s", got)
	}
	ctx := context.Background()
	res, err := h.Call(ctx, "web__echo", map[string]any{"text": "hi"})
	if err != nil || res.IsError || res.Text() != "http:hi" {
		t.Fatalf("web__echo: %v %+v", err, res)
	}
	res, err = h.Call(ctx, "echo", map[string]any{"text": "yo"})
	if err != nil || res.IsError || res.Text() != "stdio:yo" {
		t.Fatalf("echo: %v %+v", err, res)
	}
	res, err = h.Call(ctx, "web__add", map[string]any{"a": 2, "b": 3})
	if err != nil || res.IsError {
		t.Fatalf("web__add: %v %+v", err, res)
	}
	var out sumOut
	if err := json.Unmarshal(res.StructuredContent, &out); err != nil || out.Sum != 5 {
		t.Fatalf("web__add structured content = %s", res.StructuredContent)
	}
	if tool, _ := h.Tool("web__add"); tool.OutputSchema == nil || tool.Timeout != 30*time.Second {
		t.Errorf("web__add: output schema %s, timeout %s", tool.OutputSchema, tool.Timeout)
	}
	res, err = h.Call(ctx, "web__fail", map[string]any{})
	if err != nil || !res.IsError || res.Text() != "it broke" {
		t.Fatalf("web__fail: %v %+v", err, res)
	}
}

func TestAllowDeny(t *testing.T) {
	u := startHTTP(t, "Echo.")
	h, p := start(t, map[string]any{
		"name": "web", "endpoint": u.url,
		"allowed_tools":    []string{"e*", "secret", "add"},
		"disallowed_tools": []string{"secret", "a?d"},
	})
	if got := strings.Join(toolNames(h.Catalog), ","); got != "web__echo" {
		t.Fatalf("tools = %s", got)
	}
	ctx := context.Background()
	for name, key := range map[string]string{
		"web__secret": "upstream.servers[0].disallowed_tools",
		"web__add":    "upstream.servers[0].disallowed_tools",
		"web__fail":   "upstream.servers[0].allowed_tools",
	} {
		res, err := p.CallTool(ctx, &sdk.CallToolRequest{Name: name, Arguments: json.RawMessage(`{}`)})
		if err != nil || !res.IsError || !strings.Contains(res.Text(), key) {
			t.Errorf("%s: %v %+v, want isError naming %s", name, err, res, key)
		}
	}
	if _, err := h.Call(ctx, "web__secret", map[string]any{}); err == nil {
		t.Error("web__secret callable through the harness")
	}
}

func TestClassAndDescription(t *testing.T) {
	u := startHTTP(t, "Echo\x1b[31m the\u202e text.\x00\nSecond line."+strings.Repeat("x", 3000))
	h, _ := start(t,
		map[string]any{"name": "plain", "endpoint": u.url, "allowed_tools": []string{"echo", "add"}},
		map[string]any{"name": "trusted", "endpoint": u.url, "trust_annotations": true, "read_only_tools": []string{"add"},
			"allowed_tools": []string{"echo", "add"}, "timeout_secs": 7},
	)
	want := map[string]sdk.PolicyClass{
		"plain__echo": sdk.ClassAct, "plain__add": sdk.ClassAct,
		"trusted__echo": sdk.ClassRead, "trusted__add": sdk.ClassRead,
	}
	for name, class := range want {
		tool, ok := h.Tool(name)
		if !ok || tool.Class != class {
			t.Errorf("%s: class %q, want %q", name, tool.Class, class)
		}
	}
	tool, _ := h.Tool("plain__echo")
	if tool.Annotations.ReadOnlyHint == nil || !*tool.Annotations.ReadOnlyHint {
		t.Error("readOnlyHint not copied")
	}
	if !strings.HasPrefix(tool.Description, "Echo[31m the text.\nSecond line.xxx") {
		t.Errorf("description = %.60q", tool.Description)
	}
	if n := len([]rune(tool.Description)); n > maxDescription {
		t.Errorf("description has %d characters", n)
	}
	if tool, _ := h.Tool("trusted__add"); tool.Timeout != 7*time.Second {
		t.Errorf("timeout = %s", tool.Timeout)
	}
}

func TestDuplicateFirstWins(t *testing.T) {
	u := startHTTP(t, "Echo.")
	h, _ := start(t,
		map[string]any{"name": "one", "command": stdioServer, "prefix": ""},
		map[string]any{"name": "two", "endpoint": u.url, "prefix": "", "allowed_tools": []string{"echo", "add"}},
	)
	if got := strings.Join(toolNames(h.Catalog), ","); got != "echo,hang,add" {
		t.Fatalf("tools = %s", got)
	}
	res, err := h.Call(context.Background(), "echo", map[string]any{"text": "x"})
	if err != nil || res.Text() != "stdio:x" {
		t.Fatalf("echo went to %v %+v, want the first server", err, res)
	}
}

func TestHeadersSent(t *testing.T) {
	u := startHTTP(t, "Echo.")
	h, _ := start(t, map[string]any{"name": "web", "endpoint": u.url, "headers": map[string]string{"Authorization": "Bearer t0ken"}})
	if _, err := h.Call(context.Background(), "web__echo", map[string]any{"text": "a"}); err != nil {
		t.Fatal(err)
	}
	auths := u.authHeaders()
	if len(auths) == 0 {
		t.Fatal("no requests")
	}
	for _, a := range auths {
		if a != "Bearer t0ken" {
			t.Fatalf("Authorization = %q", a)
		}
	}
}

func TestTimeout(t *testing.T) {
	u := startHTTP(t, "Echo.")
	_, p := start(t, map[string]any{"name": "web", "endpoint": u.url, "timeout_secs": 1})
	// slow answers "late" after 30s, so only the timeout makes this an error.
	res, err := p.CallTool(context.Background(), &sdk.CallToolRequest{Name: "web__slow", Arguments: json.RawMessage(`{}`)})
	if err != nil || !res.IsError || !strings.Contains(res.Text(), "did not answer within 1s") {
		t.Fatalf("slow: %v %+v", err, res)
	}
}

func TestConfigureErrors(t *testing.T) {
	cases := []struct {
		name   string
		server map[string]any
		want   string
	}{
		{"unknown key", map[string]any{"name": "a", "command": "x", "colour": 1}, `upstream.servers[0] has unknown key "colour"`},
		{"bad name", map[string]any{"name": "A!", "command": "x"}, "upstream.servers[0].name"},
		{"both", map[string]any{"name": "a", "command": "x", "endpoint": "http://h"}, "both command and endpoint"},
		{"neither", map[string]any{"name": "a"}, "neither command nor endpoint"},
		{"timeout", map[string]any{"name": "a", "command": "x", "timeout_secs": 0}, "upstream.servers[0].timeout_secs"},
		{"bad glob", map[string]any{"name": "a", "command": "x", "allowed_tools": []string{"["}}, "upstream.servers[0].allowed_tools"},
		{"start timeout", map[string]any{"name": "a", "command": "x", "start_timeout_secs": 0}, "upstream.servers[0].start_timeout_secs"},
		{"idle", map[string]any{"name": "a", "command": "x", "session_idle_secs": -1}, "upstream.servers[0].session_idle_secs"},
		{"ping", map[string]any{"name": "a", "command": "x", "ping_interval_secs": 3601}, "upstream.servers[0].ping_interval_secs"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := New(nil)
			defer p.Close()
			raw, _ := json.Marshal(map[string]any{"servers": []any{tc.server}})
			err := p.Configure(testwait.Context(t), &sdk.ConfigureRequest{Config: raw})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error = %v, want it to contain %q", err, tc.want)
			}
		})
	}
	// The install hint, on a PATH without npx (the lookup itself, so the
	// test does not depend on this machine having Node.js).
	if _, err := lookCommand("npx", "/nonexistent", ""); err == nil ||
		err.Error() != "command npx not found on PATH (/nonexistent); install it (for npx: install Node.js; for uvx: install uv) or set command to its absolute path" {
		t.Errorf("npx hint: %v", err)
	}
	p := New(nil)
	err := p.Configure(context.Background(), &sdk.ConfigureRequest{Config: json.RawMessage(`{"server": []}`)})
	if err == nil || !strings.Contains(err.Error(), `upstream has unknown key "server"`) {
		t.Errorf("top-level unknown key: %v", err)
	}
}

// TestUnreachableServerIsReported: a server that cannot be reached fails
// neither Configure nor the other servers; its state and the error of
// calling one of its tools say what is wrong, without its secrets.
func TestUnreachableServerIsReported(t *testing.T) {
	cases := []struct {
		name   string
		server map[string]any
		want   string
	}{
		{"missing command", map[string]any{"name": "a", "command": "no-such-command-xyz"},
			"command no-such-command-xyz not found on PATH ("},
		{"redacted endpoint", map[string]any{"name": "a", "endpoint": "http://user:pw@127.0.0.1:1/secret/path?k=v"}, "<redacted>"},
		{"plain endpoint", map[string]any{"name": "a", "endpoint": "http://127.0.0.1:1/secret/path?k=v"}, "http://127.0.0.1:1"},
		{"server that refuses to start", map[string]any{"name": "a", "command": "sh", "args": []string{"-c", "printf 'noise\\nflaky: refusing\\tto start\\n' >&2; exit 1"}},
			"; its stderr ended with: noise flaky: refusing to start"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := New(nil)
			defer p.Close()
			raw, _ := json.Marshal(map[string]any{"servers": []any{tc.server, map[string]any{"name": "ok", "command": stdioServer}}})
			if err := p.Configure(testwait.Context(t), &sdk.ConfigureRequest{Config: raw}); err != nil {
				t.Fatalf("Configure with an unreachable server: %v", err)
			}
			st := p.Servers()
			if len(st) != 2 || st[0].State != StateFailed || !strings.Contains(st[0].Error, tc.want) || st[0].NextAttempt.IsZero() ||
				st[1].State != StateConnected {
				t.Fatalf("Servers() = %+v, want a failed with %q and ok connected", st, tc.want)
			}
			_, downErr := p.CallTool(context.Background(), &sdk.CallToolRequest{Name: "a__echo", Arguments: json.RawMessage(`{}`)})
			if downErr == nil || !strings.Contains(downErr.Error(), `upstream server "a" is down (`) || !strings.Contains(downErr.Error(), tc.want) {
				t.Fatalf("calling a tool of the unreachable server: %v", downErr)
			}
			res, err := p.CallTool(context.Background(), &sdk.CallToolRequest{Name: "ok__echo", Arguments: json.RawMessage(`{"text":"hi"}`)})
			if err != nil || res.IsError {
				t.Errorf("calling the reachable server: %v %+v", err, res)
			}
			for _, leak := range []string{"user", "pw", "secret/path", "k=v"} {
				if strings.Contains(st[0].Error, leak) || strings.Contains(downErr.Error(), leak) {
					t.Errorf("%q leaks %q", st[0].Error, leak)
				}
			}
		})
	}
}

func TestDisabledAndReadResource(t *testing.T) {
	h, p := start(t, map[string]any{"name": "off", "command": "no-such-command-xyz", "enabled": false})
	if len(h.Catalog.Tools) != 0 {
		t.Errorf("tools = %v", toolNames(h.Catalog))
	}
	_, err := p.ReadResource(context.Background(), &sdk.ReadResourceRequest{URI: "x://y"})
	if err == nil || !strings.Contains(err.Error(), sdk.ErrResourceNotFound.Error()) {
		t.Errorf("ReadResource: %v", err)
	}
}

func TestCloseStopsStdio(t *testing.T) {
	p := New(nil)
	raw, _ := json.Marshal(map[string]any{"servers": []any{map[string]any{"name": "s", "command": stdioServer}}})
	if err := p.Configure(context.Background(), &sdk.ConfigureRequest{Config: raw}); err != nil {
		t.Fatal(err)
	}
	cmd := p.conns["s"].cmd
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	if cmd.ProcessState == nil {
		t.Error("stdio server still running after Close")
	}
}

func TestRedact(t *testing.T) {
	for in, want := range map[string]string{
		"https://user:pw@example.com/x":        "<redacted>",
		"https://example.com:8443/mcp?token=1": "https://example.com:8443",
		"not a url %%":                         "<redacted>",
	} {
		if got := redactString(in); got != want {
			t.Errorf("redactString(%q) = %q, want %q", in, got, want)
		}
	}
	for in, want := range map[string]string{
		`Post "http://u:***@h:1/p": refused`:                 `Post "<redacted>": refused`,
		`upstream server "a" (http://127.0.0.1:1): cannot`:   `upstream server "a" (http://127.0.0.1:1): cannot`,
		`server "a" (http://u:p@h:1/x?k=v): cannot connect.`: `server "a" (<redacted>): cannot connect.`,
		`see http://h/a_(b) and http://h/c, then stop`:       `see http://h and http://h, then stop`,
	} {
		got := redactText(in)
		if got != want {
			t.Errorf("redactText(%q) = %q, want %q", in, got, want)
		}
		if again := redactText(got); again != got {
			t.Errorf("redactText is not idempotent: %q, then %q", got, again)
		}
	}
}

func TestChildPath(t *testing.T) {
	env := childEnv([]string{"PATH=/custom", "HOME=/home/me"}, map[string]string{"FOO": "bar"})
	path := envValue(env, "PATH")
	for _, d := range []string{"/custom", "/usr/local/bin", "/home/me/.local/bin", "/home/me/.npm-global/bin", "/opt/homebrew/bin"} {
		if !strings.Contains(":"+path+":", ":"+d+":") {
			t.Errorf("PATH %q lacks %s", path, d)
		}
	}
	if !strings.HasPrefix(path, "/custom:") || envValue(env, "FOO") != "bar" {
		t.Errorf("env = %v", env)
	}
}

// TestChildEnvIsClean: a stdio server gets neither go-plugin's handshake
// variables (with the client certificate), the host's cookie, nor the GC
// settings the host gives its providers, unless its env sets them.
func TestChildEnvIsClean(t *testing.T) {
	env := childEnv([]string{"PATH=/custom", "PLUGIN_CLIENT_CERT=-----BEGIN CERTIFICATE-----", "PLUGIN_MIN_PORT=10000",
		"OPENHUMAN_PROVIDER=cookie", "LANG=C.UTF-8", "GOGC=400", "GOMEMLIMIT=25165824"}, map[string]string{"TOKEN": "t"})
	for _, kv := range env {
		if strings.HasPrefix(kv, "PLUGIN_") || strings.HasPrefix(kv, "OPENHUMAN_") || strings.HasPrefix(kv, "GOGC=") || strings.HasPrefix(kv, "GOMEMLIMIT=") {
			t.Errorf("a stdio server gets %s", kv)
		}
	}
	if envValue(env, "LANG") != "C.UTF-8" || envValue(env, "TOKEN") != "t" {
		t.Errorf("env = %v, want LANG and the server's TOKEN", env)
	}
	if env := childEnv([]string{"GOGC=400"}, map[string]string{"GOGC": "50"}); envValue(env, "GOGC") != "50" {
		t.Errorf("env = %v, want the server's own GOGC=50", env)
	}
}

// TestChildPathFindsVersionManagers: the newest Node.js of nvm and the
// shims of other version managers are on a stdio server's PATH.
func TestChildPathFindsVersionManagers(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("nvm's folders are those of Unix")
	}
	home := t.TempDir()
	for _, v := range []string{"v9.11.2", "v22.11.0", "v20.18.1"} {
		if err := os.MkdirAll(filepath.Join(home, ".nvm", "versions", "node", v, "bin"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	path := envValue(childEnv([]string{"PATH=/usr/bin", "HOME=" + home}, nil), "PATH")
	for _, want := range []string{filepath.Join(home, ".nvm/versions/node/v22.11.0/bin"), filepath.Join(home, ".volta/bin"),
		filepath.Join(home, ".local/share/mise/shims"), filepath.Join(home, ".asdf/shims"), filepath.Join(home, ".cargo/bin")} {
		if !slices.Contains(filepath.SplitList(path), want) {
			t.Errorf("PATH %q lacks %s", path, want)
		}
	}
	if strings.Contains(path, "v20.18.1") || strings.Contains(path, "v9.11.2") {
		t.Errorf("PATH %q has an older Node.js of nvm", path)
	}
}
