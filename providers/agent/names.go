package agent

import "github.com/openhuman/openhuman-host/providers/agent/agenttool"

// Tool names served by the agent provider, as clients see them; [agenttool] holds
// them for code outside the provider.
const (
	ToolListSubagents    = agenttool.ListSubagents
	ToolRunSubagent      = agenttool.RunSubagent
	ToolListTools        = agenttool.ListTools
	ToolToolInstructions = agenttool.ToolInstructions
)
