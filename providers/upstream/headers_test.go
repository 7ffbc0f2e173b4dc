package upstream

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/openhuman/openhuman-host/sdk"
)

// routeSchema declares region and opts.zone as x-mcp-header arguments.
const routeSchema = `{"type":"object","properties":{
	"region":{"type":"string","x-mcp-header":"Region"},
	"opts":{"type":"object","properties":{"zone":{"type":"integer","x-mcp-header":"Zone"}}},
	"note":{"type":"string"}}}`

// Arguments sent as x-mcp-header headers must be strings, integers or
// booleans: others are refused before the call, naming the argument and
// the header.
func TestHeaderArgumentsChecked(t *testing.T) {
	calls := make(chan http.Header, 10)
	p, _ := configure(t, newFakeHost(), map[string]any{"name": "geo", "endpoint": headerUpstream(t, calls)})
	ctx := context.Background()
	for args, want := range map[string]string{
		`{"region":{"a":1}}`:                 `geo__route: argument "region" is sent as the header Mcp-Param-Region and must be a string, integer or boolean`,
		`{"region":["eu"]}`:                  `geo__route: argument "region" is sent as the header Mcp-Param-Region and must be a string, integer or boolean`,
		`{"opts":{"zone":1.5}}`:              `geo__route: argument "opts.zone" is sent as the header Mcp-Param-Zone and must be a string, integer or boolean`,
		`{"opts":{"zone":9007199254740993}}`: `geo__route: argument "opts.zone" is sent as the header Mcp-Param-Zone and must be an integer from -9007199254740991 to 9007199254740991`,
	} {
		res, err := p.CallTool(ctx, &sdk.CallToolRequest{Name: "geo__route", Arguments: json.RawMessage(args), Caller: caller("A", "c")})
		if err != nil || !res.IsError || res.Text() != want {
			t.Errorf("%s: %v %+v, want isError %q", args, err, res, want)
		}
	}
	select {
	case h := <-calls:
		t.Errorf("a refused call reached the upstream: %v", h)
	default:
	}
}

// headerUpstream is a stateless Streamable HTTP server (so that it speaks
// protocol 2026-07-28) with the tool route, which takes x-mcp-header
// arguments; the headers of every tools/call request are sent to calls.
func headerUpstream(t *testing.T, calls chan<- http.Header) string {
	t.Helper()
	s := mcp.NewServer(&mcp.Implementation{Name: "geo", Version: "1"}, nil)
	s.AddTool(&mcp.Tool{Name: "route", Description: "Routes by region.", InputSchema: json.RawMessage(routeSchema)},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "routed"}}}, nil
		})
	return serve(t, s, true, func(r *http.Request) {
		if r.Method == http.MethodPost && r.Header.Get("Mcp-Method") == "tools/call" {
			calls <- r.Header.Clone()
		}
	})
}

// On a session of protocol 2026-07-28 the go-sdk client sends
// x-mcp-header arguments as Mcp-Param-* headers, on a client's own
// session (whose tools the provider lists first) and on the shared one.
func TestHeaderArgumentsSent(t *testing.T) {
	calls := make(chan http.Header, 10)
	p, cat := configure(t, newFakeHost(), map[string]any{"name": "geo", "endpoint": headerUpstream(t, calls)})
	if len(cat.Tools) != 1 || cat.Tools[0].Name != "geo__route" {
		t.Fatalf("tools %v", toolNames(cat))
	}
	ctx := context.Background()
	for _, c := range []sdk.Caller{caller("A", "c"), {SourceType: "cli"}} {
		res, err := p.CallTool(ctx, &sdk.CallToolRequest{Name: "geo__route", Caller: c,
			Arguments: json.RawMessage(`{"region":"eu-west","opts":{"zone":3},"note":"n"}`)})
		if err != nil || res.IsError || res.Text() != "routed" {
			t.Fatalf("call for %q: %v %+v", c.SessionToken, err, res)
		}
		h := receive(t, calls, "the call")
		got := map[string]string{}
		for _, k := range []string{"Mcp-Protocol-Version", "Mcp-Method", "Mcp-Name", "Mcp-Param-Region", "Mcp-Param-Zone"} {
			got[k] = h.Get(k)
		}
		want := map[string]string{"Mcp-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/call", "Mcp-Name": "route",
			"Mcp-Param-Region": "eu-west", "Mcp-Param-Zone": "3"}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("headers of the call for %q (-want +got):\n%s", c.SessionToken, diff)
		}
	}
	// A null argument sends no header.
	res, err := p.CallTool(ctx, &sdk.CallToolRequest{Name: "geo__route", Caller: caller("A", "c"), Arguments: json.RawMessage(`{"region":null}`)})
	if err != nil || res.IsError {
		t.Fatalf("call with a null region: %v %+v", err, res)
	}
	if h := receive(t, calls, "the call"); h.Values("Mcp-Param-Region") != nil || h.Values("Mcp-Param-Zone") != nil {
		t.Errorf("headers for null and absent arguments: %v", h)
	}
}

func TestHeaderBindings(t *testing.T) {
	got := headerBindings(json.RawMessage(routeSchema))
	want := []headerBinding{{path: []string{"opts", "zone"}, header: "Zone"}, {path: []string{"region"}, header: "Region"}}
	if diff := cmp.Diff(want, got, cmp.AllowUnexported(headerBinding{})); diff != "" {
		t.Errorf("bindings (-want +got):\n%s", diff)
	}
	if got := headerBindings(map[string]any{"type": "object"}); got != nil {
		t.Errorf("bindings of a schema without properties: %v", got)
	}
	// A nested argument under a value that is not an object is absent.
	if msg := headerArgProblem("t", want, json.RawMessage(`{"opts":"zone","region":true}`)); msg != "" {
		t.Errorf("problem %q", msg)
	}
}
