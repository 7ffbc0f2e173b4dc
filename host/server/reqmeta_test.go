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
	} {
		var meta map[string]any
		if err := json.Unmarshal([]byte(wire), &meta); err != nil {
			t.Fatal(err)
		}
		req := &mcp.CallToolRequest{Params: &mcp.CallToolParamsRaw{Meta: meta, Name: "t"}}
		if got, want := requestClientCapabilities(req), req.ClientCapabilities(); !reflect.DeepEqual(got, want) {
			t.Errorf("%s: capabilities %+v, want the go-sdk's %+v", wire, got, want)
		}
		if got, want := requestClientInfo(req), req.ClientInfo(); !reflect.DeepEqual(got, want) {
			t.Errorf("%s: client info %+v, want the go-sdk's %+v", wire, got, want)
		}
	}
	// No params at all.
	req := &mcp.CallToolRequest{}
	if requestClientCapabilities(req) != nil || requestClientInfo(req) != nil {
		t.Error("a request without params has capabilities or client info")
	}
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
