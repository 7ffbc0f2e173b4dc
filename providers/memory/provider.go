package memory

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
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
const instructions = "Long-term memory: save facts, decisions and documents worth keeping with memory_store " +
	"(same title updates them); find them again with memory_search (exact keywords) or memory_recall (a " +
	"question in natural language); read a whole chunk with tree_read_chunk; annotate or tag chunks with " +
	"memory_note and tree_tag; explore with tree_browse, tree_list_sources and tree_top_entities; delete with " +
	"memory_forget (dry_run first) and read replaced text with memory_history."

// Options configure a [Provider]. A nil *Options uses every default.
type Options struct {
	// Logger receives the provider's logs as given, so name it for the
	// component (provider.memory). It never receives SQL, memory contents
	// or queries. Nil discards logs.
	Logger hclog.Logger
	// Now returns the current time for created and updated timestamps. Nil
	// uses time.Now.
	Now func() time.Time
	// Extractors find the entities of every stored chunk, in order. Nil
	// uses DefaultExtractor alone; to add kinds, pass DefaultExtractor()
	// together with your own.
	Extractors []Extractor
	// HTTPClient is used for the embeddings endpoint. Nil uses a client
	// without a global timeout (each request is bounded by the
	// configured timeout_secs).
	HTTPClient *http.Client
}

// Provider is the memory provider. Create it with [New], call Configure
// once, and Close it when done; its other methods are safe for concurrent
// use after Configure returns.
type Provider struct {
	logger     hclog.Logger
	now        func() time.Time
	extractors []Extractor
	httpClient *http.Client

	// embedder is nil when no embeddings endpoint is configured; set by
	// Configure before any call.
	embedder embedder
	// dims is the dimension of the configured model's vectors, 0 until
	// known (from the dimensions setting or the first answer).
	dims atomic.Int64
	// kick wakes the embeddings backfill.
	kick chan struct{}
	// stopBackfill cancels the backfill; backfillDone closes when it
	// returned.
	stopBackfill context.CancelFunc
	backfillDone chan struct{}
	// backfillDelay is backfillStartDelay; tests shorten it.
	backfillDelay time.Duration
	// endpointDown is the endpoint's last failure of a tool call.
	endpointDown atomic.Pointer[endpointFailure]
	// skipped are chunks the endpoint refused alone; the backfill leaves
	// them until the process restarts.
	quarantineMu sync.Mutex
	skipped      map[int64]bool

	// scopes map clients to the namespaces they may use; keepVersions is
	// how long replaced documents keep their previous text. Both are set
	// by Configure before any call.
	scopes       scopes
	keepVersions time.Duration

	// tools are the provider's tools, added by New.
	tools sdk.Tools

	mu    sync.Mutex
	store *store // nil until Configure succeeds and after Close
}

// New returns an unconfigured memory provider.
func New(opts *Options) *Provider {
	p := &Provider{logger: hclog.NewNullLogger(), now: time.Now, extractors: []Extractor{DefaultExtractor()}, kick: make(chan struct{}, 1), backfillDelay: backfillStartDelay}
	if opts != nil {
		if opts.Logger != nil {
			p.logger = opts.Logger
		}
		if opts.Now != nil {
			p.now = opts.Now
		}
		if opts.Extractors != nil {
			p.extractors = opts.Extractors
		}
		p.httpClient = opts.HTTPClient
	}
	p.addTools()
	return p
}

// config is the [providers.memory] table; the host removes "enabled"
// before passing it on.
type config struct {
	// Embeddings configures memory_recall's embeddings endpoint; nil
	// means keyword recall.
	Embeddings *embeddingsConfig `json:"embeddings"`
	// Scopes limit clients to namespaces; none means every client may
	// use every namespace.
	Scopes []scopeConfig `json:"scopes"`
	// KeepVersionsDays is how long a document replaced by memory_store or
	// memory_note keeps its previous text, in days; nil means
	// defaultKeepVersionsDays, 0 keeps none.
	KeepVersionsDays *int `json:"keep_versions_days"`
}

// parseConfig decodes the [providers.memory] table, refusing unknown keys
// at every level with the keys that are accepted.
func parseConfig(raw json.RawMessage) (config, error) {
	var cfg config
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
		return cfg, nil
	}
	table, err := checkTableKeys("[providers.memory]", raw, jsonFields(&cfg))
	if err != nil {
		return cfg, err
	}
	if sub, ok := table["embeddings"]; ok {
		if kind := sdk.JSONKind(sub); kind != "a table" {
			return cfg, fmt.Errorf("memory provider: [providers.memory] embeddings must be a table, not %s", kind)
		}
		if _, err := checkTableKeys("[providers.memory.embeddings]", sub, jsonFields(&embeddingsConfig{})); err != nil {
			return cfg, err
		}
	}
	if sub, ok := table["scopes"]; ok {
		var entries []json.RawMessage
		if json.Unmarshal(sub, &entries) != nil {
			return cfg, fmt.Errorf("memory provider: [providers.memory] scopes must be an array of tables ([[providers.memory.scopes]]), not %s", sdk.JSONKind(sub))
		}
		for i, e := range entries {
			if kind := sdk.JSONKind(e); kind != "a table" {
				return cfg, fmt.Errorf("memory provider: [[providers.memory.scopes]] entry %d must be a table, not %s", i+1, kind)
			}
			if _, err := checkTableKeys(fmt.Sprintf("[[providers.memory.scopes]] entry %d", i+1), e, jsonFields(&scopeConfig{})); err != nil {
				return cfg, err
			}
		}
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&cfg); err != nil {
		var typeErr *json.UnmarshalTypeError
		if errors.As(err, &typeErr) {
			want := describeType(typeErr.Type)
			if k := typeErr.Type.Kind(); k == reflect.Struct || k == reflect.Pointer {
				want = "a table"
			}
			return cfg, fmt.Errorf("memory provider: [providers.memory] %s must be %s, not %s", typeErr.Field, want, describeJSONValue(typeErr.Value))
		}
		return cfg, fmt.Errorf("memory provider: [providers.memory]: %w", err)
	}
	if cfg.Embeddings != nil {
		if err := cfg.Embeddings.Validate(embeddingsTable); err != nil {
			return cfg, fmt.Errorf("memory provider: %w", err)
		}
	}
	if d := cfg.KeepVersionsDays; d != nil && (*d < 0 || *d > maxKeepVersionsDays) {
		return cfg, fmt.Errorf("memory provider: [providers.memory] keep_versions_days must be 0 to %d, not %d", maxKeepVersionsDays, *d)
	}
	if _, err := newScopes(cfg.Scopes); err != nil {
		return cfg, fmt.Errorf("memory provider: %w", err)
	}
	return cfg, nil
}

// checkTableKeys decodes raw as a JSON object and refuses keys not in
// accepted, naming the table.
func checkTableKeys(name string, raw json.RawMessage, accepted []string) (map[string]json.RawMessage, error) {
	table, err := sdk.ConfigTable(name, raw, accepted...)
	if err != nil {
		return nil, fmt.Errorf("memory provider: %w", err)
	}
	return table, nil
}

// describeType names a Go config type in TOML terms.
func describeType(t reflect.Type) string {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.String:
		return "a string"
	case reflect.Int:
		return "an integer"
	case reflect.Float64:
		return "a number"
	case reflect.Slice:
		return "an array of " + strings.TrimPrefix(describeType(t.Elem()), "a ") + "s"
	default:
		return "a " + t.Kind().String()
	}
}

// describeJSONValue names the value of an encoding/json
// UnmarshalTypeError ("string", "number 1.5", "object") in TOML terms:
// "a string", "1.5", "a table".
func describeJSONValue(v string) string {
	if n, ok := strings.CutPrefix(v, "number "); ok {
		return n
	}
	switch v {
	case "object":
		return "a table"
	case "array":
		return "an array"
	case "bool":
		return "a boolean"
	}
	return "a " + v
}

// jsonFields lists the JSON names of the fields of the struct dst points
// to.
func jsonFields(dst any) []string {
	t := reflect.TypeOf(dst).Elem()
	names := make([]string, 0, t.NumField())
	for f := range t.Fields() {
		if name, _, _ := strings.Cut(f.Tag.Get("json"), ","); name != "" && name != "-" {
			names = append(names, name)
		}
	}
	return names
}

// Configure checks the provider's config and opens memory.db in the data
// directory, creating or upgrading its schema; or, when the host passes
// the secret [SecretStorageDriver] "postgres" ([storage] driver =
// "postgres"), the PostgreSQL database of [SecretStorageDSN], which every
// replica of the host shares, migrating it under PostgreSQL's migration
// lock.
func (p *Provider) Configure(ctx context.Context, req *sdk.ConfigureRequest) error {
	pg := req.Secrets[SecretStorageDriver] == "postgres"
	if !pg {
		if err := checkFTS5(fts5Compiled); err != nil {
			return err
		}
	}
	cfg, err := parseConfig(req.Config)
	if err != nil {
		return err
	}
	if req.DataDir == "" && !pg {
		return errors.New("memory provider: the host gave no data directory")
	}
	dsn := req.Secrets[SecretStorageDSN]
	if pg && dsn == "" {
		return errors.New("memory provider: the host chose PostgreSQL storage but passed no connection string")
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.store != nil {
		return errors.New("memory provider: already configured")
	}
	path := filepath.Join(req.DataDir, dbFileName)
	var emb embedder
	if cfg.Embeddings != nil {
		if emb, err = newOpenAIEmbedder(*cfg.Embeddings, req.Secrets["embeddings.api_key"], p.httpClient); err != nil {
			return fmt.Errorf("memory provider: %w", err)
		}
	}
	p.scopes, _ = newScopes(cfg.Scopes) // checked by parseConfig
	p.keepVersions = time.Duration(defaultKeepVersionsDays) * 24 * time.Hour
	if cfg.KeepVersionsDays != nil {
		p.keepVersions = time.Duration(*cfg.KeepVersionsDays) * 24 * time.Hour
	}
	var st *store
	if pg {
		path = ""
		st, err = openPostgresStore(ctx, dsn, p.now, p.extractors, p.logger)
	} else {
		st, err = openStore(ctx, path, p.now, p.extractors, p.logger)
	}
	if err != nil {
		if errors.Is(err, ErrNoFTS5) {
			return err
		}
		return fmt.Errorf("memory provider: %w", err)
	}
	st.keepVersions = p.keepVersions
	p.store = st
	if pg {
		p.logger.Debug("opened memory database", "postgres", st.where)
	} else {
		p.logger.Debug("opened memory database", "path", path, "schema_version", schemaVersion())
	}
	if emb != nil {
		p.embedder = emb
		p.dims.Store(int64(cfg.Embeddings.Dimensions))
		bctx, cancel := context.WithCancel(context.Background())
		p.stopBackfill, p.backfillDone = cancel, make(chan struct{})
		go p.backfill(bctx, st)
	}
	return nil
}

// Describe returns the provider's tools.
func (p *Provider) Describe(context.Context) (*sdk.Catalog, error) {
	return &sdk.Catalog{
		Name:         providerName,
		Version:      providerVersion,
		Tools:        p.tools.List(),
		Instructions: instructions,
	}, nil
}

// CallTool runs one of the provider's tools, in the caller's scope. It
// fails before Configure and after Close, and for a tool the provider
// does not have.
func (p *Provider) CallTool(ctx context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
	if p.openStore() == nil {
		return nil, errNotConfigured
	}
	res, err := p.tools.Call(withScope(ctx, p.scopes.of(req.Caller)), req)
	if err != nil {
		return nil, fmt.Errorf("memory provider: %w", err)
	}
	if req.Caller.ReadsStructuredContent {
		// The client's model reads the structured content; text that
		// lists the same hits again would cost their tokens twice.
		res = briefResult(req.Arguments, res)
	}
	return res, nil
}

// openStore returns the open store, nil before Configure and after
// Close.
func (p *Provider) openStore() *store {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.store
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
	stop, done := p.stopBackfill, p.backfillDone
	p.stopBackfill = nil
	p.mu.Unlock()
	if st == nil {
		return nil
	}
	if stop != nil {
		stop()
		<-done
	}
	if err := st.close(); err != nil {
		return fmt.Errorf("memory provider: close database: %w", err)
	}
	return nil
}

var _ sdk.Provider = (*Provider)(nil)
