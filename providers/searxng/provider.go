package searxng

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/openhuman/openhuman-host/sdk"
)

// Version is the provider's version, reported by Describe and sent in the
// User-Agent of every search (openhuman-host-searxng/<Version>).
const Version = "0.1.0"

// providerName is the provider's name in its catalog.
const providerName = "searxng"

// instructions is what the provider adds to the host's MCP instructions.
const instructions = "Web search: searxng_search queries the operator's SearXNG instance (several search engines at once) " +
	"for current or public information; pick categories news or images when that is what you need."

// toolTimeoutMargin is added to timeout_secs for the tool's own deadline,
// so that the provider's timeout, with its message, fires before the
// host's.
const toolTimeoutMargin = 5 * time.Second

// Options configures [New]; a nil *Options uses every default.
type Options struct {
	// Logger receives the provider's log: the instance's endpoint, status
	// codes, counts and durations, never queries or results. Nil discards
	// it.
	Logger hclog.Logger
}

// Provider is the SearXNG provider. Create it with [New] and call
// Configure before anything else; its methods are safe for concurrent use
// once Configure has returned. It implements [sdk.Provider].
type Provider struct {
	log   hclog.Logger
	tools sdk.Tools // searxng_search, for the current settings

	mu     sync.RWMutex
	client *client // nil until Configure succeeds
}

// New returns an unconfigured SearXNG provider, whose catalog shows
// searxng_search with the default settings; CallTool refuses calls until
// Configure replaces the tool with one that has a client.
func New(opts *Options) *Provider {
	p := &Provider{log: hclog.NewNullLogger()}
	if opts != nil && opts.Logger != nil {
		p.log = opts.Logger
	}
	defaults := settings{maxResults: defaultMaxResults, timeoutSecs: defaultTimeoutSecs}
	sdk.AddTool(&p.tools, searchTool(defaults), search{cfg: defaults, log: p.log}.run)
	return p
}

// Configure reads [providers.searxng]: base_url (required), max_results,
// default_language and timeout_secs. Unknown keys and bad values are
// errors that name the key and say what it must be. Configuring again
// replaces the settings for later calls.
func (p *Provider) Configure(_ context.Context, req *sdk.ConfigureRequest) error {
	cfg, err := parseSettings(req.Config)
	if err != nil {
		return err
	}
	c := newClient(cfg)
	p.mu.Lock()
	old := p.client
	sdk.AddTool(&p.tools, searchTool(cfg), search{cfg: cfg, c: c, log: p.log}.run)
	p.client = c
	p.mu.Unlock()
	if old != nil {
		old.closeIdle()
	}
	p.log.Debug("configured", "endpoint", endpoint(cfg.base), "max_results", cfg.maxResults,
		"default_language", cfg.language, "timeout_secs", cfg.timeoutSecs)
	return nil
}

// Describe returns the catalog: the tool searxng_search, whose
// max_results default and deadline follow the settings.
func (p *Provider) Describe(context.Context) (*sdk.Catalog, error) {
	return &sdk.Catalog{
		Name:         providerName,
		Version:      Version,
		Tools:        p.tools.List(),
		Instructions: instructions,
	}, nil
}

// CallTool runs searxng_search. Bad arguments and every failure of the
// instance are isError results that say what to do; an error is returned
// only when the call's context ends, the provider is not configured, or
// the tool is not searxng_search.
func (p *Provider) CallTool(ctx context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
	p.mu.RLock()
	configured := p.client != nil
	p.mu.RUnlock()
	if !configured {
		return nil, errors.New("searxng provider is not configured")
	}
	return p.tools.Call(ctx, req)
}

// ReadResource always fails: the provider serves no resources.
func (p *Provider) ReadResource(_ context.Context, req *sdk.ReadResourceRequest) (*sdk.ReadResourceResult, error) {
	return nil, fmt.Errorf("searxng provider: %w: %s", sdk.ErrResourceNotFound, req.URI)
}

// Close releases the provider's idle connections; it is safe to call more
// than once and before Configure.
func (p *Provider) Close() error {
	p.mu.RLock()
	c := p.client
	p.mu.RUnlock()
	if c != nil {
		c.closeIdle()
	}
	return nil
}

var _ sdk.Provider = (*Provider)(nil)
