package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/openhuman/openhuman-host/host/server"
	"github.com/openhuman/openhuman-host/sdk"
)

// envRequireSDKModule, set (make test sets it), turns an example module
// that cannot be built or tested here into a failure instead of a skip.
const envRequireSDKModule = "OPENHUMAN_REQUIRE_SDK_MODULE"

// exampleDir is examples/provider-hello: a module of its own, which
// requires only the SDK module (through a replace of ../../sdk).
var exampleDir = filepath.Join("..", "..", "examples", "provider-hello")

// inExampleModule runs the go command with args in the example's module,
// as its author would, outside this module (GOWORK=off) and free to
// resolve the SDK's dependencies from the module cache or proxy
// (GOFLAGS=-mod=mod). When the go command fails the test fails if
// OPENHUMAN_REQUIRE_SDK_MODULE is set, and skips otherwise.
func inExampleModule(t *testing.T, args ...string) {
	t.Helper()
	cmd := exec.Command("go", args...)
	cmd.Dir = exampleDir
	cmd.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS=-mod=mod")
	out, err := cmd.CombinedOutput()
	if err == nil {
		return
	}
	msg := fmt.Sprintf("go %s in %s: %v\n%s", strings.Join(args, " "), exampleDir, err, out)
	if os.Getenv(envRequireSDKModule) != "" {
		t.Fatal(msg + "(" + envRequireSDKModule + " is set, so this is a failure)")
	}
	t.Skip(msg)
}

// buildExampleProvider builds examples/provider-hello with go build in its
// own module and returns its path and SHA-256, as a third party would
// before loading it.
func buildExampleProvider(t *testing.T) (path, sum string) {
	t.Helper()
	path = filepath.Join(t.TempDir(), "provider-hello")
	if runtime.GOOS == "windows" {
		path += ".exe"
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		t.Fatal(err)
	}
	inExampleModule(t, "build", "-o", abs, ".")
	b, err := os.ReadFile(abs)
	if err != nil {
		t.Fatal(err)
	}
	digest := sha256.Sum256(b)
	return abs, hex.EncodeToString(digest[:])
}

// TestExampleModuleTests runs the example provider's own tests, which use
// only sdktest, in its module.
func TestExampleModuleTests(t *testing.T) {
	t.Parallel()
	inExampleModule(t, "test", "-count=1", "./...")
}

// progressRecorder is the event sink of a call made with a progress token.
type progressRecorder struct {
	mu       sync.Mutex
	progress []sdk.Progress
}

func (r *progressRecorder) Progress(_ context.Context, p sdk.Progress) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.progress = append(r.progress, p)
	return nil
}

func (r *progressRecorder) Log(context.Context, sdk.LogMessage) error { return nil }

// TestExampleProvider loads the example provider the way an operator
// would (command, sha256 and a setting in its [providers.hello] table)
// and uses it through the host's pipeline and its MCP server.
func TestExampleProvider(t *testing.T) {
	t.Parallel()
	bin, sum := buildExampleProvider(t)
	cfg, dataDir := testConfig(t, noBuiltins+fmt.Sprintf(`
[providers.hello]
command = %q
sha256 = %q
greeting_suffix = " :)"
`, bin, sum))
	h := startTestHost(t, cfg)
	if len(h.Failed) != 0 || len(h.Providers) != 1 || h.Providers[0].Name != "hello" {
		t.Fatalf("loaded %d providers, failed %+v", len(h.Providers), h.Failed)
	}
	ctx := context.Background()

	res := call(t, h, "hello_greet", `{"name":"Ada"}`)
	if res.IsError || res.Text() != "Hello, Ada! :)" || string(res.StructuredContent) != `{"greeting":"Hello, Ada! :)"}` {
		t.Errorf("greet: isError=%v %q %s", res.IsError, res.Text(), res.StructuredContent)
	}
	res = call(t, h, "hello_greet", `{"name":" Grace ","language":"de"}`)
	if res.IsError || string(res.StructuredContent) != `{"greeting":"Hallo, Grace! :)"}` {
		t.Errorf("greet in German: isError=%v %q %s", res.IsError, res.Text(), res.StructuredContent)
	}

	// hello_count with a progress token: its progress event crosses the
	// provider process and the host to the caller's sink.
	for _, step := range []struct{ args, want string }{{`{}`, `{"count":1}`}, {`{"by":41}`, `{"count":42}`}} {
		events := &progressRecorder{}
		res, err := h.Server.Call(ctx, server.Call{
			Tool: "hello_count", Arguments: json.RawMessage(step.args), Events: events,
			Caller: sdk.Caller{SourceType: "cli", ProgressToken: json.RawMessage(`"count-progress"`)},
		})
		if err != nil || res.IsError || string(res.StructuredContent) != step.want {
			t.Fatalf("count %s: %v %q %s", step.args, err, res.Text(), res.StructuredContent)
		}
		if diff := cmp.Diff([]sdk.Progress{{Progress: 1, Total: 1, Message: "counter saved"}}, events.progress); diff != "" {
			t.Errorf("count %s progress (-want +got):\n%s", step.args, diff)
		}
	}
	saved, err := os.ReadFile(filepath.Join(dataDir, "hello", "count.json"))
	if err != nil || string(saved) != "{\"count\":42}\n" {
		t.Errorf("hello's count.json = %q (%v)", saved, err)
	}

	// The host rejects a blank name before the provider sees it.
	res = call(t, h, "hello_greet", `{"name":"   "}`)
	if !res.IsError || res.Text() != `argument "name" must not be blank` {
		t.Errorf("blank name: isError=%v %q", res.IsError, res.Text())
	}

	// The README resource, through an MCP client session.
	cs := connect(t, h, nil)
	tools, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tl := range tools.Tools {
		names = append(names, tl.Name)
		if tl.Name == "hello_count" && (tl.Annotations == nil || tl.Annotations.ReadOnlyHint || tl.Annotations.IdempotentHint ||
			tl.Annotations.DestructiveHint == nil || *tl.Annotations.DestructiveHint || tl.Annotations.OpenWorldHint == nil || *tl.Annotations.OpenWorldHint) {
			t.Errorf("hello_count annotations = %+v", tl.Annotations)
		}
	}
	if diff := cmp.Diff([]string{"hello_count", "hello_greet"}, names); diff != "" {
		t.Errorf("tools/list (-want +got):\n%s", diff)
	}
	readme, err := os.ReadFile(filepath.Join(exampleDir, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	read, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "hello://readme"})
	if err != nil {
		t.Fatal(err)
	}
	want := []*mcp.ResourceContents{{URI: "hello://readme", MIMEType: "text/markdown", Text: string(readme)}}
	if diff := cmp.Diff(want, read.Contents); diff != "" {
		t.Errorf("hello://readme (-want +got):\n%s", diff)
	}
	if _, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "hello://missing"}); err == nil {
		t.Error("reading an unknown hello:// resource succeeded")
	}

	if err := h.Close(ctx); err != nil {
		t.Fatal(err)
	}
	type row struct {
		Tool, Provider, Class, Decision, Source, Args string
		Success                                       bool
	}
	var got []row
	rows := auditRows(t, dataDir)
	for i := len(rows) - 1; i >= 0; i-- { // List is newest first
		r := rows[i]
		got = append(got, row{r.Tool, r.Provider, r.Class, r.Decision, r.SourceType, r.ArgsSummary, r.Success})
	}
	wantRows := []row{
		{"hello_greet", "hello", "read", "allowed", "cli", `{"name":{"len":3}}`, true},
		{"hello_greet", "hello", "read", "allowed", "cli", `{"language":"de","name":{"len":7}}`, true},
		{"hello_count", "hello", "act", "allowed", "cli", `{}`, true},
		{"hello_count", "hello", "act", "allowed", "cli", `{"by":41}`, true},
		{"hello_greet", "hello", "read", "denied:invalid_arguments", "cli", `{"name":{"len":3}}`, false},
	}
	if diff := cmp.Diff(wantRows, got); diff != "" {
		t.Errorf("audit rows (-want +got):\n%s", diff)
	}

	// A new host, a new provider process: the count lives in the data dir.
	h = startTestHost(t, cfg)
	defer h.Close(ctx)
	if res := call(t, h, "hello_count", `{"by":2}`); res.IsError || string(res.StructuredContent) != `{"count":44}` {
		t.Errorf("count after a host restart: %q %s", res.Text(), res.StructuredContent)
	}
}
