// Package upstream is the built-in provider that re-exposes the tools,
// prompts and resources of other MCP servers ("upstreams") through the
// host, so that the host's policy and audit apply to them
// (docs/upstream.md is the operator's guide).
//
// Its settings are a list of servers, [[upstream.servers]], each reached
// over stdio (command, args, env, cwd) or Streamable HTTP (endpoint,
// headers). Configure connects to every enabled server at once, each
// within its start_timeout_secs, and fails only for bad settings: a server
// that cannot be reached is logged, reported by [Provider.Servers] and the
// unknown-tool error, and tried again in the background with backoff, and
// its tools appear (the host is asked to describe the provider again) once
// it is up. Describe lists the connected servers' tools, filtered by
// allowed_tools and disallowed_tools (deny wins) and renamed
// <prefix><tool>; CallTool forwards a call to the server that owns the
// tool.
//
// Each host session (told apart by its session token, else its session
// hash) gets its own session with each server, opened at its first
// request, held by each request that uses it (eviction never closes it
// under one) and closed once unused for session_idle_secs. A server's
// catalog is listed on, and its liveness pinged on, one of those sessions
// while a client has one, so that a stdio server runs one process per
// client and no more; while none has, on a shared session, opened at
// Configure time and again when the last client's session closes, which
// also serves calls from no MCP session (the command line); catalog.go
// says why and how. A stdio server that exited is started again at the
// next call (with backoff), and an HTTP session the server forgot (404) is
// initialised again once and the request sent once more. A client's own session asks the server for the protocol version
// that client asked the host for, and declares sampling and elicitation
// only as that client did, so the server treats it as it would directly
// (before 2026-07-28 it may sample and elicit during a call).
//
// The provider aims to be transparent, relaying through the host's
// provider protocol 2 service ([sdk.Host]):
//
//   - Prompts are listed as <prefix><prompt> (allowed_tools and
//     disallowed_tools do not apply to them) and filled in by GetPrompt;
//     Complete asks the server of the prompt or resource template.
//     Resources and resource templates keep their URIs; Subscribe and
//     Unsubscribe reach the server, and subscriptions are renewed when a
//     client's session is opened again.
//   - Server requests during a call (sampling/createMessage,
//     elicitation/create) go to the client of the call in flight on the
//     session, else to the client that owns the session, with
//     [sdk.Host.RequestClient]; the client's result, or its JSON-RPC
//     error, goes back to the server unchanged. Elicitation forms are
//     not checked by the go-sdk client on the way: the client at the end
//     judges them. Roots are not offered.
//   - Progress notifications reach the call they belong to (a client's
//     session forwards the client's own progress token; the shared session
//     and a token already in flight get one of the provider's), and log
//     messages the
//     most recent call in flight, else the owning client's session
//     ([sdk.Host.NotifyLog]). The logging level a client sets is passed on
//     to its sessions (logging/setLevel, or each request's _meta from
//     protocol 2026-07-28).
//   - tools, prompts and resources list_changed make the host describe
//     the provider again, and resources/updated reach the subscribed
//     clients; both are coalesced over 100 ms.
//   - On Streamable HTTP sessions of protocol 2026-07-28 the go-sdk
//     client mirrors arguments annotated x-mcp-header as Mcp-Param-*
//     headers (SEP-2243); the provider lists a session's tools before its
//     first call so that it can, and refuses arguments that cannot be
//     headers (not a string, integer or boolean) with an isError result.
//
// When the host ends a client session (SessionClosed) its upstream
// sessions are closed and its level and subscriptions forgotten.
//
// A notification the server sends just before a call's result may be
// handled after the call returned (the go-sdk client handles
// notifications apart from responses): a late progress report is then
// dropped, and a late log message goes to the client outside the call.
//
// Stdio servers run as children of the provider. In a plugin process they
// stay in its process group: the host starts each provider as the leader
// of a group of its own and kills that group when it stops the provider,
// and a provider built with the sdk kills its group when it gets SIGTERM,
// so upstream servers and whatever they start (npx, uvx and their node or
// python children) do not outlive the provider. In the host's process (the
// default on Unix; sdk.ConfigureRequest.Env is set then) each stdio server
// leads a process group of its own, killed when its session closes, and on
// Linux it gets SIGTERM when the host dies. [Provider.Close] ends them
// earlier, and so does configuring again.
//
// Endpoints never appear in full in logs or errors: they are reduced to
// scheme://host[:port], or <redacted> when they carry user information.
package upstream
