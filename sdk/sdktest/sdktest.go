// Package sdktest runs an openhuman-host provider in-process for tests and
// checks it the way the host does.
//
// [Start] serves the provider through the same go-plugin gRPC adapter the
// host uses, over a local connection, so a test exercises the real encoding
// of catalogs, arguments, results, events and errors. It calls Configure and
// Describe, and fails the test when the host would refuse a tool of the
// catalog (see [CheckCatalog]).
//
// [Harness.Call] then does what the host does around a tools/call:
//
//   - a tool that is not in the catalog is an error, as the host answers
//     such a call with JSON-RPC -32602;
//   - the arguments are validated against the tool's input schema and the
//     host's own rules (additionalProperties, required strings not blank,
//     bounds); arguments the host would reject are returned as an
//     [*ArgumentError] carrying the host's message, and the provider is
//     not called;
//   - the tool's Timeout, when set, becomes the call's deadline;
//   - a successful result of a tool with an output schema must carry
//     structured content that matches the schema (MCP 2025-11-25 requires
//     it); a mismatch is an error wrapping [ErrInvalidOutput]. Structured
//     content that is not a JSON object is an error for every tool.
//
// [Harness.CallRaw] skips the lookup and the argument checks, to test how a
// provider handles arguments the host would never send. [Harness.CallWithEvents]
// also returns the progress and log events the tool emitted.
//
// Every call carries a progress token ([ProgressToken], unless
// [Options.Caller] sets one or [Options.NoProgressToken] is true), so
// [sdk.CallToolRequest.Progress] reports events instead of doing nothing,
// as it does for an MCP client that asked for progress.
//
// A complete test of a provider with one tool, greeter.hello, that takes a
// required "name", reports one progress event and returns
// {"greeting": "Hello, <name>!<greeting_suffix>"}:
//
//	package main
//
//	import (
//		"context"
//		"errors"
//		"testing"
//
//		"github.com/openhuman/openhuman-host/sdk/sdktest"
//	)
//
//	func TestHello(t *testing.T) {
//		h := sdktest.Start(t, &greeter{}, &sdktest.Options{
//			Config: map[string]any{"greeting_suffix": " :)"},
//		})
//		ctx := context.Background()
//
//		res, events, err := h.CallWithEvents(ctx, "greeter.hello", map[string]any{"name": "Ada"})
//		if err != nil {
//			t.Fatal(err)
//		}
//		if got := string(res.StructuredContent); got != `{"greeting":"Hello, Ada! :)"}` {
//			t.Errorf("structured content = %s", got)
//		}
//		if len(events.Progress) != 1 {
//			t.Errorf("progress events = %+v, want one", events.Progress)
//		}
//
//		// The host rejects a blank name before the provider sees it.
//		_, err = h.Call(ctx, "greeter.hello", map[string]any{"name": "  "})
//		var argErr *sdktest.ArgumentError
//		if !errors.As(err, &argErr) || argErr.Message != `argument "name" must not be blank` {
//			t.Errorf("blank name: %v", err)
//		}
//
//		// The provider's own check, for callers other than the host.
//		res, err = h.CallRaw(ctx, "greeter.hello", map[string]any{"name": 5})
//		if err != nil || !res.IsError {
//			t.Errorf("raw call: %v %+v", err, res)
//		}
//	}
//
// examples/provider-hello/hello_test.go in the repository tests a provider
// with settings, a data directory, progress events and a resource.
package sdktest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/go-plugin"

	"github.com/openhuman/openhuman-host/sdk"
	sdkplugin "github.com/openhuman/openhuman-host/sdk/plugin"
)

// ProgressToken is the progress token, as JSON, that the harness sends with
// every call unless [Options.Caller] sets one or [Options.NoProgressToken]
// is true.
const ProgressToken = `"sdktest"`

// Options configures [Start] and [StartExecutable]; a nil *Options uses
// every default.
type Options struct {
	// Config is marshalled to JSON and passed to Configure as the
	// provider's config table; nil sends "{}". The host sends the table's
	// provider settings only (not enabled, command, args, sha256,
	// start_timeout_secs or tool_timeout_secs), with TOML numbers as JSON
	// numbers.
	Config any
	// DataDir is passed to Configure; empty uses a new t.TempDir().
	DataDir string
	// Secrets is passed to Configure as is, keyed as the host keys them:
	// the setting "api_key_env" arrives as Secrets["api_key"].
	Secrets map[string]string
	// Host, when set, is offered to the provider as the host service.
	Host sdk.Host
	// Caller is the caller sent with every call. An empty SourceType is
	// sent as "test"; a nil ProgressToken as [ProgressToken].
	Caller sdk.Caller
	// NoProgressToken sends calls without a progress token, as for an MCP
	// client that asked for no progress: the provider's
	// CallToolRequest.Progress then does nothing.
	NoProgressToken bool
}

// Harness is a running provider.
type Harness struct {
	// Provider is the host-side view of the provider: every method is a
	// gRPC call into the served implementation.
	Provider sdk.Provider
	// Catalog is what Describe returned after Configure.
	Catalog *sdk.Catalog
	// DataDir is the data directory passed to Configure.
	DataDir string

	caller sdk.Caller
	// tools holds the catalog's tools by the name clients see
	// ([sdk.ClientName] of the declared one).
	tools   map[string]harnessTool
	outputs map[string]*jsonschema.Resolved
}

// harnessTool is one tool of the catalog with its argument validator.
type harnessTool struct {
	sdk.Tool
	args *sdk.ArgumentValidator
}

// Start serves p over go-plugin's gRPC test connection, calls Configure
// (with LogLevel "debug" and HostVersion "sdktest") and Describe, checks
// the catalog with [CheckCatalog], and returns the harness. It fails the
// test on any error, naming the step, and on every tool the host would
// refuse, naming the tool and the reason. The connection is closed when
// the test ends.
func Start(t testing.TB, p sdk.Provider, opts *Options) *Harness {
	t.Helper()
	if opts == nil {
		opts = &Options{}
	}
	client, _ := plugin.TestPluginGRPCConn(t, false, map[string]plugin.Plugin{
		sdkplugin.PluginName: &sdkplugin.GRPCProviderPlugin{Impl: p},
	})
	// Closing the client asks the server to shut down through go-plugin's
	// controller service; stopping the server here as well would race.
	t.Cleanup(func() { _ = client.Close() })
	return start(t, client, opts)
}

// StartExecutable launches the provider executable at path, with args,
// the way the host does: go-plugin's handshake (the magic cookie, gRPC
// only, AutoMTLS), then Configure and Describe as [Start] does. It tests
// what only the built binary shows: its main function, the handshake, and
// that nothing it prints before the handshake breaks it. The process is
// stopped when the test ends; the test fails if it does not start.
func StartExecutable(t testing.TB, path string, args []string, opts *Options) *Harness {
	t.Helper()
	if opts == nil {
		opts = &Options{}
	}
	client := plugin.NewClient(&plugin.ClientConfig{
		HandshakeConfig:  sdkplugin.Handshake,
		VersionedPlugins: sdkplugin.VersionedPlugins(nil),
		Cmd:              exec.Command(path, args...),
		AllowedProtocols: []plugin.Protocol{plugin.ProtocolGRPC},
		AutoMTLS:         true,
		Logger:           hclog.NewNullLogger(),
		SyncStdout:       io.Discard,
		SyncStderr:       io.Discard,
		GRPCDialOptions:  sdkplugin.GRPCDialOptions(),
	})
	t.Cleanup(client.Kill)
	rpc, err := client.Client()
	if err != nil {
		t.Fatalf("start %s: %v", path, err)
	}
	return start(t, rpc, opts)
}

// start dispenses the provider from client and runs Configure, Describe
// and the catalog checks.
func start(t testing.TB, client plugin.ClientProtocol, opts *Options) *Harness {
	t.Helper()
	raw, err := client.Dispense(sdkplugin.PluginName)
	if err != nil {
		t.Fatalf("dispense provider: %v", err)
	}
	prov, ok := raw.(sdk.Provider)
	if !ok {
		t.Fatalf("dispensed %T, not an sdk.Provider", raw)
	}
	config := []byte("{}")
	if opts.Config != nil {
		if config, err = json.Marshal(opts.Config); err != nil {
			t.Fatalf("marshal config: %v", err)
		}
	}
	dataDir := opts.DataDir
	if dataDir == "" {
		dataDir = t.TempDir()
	}
	ctx := context.Background()
	if err := prov.Configure(ctx, &sdk.ConfigureRequest{
		Config:      config,
		DataDir:     dataDir,
		Secrets:     opts.Secrets,
		Host:        opts.Host,
		HostVersion: "sdktest",
		LogLevel:    "debug",
	}); err != nil {
		t.Fatalf("configure: %v", err)
	}
	cat, err := prov.Describe(ctx)
	if err != nil {
		t.Fatalf("describe: %v", err)
	}
	if err := CheckCatalog(cat); err != nil {
		t.Fatalf("provider %q: %v", cat.Name, err)
	}
	for _, w := range NameWarnings(cat) {
		t.Logf("provider %q: warning: %s", cat.Name, w)
	}
	caller := opts.Caller
	if caller.SourceType == "" {
		caller.SourceType = "test"
	}
	if caller.ProgressToken == nil && !opts.NoProgressToken {
		caller.ProgressToken = json.RawMessage(ProgressToken)
	}
	h := &Harness{
		Provider: prov,
		Catalog:  cat,
		DataDir:  dataDir,
		caller:   caller,
		tools:    map[string]harnessTool{},
		outputs:  map[string]*jsonschema.Resolved{},
	}
	for _, tool := range cat.Tools {
		// CheckCatalog has accepted every tool, under distinct names.
		args, _ := sdk.NewArgumentValidator(tool)
		h.tools[sdk.ClientName(tool.Name)] = harnessTool{Tool: tool, args: args}
		if len(tool.OutputSchema) > 0 {
			// CheckCatalog has resolved it already; keyed by the declared
			// name, which the provider is called with.
			h.outputs[tool.Name], _ = resolveOutputSchema(tool.OutputSchema)
		}
	}
	return h
}

// CheckCatalog reports what the host would leave out of cat when it loads
// the provider: tools that fail the host's checks ([sdk.ValidateTool]:
// name matching ^[A-Za-z0-9_.-]{1,128}$ (advertised as [sdk.ClientName]
// of it; see [NameWarnings]), policy class "read" or "act",
// an input schema with "type": "object" that resolves, an output schema of
// type object), tools listed twice (also under two names with one
// client-safe name, such as "a.b" and "a_b"), output schemas that do not resolve
// (a client could not check results against them), and resources or
// resource templates without a URI or listed twice. It returns nil for a
// catalog the host takes whole, and otherwise every problem joined with
// [errors.Join], each naming the tool or resource.
func CheckCatalog(cat *sdk.Catalog) error {
	if cat == nil {
		return errors.New("no catalog")
	}
	errs := checkListed("tool", cat.Tools, func(t sdk.Tool) string { return t.Name }, sdk.ValidateTool, func(t sdk.Tool) error {
		if len(t.OutputSchema) == 0 {
			return nil
		}
		if _, err := resolveOutputSchema(t.OutputSchema); err != nil {
			return fmt.Errorf("tool %q: %w", t.Name, err)
		}
		return nil
	})
	uris := map[string]bool{}
	for _, r := range cat.Resources {
		switch {
		case r.URI == "":
			errs = append(errs, fmt.Errorf("resource %q has no URI; the host would refuse it", r.Name))
		case uris[r.URI]:
			errs = append(errs, fmt.Errorf("resource %q is listed twice; the host keeps the first", r.URI))
		}
		uris[r.URI] = true
	}
	for _, rt := range cat.ResourceTemplates {
		if rt.URITemplate == "" {
			errs = append(errs, fmt.Errorf("resource template %q has no URI template; the host would refuse it", rt.Name))
		}
	}
	errs = append(errs, checkListed("prompt", cat.Prompts, func(p sdk.Prompt) string { return p.Name }, sdk.ValidatePrompt, nil)...)
	return errors.Join(errs...)
}

// checkListed checks items of one kind ("tool", "prompt") as the host takes
// them: each must pass validate and be the first listed under its
// advertised name; more, when not nil, then checks each item that did.
// It returns an error for each item that failed, in the items' order.
func checkListed[T any](kind string, items []T, name func(T) string, validate, more func(T) error) []error {
	var errs []error
	seen := map[string]string{} // advertised name → declared name
	for _, it := range items {
		if err := validate(it); err != nil {
			errs = append(errs, fmt.Errorf("%s %q would be refused by the host: %w", kind, name(it), err))
			continue
		}
		if err := listedTwice(kind, seen, name(it)); err != nil {
			errs = append(errs, err)
			continue
		}
		if more != nil {
			if err := more(it); err != nil {
				errs = append(errs, err)
			}
		}
	}
	return errs
}

// listedTwice records a tool or prompt (kind) declared as name in seen,
// by the name the host advertises, or says why the host would refuse it:
// the same name, or one with the same client-safe name, came earlier.
func listedTwice(kind string, seen map[string]string, name string) error {
	advertised := sdk.ClientName(name)
	prev, dup := seen[advertised]
	switch {
	case dup && prev == name:
		return fmt.Errorf("%s %q is listed twice; the host keeps the first", kind, name)
	case dup:
		return fmt.Errorf("%s %q is advertised to clients as %q, like %s %q listed before it; the host keeps the first", kind, name, advertised, kind, prev)
	}
	seen[advertised] = name
	return nil
}

// NameWarnings lists the tools and prompts of cat that the host will
// advertise under another name than the one declared, because MCP clients
// such as Claude Desktop accept only names matching ^[a-zA-Z0-9_-]{1,64}$
// ([sdk.IsClientName]): each warning names the declared name and the one
// clients will see ([sdk.ClientName]). Calls by the declared name still
// work, but models and users see the other one, so prefer client-safe
// names ("hello_greet", not "hello.greet"). [Start] logs these warnings.
func NameWarnings(cat *sdk.Catalog) []string {
	if cat == nil {
		return nil
	}
	var out []string
	for _, t := range cat.Tools {
		if !sdk.IsClientName(t.Name) && t.Name != "" {
			out = append(out, fmt.Sprintf("tool %q is advertised to MCP clients as %q; name it %q to match ^[a-zA-Z0-9_-]{1,64}$", t.Name, sdk.ClientName(t.Name), sdk.ClientName(t.Name)))
		}
	}
	for _, p := range cat.Prompts {
		if !sdk.IsClientName(p.Name) && p.Name != "" {
			out = append(out, fmt.Sprintf("prompt %q is advertised to MCP clients as %q; name it %q to match ^[a-zA-Z0-9_-]{1,64}$", p.Name, sdk.ClientName(p.Name), sdk.ClientName(p.Name)))
		}
	}
	return out
}

func resolveOutputSchema(raw json.RawMessage) (*jsonschema.Resolved, error) {
	var s jsonschema.Schema
	if err := json.Unmarshal(raw, &s); err != nil {
		return nil, fmt.Errorf("output schema: %v", err)
	}
	r, err := s.Resolve(nil)
	if err != nil {
		return nil, fmt.Errorf("output schema does not resolve: %v", err)
	}
	return r, nil
}

// ErrInvalidArguments is matched, with errors.Is, by every [*ArgumentError];
// it is [sdk.ErrInvalidArguments], which the host's own argument errors
// match too.
var ErrInvalidArguments = sdk.ErrInvalidArguments

// ArgumentError is returned by [Harness.Call] and [Harness.CallWithEvents]
// for arguments the host would reject before dispatch; the provider is not
// called.
type ArgumentError struct {
	// Tool is the tool's name.
	Tool string
	// Argument is the top-level argument at fault; empty when the
	// arguments as a whole are wrong (not a JSON object, for example).
	Argument string
	// Message is the text of the error result the host would return to
	// the client, for example `argument "k" must be between 1 and 50; got 0`.
	Message string
}

// Error returns the tool's name and Message.
func (e *ArgumentError) Error() string {
	return fmt.Sprintf("the host would reject the arguments of %s: %s", e.Tool, e.Message)
}

// Is reports whether target is [ErrInvalidArguments].
func (e *ArgumentError) Is(target error) bool { return target == ErrInvalidArguments }

// ErrUnknownTool is wrapped by the error of a call to a tool that is not in
// the provider's catalog.
var ErrUnknownTool = errors.New("unknown tool")

// ErrInvalidOutput is wrapped by the error of a call whose successful
// result breaks the tool's output schema: structured content missing or
// not matching the schema.
var ErrInvalidOutput = errors.New("result does not match the tool's output schema")

// Events are the events a tool emitted during one call, in the order they
// arrived.
type Events struct {
	// Progress holds the progress reports.
	Progress []sdk.Progress
	// Logs holds the log messages. Data has crossed the gRPC connection:
	// it is the json.RawMessage the provider's value marshalled to.
	Logs []sdk.LogMessage
}

// recorder is the event sink of one call.
type recorder struct {
	mu sync.Mutex
	ev Events
}

func (r *recorder) Progress(_ context.Context, p sdk.Progress) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.ev.Progress = append(r.ev.Progress, p)
	return nil
}

func (r *recorder) Log(_ context.Context, m sdk.LogMessage) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.ev.Logs = append(r.ev.Logs, m)
	return nil
}

func (r *recorder) events() Events {
	r.mu.Lock()
	defer r.mu.Unlock()
	return Events{Progress: slices.Clone(r.ev.Progress), Logs: slices.Clone(r.ev.Logs)}
}

// Tool returns the catalog entry of the named tool.
func (h *Harness) Tool(name string) (sdk.Tool, bool) {
	for _, t := range h.Catalog.Tools {
		if t.Name == name {
			return t, true
		}
	}
	return sdk.Tool{}, false
}

// Call calls a tool as the host would, with args marshalled to JSON (a
// json.RawMessage or []byte is sent as is; nil sends {}), and returns the
// provider's result or an error:
//
//   - wrapping [ErrUnknownTool] for a tool not in the catalog;
//   - an [*ArgumentError] for arguments the host would reject, without
//     calling the provider;
//   - the provider's own error, prefixed with "call <tool>: ";
//   - wrapping [ErrInvalidOutput], together with the result, when a
//     successful result breaks the tool's output schema;
//   - together with the result, when the structured content is not a
//     JSON object.
//
// The tool's Timeout, when set, bounds the call like the host's deadline.
// The events the tool emitted are dropped; see [Harness.CallWithEvents].
func (h *Harness) Call(ctx context.Context, name string, args any) (*sdk.CallToolResult, error) {
	res, _, err := h.CallWithEvents(ctx, name, args)
	return res, err
}

// CallWithEvents is [Harness.Call] that also returns the progress and log
// events the tool emitted before its result, also when the call fails.
func (h *Harness) CallWithEvents(ctx context.Context, name string, args any) (*sdk.CallToolResult, Events, error) {
	tool, ok := h.tool(name)
	if !ok {
		return nil, Events{}, h.unknownTool(name)
	}
	raw, err := marshalArgs(args)
	if err != nil {
		return nil, Events{}, err
	}
	forwarded, err := tool.args.Validate(raw)
	if err != nil {
		out := &ArgumentError{Tool: name, Message: err.Error()}
		var argErr *sdk.ArgumentError
		if errors.As(err, &argErr) {
			out.Argument = argErr.Argument
		}
		return nil, Events{}, out
	}
	return h.call(ctx, tool.Name, forwarded)
}

// tool finds a tool of the catalog as the host does: by the name clients
// see, or by a name whose [sdk.ClientName] that is (the declared one).
func (h *Harness) tool(name string) (harnessTool, bool) {
	if t, ok := h.tools[name]; ok {
		return t, true
	}
	t, ok := h.tools[sdk.ClientName(name)]
	return t, ok
}

// CallRaw calls a tool with args as given (marshalled as in
// [Harness.Call]), skipping the catalog lookup and argument validation:
// for testing how a provider handles arguments or tool names the host
// would never send. A successful result of a tool in the catalog is still
// checked against its output schema.
func (h *Harness) CallRaw(ctx context.Context, name string, args any) (*sdk.CallToolResult, error) {
	raw, err := marshalArgs(args)
	if err != nil {
		return nil, err
	}
	res, _, err := h.call(ctx, name, raw)
	return res, err
}

func (h *Harness) call(ctx context.Context, name string, args json.RawMessage) (*sdk.CallToolResult, Events, error) {
	if tool, ok := h.tool(name); ok && tool.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, tool.Timeout)
		defer cancel()
	}
	rec := &recorder{}
	req := (&sdk.CallToolRequest{Name: name, Arguments: args, Caller: h.caller}).WithEvents(rec)
	res, err := h.Provider.CallTool(ctx, req)
	events := rec.events()
	if err != nil {
		return nil, events, err
	}
	if res == nil {
		return nil, events, fmt.Errorf("call %s: no result", name)
	}
	if err := h.checkOutput(name, res); err != nil {
		return res, events, err
	}
	return res, events, nil
}

// checkOutput checks a successful result against the tool's output schema.
func (h *Harness) checkOutput(name string, res *sdk.CallToolResult) error {
	if res.IsError {
		return nil
	}
	var obj map[string]any
	if len(res.StructuredContent) > 0 {
		if err := json.Unmarshal(res.StructuredContent, &obj); err != nil || obj == nil {
			return fmt.Errorf("call %s: structured content must be a JSON object: %.40s", name, res.StructuredContent)
		}
	}
	schema, ok := h.outputs[name]
	if !ok {
		return nil
	}
	if obj == nil {
		return fmt.Errorf("call %s: %w: the tool declares an output schema but the result has no structured content", name, ErrInvalidOutput)
	}
	if err := schema.Validate(obj); err != nil {
		return fmt.Errorf("call %s: %w: %s", name, ErrInvalidOutput, strings.TrimPrefix(err.Error(), "validating root: "))
	}
	return nil
}

func (h *Harness) unknownTool(name string) error {
	names := make([]string, 0, len(h.Catalog.Tools))
	for _, t := range h.Catalog.Tools {
		names = append(names, sdk.ClientName(t.Name))
	}
	list := "no tools"
	if len(names) > 0 {
		list = strings.Join(names, ", ")
	}
	return fmt.Errorf("%w %q: the host would answer JSON-RPC -32602; the catalog has %s (use CallRaw to send it anyway)", ErrUnknownTool, name, list)
}

func marshalArgs(args any) (json.RawMessage, error) {
	switch a := args.(type) {
	case json.RawMessage:
		return a, nil
	case []byte:
		return a, nil
	case nil:
		return json.RawMessage("{}"), nil
	}
	raw, err := json.Marshal(args)
	if err != nil {
		return nil, fmt.Errorf("marshal arguments: %w", err)
	}
	return raw, nil
}

// Read reads a resource. An unknown URI gives the provider's error, which
// wraps [sdk.ErrResourceNotFound] when the provider follows the contract.
func (h *Harness) Read(ctx context.Context, uri string) (*sdk.ReadResourceResult, error) {
	return h.Provider.ReadResource(ctx, &sdk.ReadResourceRequest{URI: uri, Caller: h.caller})
}

// Prompt fills in the prompt name with args through the provider's
// [sdk.PromptProvider] (provider protocol 2), as prompts/get does. The
// error wraps [sdk.ErrNotImplemented] when the provider has no prompts,
// [sdk.ErrPromptNotFound] for an unknown name and [sdk.ErrInvalidParams]
// for arguments it refuses, when the provider follows the contract.
func (h *Harness) Prompt(ctx context.Context, name string, args map[string]string) (*sdk.GetPromptResult, error) {
	pp, ok := h.Provider.(sdk.PromptProvider)
	if !ok {
		return nil, fmt.Errorf("prompt %s: %w", name, sdk.ErrNotImplemented)
	}
	return pp.GetPrompt(ctx, &sdk.GetPromptRequest{Name: name, Arguments: args, Caller: h.caller})
}

// Complete asks the provider's [sdk.Completer] (provider protocol 2) for
// values of req's argument, as completion/complete does; req.Caller is
// filled in. The error wraps [sdk.ErrNotImplemented] when the provider
// does not complete.
func (h *Harness) Complete(ctx context.Context, req sdk.CompleteRequest) (*sdk.CompleteResult, error) {
	c, ok := h.Provider.(sdk.Completer)
	if !ok {
		return nil, fmt.Errorf("complete: %w", sdk.ErrNotImplemented)
	}
	req.Caller = h.caller
	return c.Complete(ctx, &req)
}
