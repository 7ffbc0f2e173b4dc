package server

//lint:file-ignore SA1019 sampling, deprecated from protocol 2026-07-28 (SEP-2577), stays supported for clients on earlier versions: sub-agents run on the client's model through it.

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/openhuman/openhuman-host/sdk"
)

// defaultSamplingMaxTokens is the maxTokens of a sampling request that sets
// none.
const defaultSamplingMaxTokens = 4096

// beginCall registers a client's tools/call under a new call token, so
// that providers acting for it can reach its session (Host.CreateMessage)
// while it runs; the returned func unregisters it.
// The call is cancelled (cancel) when its session closes: a client that
// deletes its session (HTTP DELETE) or disconnects stops its calls,
// provider work and LLM requests included.
func (s *Server) beginCall(ctx context.Context, cancel context.CancelFunc, ss *mcp.ServerSession, profile string) (string, func()) {
	if ss == nil {
		return "", func() {}
	}
	token := rand.Text()
	s.calls.Store(token, &callEntry{session: ss, ctx: ctx, cancel: cancel, profile: profile})
	if info := s.session(ss); info.closed.Load() {
		cancel()
	}
	return token, func() { s.calls.Delete(token) }
}

// cancelCalls cancels the calls running in ss, which has closed.
func (s *Server) cancelCalls(ss *mcp.ServerSession) {
	s.calls.Range(func(_, v any) bool {
		if e := v.(*callEntry); e.session == ss && e.cancel != nil && e.ask == nil {
			e.cancel()
		}
		return true
	})
}

// CreateMessage relays a provider's sampling request to the MCP client
// whose call req.Caller stands for (MCP 2025-11-25 client/sampling:
// sampling/createMessage, with tools when req has any). It fails with an
// error wrapping [sdk.ErrSamplingUnavailable] when that call has ended or
// did not come from an MCP session, or when the client did not declare
// sampling (sampling.tools for a request with tools).
func (s *Server) CreateMessage(ctx context.Context, req *sdk.CreateMessageRequest) (*sdk.CreateMessageResult, error) {
	v, ok := s.calls.Load(req.Caller.CallToken)
	if req.Caller.CallToken == "" || !ok {
		return nil, fmt.Errorf("%w: only a tool call from a connected MCP client can use the client's model, and this one came from %q",
			sdk.ErrSamplingUnavailable, req.Caller.SourceType)
	}
	call := v.(*callEntry)
	ss := call.session
	ctx, stop := related(ctx, call.ctx)
	defer stop()
	caps := call.caps
	if call.ask == nil {
		if init := ss.InitializeParams(); init != nil {
			caps = init.Capabilities
		}
	}
	client := nonEmpty(req.Caller.ClientName, "the client")
	switch {
	case caps == nil || caps.Sampling == nil:
		return nil, fmt.Errorf("%w: %s did not declare the sampling capability", sdk.ErrSamplingUnavailable, client)
	case len(req.Tools) > 0 && caps.Sampling.Tools == nil:
		return nil, fmt.Errorf("%w: %s can sample, but not with tools (it did not declare sampling.tools)", sdk.ErrSamplingUnavailable, client)
	}
	maxTokens := req.MaxTokens
	if maxTokens <= 0 {
		maxTokens = defaultSamplingMaxTokens
	}
	var prefs *mcp.ModelPreferences
	if req.ModelHint != "" {
		prefs = &mcp.ModelPreferences{Hints: []*mcp.ModelHint{{Name: req.ModelHint}}}
	}
	var temperature float64
	if req.Temperature != nil {
		temperature = *req.Temperature
	}
	if len(req.Tools) == 0 {
		params := &mcp.CreateMessageParams{MaxTokens: maxTokens, SystemPrompt: req.SystemPrompt, Temperature: temperature, ModelPreferences: prefs}
		for _, m := range req.Messages {
			content, err := samplingContent(m.Content)
			if err != nil {
				return nil, err
			}
			if len(content) != 1 {
				return nil, fmt.Errorf("a sampling message without tools holds one content block, not %d", len(content))
			}
			params.Messages = append(params.Messages, &mcp.SamplingMessage{Role: mcp.Role(m.Role), Content: content[0]})
		}
		if call.ask != nil {
			return askSampling(ctx, call, params)
		}
		res, err := ss.CreateMessage(ctx, params)
		if err != nil {
			return nil, fmt.Errorf("sampling/createMessage: %w", err)
		}
		return samplingResult([]mcp.Content{res.Content}, res.Model, res.StopReason), nil
	}
	params := &mcp.CreateMessageWithToolsParams{MaxTokens: maxTokens, SystemPrompt: req.SystemPrompt, Temperature: temperature, ModelPreferences: prefs}
	for _, m := range req.Messages {
		content, err := samplingContent(m.Content)
		if err != nil {
			return nil, err
		}
		params.Messages = append(params.Messages, &mcp.SamplingMessageV2{Role: mcp.Role(m.Role), Content: content})
	}
	for _, t := range req.Tools {
		params.Tools = append(params.Tools, &mcp.Tool{Name: t.Name, Description: t.Description, InputSchema: json.RawMessage(t.InputSchema)})
	}
	if call.ask != nil {
		return askSampling(ctx, call, params)
	}
	res, err := ss.CreateMessageWithTools(ctx, params)
	if err != nil {
		return nil, fmt.Errorf("sampling/createMessage: %w", err)
	}
	return samplingResult(res.Content, res.Model, res.StopReason), nil
}

// askSampling asks a multi-round-trip client for a sampling result
// through its call's input requests (SEP-2322).
func askSampling(ctx context.Context, call *callEntry, params mcp.InputRequest) (*sdk.CreateMessageResult, error) {
	out, err := call.ask(ctx, params)
	if err != nil {
		return nil, fmt.Errorf("sampling/createMessage: %w", err)
	}
	switch res := out.(type) {
	case *mcp.CreateMessageWithToolsResult:
		return samplingResult(res.Content, res.Model, res.StopReason), nil
	case *mcp.CreateMessageResult:
		return samplingResult([]mcp.Content{res.Content}, res.Model, res.StopReason), nil
	}
	return nil, errors.New("sampling/createMessage: the client's answer to the sampling request is not a sampling result (it has no role and content)")
}

// samplingContent converts a provider's blocks to MCP content.
func samplingContent(in []sdk.SamplingContent) ([]mcp.Content, error) {
	out := make([]mcp.Content, 0, len(in))
	for _, c := range in {
		switch c.Type {
		case "text":
			out = append(out, &mcp.TextContent{Text: c.Text})
		case "tool_use":
			var input map[string]any
			if len(c.Input) > 0 {
				if err := json.Unmarshal(c.Input, &input); err != nil {
					return nil, fmt.Errorf("tool use %s: input is not a JSON object: %w", c.ToolName, err)
				}
			}
			out = append(out, &mcp.ToolUseContent{ID: c.ToolUseID, Name: c.ToolName, Input: input})
		case "tool_result":
			out = append(out, &mcp.ToolResultContent{ToolUseID: c.ToolUseID, Content: []mcp.Content{&mcp.TextContent{Text: c.Text}}, IsError: c.IsError})
		default:
			return nil, fmt.Errorf("sampling content type %q: must be text, tool_use or tool_result", c.Type)
		}
	}
	return out, nil
}

// samplingResult converts the client's reply; blocks other than text and
// tool uses (images, audio) are described in text.
func samplingResult(content []mcp.Content, model, stop string) *sdk.CreateMessageResult {
	out := &sdk.CreateMessageResult{Model: model, StopReason: stop}
	for _, c := range content {
		switch c := c.(type) {
		case *mcp.TextContent:
			out.Content = append(out.Content, sdk.SamplingContent{Type: "text", Text: c.Text})
		case *mcp.ToolUseContent:
			input, _ := json.Marshal(c.Input)
			if c.Input == nil {
				input = []byte("{}")
			}
			out.Content = append(out.Content, sdk.SamplingContent{Type: "tool_use", ToolUseID: c.ID, ToolName: c.Name, Input: input})
		default:
			out.Content = append(out.Content, sdk.SamplingContent{Type: "text", Text: fmt.Sprintf("[%T content omitted]", c)})
		}
	}
	return out
}
