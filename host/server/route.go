package server

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Protocol versions the HTTP endpoint routes on.
const (
	// statelessVersion is the first MCP revision without initialize and
	// sessions (SEP-2575): its requests carry the version in the
	// MCP-Protocol-Version header and in _meta, and are served statelessly.
	statelessVersion = "2026-07-28"
	// noBatchVersion is the first revision that removed JSON-RPC batching
	// (MCP 2025-06-18, changelog).
	noBatchVersion = "2025-06-18"
	// structuredVersion is the first revision with tool outputSchema and
	// structuredContent (MCP 2025-06-18, server/tools §Structured Content).
	structuredVersion = "2025-06-18"
)

// JSON-RPC 2.0 error codes (JSON-RPC 2.0 §5.1) the endpoint answers with
// before a request reaches the MCP server.
const (
	codeParseError     = -32700
	codeInvalidRequest = -32600
)

// routeProtocol serves one endpoint for both protocol eras (MCP
// 2026-07-28, basic/transports §Streamable HTTP, and 2025-11-25):
//
//   - a request on 2026-07-28 or later, told by its MCP-Protocol-Version
//     header, by io.modelcontextprotocol/protocolVersion in its _meta, or
//     by being server/discover, goes to stateless, which opens no session;
//   - a request carrying Mcp-Session-Id, and an initialize, go to stateful;
//   - any other POST (a request, notification or response of an earlier
//     revision with no session to belong to) gets HTTP 400 with a JSON-RPC
//     -32600 error naming the fix, as does a batch on a revision that has
//     none (2025-06-18 and later) or with no session to belong to
//     ([routeBatch]); a body that is not JSON gets 400 with -32700.
//
// POST bodies are read whole, at most maxBody bytes (larger: 413), before
// routing; the handler they reach reads the same bytes.
func routeProtocol(maxBody int64, stateful, stateless http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		version := r.Header.Get("MCP-Protocol-Version")
		if r.Method != http.MethodPost {
			if version >= statelessVersion {
				stateless.ServeHTTP(w, r)
			} else {
				stateful.ServeHTTP(w, r)
			}
			return
		}
		body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBody))
		if err != nil {
			var tooBig *http.MaxBytesError
			if errors.As(err, &tooBig) {
				http.Error(w, fmt.Sprintf("Request Entity Too Large: the body exceeds %d bytes ([server] max_request_body_bytes)", tooBig.Limit), http.StatusRequestEntityTooLarge)
				return
			}
			http.Error(w, "Bad Request: reading the body failed: "+err.Error(), http.StatusBadRequest)
			return
		}
		_ = r.Body.Close()
		r.Body = io.NopCloser(bytes.NewReader(body))
		trimmed := bytes.TrimLeft(body, " \t\r\n")
		if len(trimmed) > 0 && trimmed[0] == '[' {
			routeBatch(w, r, trimmed, version, stateful)
			return
		}
		if version >= statelessVersion {
			stateless.ServeHTTP(w, r)
			return
		}
		var msg message
		if err := json.Unmarshal(trimmed, &msg); err != nil {
			writeRPCError(w, http.StatusBadRequest, nil, codeParseError, "Parse error: the body is not a JSON-RPC message: "+err.Error())
			return
		}
		if msg.Method == "server/discover" || msg.Params.Meta[mcp.MetaKeyProtocolVersion] != nil {
			stateless.ServeHTTP(w, r)
			return
		}
		if r.Header.Get("Mcp-Session-Id") != "" || msg.Method == "initialize" {
			stateful.ServeHTTP(w, r)
			return
		}
		writeRPCError(w, http.StatusBadRequest, msg.ID, codeInvalidRequest, noSession(msg.Method))
	})
}

// message is what routing reads of a JSON-RPC message.
type message struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Params struct {
		Meta map[string]json.RawMessage `json:"_meta"`
	} `json:"params"`
}

// noSession is the error for a message of the session-based revisions
// sent without a session.
func noSession(method string) string {
	return fmt.Sprintf("Bad Request: %s without an Mcp-Session-Id header; send initialize first and then the session id it returns "+
		"(MCP 2025-11-25 and earlier), or speak MCP %s, which needs no session", describe(method), statelessVersion)
}

// routeBatch serves a JSON-RPC batch: only MCP 2025-03-26 and earlier
// have them, so on a later version (by its header) it is HTTP 400 with
// -32600; an empty or malformed batch, and one without a session that
// does not open one (initialize), are 400 as well. Others go to the
// session-based handler.
func routeBatch(w http.ResponseWriter, r *http.Request, body []byte, version string, stateful http.Handler) {
	if version >= noBatchVersion {
		writeRPCError(w, http.StatusBadRequest, nil, codeInvalidRequest,
			fmt.Sprintf("MCP %s has no JSON-RPC batches (they were removed in %s): send one message per POST", version, noBatchVersion))
		return
	}
	var batch []message
	switch err := json.Unmarshal(body, &batch); {
	case err != nil:
		writeRPCError(w, http.StatusBadRequest, nil, codeParseError, "Parse error: the body is not a JSON-RPC batch: "+err.Error())
		return
	case len(batch) == 0:
		writeRPCError(w, http.StatusBadRequest, nil, codeInvalidRequest, "an empty JSON-RPC batch has nothing to answer")
		return
	}
	if r.Header.Get("Mcp-Session-Id") == "" && !slices.ContainsFunc(batch, func(m message) bool { return m.Method == "initialize" }) {
		writeRPCError(w, http.StatusBadRequest, nil, codeInvalidRequest, noSession(batch[0].Method))
		return
	}
	stateful.ServeHTTP(w, r)
}

// describe names a message for an error: its method, or "a response".
func describe(method string) string {
	if method == "" {
		return "a JSON-RPC response"
	}
	return fmt.Sprintf("%q", method)
}

// writeRPCError answers with HTTP status and a JSON-RPC error response for
// the request id raw (null when the id is unknown or malformed).
func writeRPCError(w http.ResponseWriter, status int, raw json.RawMessage, code int64, message string) {
	var id jsonrpc.ID
	if len(raw) > 0 {
		var v any
		if json.Unmarshal(raw, &v) == nil {
			if parsed, err := jsonrpc.MakeID(v); err == nil {
				id = parsed
			}
		}
	}
	body, err := json.Marshal(struct {
		JSONRPC string         `json:"jsonrpc"`
		ID      any            `json:"id"`
		Error   *jsonrpc.Error `json:"error"`
	}{"2.0", id.Raw(), &jsonrpc.Error{Code: code, Message: message}})
	if err != nil {
		http.Error(w, message, status)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(body)
}
