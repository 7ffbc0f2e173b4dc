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
// This is a first slice of the design. It does not yet do:
//
//   - one upstream session per host session: every host session shares one
//     client session per server, opened at Configure time, so
//     server-to-client requests (sampling, elicitation, roots) and
//     notifications (progress, logging, list_changed) are not relayed;
//   - resources, resource templates, prompts, completion and logging
//     levels of upstreams (ReadResource always reports not found);
//   - re-initialising an expired HTTP session, restarting a dead stdio
//     server, OAuth discovery on 401, the auth table (the host resolves
//     secrets and passes final header values in headers), and
//     x-mcp-header mirroring.
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
