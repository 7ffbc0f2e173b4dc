// Package agent is openhuman-host's agent provider: sub-agents that take a
// whole task from an MCP client and carry it out with the host's own tools.
//
// # Definitions
//
// A sub-agent is a [definitions.Definition]: id, display name, when to use it, system
// prompt, optional model and temperature, iteration limit, tool scope and
// whether MCP clients may run it. The built-ins ([definitions.Builtins]: orchestrator,
// researcher, archivist, summarizer, critic, planner, help) are embedded in
// the binary; the user's own come from `<id>.toml` files, each with an
// optional `<id>.md` prompt beside it, in agents/ in the host's config
// directory (~/.config/openhuman-host/agents/ on Linux, ~/Library/Application
// Support/openhuman-host/agents/ on macOS, %APPDATA%\openhuman-host\agents\
// on Windows; [definitions.LoadDir]), and replace a
// built-in of the same id ([definitions.Merge]). Invalid files are reported as
// [definitions.Error] values naming the file, line and key, so that
// `openhuman-host config check` can print them. [definitions.Definition.Allows] applies
// a tool scope; agent_run_subagent is granted only by naming it exactly.
//
// # Tools
//
//   - agent_list_subagents (read): the definitions, as text and
//     structuredContent.definitions.
//   - agent_run_subagent (act): runs one sub-agent on a prompt and returns
//     its answer; an unknown or non-runnable agent_id is an error naming the
//     valid ids.
//   - core_list_tools (read): the tools sub-agents may call, with their
//     descriptions and parameters.
//   - core_tool_instructions (read): a Markdown tool-use protocol and tool
//     list, for models that are guided by their prompt.
//
// # Resources
//
// [definitions.PromptResources] lists the text/markdown resources
// openhuman://prompts/identity, /soul and /user, and
// openhuman://prompts/agents/<id> for every built-in sub-agent.
//
// # Execution
//
// Each run is a fresh single-turn loop against an OpenAI-compatible
// chat-completions endpoint ([providers.agent.llm] base_url, model,
// api_key_env) with native tool calling. Every tool call the model makes goes
// back to the host over the go-plugin broker, through the host's usual
// validation, security policy and audit (attributed to
// "<caller source>/agent:<id>"), and only within the definition's scope. A
// run is bounded by its definition's MaxIterations, a wall-clock timeout and a
// nesting depth of 6. With no endpoint configured, agent_run_subagent returns
// an isError result naming [providers.agent.llm]; listing and instructions
// still work.
package agent
