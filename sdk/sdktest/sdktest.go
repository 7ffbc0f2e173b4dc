// Package sdktest runs an openhuman-host provider in-process for tests.
//
// The provider is served through the same go-plugin gRPC adapter the host
// uses, over a local socket, so a test exercises the real encoding of
// catalogs, arguments, results and errors:
//
//	h := sdktest.Start(t, myprovider.New(), nil)
//	res, err := h.Call(ctx, "hello.greet", map[string]any{"name": "Ada"})
package sdktest

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/hashicorp/go-plugin"

	"github.com/openhuman/openhuman-host/sdk"
)

// Options configures [Start]; a nil *Options uses every default.
type Options struct {
	// Config is marshalled to JSON and passed to Configure as the
	// provider's config table; nil sends "{}".
	Config any
	// DataDir is passed to Configure; empty uses t.TempDir().
	DataDir string
	// Secrets is passed to Configure as is.
	Secrets map[string]string
	// Host, when set, is offered to the provider as the host service.
	Host sdk.Host
	// Caller is the caller sent with every call; the zero value uses
	// SourceType "test".
	Caller sdk.Caller
}

// Harness is a running provider.
type Harness struct {
	// Provider is the host-side view of the provider: every method is a
	// gRPC call into the served implementation.
	Provider sdk.Provider
	// Catalog is what Describe returned after Configure.
	Catalog *sdk.Catalog

	caller sdk.Caller
}

// Start serves p over go-plugin's gRPC test connection, calls Configure and
// Describe, and returns the harness. It fails the test on any error; the
// connection is closed when the test ends.
func Start(t testing.TB, p sdk.Provider, opts *Options) *Harness {
	t.Helper()
	if opts == nil {
		opts = &Options{}
	}
	client, _ := plugin.TestPluginGRPCConn(t, false, map[string]plugin.Plugin{
		sdk.PluginName: &sdk.GRPCProviderPlugin{Impl: p},
	})
	// Closing the client asks the server to shut down through go-plugin's
	// controller service; stopping the server here as well would race.
	t.Cleanup(func() { _ = client.Close() })
	raw, err := client.Dispense(sdk.PluginName)
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
	caller := opts.Caller
	if caller.SourceType == "" {
		caller.SourceType = "test"
	}
	return &Harness{Provider: prov, Catalog: cat, caller: caller}
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

// Call calls a tool with args marshalled to JSON (a json.RawMessage or
// []byte is sent as is). It returns the provider's result, or its error.
// Arguments are not validated against the input schema here; the host does
// that before dispatch.
func (h *Harness) Call(ctx context.Context, name string, args any) (*sdk.CallToolResult, error) {
	var raw []byte
	switch a := args.(type) {
	case json.RawMessage:
		raw = a
	case []byte:
		raw = a
	case nil:
		raw = []byte("{}")
	default:
		var err error
		if raw, err = json.Marshal(a); err != nil {
			return nil, fmt.Errorf("marshal arguments: %w", err)
		}
	}
	return h.Provider.CallTool(ctx, &sdk.CallToolRequest{Name: name, Arguments: raw, Caller: h.caller})
}

// Read reads a resource.
func (h *Harness) Read(ctx context.Context, uri string) (*sdk.ReadResourceResult, error) {
	return h.Provider.ReadResource(ctx, &sdk.ReadResourceRequest{URI: uri, Caller: h.caller})
}
