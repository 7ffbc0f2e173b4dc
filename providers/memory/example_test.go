//go:build sqlite_fts5 || fts5

package memory_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log"
	"os"

	"github.com/openhuman/openhuman-host/providers/memory"
	"github.com/openhuman/openhuman-host/sdk"
)

// Example stores a note and finds it again, as a host would through
// CallTool.
func Example() {
	dir, err := os.MkdirTemp("", "memory-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)

	ctx := context.Background()
	p := memory.New(nil)
	if err := p.Configure(ctx, &sdk.ConfigureRequest{Config: json.RawMessage(`{}`), DataDir: dir}); err != nil {
		log.Fatal(err)
	}
	defer p.Close()

	// call runs a tool as a host would, with its arguments as JSON.
	call := func(tool, args string) *sdk.CallToolResult {
		res, err := p.CallTool(ctx, &sdk.CallToolRequest{Name: tool, Arguments: json.RawMessage(args)})
		if err != nil {
			log.Fatal(err)
		}
		return res
	}

	res := call(memory.ToolStore, `{"title":"Lighthouse","content":"Ingrid keeps the light on the north cape."}`)
	fmt.Println(res.Content[0].Text)

	res = call(memory.ToolSearch, `{"query":"who keeps the lamp","k":3}`)
	fmt.Println(res.Content[0].Text)

	res = call(memory.ToolSearch, `{"query":"Ingrid light","k":3}`)
	var found struct {
		Chunks []struct {
			DocumentID string `json:"document_id"`
			Snippet    string `json:"snippet"`
		} `json:"chunks"`
	}
	if err := json.Unmarshal(res.StructuredContent, &found); err != nil {
		log.Fatal(err)
	}
	fmt.Println(found.Chunks[0].DocumentID, found.Chunks[0].Snippet)
	// Output:
	// Stored mcp/mcp-store-lighthouse (title "Lighthouse", 1 chunk; no tags). Chunk ids: chk_82b5d96ec74a8f1fc24344cc.
	// No chunks contain all of: keeps lamp.
	// mcp/mcp-store-lighthouse **Ingrid** keeps the **light** on the north cape.
}
