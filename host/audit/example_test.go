package audit_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	"github.com/openhuman/openhuman-host/host/audit"
	"github.com/openhuman/openhuman-host/sdk"
)

func ExampleLog() {
	dir, err := os.MkdirTemp("", "audit-example")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer os.RemoveAll(dir)

	ctx := context.Background()
	l, err := audit.Open(ctx, filepath.Join(dir, "audit.db"), &audit.Options{RetainDays: 90})
	if err != nil {
		fmt.Println(err)
		return
	}
	err = l.Record(ctx, audit.Record{
		SessionHash: audit.SessionHash("mcp-session-id"),
		SourceType:  "mcp:claude-desktop",
		Tool:        "notes_store",
		Provider:    "memory",
		Class:       "act",
		Decision:    audit.DecisionAllowed,
		Success:     true,
		ArgsSummary: audit.SummarizeArgs(json.RawMessage(`{"title":"Trip plan","content":"private text"}`), sdk.AuditRules{}),
		ResultRef:   "mcp-store-trip-plan",
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	if err := l.Flush(ctx); err != nil {
		fmt.Println(err)
		return
	}
	recs, err := l.List(ctx, audit.Query{Client: "mcp:claude-desktop"})
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, r := range recs {
		fmt.Println(r.ID, r.Tool, r.Decision, r.ArgsSummary, r.ResultRef)
	}
	if err := l.Close(ctx); err != nil {
		fmt.Println(err)
	}
	// Output: 1 notes_store allowed {"content":{"len":12},"title":"Trip plan"} mcp-store-trip-plan
}

func ExampleSummarizeArgs() {
	fmt.Println(audit.SummarizeArgs(json.RawMessage(`{"title":"Trip plan","content":"private text","tags":["travel"],"namespace":"mcp"}`),
		sdk.AuditRules{Identifiers: []string{"namespace"}, Lists: []string{"tags"}}))
	// Output: {"content":{"len":12},"namespace":"mcp","tags":["travel"],"title":"Trip plan"}
}
