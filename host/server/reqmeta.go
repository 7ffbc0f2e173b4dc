//lint:file-ignore SA1019 roots, deprecated from protocol 2026-07-28 (SEP-2577), stays supported for earlier clients: the capabilities read here keep it as the go-sdk does.

package server

import (
	"encoding/json"
	"reflect"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The go-sdk's ServerRequest.ClientInfo and ClientCapabilities decode the
// request's _meta value on every call, through a decoder that allocates a
// 32 KiB buffer each time; the host asks for them on every tools/call. The
// functions below give the same answers with encoding/json, which
// allocates in proportion to the value. docs/performance.md ("Decoding")
// has the measurements.

// requestClientInfo is req.ClientInfo(): the client's implementation from
// the request's _meta (MCP 2026-07-28 and later, SEP-2575), else from its
// session's initialize; nil when neither names one.
func requestClientInfo(req clientRequest) *mcp.Implementation {
	if v, ok := metaValue[*mcp.Implementation](req, mcp.MetaKeyClientInfo); ok {
		return v
	}
	if p := initializeParams(req); p != nil {
		return p.ClientInfo
	}
	return nil
}

// requestClientCapabilities is req.ClientCapabilities(): the client's
// capabilities from the request's _meta (MCP 2026-07-28 and later, whose
// roots capability is read into RootsV2 and Roots alike), else from its
// session's initialize; nil when neither declares any.
func requestClientCapabilities(req clientRequest) *mcp.ClientCapabilities {
	if v, ok := metaValue[*capabilitiesInMeta](req, mcp.MetaKeyClientCapabilities); ok {
		caps := v.ClientCapabilities
		caps.RootsV2 = v.Roots
		if caps.RootsV2 != nil {
			caps.Roots = *caps.RootsV2
		}
		return &caps
	}
	if p := initializeParams(req); p != nil {
		return p.Capabilities
	}
	return nil
}

// capabilitiesInMeta is the shape of client capabilities in a request's
// _meta, where roots is an object of its own.
type capabilitiesInMeta struct {
	mcp.ClientCapabilities
	Roots *mcp.RootCapabilities `json:"roots,omitempty"`
}

// initializeParams are the parameters of the initialize of req's
// session; nil without one.
func initializeParams(req clientRequest) *mcp.InitializeParams {
	if ss, ok := req.GetSession().(*mcp.ServerSession); ok && ss != nil {
		return ss.InitializeParams()
	}
	return nil
}

// metaValue decodes the value under key in the _meta of req's params: as
// it is when it already has type T (set in-process), else through JSON
// (as decoded from the wire). It reports false when the key is absent,
// null or does not decode as T.
func metaValue[T any](req clientRequest, key string) (T, bool) {
	var zero T
	p := req.GetParams()
	if p == nil || reflect.ValueOf(p).IsNil() { // params are pointers, absent ones typed nil
		return zero, false
	}
	raw, ok := p.GetMeta()[key]
	if !ok || raw == nil {
		return zero, false
	}
	if v, ok := raw.(T); ok {
		return v, true
	}
	b, err := json.Marshal(raw)
	if err != nil {
		return zero, false
	}
	var v T
	if err := json.Unmarshal(b, &v); err != nil {
		return zero, false
	}
	return v, true
}
