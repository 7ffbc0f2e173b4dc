// Command testprovider is a provider that misbehaves on request, for the
// host's lifecycle tests: it waits on its context, reports progress,
// prints to stdout, spawns children, panics and exits. It is not meant to
// be loaded by anyone but the test suite.
//
// Its catalog depends on its data directory, so a test can change it
// between restarts: when the file "extra" exists there, the tool
// kit.extra is listed too.
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/openhuman/openhuman-host/sdk"
)

func main() {
	// Output before the handshake line must not break the handshake.
	fmt.Println("testprovider: noise on stdout before the handshake")
	// -slow-start=DURATION delays the handshake, for start timeouts;
	// -sleep=DURATION makes the process a plain child that sleeps and
	// exits (kit.spawn starts one), watching no parent.
	for _, a := range os.Args[1:] {
		if v, ok := strings.CutPrefix(a, "-sleep="); ok {
			time.Sleep(duration(v))
			os.Exit(0)
		}
		if v, ok := strings.CutPrefix(a, "-slow-start="); ok {
			time.Sleep(duration(v))
		}
	}
	sdk.Serve(&kit{})
}

// duration parses a flag's duration, or exits with status 2 saying why
// it is none.
func duration(v string) time.Duration {
	d, err := time.ParseDuration(v)
	if err != nil {
		fmt.Fprintln(os.Stderr, "testprovider:", err)
		os.Exit(2)
	}
	return d
}

type kit struct {
	mu      sync.Mutex
	dataDir string
	host    sdk.Host
}

func (k *kit) Configure(_ context.Context, req *sdk.ConfigureRequest) error {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.dataDir = req.DataDir
	k.host = req.Host
	fmt.Println("testprovider: noise on stdout in Configure")
	return nil
}

var emptyInput = json.RawMessage(`{"type":"object","additionalProperties":false}`)

func tool(name, desc string, class sdk.PolicyClass) sdk.Tool {
	return sdk.Tool{Name: name, Description: desc, InputSchema: emptyInput, Class: class}
}

func (k *kit) Describe(context.Context) (*sdk.Catalog, error) {
	cat := &sdk.Catalog{Name: "kit", Version: "1", Tools: []sdk.Tool{
		tool("kit.ping", "Answers pong and the provider's pid.", sdk.ClassRead),
		tool("kit.wait", "Waits until the call is cancelled, then counts the cancellation.", sdk.ClassRead),
		tool("kit.cancelled", "Says how many kit.wait calls saw their context cancelled.", sdk.ClassRead),
		tool("kit.progress", "Reports progress three times, then answers.", sdk.ClassRead),
		tool("kit.print", "Prints to stdout in every way a provider can, then answers.", sdk.ClassRead),
		tool("kit.spawn", "Starts a long-running child process and returns its pid.", sdk.ClassAct),
		tool("kit.panic", "Panics.", sdk.ClassAct),
		tool("kit.exit", "Exits the provider process with status 3.", sdk.ClassAct),
		tool("kit.badlog", "Writes log lines that are JSON but not hclog's format to stderr.", sdk.ClassRead),
		tool("kit.stdin", "Says what the provider's standard input is.", sdk.ClassRead),
		tool("kit.grow", "Creates the data dir's extra file and tells the host the catalog changed.", sdk.ClassAct),
		callerTool,
	}}
	if _, err := os.Stat(filepath.Join(k.dir(), "extra")); err == nil {
		cat.Tools = append(cat.Tools, tool("kit.extra", "Listed only when the data dir holds a file named extra.", sdk.ClassRead))
	}
	// A file named claim lists more tool names to declare, one per line,
	// so tests can check that nothing takes over another provider's tools.
	for _, name := range k.claims() {
		cat.Tools = append(cat.Tools, tool(name, "A tool name claimed by the data dir's claim file.", sdk.ClassRead))
	}
	return cat, nil
}

// callerTool answers with what it was told about its caller, as
// structured content and, as the MCP spec asks of a tool with an output
// schema, the same JSON as text.
var callerTool = sdk.Tool{
	Name: "kit.caller", Description: "Says what the host told it about the caller, as JSON.",
	InputSchema: emptyInput, Class: sdk.ClassRead,
	OutputSchema: json.RawMessage(`{"type":"object","properties":{"client_name":{"type":"string"},"reads_structured_content":{"type":"boolean"}},` +
		`"required":["client_name","reads_structured_content"]}`),
}

// callerInfo is kit.caller's structured content.
type callerInfo struct {
	ClientName             string `json:"client_name"`
	ReadsStructuredContent bool   `json:"reads_structured_content"`
}

func (k *kit) dir() string {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.dataDir
}

func (k *kit) CallTool(ctx context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
	switch req.Name {
	case "kit.ping", "kit.extra":
		return sdk.TextResult("pong " + strconv.Itoa(os.Getpid())), nil
	case "kit.wait":
		_ = req.Progress(ctx, sdk.Progress{Progress: 1, Message: "waiting"})
		select {
		case <-ctx.Done():
			k.countCancel()
			return nil, ctx.Err()
		case <-time.After(time.Minute):
			return sdk.TextResult("not cancelled"), nil
		}
	case "kit.caller":
		out, err := json.Marshal(callerInfo{ClientName: req.Caller.ClientName, ReadsStructuredContent: req.Caller.ReadsStructuredContent})
		if err != nil {
			return nil, err
		}
		return &sdk.CallToolResult{Content: []sdk.Content{sdk.TextContent(string(out))}, StructuredContent: out}, nil
	case "kit.cancelled":
		b, _ := os.ReadFile(filepath.Join(k.dir(), "cancelled"))
		return sdk.TextResult(fmt.Sprintf("cancelled %d", len(b))), nil
	case "kit.progress":
		for i := 1; i <= 3; i++ {
			if err := req.Progress(ctx, sdk.Progress{Progress: float64(i), Total: 3, Message: fmt.Sprintf("step %d", i)}); err != nil {
				return nil, err
			}
		}
		return sdk.TextResult("done"), nil
	case "kit.print":
		fmt.Println("testprovider: fmt.Println")
		_, _ = os.Stdout.WriteString("testprovider: os.Stdout\n")
		_, _ = syscall.Write(1, []byte("testprovider: descriptor 1\n"))
		cmd := exec.Command("sh", "-c", "echo testprovider: child process")
		cmd.Stdout = os.Stdout
		_ = cmd.Run()
		return sdk.TextResult("printed"), nil
	case "kit.spawn":
		// A child that knows nothing of the host: only the provider's
		// group (process group or job object) ends it.
		self, err := os.Executable()
		if err != nil {
			return nil, err
		}
		cmd := exec.Command(self, "-sleep=300s")
		if err := cmd.Start(); err != nil {
			return nil, err
		}
		go func() { _ = cmd.Wait() }()
		return sdk.TextResult(strconv.Itoa(cmd.Process.Pid)), nil
	case "kit.stdin":
		target, err := os.Readlink("/proc/self/fd/0")
		if err != nil {
			return nil, err
		}
		return sdk.TextResult(target), nil
	case "kit.badlog":
		for _, line := range []string{`{"@message":42}`, `{"@level":[1],"@message":"x"}`, `{"@message":"t","@timestamp":7}`, `{"@timestamp":"yesterday","@message":"t"}`} {
			_, _ = syscall.Write(2, []byte(line+"\n"))
		}
		return sdk.TextResult("logged"), nil
	case "kit.grow":
		if err := os.WriteFile(filepath.Join(k.dir(), "extra"), nil, 0o600); err != nil {
			return nil, err
		}
		k.mu.Lock()
		host := k.host
		k.mu.Unlock()
		if host == nil {
			return sdk.ErrorResult("no host service"), nil
		}
		if err := host.NotifyCatalogChanged(ctx); err != nil {
			return nil, err
		}
		return sdk.TextResult("grown"), nil
	case "kit.panic":
		panic("testprovider: kit.panic called")
	case "kit.exit":
		os.Exit(3)
	}
	if slices.Contains(k.claims(), req.Name) {
		return sdk.TextResult("pong " + strconv.Itoa(os.Getpid())), nil
	}
	return sdk.ErrorResult("unknown tool %s", req.Name), nil
}

// claims returns the tool names the data dir's claim file lists, one per
// line; none when there is no such file.
func (k *kit) claims() []string {
	b, err := os.ReadFile(filepath.Join(k.dir(), "claim"))
	if err != nil {
		return nil
	}
	return strings.Fields(string(b))
}

// countCancel appends one byte to the data dir's "cancelled" file.
func (k *kit) countCancel() {
	f, err := os.OpenFile(filepath.Join(k.dir(), "cancelled"), os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
	if err != nil {
		return
	}
	_, _ = f.Write([]byte{'x'})
	_ = f.Close()
}

func (k *kit) ReadResource(_ context.Context, req *sdk.ReadResourceRequest) (*sdk.ReadResourceResult, error) {
	return nil, fmt.Errorf("%w: %s", sdk.ErrResourceNotFound, req.URI)
}
