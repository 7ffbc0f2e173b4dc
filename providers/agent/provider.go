package agent

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path"
	"path/filepath"
	"reflect"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/openhuman/openhuman-host/providers/agent/definitions"
	"github.com/openhuman/openhuman-host/sdk"
)

// Version is the agent provider's version, reported by Describe.
const Version = "0.1.0"

// DefaultRunTimeout is the wall-clock limit of one agent_run_subagent
// call when [providers.agent] run_timeout_secs is unset: 300 s. It is
// declared as the tool's own timeout, so the host's default
// tool_timeout_secs (120 s) does not cut runs short.
const DefaultRunTimeout = 300 * time.Second

// maxToolResultText caps the text of one tool result handed to the model,
// in bytes.
const maxToolResultText = 32 << 10

// Options configures [New]; a nil *Options uses every default.
type Options struct {
	// Logger receives the provider's log. Default: a null logger.
	Logger hclog.Logger
}

// Provider is the agent provider: sub-agent definitions, the tools
// agent_list_subagents, agent_run_subagent, core_list_tools and
// core_tool_instructions, and the prompt resources. It implements
// [sdk.Provider]; its methods are safe for concurrent use once Configure
// has returned.
type Provider struct {
	log hclog.Logger

	mu          sync.RWMutex
	host        sdk.Host
	model       Model // nil: the client's model through sampling
	modelName   string
	runTimeout  time.Duration
	definitions []definitions.Definition // sorted by ID
	resources   map[string]definitions.PromptResource
	warned      sync.Map // "<agent id>\x00<scope entry>" already warned about
	// maxRuns and maxRequests bound the sub-agent runs and the model
	// requests of one client call, across its whole tree of nested runs.
	maxRuns, maxRequests int

	budgetsMu sync.Mutex
	budgets   map[string]*callBudget // by the client call's sdk.Caller.CallToken

	// tools are the four tools; Configure adds agent_run_subagent again
	// for the definitions and run timeout it reads.
	tools sdk.Tools
}

// Defaults of the per-call budget ([providers.agent] max_runs_per_call and
// max_model_requests_per_call).
const (
	DefaultMaxRunsPerCall          = 20
	DefaultMaxModelRequestsPerCall = 200
)

// callBudget is what one client call's runs have used: a run nested in
// another counts against the same call, since the host passes the call's
// token down every hop.
type callBudget struct {
	runs, requests int
	active         int // runs in progress; the budget is dropped at 0
}

// New returns an unconfigured agent provider.
func New(opts *Options) *Provider {
	p := &Provider{log: hclog.NewNullLogger()}
	if opts != nil && opts.Logger != nil {
		p.log = opts.Logger
	}
	p.addTools()
	return p
}

// settings is [providers.agent] minus the keys the host reads.
type settings struct {
	// LLM is [providers.agent.llm]; nil runs sub-agents on the client's
	// model through sampling.
	LLM *llmSettings `json:"llm"`
	// RunTimeoutSecs bounds one run, 1..86400; 0 means 300.
	RunTimeoutSecs int `json:"run_timeout_secs"`
	// AgentsDir is the directory of user definitions; empty means
	// <config dir>/agents.
	AgentsDir string `json:"agents_dir"`
	// MaxRunsPerCall bounds the sub-agent runs one client call starts,
	// nested ones included, 1..1000; 0 means 20.
	MaxRunsPerCall int `json:"max_runs_per_call"`
	// MaxModelRequestsPerCall bounds the model requests of all those runs
	// together, 1..100000; 0 means 200.
	MaxModelRequestsPerCall int `json:"max_model_requests_per_call"`
}

// llmSettings is [providers.agent.llm].
type llmSettings struct {
	BaseURL     string `json:"base_url"`
	Model       string `json:"model"`
	APIKeyEnv   string `json:"api_key_env"`
	TimeoutSecs int    `json:"timeout_secs"`
}

// jsonKind names a Go kind as a config value type.
func jsonKind(k reflect.Kind) string {
	switch k {
	case reflect.Int, reflect.Int64, reflect.Int32:
		return "an integer"
	case reflect.String:
		return "a string"
	case reflect.Ptr, reflect.Struct, reflect.Map:
		return "a table"
	}
	return "a " + k.String()
}

// Configure reads [providers.agent] (llm.base_url, llm.model,
// llm.api_key_env, llm.timeout_secs, run_timeout_secs, agents_dir,
// max_runs_per_call, max_model_requests_per_call) and the
// user definitions in agents_dir (default <config dir>/agents). Unknown
// keys, bad values and invalid definition files are errors that name the
// key or the file, line and field.
func (p *Provider) Configure(_ context.Context, req *sdk.ConfigureRequest) error {
	var s settings
	dec := json.NewDecoder(bytes.NewReader(req.Config))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&s); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) && te.Field != "" {
			return fmt.Errorf("[providers.agent] %s must be %s; got %s", te.Field, jsonKind(te.Type.Kind()), te.Value)
		}
		return fmt.Errorf("[providers.agent]: %w; the keys are llm (a table: base_url, model, api_key_env, timeout_secs), run_timeout_secs, agents_dir, max_runs_per_call and max_model_requests_per_call", err)
	}
	runTimeout := DefaultRunTimeout
	switch {
	case s.RunTimeoutSecs < 0 || s.RunTimeoutSecs > 86400:
		return fmt.Errorf("[providers.agent] run_timeout_secs must be between 1 and 86400; got %d", s.RunTimeoutSecs)
	case s.RunTimeoutSecs > 0:
		runTimeout = time.Duration(s.RunTimeoutSecs) * time.Second
	}
	maxRuns, maxRequests := DefaultMaxRunsPerCall, DefaultMaxModelRequestsPerCall
	switch {
	case s.MaxRunsPerCall < 0 || s.MaxRunsPerCall > 1000:
		return fmt.Errorf("[providers.agent] max_runs_per_call must be between 1 and 1000; got %d", s.MaxRunsPerCall)
	case s.MaxRunsPerCall > 0:
		maxRuns = s.MaxRunsPerCall
	}
	switch {
	case s.MaxModelRequestsPerCall < 0 || s.MaxModelRequestsPerCall > 100000:
		return fmt.Errorf("[providers.agent] max_model_requests_per_call must be between 1 and 100000; got %d", s.MaxModelRequestsPerCall)
	case s.MaxModelRequestsPerCall > 0:
		maxRequests = s.MaxModelRequestsPerCall
	}
	var model Model
	var modelName string
	if s.LLM != nil {
		if s.LLM.TimeoutSecs < 0 || s.LLM.TimeoutSecs > 3600 {
			return fmt.Errorf("%s timeout_secs must be between 1 and 3600; got %d", llmTable, s.LLM.TimeoutSecs)
		}
		m, err := NewOpenAIModel(OpenAIConfig{
			BaseURL: s.LLM.BaseURL,
			Model:   s.LLM.Model,
			APIKey:  req.Secrets["llm.api_key"],
			Timeout: time.Duration(s.LLM.TimeoutSecs) * time.Second,
		})
		if err != nil {
			return err
		}
		if s.LLM.APIKeyEnv != "" && req.Secrets["llm.api_key"] == "" {
			p.log.Warn("the environment variable named by llm.api_key_env is empty; requests go without an API key", "variable", s.LLM.APIKeyEnv)
		}
		model, modelName = m, s.LLM.Model
	}
	dir := s.AgentsDir
	if dir == "" && req.ConfigDir != "" {
		dir = filepath.Join(req.ConfigDir, "agents")
	}
	if dir != "" && !filepath.IsAbs(dir) {
		return fmt.Errorf("[providers.agent] agents_dir must be an absolute path; got %q", dir)
	}
	var user []definitions.Definition
	if dir != "" {
		var err error
		if user, err = definitions.LoadDir(dir); err != nil {
			return fmt.Errorf("sub-agent definitions in %s: %w", dir, err)
		}
	}
	builtins := definitions.Builtins()
	resources := map[string]definitions.PromptResource{}
	for _, r := range definitions.PromptResources(builtins) {
		resources[r.URI] = r
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.host, p.model, p.modelName, p.runTimeout = req.Host, model, modelName, runTimeout
	p.maxRuns, p.maxRequests = maxRuns, maxRequests
	p.definitions = definitions.Merge(builtins, user)
	p.resources = resources
	sdk.AddTool(&p.tools, runSubagentTool(p.definitions, runTimeout), p.runSubagent)
	return nil
}

// Describe lists the four tools and the prompt resources.
func (p *Provider) Describe(context.Context) (*sdk.Catalog, error) {
	p.mu.RLock()
	defer p.mu.RUnlock()
	cat := &sdk.Catalog{Name: "agent", Version: Version, Tools: p.tools.List()}
	uris := make([]string, 0, len(p.resources))
	for uri := range p.resources {
		uris = append(uris, uri)
	}
	sort.Strings(uris)
	for _, uri := range uris {
		r := p.resources[uri]
		cat.Resources = append(cat.Resources, sdk.Resource{URI: r.URI, Name: r.Name, Title: r.Title, Description: r.Description, MIMEType: definitions.PromptMIMEType, Size: int64(len(r.Text))})
	}
	return cat, nil
}

// ReadResource returns one prompt resource.
func (p *Provider) ReadResource(_ context.Context, req *sdk.ReadResourceRequest) (*sdk.ReadResourceResult, error) {
	p.mu.RLock()
	r, ok := p.resources[req.URI]
	p.mu.RUnlock()
	if !ok {
		return nil, fmt.Errorf("%w: %s", sdk.ErrResourceNotFound, req.URI)
	}
	return &sdk.ReadResourceResult{Contents: []sdk.ResourceContents{{URI: r.URI, MIMEType: definitions.PromptMIMEType, Text: r.Text}}}, nil
}

// CallTool runs one of the four tools; a tool the provider does not have
// is an error.
func (p *Provider) CallTool(ctx context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
	res, err := p.tools.Call(ctx, req)
	if err != nil {
		return nil, fmt.Errorf("agent provider: %w", err)
	}
	return res, nil
}

// hostTools lists the host's tools as the model sees them. Unless
// withCore is set it leaves out this provider's own core_* tools, which
// describe tools rather than do work: core_list_tools and
// core_tool_instructions list the others, while a run offers every tool its
// scope allows, core_* included (the help sub-agent's scope is
// core_list_tools).
func (p *Provider) hostTools(ctx context.Context, withCore bool) ([]ToolSpec, error) {
	p.mu.RLock()
	host := p.host
	p.mu.RUnlock()
	if host == nil {
		return nil, errors.New("the host offers no host service, so sub-agents cannot reach its tools")
	}
	tools, err := host.ListTools(ctx)
	if err != nil {
		return nil, fmt.Errorf("list the host's tools: %w", err)
	}
	out := make([]ToolSpec, 0, len(tools))
	for _, t := range tools {
		if !withCore && strings.HasPrefix(t.Name, "core_") {
			continue
		}
		out = append(out, ToolSpec{Name: t.Name, Description: t.Description, Parameters: t.InputSchema})
	}
	return out, nil
}

// runSubagent is agent_run_subagent's handler. Refusals and failed runs
// are isError results; the call's context ending is returned as it is.
func (p *Provider) runSubagent(ctx context.Context, req *sdk.CallToolRequest, args runArgs) (*sdk.CallToolResult, runOutput, error) {
	var none runOutput
	p.mu.RLock()
	defs, host, model, modelName := p.definitions, p.host, p.model, p.modelName
	maxRuns, maxRequests := p.maxRuns, p.maxRequests
	p.mu.RUnlock()
	i := slices.IndexFunc(defs, func(d definitions.Definition) bool { return d.ID == args.AgentID })
	runnable := make([]string, 0, len(defs))
	for _, d := range defs {
		if d.MCPRunnable || req.Caller.Depth > 0 {
			runnable = append(runnable, d.ID)
		}
	}
	if i < 0 {
		return sdk.ErrorResult("unknown agent_id %q; the sub-agents you can run are: %s", args.AgentID, strings.Join(runnable, ", ")), none, nil
	}
	def := defs[i]
	if !def.MCPRunnable && req.Caller.Depth == 0 {
		return sdk.ErrorResult("sub-agent %q runs only for other sub-agents (mcp_runnable = false); the sub-agents you can run are: %s",
			def.ID, strings.Join(runnable, ", ")), none, nil
	}
	if host == nil {
		return sdk.ErrorResult("the host offers no host service, so sub-agents cannot run"), none, nil
	}
	all, err := p.hostTools(ctx, true)
	if err != nil {
		return sdk.ErrorResult("%v", err), none, nil
	}
	var tools []ToolSpec
	for _, t := range all {
		if def.Allows(t.Name) {
			tools = append(tools, t)
		}
	}
	p.warnUnmatchedScope(def, all)
	usingSampling := model == nil
	if usingSampling {
		model = &SamplingModel{Host: host, Caller: req.Caller}
	}
	chosen := def.Model
	if chosen == "" && !usingSampling {
		chosen = modelName
	}
	budget, release, refusal := p.startRun(req.Caller.CallToken, def.ID, maxRuns)
	if refusal != nil {
		return refusal, none, nil
	}
	defer release()
	model = &budgetedModel{Model: model, p: p, budget: budget, max: maxRequests}
	actor := "agent:" + def.ID
	run := func(ctx context.Context, name string, arguments json.RawMessage) (string, bool, error) {
		res, err := host.CallTool(ctx, &sdk.HostCallToolRequest{Name: name, Arguments: arguments, Caller: req.Caller, Actor: actor})
		if err != nil {
			return "", false, err
		}
		return resultText(res), res.IsError, nil
	}
	p.log.Debug("sub-agent run starts", "agent", def.ID, "tools", len(tools), "sampling", usingSampling, "depth", req.Caller.Depth)
	result, err := Run(ctx, model, ModelRequest{
		System:      def.Prompt,
		Messages:    []Message{{Role: "user", Content: args.Prompt}},
		Tools:       tools,
		Model:       chosen,
		Temperature: def.Temperature,
	}, run, RunOptions{
		MaxIterations: def.MaxIterations,
		Allowed:       def.Allows,
		OnIteration: func(iteration int, summary string) {
			_ = req.Progress(ctx, sdk.Progress{Progress: float64(iteration), Total: float64(def.MaxIterations), Message: def.ID + ": " + summary})
		},
	})
	if err != nil {
		switch {
		case usingSampling && isSamplingUnavailable(err):
			return sdk.ErrorResult("sub-agent %q has no model to run on: no endpoint is configured in [providers.agent.llm] (set base_url and model), "+
				"and the MCP client cannot lend its own model (%v)", def.ID, err), none, nil
		case ctx.Err() != nil:
			return nil, none, ctx.Err()
		}
		return sdk.ErrorResult("sub-agent %q stopped after %s and %s: %v", def.ID,
			countNoun(result.Iterations, "model request"), countNoun(len(result.ToolCalls), "tool call"), err), none, nil
	}
	calls := make([]callView, 0, len(result.ToolCalls))
	for _, c := range result.ToolCalls {
		calls = append(calls, callView(c))
	}
	return sdk.TextResult(result.Response), runOutput{AgentID: def.ID, Response: result.Response, Iterations: result.Iterations, ToolCalls: calls}, nil
}

// startRun counts one more run against the client call token belongs to,
// or returns the refusal when the call has started maxRuns already. release
// ends the run; the call's budget is forgotten once none of its runs is
// left.
func (p *Provider) startRun(token, agentID string, maxRuns int) (*callBudget, func(), *sdk.CallToolResult) {
	p.budgetsMu.Lock()
	defer p.budgetsMu.Unlock()
	if p.budgets == nil {
		p.budgets = map[string]*callBudget{}
	}
	b := p.budgets[token]
	if b == nil {
		b = &callBudget{}
		p.budgets[token] = b
	}
	if b.runs >= maxRuns {
		return nil, nil, sdk.ErrorResult("sub-agent %q was not started: this client call has already started %d sub-agent runs, "+
			"the limit of [providers.agent] max_runs_per_call; give the task to fewer sub-agents or raise the limit", agentID, b.runs)
	}
	b.runs++
	b.active++
	return b, func() {
		p.budgetsMu.Lock()
		defer p.budgetsMu.Unlock()
		if b.active--; b.active == 0 && p.budgets[token] == b {
			delete(p.budgets, token)
		}
	}, nil
}

// ErrCallBudget is wrapped by the model error of a run whose client call
// has made [providers.agent] max_model_requests_per_call model requests.
var ErrCallBudget = errors.New("model request budget of the call is used up")

// budgetedModel counts each request against its call's budget and refuses
// the one beyond max.
type budgetedModel struct {
	Model
	p      *Provider
	budget *callBudget
	max    int
}

func (m *budgetedModel) Complete(ctx context.Context, req ModelRequest) (ModelResponse, error) {
	m.p.budgetsMu.Lock()
	used := m.budget.requests
	if used < m.max {
		m.budget.requests++
	}
	m.p.budgetsMu.Unlock()
	if used >= m.max {
		return ModelResponse{}, fmt.Errorf("%w: the sub-agent runs of this client call have made %d model requests, the limit of "+
			"[providers.agent] max_model_requests_per_call; give the task to fewer sub-agents or raise the limit", ErrCallBudget, used)
	}
	return m.Model.Complete(ctx, req)
}

// warnUnmatchedScope logs, once per user definition and entry, a tool
// scope entry that matches no tool the host serves: a typo there silently
// leaves the sub-agent without the tool.
func (p *Provider) warnUnmatchedScope(def definitions.Definition, tools []ToolSpec) {
	if def.Source == definitions.BuiltinSource {
		// Built-in scopes name optional providers' tools on purpose.
		return
	}
	for _, entry := range def.Tools {
		if entry == "*" {
			continue
		}
		matched := slices.ContainsFunc(tools, func(t ToolSpec) bool {
			ok, err := path.Match(sdk.ClientNameGlob(entry), t.Name)
			return err == nil && ok
		})
		if matched {
			continue
		}
		key := def.ID + "\x00" + entry
		if _, seen := p.warned.LoadOrStore(key, true); !seen {
			p.log.Warn("a tool scope entry matches no tool the host serves; check its spelling, or enable the provider that serves it",
				"agent", def.ID, "entry", entry, "source", def.Source)
		}
	}
}

// resultText is what the model reads of a tool result: its text blocks,
// or its structured content when it has no text, cut to 32 KiB.
func resultText(r *sdk.CallToolResult) string {
	text := r.Text()
	if text == "" && len(r.StructuredContent) > 0 {
		text = string(r.StructuredContent)
	}
	if len(text) > maxToolResultText {
		text = strings.ToValidUTF8(text[:maxToolResultText], "") + "\n[result cut at 32 KiB]"
	}
	return text
}

// firstSentence is s up to its first period or line break.
func firstSentence(s string) string {
	if i := strings.IndexAny(s, ".\n"); i >= 0 {
		return s[:i+1]
	}
	return s
}

// compactJSON removes insignificant white space from raw, or returns it as
// is when it is not JSON.
func compactJSON(raw json.RawMessage) string {
	var b bytes.Buffer
	if json.Compact(&b, raw) != nil {
		return string(raw)
	}
	return b.String()
}

var _ sdk.Provider = (*Provider)(nil)
