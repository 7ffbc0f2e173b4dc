// Package server is the MCP side of the host: it registers the merged
// catalog with the official go-sdk server, runs the tools/call pipeline
// (lookup, argument validation, SecurityPolicy, dispatch with a deadline,
// audit) and serves it over stdio or Streamable HTTP.
//
// Nothing here knows a concrete provider: tools, resources and their
// providers come from a [catalog.Catalog] and a set of [Dispatcher]s.
package server

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/openhuman/openhuman-host/internal/platform"

	"github.com/hashicorp/go-hclog"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"

	"github.com/openhuman/openhuman-host/host/audit"
	"github.com/openhuman/openhuman-host/host/catalog"
	"github.com/openhuman/openhuman-host/host/policy"
	"github.com/openhuman/openhuman-host/sdk"
)

// Name is the serverInfo name the host reports in initialize.
const Name = "openhuman-host"

// DefaultToolTimeout is the deadline of a tool call when neither the config
// nor the tool sets one.
const DefaultToolTimeout = 120 * time.Second

// MaxDepth is how deep provider-to-host tool calls may nest: a client's
// call has depth 0, each host service hop adds one.
const MaxDepth = 6

// Dispatcher runs the calls of one provider; *plugins.Provider is one.
type Dispatcher interface {
	CallTool(ctx context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error)
	ReadResource(ctx context.Context, req *sdk.ReadResourceRequest) (*sdk.ReadResourceResult, error)
}

// Auditor records one row per tool call attempt; *audit.Log is one, and
// its package doc states the rule the server follows: an act is
// dispatched only once Begin has written its row, everything else is
// recorded without waiting.
type Auditor interface {
	// Record queues the row of a call that is not an act that ran (a read,
	// a denied attempt); it must not block.
	Record(ctx context.Context, r audit.Record) error
	// Begin durably writes the pending row of an act before it runs and
	// returns its id; with limit >= 0 it also applies the hourly act
	// budget and returns an *audit.BudgetError when it is used up, and
	// with profileLimit >= 0 the budget of r.Profile's acts. Any other
	// error refuses the act.
	Begin(ctx context.Context, r audit.Record, limit, profileLimit int) (uint64, error)
	// Complete queues the outcome of the act Begin recorded as id; it must
	// not block.
	Complete(id uint64, r audit.Record) error
}

// Options configures a [Server]; a nil *Options uses every default. The
// fields down to Replica are fixed when the server is made; the ones after
// it are what a config reload changes ([Server.Reconfigure]).
type Options struct {
	// Version is the serverInfo version. Default "dev".
	Version string
	// Instructions is the MCP instructions string sent in initialize
	// (see [Instructions]). Default: Instructions(nil, nil), a short
	// description of the host and its policy.
	Instructions string
	// AuditRules say which argument values ([audit.SummarizeArgs]) and
	// which keys of a result's structured content (the row's result
	// reference) audit rows keep, for every tool: the host passes its
	// built-in providers' rules together. Default: none, so rows keep
	// numbers, booleans, null and titles of the arguments, and a result
	// reference only when the result sets one.
	AuditRules sdk.AuditRules
	// Logger is the host's logger; the server logs under "server". Default:
	// a null logger.
	Logger hclog.Logger
	// Audit receives one row per attempt; nil records nothing.
	Audit Auditor
	// NotLoaded maps the providers that failed to load to the reason; an
	// unknown tool's error names them, since the tool may be theirs.
	// [Server.Update] replaces it.
	NotLoaded map[string]string
	// StateKey is the HMAC-SHA256 key that seals the requestState of
	// multi-round-trip results (confirmations and calls waiting for the
	// client), at least 32 bytes; replicas that share clients share it.
	// Default: a random key, so states do not outlive the process.
	StateKey []byte
	// Profile, when set, is the profile of every client of this server
	// (serve --profile on stdio), whatever the path or the client's name;
	// it must be one of Profiles. Default "": chosen per client.
	Profile string
	// TracerProvider, when set, records a span per MCP request and per
	// tools/call pipeline run, continuing the W3C trace context a client
	// sends in params._meta or HTTP headers. Default nil: no spans.
	TracerProvider trace.TracerProvider
	// MeterProvider, when set, records mcp.server.operation.duration,
	// mcp.server.session.duration, openhuman.tool.calls,
	// openhuman.tool.call.duration and openhuman.sessions. Default nil:
	// no metrics.
	MeterProvider metric.MeterProvider
	// Replica names this server among replicas that share one database
	// behind a load balancer ([server] replica): GET /healthz and the
	// Openhuman-Replica header of every HTTP response carry it, and a
	// multi-round-trip retry that reaches another replica is told which
	// one holds its call. Empty: unnamed.
	Replica string

	// Policy decides whether a call may run. Default: level "supervised"
	// with no lists and no budget; in [Server.Reconfigure], nil keeps the
	// current one.
	Policy *policy.Policy
	// ToolTimeout is the deadline of a call to a tool that sets none.
	// Default [DefaultToolTimeout].
	ToolTimeout time.Duration
	// ProviderToolTimeouts maps a provider's name to the deadline of every
	// call to its tools ([providers.<name>] tool_timeout_secs); it wins
	// over the tool's own timeout and ToolTimeout.
	ProviderToolTimeouts map[string]time.Duration
	// ConfirmActs is [autonomy] confirm_acts: ConfirmOff (default, "")
	// runs act tools unasked; ConfirmWhenSupported asks the user, through
	// the client's elicitation (MCP 2025-11-25, client/elicitation),
	// before each act tool in supervised mode when the client can ask;
	// ConfirmRequired also refuses acts from callers that cannot ask.
	// Command-line calls count as confirmed: a person typed them.
	// Clients of protocol 2026-07-28 and later are asked through
	// multi-round-trip results (SEP-2322).
	ConfirmActs string
	// RecordReads audits read-class tools too; act tools are always
	// audited. Default false here; the config's default is true.
	RecordReads bool
	// DisabledHint, when set, says for a tool name that is not served
	// whether it belongs to a disabled provider and which config key
	// enables it ("" when it does not); an unknown tool's -32602 then
	// carries that hint.
	DisabledHint func(tool string) string
	// StructuredContentClients is [server] structured_content_clients:
	// the clientInfo.name values, matched exactly, of the MCP clients
	// that hand a tool result's structuredContent to their model, or
	// [AnyClient] for every client. Their calls carry
	// sdk.Caller.ReadsStructuredContent, and a text block of their
	// results that repeats structuredContent as JSON becomes
	// [StructuredContentNote] (MCP 2025-06-18 and later, server/tools
	// "Structured Content"). Default empty: every client gets the full
	// text. A call takes the list in force when it starts.
	StructuredContentClients []string
	// Profiles are the [profiles.<name>] tables by name; nil means none.
	// A client of a profile sees and may call what the profile's policy
	// allows; other clients get Policy.
	Profiles map[string]*Profile
	// ToolOverrides replace, by tool name, what clients are told about
	// tools ([tools.<name>]); a change is announced with
	// notifications/tools/list_changed.
	ToolOverrides map[string]ToolOverride
	// Embeddings, when set, make tool_search fuse its keyword ranking
	// with embeddings ([discovery.embeddings]); nil ranks by keywords
	// only. Another pointer than the current one drops every tool vector
	// and embeds the tools again in the background, so pass the same
	// value while the endpoint's settings do not change.
	Embeddings *Embeddings
}

// reloadable returns o with the fields a config reload changes taken from
// set (see [Options]); the fields fixed at [New] stay o's.
func (o Options) reloadable(set *Options) Options {
	o.Policy = set.Policy
	o.ToolTimeout = set.ToolTimeout
	o.ProviderToolTimeouts = set.ProviderToolTimeouts
	o.ConfirmActs = set.ConfirmActs
	o.RecordReads = set.RecordReads
	o.DisabledHint = set.DisabledHint
	o.StructuredContentClients = set.StructuredContentClients
	o.Profiles = set.Profiles
	o.ToolOverrides = set.ToolOverrides
	o.Embeddings = set.Embeddings
	return o
}

// Replica returns the name of this server among replicas
// ([Options.Replica]); empty when unnamed.
func (s *Server) Replica() string { return s.opts.Replica }

// Values of [Options.ConfirmActs], as in [autonomy] confirm_acts.
const (
	ConfirmOff           = "off"
	ConfirmWhenSupported = "when_supported"
	ConfirmRequired      = "required"
)

// Confirmer asks the user whether a call may run, showing message; it
// returns true only on an explicit yes. An error means the question could
// not be asked or answered.
type Confirmer func(ctx context.Context, message string) (bool, error)

// Server is the host's MCP server.
type Server struct {
	opts     Options
	log      hclog.Logger
	mcp      *mcp.Server
	view     atomic.Pointer[view]
	updateMu sync.Mutex // serialises Update
	sessions sync.Map   // *mcp.ServerSession → *sessionInfo
	calls    sync.Map   // call token → *callEntry, while the call runs
	// discovery is the tool index tool_search ranks with; vectors are
	// the tools' embeddings it fuses with it.
	discovery discoveryIndex
	vectors   toolVectors
	tokens    sync.Map // session token → *mcp.ServerSession, while it is connected
	// clients are the clients of protocol 2026-07-28 and later seen
	// lately, by subject, name and version ([Server.client]).
	clientsMu sync.Mutex
	clients   map[string]*knownClient
	// settings are the options in force: opts with the fields
	// Reconfigure changes, swapped whole.
	settings atomic.Pointer[Options]
	// states seals multi-round-trip requestStates; spent remembers the
	// confirmations used; parked holds calls waiting for a client's
	// answer.
	states sealer
	spent  spentSet
	parked parkedSet
	// clockSkew (ns) moves the clock of requestState expiries; tests
	// set it.
	clockSkew atomic.Int64
	// stopCtx is cancelled by CancelCalls; every tool call's context ends
	// with it.
	stopCtx   context.Context
	stopCalls context.CancelFunc
	// tel is nil unless Options.Traces or Options.Metrics is set.
	tel *serverTelemetry
}

// Reconfigure replaces the options a config reload changes, the fields
// from Policy on (see [Options]); the others are fixed at [New] and
// ignored here. Calls already running keep the options they started with.
func (s *Server) Reconfigure(opts Options) {
	old := s.settings.Load()
	set := s.opts.reloadable(&opts)
	if set.Policy == nil {
		set.Policy = old.Policy
	}
	if set.ToolTimeout <= 0 {
		set.ToolTimeout = DefaultToolTimeout
	}
	before := profileViews(old, s.view.Load())
	s.settings.Store(&set)
	if set.Policy != old.Policy || !reflect.DeepEqual(set.ToolOverrides, old.ToolOverrides) {
		// The tools a client may call, or what it is told about them,
		// can differ: list them again, so sessions get
		// notifications/tools/list_changed when they do.
		v := s.view.Load()
		s.Update(v.catalog, v.providers, v.notLoaded)
	}
	if v := s.view.Load(); !reflect.DeepEqual(before, profileViews(&set, v)) {
		// A profile's clients see other tools now, which the go-sdk's
		// registrations do not show.
		s.announceToolsChanged(v)
	}
	if set.Embeddings != old.Embeddings {
		s.updateMu.Lock()
		s.refreshVectors(s.view.Load(), s.settings.Load().Embeddings)
		s.updateMu.Unlock()
	}
}

// CancelCalls cancels every tool call that is running and every one that
// starts afterwards: their providers see their contexts cancelled and the
// clients get a "cancelled" error result at once. A server that is
// shutting down calls it so that waiting for in-flight calls is short.
func (s *Server) CancelCalls() { s.stopCalls() }

// view is what the server serves; [Server.Update] swaps it whole.
type view struct {
	catalog   *catalog.Catalog
	providers map[string]Dispatcher
	notLoaded map[string]string
	// tools, resources and templates are what is registered with the
	// go-sdk server, by name or URI (template).
	tools map[string]*catalog.Tool
	// hidden are the catalog's tools the policy refuses whatever the
	// call ([policy.Policy.Refusal]): left out of tools/list, they still
	// get the policy's refusal (and an audit row) when called.
	hidden    map[string]*catalog.Tool
	resources map[string]*catalog.Resource
	templates map[string]*catalog.ResourceTemplate
	prompts   map[string]*catalog.Prompt
}

// ErrUnknownTool is returned by [Server.Call] for a tool that is not in the
// catalog; MCP clients get JSON-RPC -32602 for it.
var ErrUnknownTool = errors.New("unknown tool")

// unknownTool is the error for a tool not in the catalog. When providers
// failed to load it names them with their reasons (each cut to 600 bytes),
// so a client sees why a tool it expects is missing.
func (s *Server) unknownTool(v *view, name string) error {
	if hint := s.settings.Load().DisabledHint; hint != nil {
		if h := hint(name); h != "" {
			return fmt.Errorf("%w %q: %s", ErrUnknownTool, name, h)
		}
	}
	if len(v.notLoaded) == 0 {
		return fmt.Errorf("%w %q", ErrUnknownTool, name)
	}
	names := make([]string, 0, len(v.notLoaded))
	for n := range v.notLoaded {
		names = append(names, n)
	}
	slices.Sort(names)
	parts := make([]string, len(names))
	for i, n := range names {
		reason := v.notLoaded[n]
		if len(reason) > 600 {
			reason = strings.ToValidUTF8(reason[:600], "") + "…"
		}
		parts[i] = n + " (" + reason + ")"
	}
	return fmt.Errorf("%w %q; it may belong to a provider that did not load: %s; fix the config, then %s",
		ErrUnknownTool, name, strings.Join(parts, "; "), platform.ReloadAdvice)
}

// New builds a server that serves cat, dispatching each tool to
// providers[tool.Provider]. Tools and resources whose provider is missing
// from providers are left out and logged.
func New(cat *catalog.Catalog, providers map[string]Dispatcher, opts *Options) (*Server, error) {
	s := &Server{}
	s.stopCtx, s.stopCalls = context.WithCancel(context.Background())
	if opts != nil {
		s.opts = *opts
	}
	if s.opts.Version == "" {
		s.opts.Version = "dev"
	}
	if s.opts.Logger == nil {
		s.opts.Logger = hclog.NewNullLogger()
	}
	if s.opts.ToolTimeout <= 0 {
		s.opts.ToolTimeout = DefaultToolTimeout
	}
	if s.opts.Policy == nil {
		p, err := policy.New(policy.Options{Level: policy.Supervised})
		if err != nil {
			return nil, fmt.Errorf("default policy: %w", err)
		}
		s.opts.Policy = p
	}
	if s.opts.Instructions == "" {
		s.opts.Instructions = Instructions(nil, nil)
	}
	switch {
	case len(s.opts.StateKey) == 0:
		s.opts.StateKey = newStateKey()
	case len(s.opts.StateKey) < 32:
		return nil, fmt.Errorf("state key: %d bytes, want at least 32", len(s.opts.StateKey))
	}
	if _, ok := s.opts.Profiles[s.opts.Profile]; s.opts.Profile != "" && !ok {
		return nil, fmt.Errorf("profile %q is not configured: add a [profiles.%s] table", s.opts.Profile, s.opts.Profile)
	}
	s.states = sealer{key: s.opts.StateKey}
	s.log = s.opts.Logger.Named("server")
	set := s.opts
	s.settings.Store(&set)
	s.mcp = mcp.NewServer(&mcp.Implementation{Name: Name, Title: "OpenHuman host", Version: s.opts.Version}, &mcp.ServerOptions{
		Instructions: s.opts.Instructions,
		Capabilities: &mcp.ServerCapabilities{
			Tools:       &mcp.ToolCapabilities{ListChanged: true},
			Resources:   &mcp.ResourceCapabilities{ListChanged: true, Subscribe: true},
			Prompts:     &mcp.PromptCapabilities{ListChanged: true},
			Completions: &mcp.CompletionCapabilities{},
			//lint:ignore SA1019 logging stays supported for clients on protocol versions before 2026-07-28.
			Logging: &mcp.LoggingCapabilities{},
		},
		InitializedHandler: func(_ context.Context, req *mcp.InitializedRequest) { s.session(req.Session) },
		SetCacheable:       setCacheable,
		CompletionHandler:  s.complete,
		SubscribeHandler: func(ctx context.Context, req *mcp.SubscribeRequest) error {
			return s.subscribe(ctx, req.Session, req.Params.URI, true)
		},
		UnsubscribeHandler: func(ctx context.Context, req *mcp.UnsubscribeRequest) error {
			return s.subscribe(ctx, req.Session, req.Params.URI, false)
		},
	})
	tel, err := newServerTelemetry(s.opts.TracerProvider, s.opts.MeterProvider)
	if err != nil {
		return nil, fmt.Errorf("telemetry instruments: %w", err)
	}
	s.tel = tel
	// The first is outermost: the span covers the whole request.
	middleware := []mcp.Middleware{s.namesMiddleware, s.sessionMiddleware}
	if tel != nil {
		middleware = append([]mcp.Middleware{s.telemetryMiddleware}, middleware...)
	}
	s.mcp.AddReceivingMiddleware(middleware...)
	s.view.Store(&view{})
	s.Update(cat, providers, s.opts.NotLoaded)
	s.addMetaTools()
	return s, nil
}

// namesMiddleware answers a tools/call of a tool the server does not
// serve with JSON-RPC -32602 and the host's own message, which names the
// providers that did not load and why (the go-sdk's own answer says only
// "unknown tool"). A tools/call or prompts/get by a declared or old dotted
// name ("notes.store") is passed on under the advertised name
// ("notes_store"), so the go-sdk finds the tool or prompt.
func (s *Server) namesMiddleware(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		switch params := req.GetParams().(type) {
		case *mcp.CallToolParamsRaw:
			if method == "tools/call" && params != nil && !isMetaTool(params.Name) {
				v := s.view.Load()
				t, known := v.tool(params.Name)
				if !known {
					return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: s.unknownTool(v, params.Name).Error()}
				}
				params.Name = t.Name
				if err := argumentsObject(params.Arguments); err != nil {
					return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("%s: %v", t.Name, err)}
				}
				if _, hidden := v.hidden[t.Name]; hidden {
					// Not registered with the go-sdk, which would call it
					// unknown: the pipeline refuses it as it would a
					// listed tool, and audits the attempt.
					if ctr, ok := req.(*mcp.CallToolRequest); ok {
						res, err := s.toolHandler(t.Name)(ctx, ctr)
						if err == nil && !structuredOutput(req) {
							return withoutStructure(res), nil
						}
						return res, err
					}
				}
			}
		case *mcp.GetPromptParams:
			if method == "prompts/get" && params != nil {
				if p, known := s.view.Load().prompt(params.Name); known {
					params.Name = p.Name
				}
			}
		}
		res, err := next(ctx, method, req)
		if err == nil && (method == "tools/list" || method == "resources/list" || method == "resources/templates/list") {
			if cr, ok := req.(clientRequest); ok {
				c, _ := s.clientCaller(cr)
				profile := s.profileOf(req, c.ClientName)
				if method == "tools/list" {
					res = s.listedFor(res, profile, clientCanConfirm(cr))
				} else {
					res = s.resourcesFor(res, profile)
				}
			}
		}
		if err == nil && !structuredOutput(req) {
			res = withoutStructure(res)
		}
		return res, err
	}
}

// argumentsObject checks that a tools/call's arguments, when present, are
// a JSON object (MCP server/tools, CallToolRequest: "arguments" is an
// object): anything else is a malformed request (JSON-RPC -32602), not a
// failed tool call.
func argumentsObject(raw json.RawMessage) error {
	b := bytes.TrimSpace(raw)
	if len(b) == 0 || string(b) == "null" || b[0] == '{' {
		return nil
	}
	kind := "a string"
	switch {
	case b[0] == '[':
		kind = "an array"
	case b[0] == 't' || b[0] == 'f':
		kind = "a boolean"
	case b[0] != '"':
		kind = "a number"
	}
	return fmt.Errorf("\"arguments\" must be a JSON object of named arguments, not %s", kind)
}

// structuredOutput reports whether req's client speaks a protocol version
// with tool outputSchema and structuredContent (2025-06-18 and later).
func structuredOutput(req mcp.Request) bool {
	r, ok := req.(clientRequest)
	if !ok {
		return true
	}
	v := r.ProtocolVersion()
	return v == "" || v >= structuredVersion
}

// withoutStructure returns res without outputSchema (tools/list) or
// structuredContent (tools/call), for a client of 2025-03-26 or earlier,
// which predates them; the text content already carries the result.
// Registered tools are copied, not changed.
func withoutStructure(res mcp.Result) mcp.Result {
	switch r := res.(type) {
	case *mcp.ListToolsResult:
		if r == nil {
			return res
		}
		out := *r
		out.Tools = make([]*mcp.Tool, len(r.Tools))
		for i, t := range r.Tools {
			c := *t
			c.OutputSchema = nil
			out.Tools[i] = &c
		}
		return &out
	case *mcp.CallToolResult:
		if r != nil {
			r.StructuredContent = nil
		}
	}
	return res
}

// tool returns the tool served under name, or under [sdk.ClientName] of
// it (a declared or dotted name).
func (v *view) tool(name string) (*catalog.Tool, bool) {
	for _, n := range []string{name, sdk.ClientName(name)} {
		if t, ok := v.tools[n]; ok {
			return t, true
		}
		if t, ok := v.hidden[n]; ok {
			return t, true
		}
	}
	return nil, false
}

// prompt returns the prompt served under name, or under [sdk.ClientName]
// of it.
func (v *view) prompt(name string) (*catalog.Prompt, bool) {
	if p, ok := v.prompts[name]; ok {
		return p, true
	}
	p, ok := v.prompts[sdk.ClientName(name)]
	return p, ok
}

// Update makes the server serve cat with providers from now on, and
// notLoaded as the providers that are missing and why. Tools the policy
// refuses whatever the call ([policy.Policy.Refusal]) are served but not
// listed: tools/list shows what a client may call. Only what differs
// from the catalog served before is registered again or removed, so
// connected sessions get notifications/tools/list_changed (and
// resources/list_changed) only when their lists really change (MCP
// 2025-11-25, server/tools "List Changed Notification"). Calls already
// running finish with the dispatcher they started with. Update is safe
// for concurrent use with calls and with itself.
func (s *Server) Update(cat *catalog.Catalog, providers map[string]Dispatcher, notLoaded map[string]string) {
	s.updateMu.Lock()
	defer s.updateMu.Unlock()
	old := s.view.Load()
	next := &view{
		catalog:   cat,
		providers: providers,
		notLoaded: notLoaded,
		tools:     map[string]*catalog.Tool{},
		hidden:    map[string]*catalog.Tool{},
		resources: map[string]*catalog.Resource{},
		templates: map[string]*catalog.ResourceTemplate{},
		prompts:   map[string]*catalog.Prompt{},
	}
	set := s.settings.Load()
	pol := set.Policy
	for _, t := range cat.Tools() {
		t := curated(t, set.ToolOverrides)
		if isMetaTool(t.Name) {
			s.log.Warn("tool skipped: its name is one of the host's discovery tools", "tool", t.Name, "provider", t.Provider)
			continue
		}
		if _, ok := providers[t.Provider]; !ok {
			s.log.Warn("tool skipped: its provider is not loaded", "tool", t.Name, "provider", t.Provider)
			continue
		}
		if pol != nil && pol.Refusal(t.Name, policy.Class(t.Class)) != nil {
			next.hidden[t.Name] = t
			continue
		}
		if prev, ok := old.tools[t.Name]; ok && prev.Provider == t.Provider && prev.Declared == t.Declared && reflect.DeepEqual(prev.Tool, t.Tool) {
			next.tools[t.Name] = t
			continue
		}
		if err := s.addTool(t); err != nil {
			s.log.Warn("tool skipped", "tool", t.Name, "provider", t.Provider, "error", err)
			continue
		}
		next.tools[t.Name] = t
	}
	for _, r := range cat.Resources() {
		d, ok := providers[r.Provider]
		if !ok {
			continue
		}
		next.resources[r.URI] = r
		if prev, ok := old.resources[r.URI]; ok && *prev == *r && sameDispatcher(old.providers[r.Provider], d) {
			continue
		}
		s.mcp.AddResource(&mcp.Resource{
			URI: r.URI, Name: r.Name, Title: r.Title, Description: r.Description, MIMEType: r.MIMEType, Size: r.Size,
		}, s.resourceHandler(d))
	}
	for _, rt := range cat.ResourceTemplates() {
		d, ok := providers[rt.Provider]
		if !ok {
			continue
		}
		if _, dup := next.templates[rt.URITemplate]; dup {
			continue
		}
		next.templates[rt.URITemplate] = rt
		if prev, ok := old.templates[rt.URITemplate]; ok && *prev == *rt && sameDispatcher(old.providers[rt.Provider], d) {
			continue
		}
		s.mcp.AddResourceTemplate(&mcp.ResourceTemplate{
			URITemplate: rt.URITemplate, Name: rt.Name, Title: rt.Title, Description: rt.Description, MIMEType: rt.MIMEType,
		}, s.resourceHandler(d))
	}
	for _, p := range cat.Prompts() {
		if _, ok := providers[p.Provider]; !ok {
			continue
		}
		next.prompts[p.Name] = p
		if prev, ok := old.prompts[p.Name]; ok && prev.Provider == p.Provider && prev.Declared == p.Declared && reflect.DeepEqual(prev.Prompt, p.Prompt) {
			continue
		}
		s.mcp.AddPrompt(mcpPrompt(p), s.promptHandler(p.Name))
	}
	s.view.Store(next)
	s.refreshVectors(next, set.Embeddings)
	if gone := removed(old.prompts, next.prompts); len(gone) > 0 {
		s.mcp.RemovePrompts(gone...)
	}
	if gone := removed(old.tools, next.tools); len(gone) > 0 {
		s.mcp.RemoveTools(gone...)
	}
	if gone := removed(old.resources, next.resources); len(gone) > 0 {
		s.mcp.RemoveResources(gone...)
	}
	if gone := removed(old.templates, next.templates); len(gone) > 0 {
		s.mcp.RemoveResourceTemplates(gone...)
	}
}

// removed lists the keys of old that next lacks.
func removed[V any](old, next map[string]V) []string {
	var gone []string
	for k := range old {
		if _, ok := next[k]; !ok {
			gone = append(gone, k)
		}
	}
	return gone
}

// sameDispatcher reports whether a and b are the same dispatcher; values
// of types that cannot be compared count as different.
func sameDispatcher(a, b Dispatcher) bool {
	if a == nil || b == nil || reflect.TypeOf(a) != reflect.TypeOf(b) || !reflect.TypeOf(a).Comparable() {
		return false
	}
	return a == b
}

// Instructions composes the MCP instructions string of a host whose
// built-in providers describe themselves with summaries (what each gives,
// in a few words, as [sdk.Manifest].Summary) and guidance (whole
// sentences about their tools, as [sdk.Manifest].Instructions): the
// summaries, the guidance in order, then how the security policy treats
// read and act tools. Empty entries are skipped; with none of either,
// the string says only that the tools come from providers.
func Instructions(summaries, guidance []string) string {
	var gives []string
	for _, s := range summaries {
		if s != "" {
			gives = append(gives, s)
		}
	}
	var b strings.Builder
	b.WriteString("openhuman-host gives you ")
	if len(gives) > 0 {
		b.WriteString(strings.Join(gives, ", ") + " and other ")
	}
	b.WriteString("tools from its providers.")
	for _, g := range guidance {
		if g != "" {
			b.WriteString(" " + g)
		}
	}
	b.WriteString(" Read tools never change anything; act tools may be refused by the user's security policy, " +
		"and the refusal says which setting allows them.")
	return b.String()
}

// MCP returns the underlying go-sdk server.
func (s *Server) MCP() *mcp.Server { return s.mcp }

// Catalog returns the catalog the server serves now.
func (s *Server) Catalog() *catalog.Catalog { return s.view.Load().catalog }

// Tools returns every tool the server serves, in the catalog's order, as
// clients are told about them: with the [tools.<name>] overrides applied.
// Unlike tools/list it keeps the tools the policy refuses whatever the
// call ([policy.Policy.Refusal]): a call to one is refused with the
// policy's reason and audited.
func (s *Server) Tools() []*catalog.Tool {
	v := s.view.Load()
	out := make([]*catalog.Tool, 0, len(v.tools)+len(v.hidden))
	for _, t := range v.catalog.Tools() {
		if c, ok := v.tools[t.Name]; ok {
			out = append(out, c)
		} else if c, ok := v.hidden[t.Name]; ok {
			out = append(out, c)
		}
	}
	return out
}

// addTool registers one tool with the go-sdk. AddTool panics on schemas it
// cannot use; the catalog already checked them, the recover is a last
// guard so one bad tool never takes the host down.
func (s *Server) addTool(t *catalog.Tool) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("rejected by the MCP server: %v", r)
		}
	}()
	tool := &mcp.Tool{
		Name:        t.Name,
		Title:       t.Title,
		Description: t.Description,
		InputSchema: json.RawMessage(t.InputSchema),
		Annotations: &mcp.ToolAnnotations{
			Title:           t.Annotations.Title,
			DestructiveHint: t.Annotations.DestructiveHint,
			OpenWorldHint:   t.Annotations.OpenWorldHint,
		},
	}
	if t.Annotations.ReadOnlyHint != nil {
		tool.Annotations.ReadOnlyHint = *t.Annotations.ReadOnlyHint
	}
	if t.Annotations.IdempotentHint != nil {
		tool.Annotations.IdempotentHint = *t.Annotations.IdempotentHint
	}
	if len(t.OutputSchema) > 0 {
		tool.OutputSchema = json.RawMessage(t.OutputSchema)
	}
	s.mcp.AddTool(tool, s.toolHandler(t.Name))
	return nil
}

// Call is one tool call entering the pipeline.
type Call struct {
	// Tool is the tool's advertised name, or its declared or old dotted
	// name ("notes.store"), which [sdk.ClientName] maps to the advertised
	// one; the audit row records the advertised name.
	Tool string
	// Arguments is the JSON object sent by the caller; empty means {}.
	Arguments json.RawMessage
	// Caller says on whose behalf the call is made.
	Caller sdk.Caller
	// Events receives the tool's progress and log events; nil drops them.
	Events sdk.EventSink
	// Confirm asks the user to confirm an act tool; nil when the caller
	// cannot be asked (see [Options.ConfirmActs]).
	Confirm Confirmer
	// Profile names the caller's [Options].Profiles entry; "" for none.
	// A call a provider makes within a client's call (Caller.Depth > 0)
	// runs under the profile of that call, found by Caller.CallToken (or,
	// once that call has ended, Caller.Profile), whatever is set here.
	// Call sets Caller.Profile to the profile, for the provider.
	Profile string

	// inputResponses and requestState are passed to the provider on the
	// retry of a call whose result asked for input (SEP-2322).
	inputResponses json.RawMessage
	requestState   string

	// confirmation, for a client asked through multi-round-trip results,
	// holds its answer to the confirmation question or receives the
	// question to ask; nil when the client cannot answer one.
	confirmation *confirmation
}

// Call runs the tools/call pipeline (docs/architecture.md) for c: lookup,
// argument validation, SecurityPolicy, dispatch with the tool's deadline
// and ctx's cancellation, and one audit row. Validation failures, policy denials and
// provider failures (including a provider that is not running) are results
// with IsError set and an actionable message. The error is non-nil only for
// an unknown tool ([ErrUnknownTool]) and host faults.
func (s *Server) Call(ctx context.Context, c Call) (*sdk.CallToolResult, error) {
	v := s.view.Load()
	t, ok := v.tool(c.Tool)
	if !ok {
		return nil, s.unknownTool(v, c.Tool)
	}
	if c.Caller.Depth > 0 {
		// A provider's call within a client's runs under the client's
		// profile: the running call's own when its token is known, else
		// the one its Caller carries back.
		c.Profile = c.Caller.Profile
		if e, ok := s.calls.Load(c.Caller.CallToken); ok && c.Caller.CallToken != "" {
			c.Profile = e.(*callEntry).profile
		}
	}
	c.Caller.Profile = c.Profile
	d := v.providers[t.Provider]
	start := time.Now()
	rec := audit.Record{
		TimeMs:        start.UnixMilli(),
		SessionHash:   c.Caller.SessionHash,
		SourceType:    c.Caller.SourceType,
		ClientName:    c.Caller.ClientName,
		ClientVersion: c.Caller.ClientVersion,
		Tool:          t.Name,
		Provider:      t.Provider,
		Class:         string(t.Class),
		Decision:      audit.DecisionAllowed,
		ArgsSummary:   audit.SummarizeArgs(c.Arguments, s.opts.AuditRules),
		Profile:       c.Profile,
	}
	ctx, endSpan := s.startCall(ctx, t.Name, t.Provider)
	res, protoErr := s.run(ctx, t, d, c, &rec)
	if rec.Decision == decisionAsking {
		// Nothing ran: the client is asked first, and its retry is the
		// attempt that is recorded.
		endSpan(&callOutcome{decision: rec.Decision, profile: c.Profile})
		return res, nil
	}
	endSpan(&callOutcome{decision: rec.Decision, profile: c.Profile, isError: res == nil || res.IsError})
	rec.DurationUs = time.Since(start).Microseconds()
	rec.Success = !res.IsError
	if res.IsError {
		rec.Error = audit.TruncateError(res.Text())
	} else {
		rec.ResultRef = resultRef(res, s.opts.AuditRules.ResultRefs)
	}
	switch {
	case s.opts.Audit == nil:
	case rec.ID != 0:
		// An act whose pending row Begin wrote: record its outcome. A
		// full queue leaves the row pending, which the audit logs.
		_ = s.opts.Audit.Complete(rec.ID, rec)
	case t.Class != sdk.ClassRead || s.settings.Load().RecordReads:
		// Never waits: a full queue drops the row, which the audit counts
		// and logs, so a failing disk cannot hold a call up.
		_ = s.opts.Audit.Record(context.WithoutCancel(ctx), rec)
	}
	if protoErr != nil {
		return nil, protoErr
	}
	return res, nil
}

// begin writes the pending audit row of an act the policy allowed, before
// it is dispatched, and applies the shared act budget
// ([policy.Options.SharedBudget]). It returns the refusal to send when the
// budget is used up or the row cannot be written, or nil with rec.ID set.
func (s *Server) begin(ctx context.Context, set *Options, t *catalog.Tool, rec *audit.Record) *sdk.CallToolResult {
	if s.opts.Audit == nil || t.Class != sdk.ClassAct {
		return nil
	}
	id, err := s.opts.Audit.Begin(ctx, *rec, set.Policy.ActLimit(), set.Policy.ProfileActLimit())
	var budget *audit.BudgetError
	switch {
	case errors.As(err, &budget):
		d := set.Policy.BudgetDenial(t.Name, budget.FreeAt)
		if budget.Profile != "" {
			d = set.Policy.ProfileBudgetDenial(t.Name, budget.FreeAt)
		}
		rec.Decision = audit.DecisionDenied(d.Reason)
		return sdk.ErrorResult("%s", d.Message)
	case ctx.Err() != nil:
		rec.Decision = audit.DecisionDenied(reasonCancelled)
		return sdk.ErrorResult("%s was cancelled by the client before it ran", t.Name)
	case err != nil:
		s.log.Error("act refused: its audit row could not be written", "tool", t.Name, "error", err)
		rec.Decision = audit.DecisionDenied(AuditFailure)
		hint := "free disk space in the data directory (`openhuman-host config paths` shows it) or fix its permissions; acts run again as soon as their row can be written"
		switch {
		case strings.Contains(err.Error(), "in PostgreSQL "):
			hint = "the shared PostgreSQL database did not take the row (it is down, unreachable or refuses this role); acts run again as soon as it does: `openhuman-host config check` names the database in use"
		case audit.Damaged(err):
			hint = "the audit database is damaged: restart openhuman-host, which moves it aside and starts a fresh one"
		case strings.Contains(err.Error(), "database is locked"):
			hint = "another process has held the audit database's write lock for longer than its busy timeout; retry in a moment, and look for a stuck process using audit.db"
		}
		return sdk.ErrorResult("%s was not run: the audit log could not record it first (%v). Act tools run only once their audit row is written; %s",
			t.Name, err, hint)
	}
	rec.ID = id
	return nil
}

// AuditFailure is the denial reason ("denied:audit") of an act refused
// because its audit row could not be written before it ran.
const AuditFailure = "audit"

// Denial reasons of the refusals the server decides itself, beside the
// policy's (policy.Reason*), [AuditFailure] and [BadConfirmation]; the
// audit row's decision is [audit.DecisionDenied] of one.
const (
	// reasonCancelled: the call was cancelled before it ran.
	reasonCancelled = "cancelled"
	// reasonDepth: the call nests deeper than [MaxDepth].
	reasonDepth = "depth"
	// reasonInvalidArguments: the arguments do not match the tool's
	// input schema.
	reasonInvalidArguments = "invalid_arguments"
	// reasonPolicy: the policy refused the call with an error that is
	// not a [policy.Denial].
	reasonPolicy = "policy"
	// reasonNotConfirmed: the user was asked to confirm an act and did
	// not.
	reasonNotConfirmed = "not_confirmed"
	// reasonConfirmationUnavailable: confirm_acts = "required" and the
	// client cannot ask the user.
	reasonConfirmationUnavailable = "confirmation_unavailable"
)

func (s *Server) run(ctx context.Context, t *catalog.Tool, d Dispatcher, c Call, rec *audit.Record) (*sdk.CallToolResult, error) {
	set, err := s.settings.Load().forProfile(c.Profile)
	if err != nil {
		rec.Decision = audit.DecisionDenied(policy.ReasonProfile)
		return sdk.ErrorResult("%s refused: %v", t.Name, err), nil
	}
	if c.Caller.Depth > MaxDepth {
		rec.Decision = audit.DecisionDenied(reasonDepth)
		return sdk.ErrorResult("%s refused: tool calls may nest at most %d deep", t.Name, MaxDepth), nil
	}
	args, err := t.ValidateArguments(c.Arguments)
	if err != nil {
		rec.Decision = audit.DecisionDenied(reasonInvalidArguments)
		return sdk.ErrorResult("%s", err.Error()), nil
	}
	if err := set.Policy.Check(t.Name, policy.Class(t.Class)); err != nil {
		var denial *policy.Denial
		if errors.As(err, &denial) {
			rec.Decision = audit.DecisionDenied(denial.Reason)
			return sdk.ErrorResult("%s", denial.Message), nil
		}
		rec.Decision = audit.DecisionDenied(reasonPolicy)
		return sdk.ErrorResult("%s refused by the security policy: %v", t.Name, err), nil
	}
	if refusal := s.confirm(ctx, set, t, c, rec); refusal != nil {
		return refusal, nil
	}
	if refusal := s.begin(ctx, set, t, rec); refusal != nil {
		return refusal, nil
	}
	timeout, timeoutKey := set.ToolTimeout, "[server] tool_timeout_secs"
	if t.Timeout > 0 {
		timeout, timeoutKey = t.Timeout, "the tool's own timeout; [providers."+t.Provider+"] tool_timeout_secs overrides it"
	}
	if d, ok := set.ProviderToolTimeouts[t.Provider]; ok && d > 0 {
		timeout, timeoutKey = d, "[providers."+t.Provider+"] tool_timeout_secs"
	}
	callCtx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	req := &sdk.CallToolRequest{Name: t.Declared, Arguments: args, Caller: c.Caller,
		InputResponses: c.inputResponses, RequestState: c.requestState}
	if c.Events != nil {
		req = req.WithEvents(c.Events)
	}
	res, err := d.CallTool(callCtx, req)
	switch {
	case err == nil && res != nil && len(res.InputRequests) > 0 && c.Caller.ProtocolVersion < firstMultiRoundTrip:
		return sdk.ErrorResult("%s: provider %s asked for input through a multi-round-trip result, which a client of protocol %q cannot answer (only %s and later can)",
			t.Name, t.Provider, c.Caller.ProtocolVersion, firstMultiRoundTrip), nil
	case err == nil && res != nil:
		return res, nil
	case err == nil:
		return sdk.ErrorResult("provider %s returned no result for %s", t.Provider, t.Name), nil
	case ctx.Err() != nil && s.stopCtx.Err() != nil:
		return sdk.ErrorResult("%s was cancelled: openhuman-host is shutting down", t.Name), nil
	case ctx.Err() != nil:
		return sdk.ErrorResult("%s was cancelled by the client", t.Name), nil
	case callCtx.Err() != nil || errors.Is(err, context.DeadlineExceeded):
		// The provider's copy of the deadline can fire a moment before
		// the host's own.
		return sdk.ErrorResult("%s timed out after %s (the limit comes from %s)", t.Name, timeout, timeoutKey), nil
	}
	var missing *sdk.MissingCapabilityError
	if errors.As(err, &missing) && c.Caller.ProtocolVersion >= firstMultiRoundTrip {
		// The client did not declare what the tool needs (SEP-2575):
		// a protocol error, as the server behind the provider gave it.
		rec.Error = audit.TruncateError(missing.Error())
		return sdk.ErrorResult("%s: %s", t.Name, missing.Message), missing
	}
	s.log.Warn("provider call failed", "tool", t.Name, "provider", t.Provider, "error", err)
	msg := err.Error()
	if !strings.Contains(msg, "provider "+t.Provider) {
		msg = fmt.Sprintf("provider %s: %s", t.Provider, msg)
	}
	return sdk.ErrorResult("%s failed: %s", t.Name, msg), nil
}

// confirm applies [Options.ConfirmActs] to an act tool the policy allowed
// in supervised mode: it asks the user through c.Confirm, and returns the
// refusal to send (recording its reason in rec) or nil to go on.
func (s *Server) confirm(ctx context.Context, set *Options, t *catalog.Tool, c Call, rec *audit.Record) *sdk.CallToolResult {
	mode := set.ConfirmActs
	if mode == "" || mode == ConfirmOff || t.Class != sdk.ClassAct || set.Policy.Level() != policy.Supervised ||
		c.Caller.SourceType == "cli" {
		return nil
	}
	msg := fmt.Sprintf("Allow %s to run %s?\n%s\n%s", nonEmpty(c.Caller.ClientName, c.Caller.SourceType), t.Name,
		firstLine(t.Description), confirmDetails(c.Arguments))
	if q := c.confirmation; q != nil {
		switch {
		case !q.answered:
			q.question = msg
			rec.Decision = decisionAsking
			return sdk.ErrorResult("%s waits for your confirmation", t.Name)
		case !q.yes:
			rec.Decision = audit.DecisionDenied(reasonNotConfirmed)
			return sdk.ErrorResult("%s was not run: you did not confirm it. [autonomy] confirm_acts = %q asks before every act tool when the client can ask; set it to %q to stop asking",
				t.Name, mode, ConfirmOff)
		}
		return nil
	}
	if c.Confirm == nil {
		if mode != ConfirmRequired {
			return nil
		}
		rec.Decision = audit.DecisionDenied(reasonConfirmationUnavailable)
		return sdk.ErrorResult("%s refused: [autonomy] confirm_acts = %q needs a client that can ask you to confirm act tools (one that declares "+
			"the elicitation capability in form mode), and this one cannot; use such a client, or set confirm_acts = %q (ask when the client can) or %q",
			t.Name, ConfirmRequired, ConfirmWhenSupported, ConfirmOff)
	}
	ok, err := c.Confirm(ctx, msg)
	switch {
	case err != nil && ctx.Err() != nil:
		rec.Decision = audit.DecisionDenied(reasonNotConfirmed)
		return sdk.ErrorResult("%s was not run: the call was cancelled before you answered", t.Name)
	case err != nil:
		rec.Decision = audit.DecisionDenied(reasonNotConfirmed)
		return sdk.ErrorResult("%s was not run: asking you to confirm it failed (%v); [autonomy] confirm_acts = %q asks before act tools, %q stops asking",
			t.Name, err, mode, ConfirmOff)
	case !ok:
		rec.Decision = audit.DecisionDenied(reasonNotConfirmed)
		return sdk.ErrorResult("%s was not run: you did not confirm it. [autonomy] confirm_acts = %q asks before every act tool when the client can ask; set it to %q to stop asking",
			t.Name, mode, ConfirmOff)
	}
	return nil
}

// decisionAsking marks a call stopped to ask for confirmation through a
// multi-round-trip result; it is not recorded.
const decisionAsking = "asking"

// Limits of the arguments a confirmation question shows.
const (
	confirmValueChars = 400
	confirmTotalChars = 2000
)

// confirmDetails shows the arguments of a call being confirmed, so the
// user sees what would be written: each top-level argument on a line, in
// key order, its value quoted with every line break, control and format
// character (such as a right-to-left override) escaped, so a value cannot
// fake lines of the question or hide what follows; strings cut to
// confirmValueChars characters, the whole to confirmTotalChars.
func confirmDetails(args json.RawMessage) string {
	var obj map[string]json.RawMessage
	if len(args) == 0 || json.Unmarshal(args, &obj) != nil || len(obj) == 0 {
		return "No arguments."
	}
	keys := make([]string, 0, len(obj))
	for k := range obj {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	var b strings.Builder
	b.WriteString("Arguments:")
	for _, k := range keys {
		var text string
		var str string
		if json.Unmarshal(obj[k], &str) == nil {
			text = strconv.Quote(cutRunes(strings.ToValidUTF8(str, ""), confirmValueChars))
		} else {
			// JSON text: its strings may hold format characters raw.
			text = visible(cutRunes(strings.ToValidUTF8(string(obj[k]), ""), confirmValueChars))
		}
		b.WriteString("\n" + cleanClientText(k) + ": " + text)
		if b.Len() > confirmTotalChars {
			return cutRunes(b.String(), confirmTotalChars) + "\n(more arguments not shown)"
		}
	}
	return b.String()
}

// visible escapes the characters of s that are not printable (control,
// format and line separator characters) as \uXXXX.
func visible(s string) string {
	var b strings.Builder
	for _, r := range s {
		if strconv.IsPrint(r) {
			b.WriteRune(r)
		} else {
			fmt.Fprintf(&b, "\\u%04x", r)
		}
	}
	return b.String()
}

// cutRunes returns s cut to n characters, marked with "…" when cut.
func cutRunes(s string, n int) string {
	i := 0
	for pos := range s {
		if i == n {
			return s[:pos] + "…"
		}
		i++
	}
	return s
}

// Cache hints of list results (MCP 2026-07-28, ttlMs and cacheScope).
const (
	// listTTL is how long a client may reuse a tools, prompts or
	// resources list: they change only on a reload or a provider's
	// change, which the host announces with list_changed; a minute bounds
	// how stale a client that missed the announcement stays.
	listTTL = time.Minute
	// discoverTTL is how long a client may reuse server/discover.
	discoverTTL = time.Hour
)

// setCacheable sets the cache hints of server/discover, the list methods
// and resources/read. Every result is "private": it describes this
// user's configured tools, servers and memory, which no shared cache may
// keep. Lists and discovery get a positive ttlMs; a resource read gets 0,
// since memory resources change with every store.
func setCacheable(_ context.Context, req mcp.Request, c *mcp.Cacheable) {
	c.CacheScope = "private"
	switch req.(type) {
	case *mcp.ListToolsRequest, *mcp.ListPromptsRequest, *mcp.ListResourcesRequest, *mcp.ListResourceTemplatesRequest:
		c.TTLMs = int(listTTL.Milliseconds())
	case *mcp.ServerRequest[*mcp.DiscoverParams]:
		c.TTLMs = int(discoverTTL.Milliseconds())
	default:
		c.TTLMs = 0
	}
}

// nonEmpty returns a, or b when a is empty.
func nonEmpty(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// firstLine is the first line of s, at most 200 bytes.
func firstLine(s string) string {
	s, _, _ = strings.Cut(s, "\n")
	if len(s) > 200 {
		s = strings.ToValidUTF8(s[:200], "") + "…"
	}
	return s
}

// resultRef picks what a result points at for the audit row: its
// AuditRef, else the first non-empty string under one of keys in its
// structured content; "" when the content is no object or holds another
// type than a string or null under one of keys.
func resultRef(r *sdk.CallToolResult, keys []string) string {
	if r.AuditRef != "" {
		return cleanAuditRef(r.AuditRef)
	}
	if len(r.StructuredContent) == 0 || len(keys) == 0 {
		return ""
	}
	var fields map[string]json.RawMessage
	if json.Unmarshal(r.StructuredContent, &fields) != nil {
		return ""
	}
	ref := ""
	for _, k := range keys {
		raw, ok := fields[k]
		if !ok {
			continue
		}
		var v *string
		if json.Unmarshal(raw, &v) != nil {
			return ""
		}
		if ref == "" && v != nil {
			ref = *v
		}
	}
	return ref
}

// cleanAuditRef makes a provider's AuditRef fit an audit row: control
// characters become spaces and it is cut to sdk.MaxAuditRefBytes at a
// character boundary.
func cleanAuditRef(ref string) string {
	ref = strings.Map(func(r rune) rune {
		if unicode.IsControl(r) || r == utf8.RuneError {
			return ' '
		}
		return r
	}, ref)
	if len(ref) <= sdk.MaxAuditRefBytes {
		return ref
	}
	cut := sdk.MaxAuditRefBytes
	for cut > 0 && !utf8.RuneStart(ref[cut]) {
		cut--
	}
	return ref[:cut]
}

func (s *Server) toolHandler(name string) mcp.ToolHandler {
	return func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		caller, caps := s.callerAndCapabilities(req)
		token := req.Params.GetProgressToken()
		if token != nil {
			caller.ProgressToken, _ = json.Marshal(token)
		}
		call := Call{
			Tool:      name,
			Arguments: req.Params.Arguments,
			Caller:    caller,
			Events:    &sessionEvents{session: req.Session, token: token},
			Profile:   s.profileOf(req, caller.ClientName),
		}
		if mrtrClient(req) {
			return s.callMRTR(ctx, req, name, call, caps)
		}
		ctx, cancel := context.WithCancel(ctx)
		defer cancel()
		defer context.AfterFunc(s.stopCtx, cancel)()
		callToken, end := s.beginCall(ctx, cancel, req.Session, call.Profile)
		defer end()
		call.Caller.CallToken = callToken
		if canConfirm(req.Session.InitializeParams()) {
			call.Confirm = elicitConfirm(req.Session)
		}
		res, err := s.Call(ctx, call)
		return s.toolAnswer(call, res, err)
	}
}

// toolAnswer turns the pipeline's outcome of call into the tools/call
// answer: an unknown tool is JSON-RPC -32602, a host fault -32603. For a
// caller that reads structuredContent, text that only repeats it is
// dropped ([withoutRepeatedText]).
func (s *Server) toolAnswer(call Call, res *sdk.CallToolResult, err error) (*mcp.CallToolResult, error) {
	name := call.Tool
	if errors.Is(err, ErrUnknownTool) {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: err.Error()}
	}
	var missing *sdk.MissingCapabilityError
	if errors.As(err, &missing) {
		data, _ := json.Marshal(struct {
			Required json.RawMessage `json:"requiredCapabilities"`
		}{missing.Required})
		return nil, &jsonrpc.Error{Code: mcp.CodeMissingRequiredClientCapabilities, Message: missing.Message, Data: data}
	}
	if err != nil {
		s.log.Error("host fault in tools/call", "tool", name, "error", err)
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "internal error in openhuman-host; see its log"}
	}
	if call.Caller.ReadsStructuredContent {
		res = withoutRepeatedText(res)
	}
	return MCPResult(res), nil
}

func (s *Server) resourceHandler(d Dispatcher) mcp.ResourceHandler {
	return func(ctx context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
		caller := s.callerOf(req)
		if profile := s.profileOf(req, caller.ClientName); !s.settings.Load().servesResource(profile, req.Params.URI) {
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams,
				Message: fmt.Sprintf("resource %s is not served to profile %q: see [profiles.%s] resources and exclude_resources", req.Params.URI, profile, profile)}
		}
		res, err := d.ReadResource(ctx, &sdk.ReadResourceRequest{URI: req.Params.URI, Caller: caller})
		if errors.Is(err, sdk.ErrResourceNotFound) {
			return nil, mcp.ResourceNotFoundError(req.Params.URI)
		}
		if err != nil {
			return nil, fmt.Errorf("read %s: %w", req.Params.URI, err)
		}
		out := &mcp.ReadResourceResult{}
		for _, c := range res.Contents {
			out.Contents = append(out.Contents, &mcp.ResourceContents{URI: c.URI, MIMEType: c.MIMEType, Text: c.Text, Blob: c.Blob})
		}
		return out, nil
	}
}

// MCPResult converts a provider result to the go-sdk's CallToolResult,
// which marshals to the MCP wire form (content blocks, structuredContent,
// isError).
func MCPResult(r *sdk.CallToolResult) *mcp.CallToolResult {
	out := &mcp.CallToolResult{IsError: r.IsError, Content: make([]mcp.Content, 0, len(r.Content))}
	for _, c := range r.Content {
		out.Content = append(out.Content, mcpContent(c))
	}
	if len(r.StructuredContent) > 0 {
		out.StructuredContent = json.RawMessage(r.StructuredContent)
	}
	return out
}

// mcpContent converts one provider content block to the go-sdk's; an
// unknown type is sent as text.
func mcpContent(c sdk.Content) mcp.Content {
	switch c.Type {
	case "image":
		return &mcp.ImageContent{Data: c.Data, MIMEType: c.MIMEType}
	case "audio":
		return &mcp.AudioContent{Data: c.Data, MIMEType: c.MIMEType}
	case "resource_link":
		return &mcp.ResourceLink{URI: c.URI, Name: c.Name, Title: c.Title, Description: c.Description, MIMEType: c.MIMEType}
	case "resource":
		return &mcp.EmbeddedResource{Resource: &mcp.ResourceContents{URI: c.URI, MIMEType: c.MIMEType, Text: c.Text, Blob: c.Data}}
	}
	return &mcp.TextContent{Text: c.Text}
}

// sessionEvents relays a tool's events to the MCP session that called it.
type sessionEvents struct {
	session *mcp.ServerSession
	token   any
}

func (e *sessionEvents) Progress(ctx context.Context, p sdk.Progress) error {
	if e.session == nil || e.token == nil {
		return nil
	}
	return e.session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: e.token, Progress: p.Progress, Total: p.Total, Message: p.Message})
}

func (e *sessionEvents) Log(ctx context.Context, m sdk.LogMessage) error {
	if e.session == nil {
		return nil
	}
	//lint:ignore SA1019 logging stays supported for clients on protocol versions before 2026-07-28.
	return e.session.Log(ctx, &mcp.LoggingMessageParams{Level: mcp.LoggingLevel(m.Level), Logger: m.Logger, Data: m.Data})
}

// lastInRequestElicitation is the newest protocol version that lets a
// server send elicitation/create while it serves tools/call; later
// versions are asked through multi-round-trip results (SEP-2322,
// [Server.callMRTR]).
const lastInRequestElicitation = "2025-11-25"

// firstMultiRoundTrip is the first protocol version in which a server
// asks the client for input (elicitation, sampling) through
// multi-round-trip results instead of requests during a call. A client
// asking in initialize for a version between the two is answered with
// one up to lastInRequestElicitation, so only this version and later ones
// rule requests during a call out.
const firstMultiRoundTrip = "2026-07-28"

// inRequestInputAllowed reports whether a session that asked for protocol
// version v may be sent elicitation or sampling requests during a call.
func inRequestInputAllowed(v string) bool { return v != "" && v < firstMultiRoundTrip }

// clientCanConfirm reports whether the client that sent req can be asked
// to confirm an act tool's call: through multi-round-trip results
// (protocol 2026-07-28 and later) or elicitation during the call.
func clientCanConfirm(req clientRequest) bool {
	if mrtrClient(req) {
		return canConfirmMRTR(requestClientCapabilities(req))
	}
	if ss, ok := req.GetSession().(*mcp.ServerSession); ok {
		return canConfirm(ss.InitializeParams())
	}
	return false
}

// canConfirm reports whether a session's client can be asked to confirm a
// call: it declared form elicitation and speaks a protocol version that
// allows asking during a call.
func canConfirm(init *mcp.InitializeParams) bool {
	if init == nil || init.Capabilities == nil || init.Capabilities.Elicitation == nil ||
		!inRequestInputAllowed(init.ProtocolVersion) {
		return false
	}
	// The question is a form; an empty elicitation capability means form
	// (MCP 2025-11-25, client/elicitation), a URL-only one cannot answer.
	e := init.Capabilities.Elicitation
	return e.Form != nil || e.URL == nil
}

// confirmSchema is the form of a confirmation: one yes/no field.
var confirmSchema = map[string]any{
	"type": "object",
	"properties": map[string]any{
		"confirm": map[string]any{"type": "boolean", "title": "Run it", "description": "Yes runs the tool; no refuses it.", "default": false},
	},
	"required": []string{"confirm"},
}

// elicitConfirm asks through elicitation/create on session (form mode):
// the call runs only when the user accepts with confirm = true.
func elicitConfirm(session *mcp.ServerSession) Confirmer {
	return func(ctx context.Context, message string) (bool, error) {
		res, err := session.Elicit(ctx, &mcp.ElicitParams{Message: message, RequestedSchema: confirmSchema})
		if err != nil {
			return false, err
		}
		yes, _ := res.Content["confirm"].(bool)
		return res.Action == "accept" && yes, nil
	}
}
