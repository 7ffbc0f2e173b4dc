// Package agenttool names the agent provider's tools, as clients see them. It
// holds only constants, so that tests and tools outside the provider can
// name its tools without importing the provider itself; the provider's
// own Tool* constants are these.
package agenttool

// Tool names served by the agent provider, as clients see them.
const (
	// ListSubagents lists the sub-agents RunSubagent can run.
	ListSubagents = "agent_list_subagents"
	// RunSubagent hands a task to a sub-agent and returns its answer.
	RunSubagent = "agent_run_subagent"
	// ListTools lists the host's tools a sub-agent may be given.
	ListTools = "core_list_tools"
	// ToolInstructions returns Markdown instructions for calling the
	// host's tools by writing JSON, for models without native tool
	// calling.
	ToolInstructions = "core_tool_instructions"
)
