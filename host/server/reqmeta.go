//lint:file-ignore SA1019 roots, deprecated from protocol 2026-07-28 (SEP-2577), stays supported for earlier clients: the capabilities read here keep it as the go-sdk does.

package server

import (
	"encoding/json"
	"math"
	"reflect"
	"slices"
	"sync/atomic"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	sjson "github.com/segmentio/encoding/json"

	"github.com/openhuman/openhuman-host/internal/treeequal"
)

// The go-sdk's ServerRequest.ClientInfo and ClientCapabilities decode the
// request's _meta value on every call, through a decoder that allocates a
// 32 KiB buffer each time; the host asks for them on every tools/call. The
// functions below give the same answers parsing the value's bytes in
// place with the same segmentio parser and flags, which allocates in
// proportion to the value. docs/performance.md ("Decoding") has the
// measurements.

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
	caps, _ := clientCapabilities(req, false)
	return caps
}

// clientCapabilities is requestClientCapabilities, with the capabilities
// also marshalled as JSON when withJSON is set (nil when they are nil).
//
// A client of protocol 2026-07-28 sends the same capabilities with every
// request. The last distinct value decoded from a request's _meta is kept
// with its decoding, so that a request carrying an equal value is
// answered without decoding it again (compared value by value, without
// reflection). Each call returns its own copy of the struct and of the
// JSON; the values the struct points to (Elicitation, Sampling, RootsV2,
// Experimental, Extensions) are shared with the cache and must not be
// modified.
func clientCapabilities(req clientRequest, withJSON bool) (*mcp.ClientCapabilities, []byte) {
	if raw, ok := rawMetaValue(req, mcp.MetaKeyClientCapabilities); ok {
		if e := lastCapabilities.Load(); e != nil && decodedEqual(raw, e.raw) {
			return e.copy(withJSON)
		}
		if v, ok := metaValue[*capabilitiesInMeta](req, mcp.MetaKeyClientCapabilities); ok {
			caps := v.ClientCapabilities
			caps.RootsV2 = v.Roots
			if caps.RootsV2 != nil {
				caps.Roots = *caps.RootsV2
			}
			e := &capabilitiesEntry{caps: caps}
			if b, err := json.Marshal(&caps); err == nil {
				e.json = b
			}
			if clone, ok := cloneJSON(raw); ok && e.json != nil {
				e.raw = clone
				lastCapabilities.Store(e)
			}
			return e.copy(withJSON)
		}
	}
	var caps *mcp.ClientCapabilities
	if p := initializeParams(req); p != nil {
		caps = p.Capabilities
	}
	if caps == nil || !withJSON {
		return caps, nil
	}
	b, _ := json.Marshal(caps)
	return caps, b
}

// capabilitiesEntry is a client capabilities value as decoded from a
// request's _meta: raw, a deep copy of the decoded JSON value; caps, what
// it decodes to; json, caps marshalled.
type capabilitiesEntry struct {
	raw  any
	caps mcp.ClientCapabilities
	json []byte
}

// copy returns copies of e's capabilities and, with withJSON, its JSON.
func (e *capabilitiesEntry) copy(withJSON bool) (*mcp.ClientCapabilities, []byte) {
	caps := e.caps
	if !withJSON {
		return &caps, nil
	}
	return &caps, slices.Clone(e.json)
}

// lastCapabilities is the last distinct capabilities value decoded from a
// request's _meta (see clientCapabilities).
var lastCapabilities atomic.Pointer[capabilitiesEntry]

// rawMetaValue is the value under key in the _meta of req's params as
// decoded; false when it is absent or null.
func rawMetaValue(req clientRequest, key string) (any, bool) {
	p := req.GetParams()
	if p == nil || reflect.ValueOf(p).IsNil() { // params are pointers, absent ones typed nil
		return nil, false
	}
	raw, ok := p.GetMeta()[key]
	return raw, ok && raw != nil
}

// decodedEqual reports whether a and b, values as a JSON decoder leaves
// them in an interface (maps, slices, strings, float64, bool, nil), are
// equal; false for any other leaf type. Numbers are equal only with the
// same bits: 0 and -0 are equal as numbers but marshal differently.
func decodedEqual(a, b any) bool {
	return treeequal.Equal(a, b, func(a, b any) bool {
		switch a := a.(type) {
		case float64:
			b, ok := b.(float64)
			return ok && math.Float64bits(a) == math.Float64bits(b)
		case string, bool, nil:
			return a == b
		}
		return false
	})
}

// cloneJSON deep-copies v, a value as encoding/json decodes into an
// interface; false when v holds any other type.
func cloneJSON(v any) (any, bool) {
	var ok bool
	switch v := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(v))
		for k, e := range v {
			if out[k], ok = cloneJSON(e); !ok {
				return nil, false
			}
		}
		return out, true
	case []any:
		out := make([]any, len(v))
		for i, e := range v {
			if out[i], ok = cloneJSON(e); !ok {
				return nil, false
			}
		}
		return out, true
	case string, float64, bool, nil:
		return v, true
	}
	return nil, false
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
	raw, ok := rawMetaValue(req, key)
	if !ok {
		return zero, false
	}
	if v, ok := raw.(T); ok {
		return v, true
	}
	b, err := json.Marshal(raw)
	if err != nil {
		return zero, false
	}
	// Field names match only as spelled, as the go-sdk decodes them:
	// encoding/json would also take "Elicitation" for "elicitation".
	var v T
	if rest, err := sjson.Parse(b, &v, sjson.DontMatchCaseInsensitiveStructFields); err != nil || len(rest) != 0 {
		return zero, false
	}
	return v, true
}
