package replicas_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/openhuman/openhuman-host/internal/cluster"
	"github.com/openhuman/openhuman-host/sdk/mcpwire"
	"github.com/openhuman/openhuman-host/sdk/testwait"
)

// TestConfirmationAcrossReplicas: with confirm_acts = "when_supported", a
// 2026-07-28 client is asked to confirm an act by one replica and answers
// through another, which runs the act; replaying the answer through the
// third is refused, because the used state is recorded in the shared
// database. The act has one audit row.
func TestConfirmationAcrossReplicas(t *testing.T) {
	c, db := startCluster(t, 3, nil, func(o *cluster.Options) { o.ConfirmActs = "when_supported" })
	ctx := testwait.Context(t)
	connect := func(addr string) *mcp.ClientSession {
		cs, err := mcp.NewClient(&mcp.Implementation{Name: "confirm-client", Version: "1"}, &mcp.ClientOptions{
			// The test answers the question itself, through the replica it
			// chooses.
			MultiRoundTrip: &mcp.MultiRoundTripOptions{Disabled: true},
			ElicitationHandler: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
				return nil, errors.New("not asked this way")
			},
		}).Connect(ctx, &mcp.StreamableClientTransport{Endpoint: "http://" + addr + "/"}, &mcp.ClientSessionOptions{ProtocolVersion: cluster.Stateless})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = cs.Close() })
		return cs
	}
	r1, r2, r3 := connect(c.Replicas[0].Addr), connect(c.Replicas[1].Addr), connect(c.Replicas[2].Addr)
	args := map[string]any{"client": 7, "seq": 1}
	first, err := r1.CallTool(ctx, &mcp.CallToolParams{Name: cluster.ToolWrite, Arguments: args})
	if err != nil || !first.NeedsInput() || first.RequestState == "" {
		t.Fatalf("first call through r1 = %+v, %v; want a confirmation question", first, err)
	}
	answers := mcp.InputResponseMap{}
	for k := range first.InputRequests {
		answers[k] = &mcp.ElicitResult{Action: "accept", Content: map[string]any{"confirm": true}}
	}
	retry := &mcp.CallToolParams{Name: cluster.ToolWrite, Arguments: args, InputResponses: answers, RequestState: first.RequestState}
	res, err := r2.CallTool(ctx, retry)
	if err != nil || res.IsError || mcpwire.Text(res) != cluster.Want(7, 1) {
		t.Fatalf("the answer through r2 = %+v (%q), %v; want the act's result", res, mcpwire.Text(res), err)
	}
	_, err = r3.CallTool(ctx, retry)
	var werr *jsonrpc.Error
	if !errors.As(err, &werr) || werr.Code != jsonrpc.CodeInvalidParams || !strings.Contains(werr.Message, "invalid requestState (replayed)") {
		t.Fatalf("the same answer replayed through r3: %v; want -32602 invalid requestState (replayed)", err)
	}
	if err := c.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	rows, err := db.QueryContext(ctx, "SELECT args_summary, decision, pending FROM mcp_audit WHERE tool = $1 ORDER BY id", cluster.ToolWrite)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var got []string
	for rows.Next() {
		var args, decision string
		var pending bool
		if err := rows.Scan(&args, &decision, &pending); err != nil {
			t.Fatal(err)
		}
		got = append(got, fmt.Sprintf("%s %s pending=%v", args, decision, pending))
	}
	want := []string{argsKey(7, 1) + " allowed pending=false", argsKey(7, 1) + " denied:bad_confirmation pending=false"}
	if !slices.Equal(got, want) {
		t.Errorf("audit rows of %s = %q, want %q: the question writes none, the act one, the replay one", cluster.ToolWrite, got, want)
	}
}
