// Package mcpwire decodes JSON-RPC 2.0 messages as MCP's stdio transport
// carries them (MCP 2025-11-25 basic/transports §stdio: one message per
// line) with [Decode], for a server reading its stdin, and is the client
// side of that transport ([CommandTransport]): an mcp.Transport for
// github.com/modelcontextprotocol/go-sdk that runs a stdio MCP server as
// a command, for a provider that relays to such servers. The host's stdio
// server and its upstream provider use it. [Text] reads a go-sdk tool
// result's text.
//
// It is a package of its own so that a provider which does not import it
// does not build the go-sdk.
//
// The go-sdk's jsonrpc.DecodeMessage parses a message twice through a
// decoder that allocates 32 KiB each time; [Decode] parses it once with
// encoding/json, which allocates in proportion to the message, and
// otherwise accepts what the go-sdk accepts: keys match exactly, ids are
// strings or numbers (taken as the go-sdk takes them), a message with a
// method is a request or notification, one without is a response.
package mcpwire

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// JSON-RPC 2.0 error codes of a message that cannot be decoded.
const (
	// CodeParseError: the line is not JSON.
	CodeParseError = -32700
	// CodeInvalidRequest: JSON, but not a JSON-RPC 2.0 message.
	CodeInvalidRequest = -32600
)

// Error says why a line is not a message: Code is [CodeParseError] or
// [CodeInvalidRequest], Message the text to answer it with.
type Error struct {
	Code    int
	Message string
}

func (e *Error) Error() string { return e.Message }

// Decode returns the JSON-RPC 2.0 message on line (surrounding white
// space ignored) and its "id" member as written (nil when it has none).
// A line that is not one message is an *[Error]; id is then still set
// when the line is an object with an "id" member, so the answer can name
// it. Batches are refused: MCP 2025-06-18 removed them.
func Decode(line []byte) (jsonrpc.Message, json.RawMessage, error) {
	line = bytes.TrimSpace(line)
	if len(line) > 0 && line[0] == '[' {
		if !json.Valid(line) {
			return nil, nil, parseError
		}
		return nil, nil, &Error{CodeInvalidRequest, "invalid request: batches are not supported; send one JSON-RPC message per line"}
	}
	var wire map[string]json.RawMessage
	if err := json.Unmarshal(line, &wire); err != nil {
		var syntax *json.SyntaxError
		if errors.As(err, &syntax) || len(line) == 0 {
			return nil, nil, parseError
		}
		return nil, nil, &Error{CodeInvalidRequest, "invalid request: a JSON-RPC message is a JSON object"}
	}
	id := wire["id"]
	msg, err := messageOf(wire)
	if err != nil {
		return nil, id, &Error{CodeInvalidRequest, "invalid request: " + err.Error()}
	}
	return msg, id, nil
}

// parseError answers a line that is not JSON.
var parseError = &Error{CodeParseError, "parse error: the line is not valid JSON; send one JSON-RPC message per line"}

// messageOf is the message whose top-level members are wire.
func messageOf(wire map[string]json.RawMessage) (jsonrpc.Message, error) {
	var version string
	if err := json.Unmarshal(wire["jsonrpc"], &version); err != nil || version != "2.0" {
		return nil, fmt.Errorf(`"jsonrpc" must be "2.0", got %s`, orAbsent(wire["jsonrpc"]))
	}
	var id jsonrpc.ID
	if raw, ok := wire["id"]; ok {
		var v any
		if err := json.Unmarshal(raw, &v); err != nil {
			return nil, fmt.Errorf("id: %w", err)
		}
		if v == nil {
			return nil, errors.New("the id must be a string or a number, not null")
		}
		var err error
		if id, err = jsonrpc.MakeID(v); err != nil {
			return nil, fmt.Errorf("the id must be a string or a number, got %s", raw)
		}
	}
	if raw, ok := wire["method"]; ok {
		var method string
		if err := json.Unmarshal(raw, &method); err != nil {
			return nil, fmt.Errorf(`"method" must be a string, got %s`, raw)
		}
		return &jsonrpc.Request{Method: method, ID: id, Params: wire["params"]}, nil
	}
	if !id.IsValid() {
		return nil, errors.New(`a message needs a "method" (a request or notification) or an "id" (a response)`)
	}
	resp := &jsonrpc.Response{ID: id, Result: wire["result"]}
	if raw, ok := wire["error"]; ok && string(raw) != "null" {
		var e jsonrpc.Error
		if err := json.Unmarshal(raw, &e); err != nil {
			return nil, fmt.Errorf(`"error" must be a JSON-RPC error object: %w`, err)
		}
		resp.Error = &e
	}
	return resp, nil
}

// orAbsent is raw, or "nothing" when it is empty.
func orAbsent(raw json.RawMessage) string {
	if len(raw) == 0 {
		return "nothing"
	}
	return string(raw)
}
