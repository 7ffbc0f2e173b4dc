package server

import (
	"io"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// BenchmarkStdioDecode decodes one tools/call line of a 2026-07-28 client
// (its _meta carries protocol version, client info and capabilities) with
// the go-sdk's jsonrpc.DecodeMessage and with the host's stdio decoder.
func BenchmarkStdioDecode(b *testing.B) {
	line := []byte(`{"jsonrpc":"2.0","id":42,"method":"tools/call","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28",` +
		`"io.modelcontextprotocol/clientInfo":{"name":"bench","version":"1.0"},"io.modelcontextprotocol/clientCapabilities":{"elicitation":{"form":{}}}},` +
		`"name":"notes_search","arguments":{"query":"reef harbour","k":10}}}`)
	b.Run("go-sdk", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := jsonrpc.DecodeMessage(line); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("host", func(b *testing.B) {
		c := &lineConn{out: io.Discard, closed: make(chan struct{})}
		b.ReportAllocs()
		for b.Loop() {
			if _, _, ok := c.decode(line); !ok {
				b.Fatal("not decoded")
			}
		}
	})
}
