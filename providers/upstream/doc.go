// Package upstream is the built-in provider that re-exposes the tools of
// other MCP servers ("upstreams") through the host, so that the host's
// policy and audit apply to them (DESIGN §9, issue 8).
//
// Its settings are a list of servers, [[upstream.servers]], each reached
// over stdio (command, args, env, cwd) or Streamable HTTP (endpoint,
// headers). Configure connects to every enabled server; Describe lists
// their tools, filtered by allowed_tools and disallowed_tools (deny wins)
// and renamed <prefix><tool>; CallTool forwards a call to the server that
// owns the tool.
//
// Each host session (told apart by its session hash) gets its own session
// with each server, opened at its first call; calls from no MCP session
// (the command line) and Describe share one opened at Configure time.
// Resources and resource templates are relayed with their URIs unchanged.
// A stdio server that exited is started again at the next call (with
// backoff), and an HTTP session the server forgot (404) is initialised
// again once and the call sent once more.
//
// This is not yet the whole design: server-to-client requests (sampling,
// elicitation, roots) and notifications (progress, logging, list_changed,
// resource updates) are not relayed; prompts, completion, logging levels
// and x-mcp-header mirroring are not routed.
//
// Stdio servers run as children of the provider and stay in its process
// group: the host starts each provider as the leader of a group of its own
// and kills that group when it stops the provider, and a provider built
// with the sdk kills its group when it gets SIGTERM, so upstream servers
// and whatever they start (npx, uvx and their node or python children) do
// not outlive the provider. [Provider.Close] ends them earlier, and so does
// configuring again.
//
// Endpoints never appear in full in logs or errors: they are reduced to
// scheme://host[:port], or <redacted> when they carry user information.
package upstream
