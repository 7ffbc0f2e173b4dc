package sdk

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"
)

// Provider is what a provider author implements. The host calls Configure
// once after the go-plugin handshake, then Describe, then CallTool and
// ReadResource concurrently, as MCP clients ask for them. Every method must
// be safe for concurrent use once Configure has returned. When the host
// restarts a crashed provider, the new process gets Configure and Describe
// again.
//
// The context of each call is cancelled when the MCP client cancels the
// request (notifications/cancelled), disconnects, or the host's deadline for
// the tool passes; long-running tools should return promptly when it is.
type Provider interface {
	// Configure receives the provider's [providers.<name>] table and what the
	// host resolved for it. A returned error aborts the provider's load and
	// is shown to the operator, so say what to change, naming the key
	// ("providers.<name>.<key>"). The handshake, Configure and Describe
	// together must finish within the provider's start timeout
	// ([providers.<name>] start_timeout_secs, else [server]
	// provider_start_timeout_secs, default 10 s); ctx carries that deadline.
	Configure(ctx context.Context, req *ConfigureRequest) error

	// Describe returns the provider's catalog. The host validates every tool
	// spec (name, object input schema, policy class) and skips invalid ones,
	// and tools or resources another provider already serves, with a
	// logged reason. A returned error aborts the provider's load.
	Describe(ctx context.Context) (*Catalog, error)

	// CallTool runs one tool. Arguments have already been validated against
	// the tool's input schema. A returned error becomes a tool result with
	// isError set, naming the provider; return a result built with
	// [ErrorResult] for errors the model should see verbatim. ctx is
	// cancelled when the client cancels or the call's deadline passes; a
	// nil result with a nil error is reported as a failure.
	CallTool(ctx context.Context, req *CallToolRequest) (*CallToolResult, error)

	// ReadResource returns the contents of a resource listed by Describe.
	// Return an error wrapping [ErrResourceNotFound] for an unknown URI.
	ReadResource(ctx context.Context, req *ReadResourceRequest) (*ReadResourceResult, error)
}

// ErrResourceNotFound is returned (wrapped) by ReadResource for a URI the
// provider does not serve; the host answers the client with MCP's
// resource-not-found error.
var ErrResourceNotFound = errors.New("resource not found")

// ConfigureRequest is the argument of [Provider.Configure].
type ConfigureRequest struct {
	// Config is the provider's [providers.<name>] table as a JSON object,
	// "{}" when the table has no provider-specific keys. The keys the host
	// reads itself (enabled, command, args, sha256, start_timeout_secs,
	// tool_timeout_secs) are left out; keys ending in _env are included
	// with the variable's name as value, their values arrive in Secrets.
	// TOML integers and floats arrive as JSON numbers, nested tables as
	// objects, dates and times as strings.
	Config json.RawMessage
	// DataDir is an absolute directory, created by the host with mode 0700,
	// that the provider owns for its state: <host data dir>/<name>, for
	// example ~/.local/share/openhuman-host/hello on Linux,
	// ~/Library/Application Support/openhuman-host/hello on macOS and
	// %LOCALAPPDATA%\openhuman-host\hello on Windows. It survives restarts of
	// the provider and of the host. Two hosts on one data dir (a running
	// server and a one-shot `openhuman-host tools call`) each run their own
	// process of the provider on it: write files atomically (a temporary
	// file renamed into place) and do not assume the process is alone.
	DataDir string
	// Secrets holds values the host read from the environment for keys
	// ending in _env, keyed by the dotted key path without the suffix: the
	// table entry `llm.api_key_env = "OPENAI_API_KEY"` arrives as
	// Secrets["llm.api_key"], and "" when the variable is unset. Nil or
	// empty when there are no _env keys. Providers never read the host's
	// environment: the host starts them with an allow-list of variables
	// (PATH, HOME, TMPDIR, locale, time zone and TLS settings, and on
	// Windows the system, profile, temporary and application-data
	// directories, PATHEXT and ComSpec) and no others.
	Secrets map[string]string
	// Host calls tools through the host's pipeline; nil when the host offers
	// no host service.
	Host Host
	// HostVersion is the host's version string.
	HostVersion string
	// LogLevel is the host's log level name (trace, debug, info, warn,
	// error or off); [Serve] already applies it to the logger it creates
	// or is given.
	LogLevel string
	// ConfigDir is the directory of the host's config file (the system's
	// config directory, such as ~/.config/openhuman-host, unless --config
	// points elsewhere; openhuman-host config paths prints it),
	// where a provider may look for files of its own, such as the agent
	// provider's agents/ directory. It may not exist; empty when unknown.
	ConfigDir string
	// Env is the environment the host gives the provider, as KEY=VALUE
	// entries, when the host calls the provider in its own process (a
	// built-in run in the host): there os.Environ is the host's whole
	// environment, so a provider that starts programs or reads settings
	// from the environment uses [ConfigureRequest.Environ] and
	// [ConfigureRequest.Getenv] instead. Nil for a provider in a process
	// of its own, whose environment the host already limited to these
	// entries.
	Env []string
}

// Environ returns the provider's environment as KEY=VALUE entries: Env
// when the host set it, else the process's own (os.Environ). A provider
// gives programs it starts this environment, never os.Environ directly.
func (r *ConfigureRequest) Environ() []string {
	if r.Env != nil {
		return r.Env
	}
	return os.Environ()
}

// Getenv returns the value of the variable key in
// [ConfigureRequest.Environ], "" when it is unset. Names compare exactly
// (on Windows too); of two entries for one name the last wins, as in a
// process's environment.
func (r *ConfigureRequest) Getenv(key string) string {
	if r.Env == nil {
		return os.Getenv(key)
	}
	v := ""
	for _, kv := range r.Env {
		if k, val, ok := strings.Cut(kv, "="); ok && k == key {
			v = val
		}
	}
	return v
}

// Host is the host service a provider reaches through go-plugin's broker.
type Host interface {
	// CallTool calls any tool in the host's catalog through the full
	// pipeline: argument validation, SecurityPolicy and audit, attributed to
	// req.Caller's source type plus "/" plus req.Actor. The call's depth is
	// req.Caller.Depth+1; the host refuses calls beyond its maximum depth.
	CallTool(ctx context.Context, req *HostCallToolRequest) (*CallToolResult, error)

	// ListTools returns the tools of the host's catalog, every provider's,
	// in catalog order, as MCP clients are told about them: with the
	// host's description, title and annotation overrides applied.
	ListTools(ctx context.Context) ([]Tool, error)

	// CreateMessage asks the model of the MCP client whose call req.Caller
	// stands for (MCP 2025-11-25 client/sampling, sampling/createMessage).
	// Tools need a client that declared sampling.tools. It fails with an
	// error wrapping [ErrSamplingUnavailable] when the call did not come
	// from an MCP session whose client can sample (or sample with tools,
	// when req has tools).
	CreateMessage(ctx context.Context, req *CreateMessageRequest) (*CreateMessageResult, error)

	// RequestClient sends req.Method with req.Params to the MCP client of
	// req.Caller's session and returns the client's result as JSON,
	// unchanged (protocol 2). While req.Caller's call runs the request is
	// related to it (on Streamable HTTP it travels on that call's
	// stream). It fails with an error wrapping [ErrClientUnavailable]
	// when the request cannot be sent, and with a [*ClientError] when the
	// client answered with a JSON-RPC error.
	RequestClient(ctx context.Context, req *ClientRequest) ([]byte, error)

	// NotifyCatalogChanged tells the host that what Describe returns has
	// changed; the host calls Describe again and tells connected clients
	// when their lists change (protocol 2).
	NotifyCatalogChanged(ctx context.Context) error

	// NotifyResourceUpdated tells the clients subscribed to uri that the
	// resource changed (MCP notifications/resources/updated) (protocol 2).
	NotifyResourceUpdated(ctx context.Context, uri string) error

	// NotifyLog sends m to the client of caller's session (MCP
	// notifications/message) outside any call, subject to the level the
	// client set; inside a call use [CallToolRequest.Log] (protocol 2).
	NotifyLog(ctx context.Context, caller Caller, m LogMessage) error
}

// ErrSamplingUnavailable is wrapped by [Host.CreateMessage] errors when
// the caller's client cannot sample: the call came from the command line
// or another provider without a session, or the client did not declare
// the sampling capability (sampling.tools, for requests with tools).
var ErrSamplingUnavailable = errors.New("sampling is not available for this call")

// CreateMessageRequest is the argument of [Host.CreateMessage].
type CreateMessageRequest struct {
	// Caller is the caller the provider is acting for, as it received it.
	Caller Caller
	// SystemPrompt is the system prompt; the client may change or drop it.
	SystemPrompt string
	// Messages is the conversation so far, oldest first.
	Messages []SamplingMessage
	// Tools the model may ask to call.
	Tools []SamplingTool
	// Temperature, nil for the client's default.
	Temperature *float64
	// MaxTokens is the most tokens to sample; 0 lets the host choose
	// (4096).
	MaxTokens int64
	// ModelHint names a preferred model (MCP modelPreferences.hints); the
	// client may ignore it.
	ModelHint string
}

// SamplingMessage is one message of a sampling conversation.
type SamplingMessage struct {
	// Role is "user" or "assistant".
	Role string
	// Content holds the message's blocks.
	Content []SamplingContent
}

// SamplingContent is one block of a sampling message: Type "text" (Text),
// "tool_use" (an assistant's request to call ToolName with Input, under
// ToolUseID) or "tool_result" (a user's answer to ToolUseID: Text and
// IsError).
type SamplingContent struct {
	// Type is "text", "tool_use" or "tool_result".
	Type string
	// Text is a text block's text or a tool result's text.
	Text string
	// ToolUseID identifies a tool use, or the use a tool result answers.
	ToolUseID string
	// ToolName is the tool a tool use calls.
	ToolName string
	// Input is a tool use's arguments, a JSON object.
	Input json.RawMessage
	// IsError marks a failed tool result.
	IsError bool
}

// SamplingTool is a tool offered to the model in a sampling request.
type SamplingTool struct {
	// Name is the tool's name as the model sees it.
	Name string
	// Description says what the tool does.
	Description string
	// InputSchema is the tool's JSON Schema input (type object).
	InputSchema json.RawMessage
}

// CreateMessageResult is the model's reply to a [CreateMessageRequest].
type CreateMessageResult struct {
	// Content holds the reply's blocks: text and, with tools, tool uses.
	Content []SamplingContent
	// Model names the model that answered.
	Model string
	// StopReason is "endTurn", "stopSequence", "maxTokens" or "toolUse".
	StopReason string
}

// HostCallToolRequest is the argument of [Host.CallTool].
type HostCallToolRequest struct {
	// Name is the tool's name in the host catalog, for example
	// "notes_search", as [Host.ListTools] gives it; a declared or old
	// dotted name ("notes.search") finds the tool too ([ClientName]).
	Name string
	// Arguments is a JSON object.
	Arguments json.RawMessage
	// Caller is the caller the provider is acting for, as received in its
	// own CallToolRequest.
	Caller Caller
	// Actor says who inside the provider makes the call, for example
	// "agent:researcher".
	Actor string
}

// PolicyClass is a tool's SecurityPolicy class.
type PolicyClass string

const (
	// ClassRead marks a tool that only reads; it is allowed at every
	// autonomy level.
	ClassRead PolicyClass = "read"
	// ClassAct marks a tool that changes state or acts in the world; it is
	// refused at autonomy level "readonly" and counts against the hourly
	// act budget.
	ClassAct PolicyClass = "act"
)

// Catalog is what a provider contributes to the host.
type Catalog struct {
	// Name is the provider's name, for logs and errors. The host's own name
	// for the provider is the [providers.<name>] table's.
	Name string
	// Version is the provider's version string.
	Version string
	// Tools lists the provider's tools.
	Tools []Tool
	// Resources lists the provider's static resources.
	Resources []Resource
	// ResourceTemplates lists URI templates of resources the provider serves.
	ResourceTemplates []ResourceTemplate
	// Prompts lists the provider's MCP prompts. This version of the host
	// does not serve prompts yet.
	Prompts []Prompt
	// Instructions is text the host may add to its MCP instructions; this
	// version of the host does not use it yet.
	Instructions string
}

// Tool describes one MCP tool (MCP 2025-11-25, server/tools).
type Tool struct {
	// Name is unique across the host's catalog; it must match
	// ^[A-Za-z0-9_.-]{1,128}$, and should match ^[a-zA-Z0-9_-]{1,64}$
	// ([IsClientName]): MCP clients such as Claude Desktop accept no
	// other names, so the host advertises any other name as
	// [ClientName] of it ("hello.greet" as "hello_greet") and calls the
	// provider with the name declared here. Start it with the provider's
	// name and "_" ("hello_greet") so it cannot collide with another
	// provider's: the host keeps the first provider's tool and refuses the
	// others, also when two names map to one client name.
	Name string
	// Title is a human-readable name; optional.
	Title string
	// Description tells a model what the tool does and when to use it.
	Description string
	// InputSchema is a JSON Schema with "type": "object"; a tool without
	// one is refused. The host validates every call against it before
	// dispatch and adds its own rules: unlisted arguments are refused when
	// it sets "additionalProperties": false (recommended), required string
	// arguments must not be blank after trimming, and values outside
	// minimum/maximum or length bounds are rejected, never clamped. The
	// host does not fill in "default" values.
	InputSchema json.RawMessage
	// OutputSchema is a JSON Schema with "type": "object" describing
	// structuredContent; nil when the result shape is not fixed. When it
	// is set, every successful result must carry structured content that
	// matches it (MCP 2025-11-25).
	OutputSchema json.RawMessage
	// Annotations are MCP tool annotations: hints for clients, never
	// enforced by them.
	Annotations Annotations
	// Class is the tool's SecurityPolicy class, [ClassRead] or [ClassAct];
	// a tool without one is refused.
	Class PolicyClass
	// Timeout is the tool's own deadline; zero uses the host's
	// [server] tool_timeout_secs (default 120 s). The provider's
	// [providers.<name>] tool_timeout_secs, when set, wins over both.
	// Millisecond precision, at most 2^32-1 ms (about 49 days).
	Timeout time.Duration
}

// Annotations are MCP ToolAnnotations. A nil pointer leaves the hint out,
// so the spec's default applies (destructive and open-world default to
// true, read-only and idempotent to false).
type Annotations struct {
	// Title is a human-readable name for the tool; optional.
	Title string
	// ReadOnlyHint says the tool does not change its environment.
	// Default false.
	ReadOnlyHint *bool
	// DestructiveHint says the tool may destroy or overwrite data (only
	// meaningful when not read-only). Default true.
	DestructiveHint *bool
	// IdempotentHint says repeating a call with the same arguments has no
	// further effect (only meaningful when not read-only). Default false.
	IdempotentHint *bool
	// OpenWorldHint says the tool reaches outside the host (the web, other
	// services). Default true.
	OpenWorldHint *bool
}

// Bool returns a pointer to v, for [Annotations] fields.
func Bool(v bool) *bool { return &v }

// Resource describes one MCP resource.
type Resource struct {
	// URI identifies the resource, for example
	// "openhuman://prompts/identity"; unique across the host.
	URI string
	// Name is a short programmatic name.
	Name string
	// Title is a human-readable name; optional.
	Title string
	// Description says what the resource holds.
	Description string
	// MIMEType is the type of its contents, for example "text/markdown".
	MIMEType string
	// Size is the size in bytes, 0 when unknown.
	Size int64
}

// ResourceTemplate describes an RFC 6570 URI template of resources.
type ResourceTemplate struct {
	// URITemplate is an RFC 6570 template such as "notes://{id}".
	URITemplate string
	// Name is a short programmatic name.
	Name string
	// Title is a human-readable name; optional.
	Title string
	// Description says what the resources hold.
	Description string
	// MIMEType is the type of their contents, when it is the same for all.
	MIMEType string
}

// Prompt describes one MCP prompt.
type Prompt struct {
	// Name is unique across the host. As with [Tool.Name], it must match
	// ^[A-Za-z0-9_.-]{1,128}$ and is advertised to clients as
	// [ClientName] of it, so prefer a name matching ^[a-zA-Z0-9_-]{1,64}$.
	Name string
	// Title is a human-readable name; optional.
	Title string
	// Description says what the prompt is for.
	Description string
	// Arguments lists the prompt's arguments.
	Arguments []PromptArgument
}

// PromptArgument describes one argument of a [Prompt].
type PromptArgument struct {
	// Name is the argument's name.
	Name string
	// Description says what to pass.
	Description string
	// Required says the argument must be given.
	Required bool
}

// Caller says on whose behalf a call is made.
type Caller struct {
	// SourceType says who is calling: "mcp:<client>" for MCP clients
	// ("mcp:claude-desktop"), "cli" for one-shot commands, and
	// "<source>/agent:<id>" for calls made by a provider through [Host].
	// The host records it in the audit log's source_type column. It names
	// the caller, not where data came from: it is unrelated to the sources
	// a provider may keep of its data (such as the memory provider's
	// mcp:<namespace> and file:<folder>), although both may start with
	// "mcp:".
	SourceType string
	// SessionHash is "sha256:" and 8 hex digits of the MCP session id;
	// never the id itself. Empty outside sessions.
	SessionHash string
	// ClientName is the client's clientInfo.name from initialize, without
	// control characters, at most 128 characters.
	ClientName string
	// ClientVersion is the client's clientInfo.version, cleaned the same
	// way.
	ClientVersion string
	// Depth is 0 for a client's call; each [Host.CallTool] hop adds one.
	Depth int
	// ProgressToken is the MCP progress token as JSON; nil when the client
	// asked for no progress.
	ProgressToken json.RawMessage
	// CallToken is an opaque token that identifies the client's call while
	// it runs, so that [Host.CreateMessage] reaches the client's MCP
	// session; empty outside MCP sessions. Pass the Caller on unchanged.
	CallToken string
	// SessionToken is an opaque token that identifies the client's MCP
	// session while it is connected (provider protocol 2 and later): [Host.RequestClient]
	// and [Host.NotifyLog] reach the session by it outside a call, and
	// [SessionObserver.SessionClosed] carries it once the session ends.
	// Empty outside MCP sessions.
	SessionToken string
	// ProtocolVersion is the MCP protocol revision the client speaks, such
	// as "2025-11-25": the one it asked for in initialize, or, from
	// 2026-07-28 on, the one each request names in its _meta. A provider
	// that opens sessions of its own for the client (the upstream
	// provider) asks for the same. Empty for calls from no MCP client (the
	// command line). Sent from provider protocol 2 on; not to be confused
	// with sdk/plugin's ProtocolVersion, the provider protocol's own
	// version number.
	ProtocolVersion string
	// ClientCapabilities is what the client declared in initialize, a
	// JSON object in the MCP ClientCapabilities schema (sampling,
	// elicitation, roots, ...) (provider protocol 2 and later); a provider
	// that opens sessions of its own for the client declares no more than
	// this. Nil outside MCP sessions.
	ClientCapabilities json.RawMessage
	// ReadsStructuredContent is true when the host's config ([server]
	// structured_content_clients) says the client hands a tool result's
	// structuredContent to its model (MCP 2025-06-18 and later,
	// server/tools "Structured Content"). Most clients pass their model
	// only the text content, which is why a tool with an output schema
	// also serializes its result into a text block; for a client that
	// reads structuredContent that text repeats the result and doubles
	// its tokens. When it is true, a tool whose result carries
	// StructuredContent may replace its text block with one short line
	// that summarises the result (counts, paging hints) and says the rest
	// is in structuredContent; error results (IsError) keep their full
	// text. When it is false, the default, which a host older than this
	// field also sends, the client may see only the text: put everything
	// the model needs there. The host sets it only for a client's own
	// calls over MCP, never for calls a provider makes through
	// [Host.CallTool] (their results go to the provider) nor for command
	// line calls. Whatever a provider does, the host itself replaces a
	// text block that is the JSON serialization of StructuredContent for
	// such a client.
	ReadsStructuredContent bool
	// Profile is the name of the host's [profiles.<name>] table the call
	// runs under, for a client's call and the calls a provider makes
	// within it: the host decides from it which tools the client sees and
	// may call. Empty when the client has no profile, and from hosts that
	// predate profiles (provider protocol field Caller.profile).
	Profile string
}

// CallToolRequest is the argument of [Provider.CallTool].
type CallToolRequest struct {
	// Name is the tool's name as the provider declared it in Describe,
	// also when the host advertises it under [ClientName] of it.
	Name string
	// Arguments is the JSON object the client sent, validated against the
	// tool's input schema.
	Arguments json.RawMessage
	// Caller says on whose behalf the call is made.
	Caller Caller
	// InputResponses and RequestState are set on the retry of a call
	// whose result asked for input ([CallToolResult.InputRequests]): the
	// client's answers, a JSON object keyed as the input requests were
	// (MCP 2026-07-28 InputResponses, SEP-2322), and the result's
	// RequestState, unchanged. Both are empty on a first call. The host
	// checks that a retry belongs to the call and client it answers;
	// what RequestState means is the provider's.
	InputResponses json.RawMessage
	RequestState   string

	events EventSink
}

// EventSink receives the events a tool emits before its result. The host
// implements it to relay events to the calling client; tests implement it
// to record them (see [CallToolRequest.WithEvents]). Implementations must
// be safe for concurrent use.
type EventSink interface {
	// Progress reports progress (MCP notifications/progress).
	Progress(ctx context.Context, p Progress) error
	// Log sends a log message (MCP notifications/message).
	Log(ctx context.Context, m LogMessage) error
}

// Progress is one progress report. Progress must increase with each report;
// Total is 0 when unknown.
type Progress struct {
	// Progress is the amount done so far, in any unit.
	Progress float64
	// Total is the amount to do, in the same unit; 0 when unknown.
	Total float64
	// Message describes the current step; optional.
	Message string
}

// LogMessage is one MCP log message. Level is an MCP logging level (debug,
// info, notice, warning, error, critical, alert, emergency); Data is any
// JSON-encodable value. Log messages go to the MCP client, which may show
// them to the user; for the operator's log, write to stderr (see [Logger]).
type LogMessage struct {
	// Level is an MCP logging level name.
	Level string
	// Logger names the component that logs; optional.
	Logger string
	// Data is the message: a string or any JSON-encodable value. On the
	// receiving side of the gRPC connection (the host, sdktest) it is the
	// json.RawMessage the value marshalled to.
	Data any
}

// Progress reports progress to the client if it asked for progress (its
// request carried a progress token, see [Caller]); it is a no-op
// otherwise, and when r was not built with an event sink. It returns an
// error only when the host connection fails.
func (r *CallToolRequest) Progress(ctx context.Context, p Progress) error {
	if r.events == nil || len(r.Caller.ProgressToken) == 0 {
		return nil
	}
	return r.events.Progress(ctx, p)
}

// Log sends a log message towards the client; the client's logging/setLevel
// decides whether it is delivered. It is a no-op when r was not built with
// an event sink, and returns an error when m.Data does not marshal to JSON
// or the host connection fails.
func (r *CallToolRequest) Log(ctx context.Context, m LogMessage) error {
	if r.events == nil {
		return nil
	}
	return r.events.Log(ctx, m)
}

// WithEvents returns a copy of r whose Progress and Log go to sink; for
// harnesses and hosts that call a Provider directly. A nil sink makes both
// no-ops.
func (r *CallToolRequest) WithEvents(sink EventSink) *CallToolRequest {
	c := *r
	c.events = sink
	return &c
}

// CallToolResult is a tool's result (MCP CallToolResult).
type CallToolResult struct {
	// Content is the unstructured result; at least one text block is
	// recommended for models that do not read structured content.
	Content []Content
	// StructuredContent is a JSON object matching the tool's output schema;
	// nil when there is none. Required on successful results of a tool
	// that declares an output schema.
	StructuredContent json.RawMessage
	// IsError marks a tool-level failure the model should see and may
	// correct (MCP 2025-11-25: errors in tool results).
	IsError bool
	// InputRequests, when set, asks the client for input before the call
	// can finish (MCP 2026-07-28 InputRequiredResult, SEP-2322): a JSON
	// object of MCP input requests by key, each {"method":
	// "elicitation/create" | "sampling/createMessage" | "roots/list",
	// "params": {...}}. The result then has no content; the client
	// answers and the host calls the tool again with
	// [CallToolRequest.InputResponses] and RequestState. Only for a
	// [Caller] whose ProtocolVersion is 2026-07-28 or later; other
	// clients are asked through [Host.RequestClient] during the call.
	InputRequests json.RawMessage
	// RequestState is opaque state the retry carries back (at most 2 KiB);
	// the host seals it, so the client can neither read nor change it.
	RequestState string
	// AuditRef names what the call touched for the host's audit row
	// (its result_ref column), such as "forgot 2 documents (a, b), 7
	// chunks": ids and counts, never content, since audit rows outlive
	// what they describe. At most [MaxAuditRefBytes] bytes; the host cuts
	// longer values and removes control characters. Empty lets the host
	// take the document_id or chunk_id of StructuredContent. Clients never
	// see it.
	AuditRef string
}

// Text returns the text of r's text blocks ("text" [Content]) joined with
// newlines: what a client that shows only text reads of the result. It
// returns "" when r is nil or has no text block.
func (r *CallToolResult) Text() string {
	if r == nil {
		return ""
	}
	var parts []string
	for _, c := range r.Content {
		if c.Type == "text" {
			parts = append(parts, c.Text)
		}
	}
	return strings.Join(parts, "\n")
}

// MaxAuditRefBytes bounds [CallToolResult.AuditRef].
const MaxAuditRefBytes = 1024

// Content is one MCP content block. Type is "text" (Text), "image" or
// "audio" (Data, MIMEType), "resource_link" (URI, Name, Title, Description,
// MIMEType) or "resource" (an embedded resource: URI, MIMEType and Text or
// Data).
type Content struct {
	// Type is "text", "image", "audio", "resource_link" or "resource".
	Type string
	// Text is the text of a text block or of an embedded text resource.
	Text string
	// Data holds the raw bytes of an image, audio clip or embedded blob
	// resource (not base64: the host encodes it).
	Data []byte
	// MIMEType is the type of Data, of a linked or of an embedded resource.
	MIMEType string
	// URI is the address of a linked or embedded resource.
	URI string
	// Name is a linked resource's name.
	Name string
	// Title is a linked resource's human-readable name.
	Title string
	// Description says what a linked resource holds.
	Description string
}

// TextContent returns a text content block.
func TextContent(text string) Content { return Content{Type: "text", Text: text} }

// TextResult returns a successful result with one text block and no
// structured content.
func TextResult(text string) *CallToolResult {
	return &CallToolResult{Content: []Content{TextContent(text)}}
}

// ErrorResult returns a result with isError set and one text block built
// with fmt.Sprintf: an error the model sees and may correct, such as an
// argument the tool cannot use. Say what was wrong and what to send
// instead; never include secrets. The host records the text in the audit
// log (cut to 1024 bytes).
func ErrorResult(format string, args ...any) *CallToolResult {
	return &CallToolResult{Content: []Content{TextContent(fmt.Sprintf(format, args...))}, IsError: true}
}

// StructuredResult returns a successful result with text as its text block
// and v, marshalled with encoding/json to a JSON object (a struct or a
// map), as structured content. It returns an error if v does not marshal,
// or does not marshal to a JSON object.
func StructuredResult(text string, v any) (*CallToolResult, error) {
	raw, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("marshal structured content: %w", err)
	}
	if len(raw) == 0 || raw[0] != '{' {
		return nil, fmt.Errorf("structured content must be a JSON object, got %.20s", raw)
	}
	return &CallToolResult{Content: []Content{TextContent(text)}, StructuredContent: raw}, nil
}

// ReadResourceRequest is the argument of [Provider.ReadResource].
type ReadResourceRequest struct {
	// URI is one of the URIs the provider advertised, or matches one of its
	// templates.
	URI string
	// Caller says on whose behalf the resource is read.
	Caller Caller
}

// ReadResourceResult holds the contents of a resource.
type ReadResourceResult struct {
	// Contents holds the resource's parts; usually one.
	Contents []ResourceContents
}

// ResourceContents is one part of a resource: Text for text resources, Blob
// for binary ones.
type ResourceContents struct {
	// URI is the address of this part.
	URI string
	// MIMEType is the type of this part.
	MIMEType string
	// Text is the content of a text resource.
	Text string
	// Blob is the content of a binary resource, as raw bytes.
	Blob []byte
}
