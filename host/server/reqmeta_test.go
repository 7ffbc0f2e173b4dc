//lint:file-ignore SA1019 the capabilities read here include sampling, deprecated from protocol 2026-07-28 (SEP-2577) and still declared by clients.

package server

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The host's readers of a request's client info and capabilities answer
// what the go-sdk's own methods answer.
func TestRequestMetaMatchesTheSDK(t *testing.T) {
	for _, wire := range []string{
		`{}`,
		`{"io.modelcontextprotocol/clientInfo":{"name":"c","version":"1.2"},"io.modelcontextprotocol/clientCapabilities":{}}`,
		`{"io.modelcontextprotocol/clientInfo":{"name":"c","title":"C","version":"1"},` +
			`"io.modelcontextprotocol/clientCapabilities":{"roots":{"listChanged":true},"elicitation":{"form":{},"url":{}},"sampling":{},"experimental":{"x":{"y":1}}}}`,
		`{"io.modelcontextprotocol/clientCapabilities":{"elicitation":{}},"traceparent":"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"}`,
		`{"io.modelcontextprotocol/clientInfo":"not an object","io.modelcontextprotocol/clientCapabilities":7}`,
		`{"io.modelcontextprotocol/clientInfo":null,"io.modelcontextprotocol/clientCapabilities":null}`,
		// Field names match only as spelled, as in the go-sdk's decoder.
		`{"io.modelcontextprotocol/clientInfo":{"Name":"c","VERSION":"1"},"io.modelcontextprotocol/clientCapabilities":{"Elicitation":{"form":{}},"SAMPLING":{}}}`,
		`{"io.modelcontextprotocol/clientCapabilities":{"elicitation":{"URL":{}},"Roots":{"listChanged":true}}}`,
	} {
		// Twice: the second read of an equal value comes from the cache.
		for range 2 {
			req := metaRequest(t, wire)
			if got, want := requestClientCapabilities(req), req.ClientCapabilities(); !reflect.DeepEqual(got, want) {
				t.Errorf("%s: capabilities %+v, want the go-sdk's %+v", wire, got, want)
			}
			if got, want := requestClientInfo(req), req.ClientInfo(); !reflect.DeepEqual(got, want) {
				t.Errorf("%s: client info %+v, want the go-sdk's %+v", wire, got, want)
			}
			caps, capsJSON := clientCapabilities(req, true)
			if want := marshalOrNil(t, caps); string(capsJSON) != string(want) {
				t.Errorf("%s: capabilities JSON %s, want %s", wire, capsJSON, want)
			}
		}
	}
	// No params at all.
	req := &mcp.CallToolRequest{}
	if requestClientCapabilities(req) != nil || requestClientInfo(req) != nil {
		t.Error("a request without params has capabilities or client info")
	}
}

// What a caller does with the capabilities it was given, or with the
// request they came from, does not change what the next request with
// equal capabilities gets.
func TestClientCapabilitiesCacheIsolation(t *testing.T) {
	const (
		wireA = `{"io.modelcontextprotocol/clientCapabilities":{"elicitation":{"form":{}},"sampling":{},"roots":{"listChanged":true}}}`
		wireB = `{"io.modelcontextprotocol/clientCapabilities":{"elicitation":{"form":{}},"roots":{"listChanged":true}}}`
	)
	first := metaRequest(t, wireA)
	caps, capsJSON := clientCapabilities(first, true)
	if caps == nil || caps.Sampling == nil || len(capsJSON) == 0 {
		t.Fatalf("capabilities of %s: %+v %s", wireA, caps, capsJSON)
	}
	caps.Sampling, caps.Elicitation = nil, nil
	capsJSON[0] = 'X'
	// The first request's value becomes wireB's after it was read.
	delete(first.Params.Meta[mcp.MetaKeyClientCapabilities].(map[string]any), "sampling")

	for _, wire := range []string{wireA, wireB, wireA} {
		req := metaRequest(t, wire)
		want := req.ClientCapabilities()
		got, gotJSON := clientCapabilities(req, true)
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s: capabilities %+v, want %+v", wire, got, want)
		}
		if w := marshalOrNil(t, want); string(gotJSON) != string(w) {
			t.Errorf("%s: capabilities JSON %s, want %s", wire, gotJSON, w)
		}
	}
}

// Values the cache would take as equal but that decode differently are
// each read as sent: 0 and -0 are equal as numbers, not as JSON, and a
// client sending one is not answered with another client's other.
func TestClientCapabilitiesCacheTellsZeroSigns(t *testing.T) {
	for _, wire := range []string{
		`{"io.modelcontextprotocol/clientCapabilities":{"experimental":{"n":-0}}}`,
		`{"io.modelcontextprotocol/clientCapabilities":{"experimental":{"n":0}}}`,
		`{"io.modelcontextprotocol/clientCapabilities":{"extensions":{"x/y":{"v":[-0]}}}}`,
		`{"io.modelcontextprotocol/clientCapabilities":{"extensions":{"x/y":{"v":[0]}}}}`,
	} {
		req := metaRequest(t, wire)
		_, got := clientCapabilities(req, true)
		if want := marshalOrNil(t, req.ClientCapabilities()); string(got) != string(want) {
			t.Errorf("%s: capabilities JSON %s, want %s", wire, got, want)
		}
	}
}

// metaRequest is a tools/call request whose params' _meta is wire, as
// the go-sdk decodes it.
func metaRequest(t *testing.T, wire string) *mcp.CallToolRequest {
	t.Helper()
	var meta map[string]any
	if err := json.Unmarshal([]byte(wire), &meta); err != nil {
		t.Fatal(err)
	}
	return &mcp.CallToolRequest{Params: &mcp.CallToolParamsRaw{Meta: meta, Name: "t"}}
}

// marshalOrNil is v as JSON, or nil for a nil v.
func marshalOrNil(t *testing.T, v *mcp.ClientCapabilities) []byte {
	t.Helper()
	if v == nil {
		return nil
	}
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// BenchmarkClientCapabilities reads the capabilities of a 2026-07-28
// request as the go-sdk does and as the host does.
func BenchmarkClientCapabilities(b *testing.B) {
	var meta map[string]any
	if err := json.Unmarshal([]byte(`{"io.modelcontextprotocol/clientCapabilities":{"elicitation":{"form":{}},"roots":{"listChanged":true}}}`), &meta); err != nil {
		b.Fatal(err)
	}
	req := &mcp.CallToolRequest{Params: &mcp.CallToolParamsRaw{Meta: meta, Name: "t"}}
	b.Run("go-sdk", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			_ = req.ClientCapabilities()
		}
	})
	b.Run("host", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			_ = requestClientCapabilities(req)
		}
	})
}
