package agent

// Tool names served by the agent provider, as clients see them.
const (
	// ToolListSubagents lists the sub-agents ToolRunSubagent can run.
	ToolListSubagents = "agent_list_subagents"
	// ToolRunSubagent hands a task to a sub-agent and returns its answer.
	ToolRunSubagent = "agent_run_subagent"
	// ToolListTools lists the host's tools a sub-agent may be given.
	ToolListTools = "core_list_tools"
	// ToolToolInstructions returns Markdown instructions for calling the
	// host's tools by writing JSON, for models without native tool
	// calling.
	ToolToolInstructions = "core_tool_instructions"
)
