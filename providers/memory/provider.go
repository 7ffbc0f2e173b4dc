package memory

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/openhuman/openhuman-host/sdk"
)

// providerName and providerVersion identify the provider in its catalog.
const (
	providerName    = "memory"
	providerVersion = "0.1.0"
)

// instructions is what the provider adds to the host's MCP instructions.
const instructions = "Long-term memory: save facts, decisions and documents worth keeping with memory.store " +
	"(same title updates them), find them again with memory.search, and read a whole chunk with tree.read_chunk."

// Options configure a [Provider]. A nil *Options uses every default.
type Options struct {
	// Logger receives the provider's logs as given, so name it for the
	// component (provider.memory). It never receives SQL, memory contents
	// or queries. Nil discards logs.
	Logger hclog.Logger
	// Now returns the current time for created and updated timestamps. Nil
	// uses time.Now.
	Now func() time.Time
}

// Provider is the memory provider. Create it with [New], call Configure
// once, and Close it when done; its other methods are safe for concurrent
// use after Configure returns.
type Provider struct {
	logger hclog.Logger
	now    func() time.Time

	mu    sync.Mutex
	store *store // nil until Configure succeeds and after Close
}

// New returns an unconfigured memory provider.
func New(opts *Options) *Provider {
	p := &Provider{logger: hclog.NewNullLogger(), now: time.Now}
	if opts != nil {
		if opts.Logger != nil {
			p.logger = opts.Logger
		}
		if opts.Now != nil {
			p.now = opts.Now
		}
	}
	return p
}

// config is the [providers.memory] table. It has no keys of its own yet;
// the host removes "enabled" before passing the table on.
type config struct{}

// configKeys are the keys config accepts.
var configKeys = jsonFields(&config{})

// parseConfig decodes the [providers.memory] table, refusing unknown keys.
func parseConfig(raw json.RawMessage) (config, error) {
	var cfg config
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
		return cfg, nil
	}
	var table map[string]json.RawMessage
	if err := json.Unmarshal(raw, &table); err != nil {
		return cfg, fmt.Errorf("memory provider: [providers.memory] must be a table: %w", err)
	}
	var unknown []string
	for k := range table {
		if !slices.Contains(configKeys, k) {
			unknown = append(unknown, fmt.Sprintf("%q", k))
		}
	}
	if len(unknown) > 0 {
		slices.Sort(unknown)
		accepted := "it accepts no keys besides enabled"
		if len(configKeys) > 0 {
			accepted = "accepted keys: " + strings.Join(configKeys, ", ")
		}
		return cfg, fmt.Errorf("memory provider: unknown key %s in [providers.memory] (%s); remove it",
			strings.Join(unknown, ", "), accepted)
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&cfg); err != nil {
		return cfg, fmt.Errorf("memory provider: [providers.memory]: %w", err)
	}
	return cfg, nil
}

// Configure checks the provider's config and opens memory.db in the data
// directory, creating or upgrading its schema.
func (p *Provider) Configure(ctx context.Context, req *sdk.ConfigureRequest) error {
	if err := checkFTS5(fts5Compiled); err != nil {
		return err
	}
	if _, err := parseConfig(req.Config); err != nil {
		return err
	}
	if req.DataDir == "" {
		return errors.New("memory provider: the host gave no data directory")
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.store != nil {
		return errors.New("memory provider: already configured")
	}
	path := filepath.Join(req.DataDir, dbFileName)
	st, err := openStore(ctx, path, p.now, p.logger)
	if err != nil {
		if errors.Is(err, ErrNoFTS5) {
			return err
		}
		return fmt.Errorf("memory provider: %w", err)
	}
	p.store = st
	p.logger.Debug("opened memory database", "path", path, "schema_version", schemaVersion())
	return nil
}

// Describe returns the provider's tools.
func (p *Provider) Describe(context.Context) (*sdk.Catalog, error) {
	specs := make([]sdk.Tool, len(tools))
	for i, t := range tools {
		specs[i] = t.spec
	}
	return &sdk.Catalog{
		Name:         providerName,
		Version:      providerVersion,
		Tools:        specs,
		Instructions: instructions,
	}, nil
}

// CallTool runs one of the provider's tools.
func (p *Provider) CallTool(ctx context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
	t, ok := toolsByName[req.Name]
	if !ok {
		return nil, fmt.Errorf("memory provider has no tool %q", req.Name)
	}
	p.mu.Lock()
	st := p.store
	p.mu.Unlock()
	if st == nil {
		return nil, errors.New("memory provider is not configured")
	}
	res, err := t.run(ctx, p, st, req.Arguments)
	if err != nil {
		p.logger.Error("tool failed", "tool", req.Name, "error", err)
		return nil, fmt.Errorf("%s: %w", req.Name, err)
	}
	return res, nil
}

// ReadResource always fails: the memory provider serves no resources.
func (p *Provider) ReadResource(_ context.Context, req *sdk.ReadResourceRequest) (*sdk.ReadResourceResult, error) {
	return nil, fmt.Errorf("memory provider: %w: %s", sdk.ErrResourceNotFound, req.URI)
}

// Close closes the database. Calls in flight may fail; Close is safe to
// call more than once and before Configure.
func (p *Provider) Close() error {
	p.mu.Lock()
	st := p.store
	p.store = nil
	p.mu.Unlock()
	if st == nil {
		return nil
	}
	if err := st.close(); err != nil {
		return fmt.Errorf("memory provider: close database: %w", err)
	}
	return nil
}

var _ sdk.Provider = (*Provider)(nil)
