package main

import (
	"encoding/json"
	"os/exec"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/openhuman/openhuman-host/host/server"
	"github.com/openhuman/openhuman-host/providers/memory/memorytool"
	"github.com/openhuman/openhuman-host/sdk/testwait"
)

// A client named in [server] structured_content_clients gets each result
// once, through the built binary on stdio: the memory provider's one-line
// summary, and the host's note in place of a provider's text that repeats
// structuredContent as JSON. A client not named gets the full text. Both
// get the same structuredContent.
func TestStructuredContentClientsEndToEnd(t *testing.T) {
	t.Parallel()
	dataDir := t.TempDir()
	cfgPath := serveConfigWith(t, dataDir, "structured_content_clients = [\"brief-client\"]\n\n"+kitConfig(t, ""))
	exe := testExe(t)
	session := func(clientName string) *mcp.ClientSession {
		t.Helper()
		cs := serveStdioAs(t, exec.Command(exe, "--config", cfgPath, "serve"), clientName)
		t.Cleanup(func() { _ = cs.Close() })
		return cs
	}
	callTool := func(cs *mcp.ClientSession, tool, args string) (string, string) {
		t.Helper()
		res, err := cs.CallTool(testwait.Context(t), &mcp.CallToolParams{Name: tool, Arguments: json.RawMessage(args)})
		if err != nil {
			t.Fatalf("%s: %v", tool, err)
		}
		if res.IsError || len(res.Content) != 1 {
			t.Fatalf("%s: %+v", tool, res)
		}
		structured, err := json.Marshal(res.StructuredContent)
		if err != nil {
			t.Fatal(err)
		}
		return res.Content[0].(*mcp.TextContent).Text, string(structured)
	}

	brief := session("brief-client")
	if text, _ := callTool(brief, memorytool.Store, `{"title":"Reef log","content":"The zebrafish swims near the northern reef."}`); !strings.HasPrefix(text, "Stored ") {
		t.Errorf("store, already short, keeps its text: %q", text)
	}
	briefText, briefStructured := callTool(brief, memorytool.Search, `{"query":"zebrafish"}`)
	if want := `1 hit for "zebrafish"; full results in structuredContent`; briefText != want {
		t.Errorf(memorytool.Search+" for a listed client: %q, want %q", briefText, want)
	}
	kitText, kitStructured := callTool(brief, "kit_caller", `{}`)
	if kitText != server.StructuredContentNote || kitStructured != `{"client_name":"brief-client","reads_structured_content":true}` {
		t.Errorf("kit.caller for a listed client: text %q, structured %s", kitText, kitStructured)
	}
	_ = brief.Close()

	full := session("full-client")
	fullText, fullStructured := callTool(full, memorytool.Search, `{"query":"zebrafish"}`)
	if !strings.HasPrefix(fullText, "1. chk_") || !strings.Contains(fullText, "**zebrafish**") {
		t.Errorf(memorytool.Search+" for a client not listed: %q, want the hit in full", fullText)
	}
	if fullStructured != briefStructured || !strings.Contains(fullStructured, `"snippet"`) {
		t.Errorf("structured content differs between clients:\n%s\n%s", briefStructured, fullStructured)
	}
	want := `{"client_name":"full-client","reads_structured_content":false}`
	if kitText, kitStructured := callTool(full, "kit_caller", `{}`); kitText != want || kitStructured != want {
		t.Errorf("kit.caller for a client not listed: text %q, structured %s", kitText, kitStructured)
	}
}
