package agent

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/openhuman/openhuman-host/providers/agent/definitions"
	"github.com/openhuman/openhuman-host/sdk"
)

var (
	// readOnly are the annotations of the tools that only read.
	readOnly = sdk.Annotations{ReadOnlyHint: sdk.Bool(true), OpenWorldHint: sdk.Bool(false)}
	// noArguments is the input schema of the tools without arguments,
	// given rather than derived from struct{} so that it keeps
	// "properties": {}, which some clients expect of every object schema.
	noArguments = json.RawMessage(`{"type":"object","properties":{},"additionalProperties":false}`)
)

// addTools adds the four tools, agent_run_subagent as it is before
// Configure: no definitions, and the host's default timeout.
func (p *Provider) addTools() {
	sdk.AddTool(&p.tools, sdk.Tool{
		Name:        ToolListSubagents,
		Title:       "List sub-agents",
		Description: "Lists the sub-agents " + ToolRunSubagent + " can run: id, name, when to use each, and the tools it may call.",
		InputSchema: noArguments,
		Annotations: readOnly,
		Class:       sdk.ClassRead,
	}, p.listSubagents)
	sdk.AddTool(&p.tools, runSubagentTool(nil, 0), p.runSubagent)
	sdk.AddTool(&p.tools, sdk.Tool{
		Name:        ToolListTools,
		Title:       "List tools for sub-agents",
		Description: "Lists the host's tools a sub-agent may be given: name, description and JSON Schema parameters.",
		InputSchema: noArguments,
		Annotations: readOnly,
		Class:       sdk.ClassRead,
	}, p.listTools)
	sdk.AddTool(&p.tools, sdk.Tool{
		Name:        ToolToolInstructions,
		Title:       "Tool-use instructions",
		Description: "Returns Markdown instructions for calling the host's tools by writing JSON, with the tool list, for models without native tool calling.",
		InputSchema: noArguments,
		Annotations: readOnly,
		Class:       sdk.ClassRead,
	}, p.toolInstructions)
}

// runSubagentTool is agent_run_subagent's catalog entry: its description
// lists the ids of defs, and runTimeout is its deadline (0 for the
// host's default). Its schemas come from runArgs and runOutput.
func runSubagentTool(defs []definitions.Definition, runTimeout time.Duration) sdk.Tool {
	ids := make([]string, 0, len(defs))
	for _, d := range defs {
		ids = append(ids, d.ID)
	}
	return sdk.Tool{
		Name:  ToolRunSubagent,
		Title: "Run a sub-agent",
		Description: "Hands a whole task to a specialised sub-agent, which works on it with its own model and the host's tools " +
			"(within its tool scope and the security policy) and returns its answer. Use " + ToolListSubagents + " to pick one. " +
			"Valid agent_id values: " + strings.Join(ids, ", ") + ".",
		Annotations: sdk.Annotations{ReadOnlyHint: sdk.Bool(false), DestructiveHint: sdk.Bool(true), IdempotentHint: sdk.Bool(false), OpenWorldHint: sdk.Bool(true)},
		Class:       sdk.ClassAct,
		Timeout:     runTimeout,
	}
}

// runArgs are agent_run_subagent's arguments.
type runArgs struct {
	AgentID string `json:"agent_id" jsonschema:"The sub-agent's id, from agent_list_subagents." schema:"minLength=1,maxLength=64"`
	Prompt  string `json:"prompt" jsonschema:"The task, with everything the sub-agent needs to know: it cannot ask back." schema:"minLength=1,maxLength=100000"`
}

// runOutput is agent_run_subagent's structured content.
type runOutput struct {
	AgentID    string     `json:"agent_id"`
	Response   string     `json:"response"`
	Iterations int        `json:"iterations"`
	ToolCalls  []callView `json:"tool_calls"`
}

// callView is one tool call of a run.
type callView struct {
	Name    string `json:"name"`
	IsError bool   `json:"is_error"`
}

// definitionView is one sub-agent of agent_list_subagents.
type definitionView struct {
	ID            string   `json:"id"`
	DisplayName   string   `json:"display_name"`
	WhenToUse     string   `json:"when_to_use"`
	Tools         []string `json:"tools"`
	Model         string   `json:"model,omitempty"`
	MaxIterations int      `json:"max_iterations"`
	MCPRunnable   bool     `json:"mcp_runnable"`
	Source        string   `json:"source"`
}

// listSubagentsOutput is agent_list_subagents' structured content.
type listSubagentsOutput struct {
	Definitions []definitionView `json:"definitions"`
}

func (p *Provider) listSubagents(context.Context, *sdk.CallToolRequest, struct{}) (*sdk.CallToolResult, listSubagentsOutput, error) {
	p.mu.RLock()
	defs := p.definitions
	p.mu.RUnlock()
	views := make([]definitionView, 0, len(defs))
	var text strings.Builder
	fmt.Fprintf(&text, "%d sub-agents:\n", len(defs))
	for _, d := range defs {
		tools := d.Tools
		if tools == nil {
			tools = []string{}
		}
		views = append(views, definitionView{ID: d.ID, DisplayName: d.DisplayName, WhenToUse: d.WhenToUse, Tools: tools, Model: d.Model,
			MaxIterations: d.MaxIterations, MCPRunnable: d.MCPRunnable, Source: d.Source})
		fmt.Fprintf(&text, "- %s (%s): %s\n", d.ID, d.DisplayName, d.WhenToUse)
	}
	return sdk.TextResult(text.String()), listSubagentsOutput{Definitions: views}, nil
}

// toolView is one tool of core_list_tools: its parameters are its input
// schema as the host serves it.
type toolView struct {
	Name        string          `json:"name"`
	Description string          `json:"description"`
	Parameters  json.RawMessage `json:"parameters" schema:"type=object"`
}

// listToolsOutput is core_list_tools' structured content.
type listToolsOutput struct {
	Tools []toolView `json:"tools"`
}

func (p *Provider) listTools(ctx context.Context, _ *sdk.CallToolRequest, _ struct{}) (*sdk.CallToolResult, listToolsOutput, error) {
	tools, err := p.hostTools(ctx, false)
	if err != nil {
		return sdk.ErrorResult("%v", err), listToolsOutput{}, nil
	}
	views := make([]toolView, 0, len(tools))
	var text strings.Builder
	fmt.Fprintf(&text, "%d tools:\n", len(tools))
	for _, t := range tools {
		views = append(views, toolView(t))
		fmt.Fprintf(&text, "- %s: %s\n", t.Name, firstSentence(t.Description))
	}
	return sdk.TextResult(text.String()), listToolsOutput{Tools: views}, nil
}

// instructionsOutput is core_tool_instructions' structured content.
type instructionsOutput struct {
	Instructions string `json:"instructions"`
}

func (p *Provider) toolInstructions(ctx context.Context, _ *sdk.CallToolRequest, _ struct{}) (*sdk.CallToolResult, instructionsOutput, error) {
	tools, err := p.hostTools(ctx, false)
	if err != nil {
		return sdk.ErrorResult("%v", err), instructionsOutput{}, nil
	}
	var b strings.Builder
	b.WriteString("# Calling openhuman-host tools\n\n" +
		"To call a tool, answer with exactly one fenced JSON block and nothing else:\n\n" +
		"```json\n{\"tool\": \"memory_search\", \"arguments\": {\"query\": \"reef survey\"}}\n```\n\n" +
		"The result comes back as the next message. Call one tool at a time; when you have what you need, answer in plain text " +
		"without a JSON block. `arguments` must be a JSON object that matches the tool's parameters: unknown arguments, blank required " +
		"strings and out-of-range numbers are refused, with a message naming the argument. A refusal by the security policy is final: " +
		"report it instead of working around it.\n\n## Tools\n")
	for _, t := range tools {
		fmt.Fprintf(&b, "\n### %s\n\n%s\n\nParameters (JSON Schema): `%s`\n", t.Name, t.Description, compactJSON(t.Parameters))
	}
	text := b.String()
	return sdk.TextResult(text), instructionsOutput{Instructions: text}, nil
}
