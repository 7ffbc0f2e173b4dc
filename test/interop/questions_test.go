//lint:file-ignore SA1019 sub-agents run on the client's model through sampling, deprecated from protocol 2026-07-28 (SEP-2577) but still served.

package interop_test

import (
	"context"
	"fmt"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/openhuman/openhuman-host/providers/agent/agenttool"
	"github.com/openhuman/openhuman-host/providers/memory/memorytool"
	"github.com/openhuman/openhuman-host/sdk/testwait"
)

// TestClientQuestions: the TypeScript SDK's v2 client, on protocol
// 2026-07-28 (questions as input_required results it answers and
// retries) and on 2025-11-25 (questions as requests during the call),
// over stdio and Streamable HTTP, with form elicitation and sampling:
// an act is confirmed before it runs and refused when declined, a
// sub-agent runs on the client's own model, and an upstream server's
// elicitation reaches the client and its answer the server
// (client-mrtr.mjs holds the checks).
func TestClientQuestions(t *testing.T) {
	p := requireInterop(t)
	t.Parallel()
	config := questionsConfig(t)
	for _, rev := range questionRevisions {
		t.Run(rev+"/stdio", func(t *testing.T) {
			t.Parallel()
			sb := newSandbox(t)
			sb.writeConfig(t, config)
			tree := runScript(t, p, sb, "client-mrtr.mjs", true, nil, rev, "stdio", p.bin, "serve")
			tree.requireExited(t)
		})
		t.Run(rev+"/http", func(t *testing.T) {
			t.Parallel()
			sb := newSandbox(t)
			sb.writeConfig(t, config)
			srv := startHTTPServer(t, p, sb)
			runScript(t, p, sb, "client-mrtr.mjs", false, nil, rev, "http", srv.url)
			srv.stop(t, "sigterm")
		})
	}
}

// questionRevisions are the protocol revisions the question tests run on:
// questions as input_required results, and as requests during the call.
var questionRevisions = []string{"2026-07-28", "2025-11-25"}

// questionsConfig asks before act tools, in supervised mode, and serves
// the everything-server, built for t, as upstream server "conformance"
// with its tools prefixed "up_".
func questionsConfig(t *testing.T) string {
	t.Helper()
	everything := buildEverythingServer(t)
	return fmt.Sprintf("[autonomy]\nlevel = \"supervised\"\nconfirm_acts = \"when_supported\"\n\n"+
		"[[upstream.servers]]\nname = \"conformance\"\ncommand = %q\nprefix = \"up_\"\n", everything)
}

// TestGoClientQuestions is TestClientQuestions with the go-sdk's own
// client against the built binary: on 2026-07-28 it answers the host's
// input_required results and retries by itself, on 2025-11-25 it answers
// requests during the call.
func TestGoClientQuestions(t *testing.T) {
	p := requireServer(t)
	t.Parallel()
	config := questionsConfig(t)
	for _, rev := range questionRevisions {
		for _, transport := range []string{"stdio", "http"} {
			t.Run(rev+"/"+transport, func(t *testing.T) {
				t.Parallel()
				sb := newSandbox(t)
				sb.writeConfig(t, config)
				var tr mcp.Transport
				if transport == "stdio" {
					cmd := exec.Command(p.bin, "serve")
					cmd.Env = sb.environ("")
					cmd.Dir = sb.dir
					tr = &mcp.CommandTransport{Command: cmd}
				} else {
					srv := startHTTPServer(t, p, sb)
					t.Cleanup(func() { srv.stop(t, "sigterm") })
					tr = &mcp.StreamableClientTransport{Endpoint: srv.url}
				}
				goClientQuestions(t, tr, rev)
			})
		}
	}
}

func goClientQuestions(t *testing.T, tr mcp.Transport, rev string) {
	ctx := testwait.Context(t)
	var (
		mu      sync.Mutex
		asked   []string
		confirm = true
		sampled int
	)
	client := mcp.NewClient(&mcp.Implementation{Name: "go-sdk-probe", Version: "1.8.0"}, &mcp.ClientOptions{
		ElicitationHandler: func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			mu.Lock()
			defer mu.Unlock()
			asked = append(asked, req.Params.Message)
			if strings.HasPrefix(req.Params.Message, "Allow ") {
				return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"confirm": confirm}}, nil
			}
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"name": "Alice"}}, nil
		},
		CreateMessageHandler: func(context.Context, *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
			mu.Lock()
			sampled++
			mu.Unlock()
			return &mcp.CreateMessageResult{Model: "probe-model", Role: "assistant", StopReason: "endTurn",
				Content: &mcp.TextContent{Text: "The coral summary, from the client's own model."}}, nil
		},
	})
	cs, err := client.Connect(ctx, tr, &mcp.ClientSessionOptions{ProtocolVersion: rev})
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	defer cs.Close()
	text := func(res *mcp.CallToolResult) string {
		var b strings.Builder
		for _, c := range res.Content {
			if tc, ok := c.(*mcp.TextContent); ok {
				b.WriteString(tc.Text)
			}
		}
		return b.String()
	}
	call := func(name string, args map[string]any) *mcp.CallToolResult {
		t.Helper()
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		return res
	}
	lastAsked := func() []string {
		mu.Lock()
		defer mu.Unlock()
		out := asked
		asked = nil
		return out
	}

	res := call(memorytool.Store, map[string]any{"title": "Reef survey", "content": "Corals recovered on the north reef."})
	q := lastAsked()
	if len(q) != 1 || !strings.Contains(q[0], memorytool.Store) || !strings.Contains(q[0], "Reef survey") {
		t.Errorf("confirmation asked %q, want one question naming "+memorytool.Store+" and the title", q)
	}
	if res.IsError {
		t.Errorf("confirmed act: %s", text(res))
	}
	mu.Lock()
	confirm = false
	mu.Unlock()
	if res := call(memorytool.Store, map[string]any{"title": "Declined", "content": "x"}); !res.IsError || !strings.Contains(text(res), "you did not confirm it") {
		t.Errorf("declined act = %q, isError %v", text(res), res.IsError)
	}
	mu.Lock()
	confirm = true
	mu.Unlock()
	lastAsked()

	res = call(agenttool.RunSubagent, map[string]any{"agent_id": "summarizer", "prompt": "Summarise: corals recovered on the north reef."})
	mu.Lock()
	n := sampled
	mu.Unlock()
	if n == 0 || res.IsError || !strings.Contains(text(res), "from the client's own model") {
		t.Errorf("sub-agent: %d sampling requests, result %q (isError %v)", n, text(res), res.IsError)
	}

	res = call("up_test_input_required_result_elicitation", map[string]any{})
	q = lastAsked()
	if !slices.ContainsFunc(q, func(m string) bool { return strings.Contains(m, "What is your name?") }) {
		t.Errorf("upstream elicitation not relayed; asked %q", q)
	}
	if res.IsError || !strings.Contains(text(res), "Hello, Alice!") {
		t.Errorf("upstream result %q (isError %v)", text(res), res.IsError)
	}
}
