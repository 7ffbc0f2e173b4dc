package main

import (
	"context"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/openhuman/openhuman-host/sdk"
)

// providerName is the name the host config is expected to use,
// [providers.hello]; error messages name keys under it.
const providerName = "hello"

// maxSuffixChars bounds the greeting_suffix setting, in characters.
const maxSuffixChars = 20

// countFile is the counter's file in the data directory.
const countFile = "count.json"

// readmeURI is the provider's one resource.
const readmeURI = "hello://readme"

// The tools' arguments and results. sdk.AddTool derives their JSON
// Schemas from these types: descriptions from the jsonschema tags, the
// bounds the host enforces from the schema tags. The host validates
// arguments against them before a call reaches the provider, and rejects
// (never clamps) values outside their bounds.
type (
	greetArgs struct {
		Name     string `json:"name" jsonschema:"Who to greet." schema:"minLength=1,maxLength=100"`
		Language string `json:"language,omitempty" jsonschema:"Language of the greeting." schema:"enum=en|fr|de,default=en"`
	}
	greetResult struct {
		Greeting string `json:"greeting"`
	}
	countArgs struct {
		By int64 `json:"by,omitzero" jsonschema:"How much to add." schema:"minimum=1,maximum=1000,default=1"`
	}
	countResult struct {
		Count int64 `json:"count" schema:"minimum=1"`
	}
)

// greetings maps a language code to the greeting's first word.
var greetings = map[string]string{"en": "Hello", "fr": "Bonjour", "de": "Hallo"}

// readme is served as hello://readme.
//
//go:embed README.md
var readme string

// debugLogger is the part of the SDK's logger (sdk.Logger) the provider
// uses.
type debugLogger interface {
	Debug(msg string, args ...any)
}

// hello is the provider. Its methods are safe for concurrent use.
type hello struct {
	log   debugLogger
	tools sdk.Tools

	// mu guards the settings below and the counter file: two concurrent
	// hello_count calls must not both read n and write n+by. It serialises
	// the calls of this process only; two hosts sharing a data dir run a
	// process each, and an exact count across them would need a file lock.
	mu      sync.Mutex
	suffix  string
	dataDir string
}

// newHello returns the provider; log, when not nil, receives its own log
// lines (the host reads them from stderr).
func newHello(log debugLogger) *hello {
	h := &hello{log: log}
	if log == nil {
		h.log = sdk.Logger("hello")
	}
	sdk.AddTool(&h.tools, sdk.Tool{
		Name:        "hello_greet",
		Title:       "Greet someone",
		Description: "Greets someone by name in English, French or German. Use it to say hello.",
		Annotations: sdk.Annotations{ReadOnlyHint: sdk.Bool(true), OpenWorldHint: sdk.Bool(false)},
		Class:       sdk.ClassRead,
	}, h.greet)
	sdk.AddTool(&h.tools, sdk.Tool{
		Name:        "hello_count",
		Title:       "Count up",
		Description: "Adds `by` (default 1) to a persistent counter and returns the new count.",
		Annotations: sdk.Annotations{
			ReadOnlyHint:    sdk.Bool(false),
			DestructiveHint: sdk.Bool(false),
			IdempotentHint:  sdk.Bool(false),
			OpenWorldHint:   sdk.Bool(false),
		},
		Class:   sdk.ClassAct,
		Timeout: 10 * time.Second,
	}, h.count)
	return h
}

// Configure reads the [providers.hello] settings. The host passes only the
// table's provider-specific keys; the keys it reads itself (enabled,
// command, args, sha256, ...) never arrive here.
func (h *hello) Configure(_ context.Context, req *sdk.ConfigureRequest) error {
	settings, err := sdk.ConfigTable("[providers."+providerName+"]", req.Config, "greeting_suffix")
	if err != nil {
		return err
	}
	suffix := ""
	if raw, ok := settings["greeting_suffix"]; ok {
		const path = "providers." + providerName + ".greeting_suffix"
		if sdk.JSONKind(raw) != "a string" || json.Unmarshal(raw, &suffix) != nil {
			return fmt.Errorf("%s must be a string of at most %d characters, not %s", path, maxSuffixChars, sdk.JSONKind(raw))
		}
		if n := utf8.RuneCountInString(suffix); n > maxSuffixChars {
			return fmt.Errorf("%s must be at most %d characters; got %d", path, maxSuffixChars, n)
		}
	}
	if req.DataDir == "" {
		return errors.New("no data directory: the host passes one in Configure")
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	h.suffix, h.dataDir = suffix, req.DataDir
	return nil
}

// Describe returns the catalog. Tool names start with the provider's name,
// so they cannot collide with another provider's.
func (h *hello) Describe(context.Context) (*sdk.Catalog, error) {
	return &sdk.Catalog{
		Name:    providerName,
		Version: "0.1.0",
		Tools:   h.tools.List(),
		Resources: []sdk.Resource{{
			URI:         readmeURI,
			Name:        "readme",
			Title:       "provider-hello README",
			Description: "What hello_greet and hello_count do and take.",
			MIMEType:    "text/markdown",
			Size:        int64(len(readme)),
		}},
	}, nil
}

// CallTool runs a tool. The tools' arguments arrive validated and
// decoded; an error a tool returns reaches the model as an error result.
func (h *hello) CallTool(ctx context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
	return h.tools.Call(ctx, req)
}

func (h *hello) greet(_ context.Context, _ *sdk.CallToolRequest, args greetArgs) (*sdk.CallToolResult, greetResult, error) {
	h.mu.Lock()
	suffix := h.suffix
	h.mu.Unlock()
	greeting := greetings[args.Language] + ", " + strings.TrimSpace(args.Name) + "!" + suffix
	return sdk.TextResult(greeting), greetResult{Greeting: greeting}, nil
}

func (h *hello) count(ctx context.Context, req *sdk.CallToolRequest, args countArgs) (*sdk.CallToolResult, countResult, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	// The call may have been cancelled while it waited for the lock.
	if err := ctx.Err(); err != nil {
		return nil, countResult{}, err
	}
	n, err := readCount(h.dataDir)
	if err != nil {
		return nil, countResult{}, err
	}
	n += args.By
	if err := writeCount(h.dataDir, n); err != nil {
		return nil, countResult{}, err
	}
	// Progress reaches the client only when it sent a progress token; the
	// call is a no-op otherwise.
	if err := req.Progress(ctx, sdk.Progress{Progress: 1, Total: 1, Message: "counter saved"}); err != nil {
		return nil, countResult{}, err
	}
	h.log.Debug("counter updated", "by", args.By, "count", n)
	return sdk.TextResult(fmt.Sprintf("The count is %d.", n)), countResult{Count: n}, nil
}

// readCount returns the saved count, 0 when nothing was saved yet.
func readCount(dir string) (int64, error) {
	b, err := os.ReadFile(filepath.Join(dir, countFile))
	if errors.Is(err, os.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("read counter: %w", err)
	}
	var saved struct {
		Count int64 `json:"count"`
	}
	if err := json.Unmarshal(b, &saved); err != nil {
		return 0, fmt.Errorf("counter file %s is corrupt (%v); delete it to start again from 0", filepath.Join(dir, countFile), err)
	}
	return saved.Count, nil
}

// writeCount saves n atomically: a reader sees the old file or the new
// one, never a partial write, even if the process dies half-way.
func writeCount(dir string, n int64) error {
	b, err := json.Marshal(map[string]int64{"count": n})
	if err != nil {
		return err
	}
	tmp, err := os.CreateTemp(dir, countFile+".*.tmp")
	if err != nil {
		return fmt.Errorf("save counter: %w", err)
	}
	defer os.Remove(tmp.Name()) // after a successful rename there is nothing to remove
	if _, err := tmp.Write(append(b, '\n')); err != nil {
		tmp.Close()
		return fmt.Errorf("save counter: %w", err)
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return fmt.Errorf("save counter: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("save counter: %w", err)
	}
	if err := os.Rename(tmp.Name(), filepath.Join(dir, countFile)); err != nil {
		return fmt.Errorf("save counter: %w", err)
	}
	return nil
}

// ReadResource returns the README; any other URI is not found.
func (h *hello) ReadResource(_ context.Context, req *sdk.ReadResourceRequest) (*sdk.ReadResourceResult, error) {
	if req.URI != readmeURI {
		return nil, fmt.Errorf("%w: %s (provider-hello serves only %s)", sdk.ErrResourceNotFound, req.URI, readmeURI)
	}
	return &sdk.ReadResourceResult{Contents: []sdk.ResourceContents{{URI: readmeURI, MIMEType: "text/markdown", Text: readme}}}, nil
}
