package sdk

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
)

// The interfaces in this file are the provider side of protocol version 2.
// A provider implements the ones it needs next to [Provider]; the host
// calls a method only when the provider implements its interface (the SDK
// answers the others with gRPC's UNIMPLEMENTED, which the host treats as
// "nothing to do").

// PromptProvider is implemented by providers whose [Catalog] lists
// prompts (MCP 2025-11-25, server/prompts).
type PromptProvider interface {
	// GetPrompt returns the prompt req.Name filled in with req.Arguments
	// (MCP prompts/get). Return an error wrapping [ErrPromptNotFound] for
	// a name the provider does not serve, and one wrapping
	// [ErrInvalidParams] for arguments it refuses (a required one
	// missing, a value out of range): the client gets JSON-RPC -32602
	// with the message.
	GetPrompt(ctx context.Context, req *GetPromptRequest) (*GetPromptResult, error)
}

// ErrPromptNotFound is wrapped by [PromptProvider.GetPrompt] errors for a
// prompt the provider does not serve.
var ErrPromptNotFound = errors.New("prompt not found")

// ErrInvalidParams is wrapped by errors of protocol 2 methods
// ([PromptProvider.GetPrompt], [Completer.Complete],
// [Subscriber.Subscribe]) for a request the provider refuses as it is;
// the client gets JSON-RPC -32602 (invalid params) with the message.
var ErrInvalidParams = errors.New("invalid params")

// GetPromptRequest is the argument of [PromptProvider.GetPrompt].
type GetPromptRequest struct {
	// Name is the prompt's name as the provider listed it.
	Name string
	// Arguments holds the client's argument values by name; nil when it
	// sent none.
	Arguments map[string]string
	// Caller says on whose behalf the prompt is read.
	Caller Caller
	// InputResponses and RequestState are set on the retry of a
	// prompts/get whose result asked for input, as in
	// [CallToolRequest].
	InputResponses json.RawMessage
	RequestState   string
}

// GetPromptResult is a filled-in prompt (MCP GetPromptResult).
type GetPromptResult struct {
	// Description says what the prompt is for; optional.
	Description string
	// Messages is the conversation the prompt starts, in order.
	Messages []PromptMessage
	// InputRequests and RequestState, when set, ask the client for input
	// before the prompt can be filled in, as in [CallToolResult]; only
	// for callers of protocol 2026-07-28 or later.
	InputRequests json.RawMessage
	RequestState  string
}

// PromptMessage is one message of a prompt (MCP PromptMessage).
type PromptMessage struct {
	// Role is "user" or "assistant".
	Role string
	// Content is the message's one content block: text, image, audio, a
	// resource link or an embedded resource.
	Content Content
}

// Completer is implemented by providers that suggest argument values for
// their prompts and resource templates (MCP 2025-11-25,
// server/utilities/completion).
type Completer interface {
	// Complete returns suggestions for req.ArgumentName starting from
	// req.ArgumentValue; an empty result when it has none.
	Complete(ctx context.Context, req *CompleteRequest) (*CompleteResult, error)
}

// Completion reference types (MCP CompleteRequest ref.type).
const (
	RefPrompt   = "ref/prompt"
	RefResource = "ref/resource"
)

// CompleteRequest is the argument of [Completer.Complete].
type CompleteRequest struct {
	// RefType is [RefPrompt] (RefName names the prompt) or [RefResource]
	// (RefURI is the resource template).
	RefType string
	// RefName is the prompt's name as the provider declared it, for
	// [RefPrompt].
	RefName string
	// RefURI is the resource template, for [RefResource].
	RefURI string
	// ArgumentName is the argument (or template variable) to complete.
	ArgumentName string
	// ArgumentValue is what the user typed so far.
	ArgumentValue string
	// Context holds the arguments the client already resolved, by name;
	// nil when none.
	Context map[string]string
	// Caller says on whose behalf the completion is asked.
	Caller Caller
}

// MaxCompletionValues is the most values a completion result may carry
// (MCP CompleteResult.completion.values); the host cuts longer lists and
// sets HasMore.
const MaxCompletionValues = 100

// CompleteResult holds completion suggestions (MCP CompleteResult).
type CompleteResult struct {
	// Values are the suggestions, best first, at most
	// [MaxCompletionValues].
	Values []string
	// Total is how many suggestions exist in all; 0 when unknown.
	Total int
	// HasMore says there are more suggestions than Values holds.
	HasMore bool
}

// Subscriber is implemented by providers whose resources can change while
// a client watches them (MCP 2025-11-25, server/resources "Subscriptions").
// A provider reports a change with [Host.NotifyResourceUpdated].
type Subscriber interface {
	// Subscribe starts watching req.URI for req.Caller's session.
	Subscribe(ctx context.Context, req *SubscribeRequest) error
	// Unsubscribe stops watching req.URI for req.Caller's session.
	Unsubscribe(ctx context.Context, req *SubscribeRequest) error
}

// SubscribeRequest is the argument of [Subscriber.Subscribe] and
// [Subscriber.Unsubscribe].
type SubscribeRequest struct {
	// URI is the resource's URI.
	URI string
	// Caller identifies the client session (Caller.SessionToken).
	Caller Caller
}

// SessionObserver is implemented by providers that keep state per client
// session, such as a session of their own with another server.
type SessionObserver interface {
	// SetLoggingLevel says the lowest level of log messages
	// req.Caller's session wants (MCP logging/setLevel); the host already
	// filters what it relays, so a provider only needs this to pass the
	// level on.
	SetLoggingLevel(ctx context.Context, req *SetLoggingLevelRequest) error
	// SessionClosed says the session of caller (Caller.SessionToken)
	// ended; what the provider keeps for it can go.
	SessionClosed(ctx context.Context, caller Caller) error
}

// SetLoggingLevelRequest is the argument of
// [SessionObserver.SetLoggingLevel].
type SetLoggingLevelRequest struct {
	// Level is an MCP logging level: debug, info, notice, warning, error,
	// critical, alert or emergency.
	Level string
	// Caller identifies the client session.
	Caller Caller
}

// ClientRequest is the argument of [Host.RequestClient]: one request the
// host sends, unchanged, to the MCP client of Caller's session.
type ClientRequest struct {
	// Caller is the caller the provider is acting for, as it received it:
	// its CallToken relates the request to the running call, its
	// SessionToken names the session outside a call.
	Caller Caller
	// Method is "sampling/createMessage", "elicitation/create" or
	// "roots/list".
	Method string
	// Params is the request's params, a JSON object in the MCP 2025-11-25
	// schema; nil sends {}.
	Params []byte
}

// Client request methods [Host.RequestClient] relays.
const (
	MethodCreateMessage = "sampling/createMessage"
	MethodElicit        = "elicitation/create"
	MethodListRoots     = "roots/list"
)

// ErrClientUnavailable is wrapped by [Host.RequestClient] errors when the
// request cannot be sent: the caller has no MCP session (a command-line
// call), the session ended, the client did not declare the capability the
// method needs (sampling, elicitation, roots), its protocol version rules
// requests during a call out, or the host speaks protocol 1.
var ErrClientUnavailable = errors.New("the client cannot take this request")

// ClientError is a JSON-RPC error the MCP client answered a
// [Host.RequestClient] request with, such as a user who refused to
// sample.
type ClientError struct {
	// Code is the JSON-RPC error code.
	Code int64
	// Message is the client's error message.
	Message string
}

// MissingCapabilityError is returned by a tool call (for a [Caller] of
// protocol 2026-07-28 or later) that needs a client capability the
// caller did not declare; the client gets JSON-RPC -32021
// (MissingRequiredClientCapabilitiesError, SEP-2575) instead of a tool
// result. It wraps [ErrClientUnavailable].
type MissingCapabilityError struct {
	// Required is the MCP ClientCapabilities object the call needs, as
	// JSON; "{}" when unknown.
	Required json.RawMessage
	// Message says what is missing, for the client.
	Message string
}

// Error implements error.
func (e *MissingCapabilityError) Error() string {
	return fmt.Sprintf("%v: %s", ErrClientUnavailable, e.Message)
}

// Unwrap returns [ErrClientUnavailable].
func (e *MissingCapabilityError) Unwrap() error { return ErrClientUnavailable }

// Error implements error.
func (e *ClientError) Error() string {
	return fmt.Sprintf("the client answered with error %d: %s", e.Code, e.Message)
}
