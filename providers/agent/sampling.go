package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/openhuman/openhuman-host/sdk"
)

// SamplingModel is a [Model] backed by the MCP client's own model: each
// request goes through the host service to the client that made the call
// (MCP sampling/createMessage, with tools when the client declared
// sampling.tools). It is what a sub-agent runs on when no
// [providers.agent.llm] endpoint is configured.
type SamplingModel struct {
	// Host is the host service the provider received in Configure.
	Host sdk.Host
	// Caller is the caller of the agent_run_subagent call being served; it
	// carries the call token that routes requests to the client's session.
	Caller sdk.Caller
	// MaxTokens bounds each reply; 0 lets the host choose (4096).
	MaxTokens int64
}

// Complete sends one sampling request. Tool names are offered as the
// OpenAI-compatible path offers them (memory_search as memory_search) and
// mapped back. Errors wrap [sdk.ErrSamplingUnavailable] when the client
// cannot sample.
func (m *SamplingModel) Complete(ctx context.Context, req ModelRequest) (ModelResponse, error) {
	if m.Host == nil {
		return ModelResponse{}, fmt.Errorf("%w: the host offers no host service", sdk.ErrSamplingUnavailable)
	}
	names, err := newToolNames(req.Tools)
	if err != nil {
		return ModelResponse{}, err
	}
	sreq := &sdk.CreateMessageRequest{
		Caller:       m.Caller,
		SystemPrompt: req.System,
		Temperature:  req.Temperature,
		MaxTokens:    m.MaxTokens,
		ModelHint:    req.Model,
	}
	for _, t := range req.Tools {
		schema := t.Parameters
		if len(schema) == 0 {
			schema = json.RawMessage(`{"type":"object","properties":{}}`)
		}
		sreq.Tools = append(sreq.Tools, sdk.SamplingTool{Name: names.apiName(t.Name), Description: t.Description, InputSchema: schema})
	}
	sreq.Messages = samplingMessages(req.Messages, names)
	res, err := m.Host.CreateMessage(ctx, sreq)
	if err != nil {
		if ctx.Err() != nil {
			return ModelResponse{}, fmt.Errorf("the model request was cancelled: %w", ctx.Err())
		}
		return ModelResponse{}, fmt.Errorf("the client's model: %w", err)
	}
	var out ModelResponse
	var texts []string
	for _, c := range res.Content {
		switch c.Type {
		case "text":
			texts = append(texts, c.Text)
		case "tool_use":
			args := string(c.Input)
			if args == "" {
				args = "{}"
			}
			out.ToolCalls = append(out.ToolCalls, ToolCall{ID: c.ToolUseID, Name: names.hostName(c.ToolName), Arguments: args})
		}
	}
	out.Content = strings.Join(texts, "\n")
	return out, nil
}

// samplingMessages converts the conversation: tool results, which the
// loop keeps as one "tool" message each, become tool_result blocks of one
// user message following the assistant's tool uses, as MCP sampling
// requires.
func samplingMessages(msgs []Message, names *toolNames) []sdk.SamplingMessage {
	var out []sdk.SamplingMessage
	for _, m := range msgs {
		switch m.Role {
		case "assistant":
			var content []sdk.SamplingContent
			if m.Content != "" {
				content = append(content, sdk.SamplingContent{Type: "text", Text: m.Content})
			}
			for _, c := range m.ToolCalls {
				input := json.RawMessage(historyArguments(c.Arguments))
				content = append(content, sdk.SamplingContent{Type: "tool_use", ToolUseID: c.ID, ToolName: names.apiName(c.Name), Input: input})
			}
			out = append(out, sdk.SamplingMessage{Role: "assistant", Content: content})
		case "tool":
			block := sdk.SamplingContent{Type: "tool_result", ToolUseID: m.ToolCallID, Text: m.Content, IsError: m.IsError}
			if n := len(out); n > 0 && out[n-1].Role == "user" && len(out[n-1].Content) > 0 && out[n-1].Content[0].Type == "tool_result" {
				out[n-1].Content = append(out[n-1].Content, block)
				continue
			}
			out = append(out, sdk.SamplingMessage{Role: "user", Content: []sdk.SamplingContent{block}})
		default:
			out = append(out, sdk.SamplingMessage{Role: "user", Content: []sdk.SamplingContent{{Type: "text", Text: m.Content}}})
		}
	}
	return out
}

// isSamplingUnavailable reports whether err says the client cannot sample.
func isSamplingUnavailable(err error) bool { return errors.Is(err, sdk.ErrSamplingUnavailable) }
