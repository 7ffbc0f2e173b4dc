package server

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"path"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/openhuman/openhuman-host/host/audit"
	"github.com/openhuman/openhuman-host/host/catalog"
	"github.com/openhuman/openhuman-host/host/policy"
	"github.com/openhuman/openhuman-host/host/toolindex"
	"github.com/openhuman/openhuman-host/sdk"
	"github.com/openhuman/openhuman-host/sdk/mcpwire"
)

// The meta-tools of progressive discovery. A client of a profile with
// Discovery set lists them, with its pinned tools, instead of the whole
// catalog; other clients do not list them. Provider tools of these names
// are not served.
const (
	// ToolSearch ranks the tools the client may call against a request
	// in plain words.
	ToolSearch = "tool_search"
	// ToolDescribe returns one tool's whole definition.
	ToolDescribe = "tool_describe"
	// ToolCall calls a tool found by ToolSearch through the same pipeline
	// as a direct call: validation, policy, confirmation and an audit row
	// under the tool's own name.
	ToolCall = "tool_call"
)

// metaTools are the meta-tools' names.
var metaTools = []string{ToolSearch, ToolDescribe, ToolCall}

func isMetaTool(name string) bool {
	return name == ToolSearch || name == ToolDescribe || name == ToolCall
}

// Limits of tool_search.
const (
	defaultSearchK = 5
	maxSearchK     = 20
	maxQueryChars  = 500
	// maxSummaryChars bounds a description in search results: the model
	// reads the whole one with tool_describe.
	maxSummaryChars = 240
)

// discoveryIndex is the tool index of one view, built on first use.
type discoveryIndex struct {
	mu   sync.Mutex
	view *view
	ix   *toolindex.Index
	err  error
}

// index returns the index of the view served now, building it when the
// catalog changed since the last one.
func (s *Server) index(ctx context.Context) (*toolindex.Index, error) {
	v := s.view.Load()
	d := &s.discovery
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.view == v && (d.ix != nil || d.err != nil) {
		return d.ix, d.err
	}
	tools := make([]toolindex.Tool, 0, len(v.tools))
	for _, t := range v.tools {
		tools = append(tools, toolindex.Tool{Name: t.Name, Title: t.Title, Description: t.Description, InputSchema: json.RawMessage(t.InputSchema)})
	}
	ix, err := toolindex.New(ctx, tools)
	if d.ix != nil {
		_ = d.ix.Close()
	}
	d.view, d.ix, d.err = v, ix, err
	return ix, err
}

// addMetaTools registers the meta-tools with the go-sdk.
func (s *Server) addMetaTools() {
	object := func(props string, required ...string) json.RawMessage {
		req, _ := json.Marshal(required)
		return json.RawMessage(`{"type":"object","properties":{` + props + `},"required":` + string(req) + `,"additionalProperties":false}`)
	}
	yes, no := true, false
	s.mcp.AddTool(&mcp.Tool{
		Name:  ToolSearch,
		Title: "Find tools",
		Description: "Find the tools for a task among all the tools this server has: describe the task in plain words " +
			"(\"save a note for later\", \"search the web for recent news\"). Returns the best matching tools, best first, " +
			"with a one-line description each. Then read a tool's arguments with tool_describe and call it with tool_call.",
		InputSchema: object(`"query":{"type":"string","description":"the task, in plain words","maxLength":500},`+
			`"k":{"type":"integer","description":"how many tools to return (default 5)","minimum":1,"maximum":20}`, "query"),
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true, OpenWorldHint: &no},
	}, s.toolSearch)
	s.mcp.AddTool(&mcp.Tool{
		Name:        ToolDescribe,
		Title:       "Describe a tool",
		Description: "Return one tool's whole definition: its description, its arguments as a JSON Schema and its output schema. Use it before tool_call.",
		InputSchema: object(`"name":{"type":"string","description":"the tool's name, as tool_search returned it","maxLength":64}`, "name"),
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true, OpenWorldHint: &no},
	}, s.toolDescribe)
	s.mcp.AddTool(&mcp.Tool{
		Name:  ToolCall,
		Title: "Call a tool",
		Description: "Call a tool that tool_search found, with its arguments as tool_describe gave them. The result is the tool's own; " +
			"the tool may be refused by the user's security policy, and the refusal says why.",
		InputSchema: object(`"name":{"type":"string","description":"the tool's name","maxLength":64},`+
			`"arguments":{"type":"object","description":"the tool's arguments"}`, "name"),
		Annotations: &mcp.ToolAnnotations{DestructiveHint: &yes, OpenWorldHint: &yes},
	}, s.toolCall)
}

// decodeMeta reads a meta-tool's arguments into dst, refusing unknown
// ones; the error is the text of an isError result.
func decodeMeta(name string, raw json.RawMessage, dst any) error {
	if len(bytes.TrimSpace(raw)) == 0 {
		raw = json.RawMessage("{}")
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(dst); err != nil {
		return fmt.Errorf("%s: invalid arguments: %v", name, err)
	}
	return nil
}

// discoveryClient is what a meta-tool needs of its caller: the settings
// of its profile and the policy check of a tool.
func (s *Server) discoveryClient(req *mcp.CallToolRequest) (*Options, sdk.Caller, string, error) {
	caller := s.callerOf(req)
	profile := s.profileOf(req, caller.ClientName)
	set, err := s.settings.Load().forProfile(profile)
	return set, caller, profile, err
}

// callable reports whether a client under set, which can or cannot be
// asked to confirm an act, may call t: it is served, not a meta-tool, not
// refused by the policy whatever the call, and not an act that
// confirm_acts = "required" refuses to a client that cannot confirm.
func callable(set *Options, t *catalog.Tool, canConfirm bool) bool {
	if isMetaTool(t.Name) || set.Policy != nil && set.Policy.Refusal(t.Name, policy.Class(t.Class)) != nil {
		return false
	}
	return canConfirm || !set.confirmRequired() || t.Class != sdk.ClassAct
}

// recordMeta writes a meta-tool's audit row, as a read of the host.
func (s *Server) recordMeta(ctx context.Context, name string, caller sdk.Caller, profile string, args json.RawMessage, start time.Time, res *mcp.CallToolResult) {
	if s.opts.Audit == nil || !s.settings.Load().RecordReads {
		return
	}
	rec := audit.Record{
		TimeMs: start.UnixMilli(), SessionHash: caller.SessionHash, SourceType: caller.SourceType, ClientName: caller.ClientName,
		ClientVersion: caller.ClientVersion, Tool: name, Provider: "host", Class: string(sdk.ClassRead), Decision: audit.DecisionAllowed,
		Success: !res.IsError, DurationUs: time.Since(start).Microseconds(), ArgsSummary: audit.SummarizeArgs(args, s.opts.AuditRules), Profile: profile,
	}
	if res.IsError {
		rec.Error = audit.TruncateError(mcpwire.Text(res))
	}
	_ = s.opts.Audit.Record(context.WithoutCancel(ctx), rec)
}

func metaError(format string, args ...any) *mcp.CallToolResult {
	return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: fmt.Sprintf(format, args...)}}}
}

// FoundTool is one entry of tool_search's structured result.
type FoundTool struct {
	// Name is the tool's name, to pass to tool_describe and tool_call.
	Name string `json:"name"`
	// Title is the tool's title; empty when it has none.
	Title string `json:"title,omitempty"`
	// Description is the first line of the tool's description, at most
	// 240 characters.
	Description string `json:"description"`
	// Score is the tool's relevance, higher is better, meaningful only
	// within one search: BM25 in keyword mode, reciprocal rank fusion
	// (at most 2/61) in hybrid mode.
	Score float64 `json:"score"`
	// Similarity is, in hybrid mode, the cosine similarity (0..1] of the
	// tool's embedding to the query's; nil for a tool without one, or
	// whose similarity is 0 or less (then ranked by keywords only).
	Similarity *float64 `json:"similarity,omitempty"`
}

// runMeta runs body, the work of the discovery meta-tool name, with the
// settings of req's client, and writes the call's audit row. A client
// that may not use the meta-tools gets "<name> refused" without body
// running.
func (s *Server) runMeta(ctx context.Context, name string, req *mcp.CallToolRequest, body func(set *Options) *mcp.CallToolResult) (*mcp.CallToolResult, error) {
	start := time.Now()
	set, caller, profile, err := s.discoveryClient(req)
	var res *mcp.CallToolResult
	if err != nil {
		res = metaError("%s refused: %v", name, err)
	} else {
		res = body(set)
	}
	s.recordMeta(ctx, name, caller, profile, req.Params.Arguments, start, res)
	return res, nil
}

func (s *Server) toolSearch(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	return s.runMeta(ctx, ToolSearch, req, func(set *Options) *mcp.CallToolResult {
		var in struct {
			Query string `json:"query"`
			K     *int   `json:"k"`
		}
		if err := decodeMeta(ToolSearch, req.Params.Arguments, &in); err != nil {
			return metaError("%v", err)
		}
		k := defaultSearchK
		switch {
		case strings.TrimSpace(in.Query) == "":
			return metaError("%s: argument \"query\" must not be blank: describe the task in plain words", ToolSearch)
		case utf8.RuneCountInString(in.Query) > maxQueryChars:
			return metaError("%s: argument \"query\" is %d characters long; at most %d allowed", ToolSearch, utf8.RuneCountInString(in.Query), maxQueryChars)
		case in.K != nil && (*in.K < 1 || *in.K > maxSearchK):
			return metaError("%s: argument \"k\" must be between 1 and %d; got %d", ToolSearch, maxSearchK, *in.K)
		case in.K != nil:
			k = *in.K
		}
		ix, err := s.index(ctx)
		if err != nil {
			s.log.Error("tool index unavailable", "error", err)
			return metaError("%s is unavailable: the tool index could not be built (%v)", ToolSearch, err)
		}
		v := s.view.Load()
		keep := func(name string) bool {
			t, ok := v.tools[name]
			return ok && callable(set, t, clientCanConfirm(req))
		}
		semantic, fallback, err := s.rankByMeaning(ctx, in.Query, keep)
		if err != nil {
			return metaError("%s was cancelled: %v", ToolSearch, err)
		}
		n := k
		if semantic != nil {
			n = max(k, fusionCandidates)
		}
		hits, err := ix.Search(ctx, in.Query, n, keep)
		if err != nil {
			return metaError("%s failed: %v", ToolSearch, err)
		}
		found := make([]FoundTool, 0, k)
		if semantic == nil {
			for _, h := range hits {
				if t := v.tools[h.Name]; t != nil {
					found = append(found, FoundTool{Name: t.Name, Title: t.Title, Description: summary(t.Description), Score: h.Score})
				}
			}
		} else {
			keyword := make([]string, len(hits))
			for i, h := range hits {
				keyword[i] = h.Name
			}
			for _, h := range fuse(k, semantic.names, keyword) {
				t := v.tools[h.Name]
				if t == nil {
					continue
				}
				f := FoundTool{Name: t.Name, Title: t.Title, Description: summary(t.Description), Score: h.Score}
				if sim, ok := semantic.similarity[h.Name]; ok {
					f.Similarity = &sim
				}
				found = append(found, f)
			}
		}
		var text strings.Builder
		for _, f := range found {
			fmt.Fprintf(&text, "%s: %s\n", f.Name, f.Description)
		}
		if len(found) == 0 {
			text.WriteString("No tool matches; try other words for the task.\n")
		}
		structured := map[string]any{"tools": found, "mode": SearchKeyword}
		switch {
		case semantic != nil:
			structured["mode"] = SearchHybrid
			if semantic.without > 0 {
				structured["without_embedding"] = semantic.without
				if semantic.without == 1 {
					text.WriteString("(1 tool has no embedding yet and was ranked by keywords only.)")
				} else {
					fmt.Fprintf(&text, "(%d tools have no embedding yet and were ranked by keywords only.)", semantic.without)
				}
			}
		case fallback != "":
			structured["fallback_reason"] = fallback
			fmt.Fprintf(&text, "(Ranked by keywords only: %s.)", fallback)
		}
		out := &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: strings.TrimRight(text.String(), "\n")}}}
		out.StructuredContent = structured
		return out
	})
}

// summary is a description's first line, cut to maxSummaryChars.
func summary(desc string) string {
	line, _, _ := strings.Cut(strings.TrimSpace(desc), "\n")
	if utf8.RuneCountInString(line) <= maxSummaryChars {
		return line
	}
	r := []rune(line)
	return string(r[:maxSummaryChars-1]) + "…"
}

func (s *Server) toolDescribe(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	return s.runMeta(ctx, ToolDescribe, req, func(set *Options) *mcp.CallToolResult {
		var in struct {
			Name string `json:"name"`
		}
		if err := decodeMeta(ToolDescribe, req.Params.Arguments, &in); err != nil {
			return metaError("%v", err)
		}
		v := s.view.Load()
		t, ok := v.tool(in.Name)
		if !ok || !callable(set, t, clientCanConfirm(req)) || v.hidden[t.Name] != nil {
			return metaError("%s: no tool named %q is available to this client; find one with %s", ToolDescribe, in.Name, ToolSearch)
		}
		def := map[string]any{
			"name": t.Name, "description": t.Description, "inputSchema": json.RawMessage(t.InputSchema), "class": string(t.Class),
		}
		if t.Title != "" {
			def["title"] = t.Title
		}
		if len(t.OutputSchema) > 0 {
			def["outputSchema"] = json.RawMessage(t.OutputSchema)
		}
		body, _ := json.MarshalIndent(def, "", "  ")
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: string(body)}}, StructuredContent: def}
	})
}

// toolCall calls the named tool as if the client had called it directly:
// the same handler runs, so validation, policy, confirmation (also over
// multi-round-trip results) and the audit row are the tool's own.
func (s *Server) toolCall(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	var in struct {
		Name      string          `json:"name"`
		Arguments json.RawMessage `json:"arguments"`
	}
	if err := decodeMeta(ToolCall, req.Params.Arguments, &in); err != nil {
		return metaError("%v", err), nil
	}
	if isMetaTool(in.Name) {
		return metaError("%s: %s is not a tool to call through %s; call it directly", ToolCall, in.Name, ToolCall), nil
	}
	t, ok := s.view.Load().tool(in.Name)
	if !ok {
		return metaError("%s: no tool named %q; find one with %s", ToolCall, in.Name, ToolSearch), nil
	}
	if err := argumentsObject(in.Arguments); err != nil {
		return metaError("%s: %s: %v", ToolCall, t.Name, err), nil
	}
	inner := *req.Params
	inner.Name, inner.Arguments = t.Name, in.Arguments
	return s.toolHandler(t.Name)(ctx, &mcp.CallToolRequest{Session: req.Session, Params: &inner, Extra: req.Extra})
}

// pinned reports whether name matches one of a discovery profile's
// pinned globs (dots match "_", as in allowed_tools).
func pinned(globs []string, name string) bool {
	for _, g := range globs {
		if ok, _ := path.Match(sdk.ClientNameGlob(g), name); ok {
			return true
		}
	}
	return false
}
