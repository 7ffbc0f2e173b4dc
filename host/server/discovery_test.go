package server

import (
	"context"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/openhuman/openhuman-host/host/policy"
)

// discoveryServer serves testCatalog with a discovery profile "lean"
// pinning fake_slow, a readonly discovery profile "reader", and clients
// of no profile.
func discoveryServer(t *testing.T) (*httptest.Server, *memAudit) {
	t.Helper()
	pol := testPolicy(t, policy.Options{SharedBudget: true})
	lean := profilePolicy(t, pol, policy.Profile{Name: "lean"})
	reader := profilePolicy(t, pol, policy.Profile{Name: "reader", Level: policy.ReadOnly})
	a := &memAudit{}
	s := newFakeServer(t, &Options{
		Policy: pol, Audit: a, RecordReads: true,
		Profiles: map[string]*Profile{
			"lean":   {Policy: lean, Discovery: true, Pinned: []string{"fake.slow"}},
			"reader": {Policy: reader, Discovery: true},
		},
	})
	ts := serveHTTP(t, s, nil)
	return ts, a
}

// TestDiscovery: a discovery profile lists its pinned tools and the
// meta-tools only; it finds, describes and calls the others, each call
// audited under the tool's own name and refused as a direct call would
// be; other clients never list the meta-tools.
func TestDiscovery(t *testing.T) {
	t.Parallel()
	ts, a := discoveryServer(t)
	ctx := context.Background()
	for _, v := range []string{"2026-07-28", "2025-11-25"} {
		lean := connectPath(t, ts, "/profile/lean", "Claude Desktop", v, nil)
		reader := connectPath(t, ts, "/profile/reader", "Claude Desktop", v, nil)
		plain := connectPath(t, ts, "/", "Claude Desktop", v, nil)
		if got, want := listedTools(t, lean), []string{"fake_slow", ToolCall, ToolDescribe, ToolSearch}; !slices.Equal(got, want) {
			t.Errorf("%s: lean lists %v, want %v", v, got, want)
		}
		if got, want := listedTools(t, plain), []string{"fake_search", "fake_slow", "fake_store"}; !slices.Equal(got, want) {
			t.Errorf("%s: a client of no profile lists %v, want %v", v, got, want)
		}

		res, err := lean.CallTool(ctx, &mcp.CallToolParams{Name: ToolSearch, Arguments: map[string]any{"query": "please store this for me"}})
		if err != nil || res.IsError || !strings.HasPrefix(textOf(res), "fake_store: store") {
			t.Errorf("%s: lean's tool_search = %+v, %v; want fake_store first", v, res, err)
		}
		res, err = reader.CallTool(ctx, &mcp.CallToolParams{Name: ToolSearch, Arguments: map[string]any{"query": "store", "k": 20}})
		if err != nil || res.IsError || strings.Contains(textOf(res), "fake_store") {
			t.Errorf("%s: reader's tool_search = %+v, %v; want no act tool", v, res, err)
		}
		res, err = lean.CallTool(ctx, &mcp.CallToolParams{Name: ToolDescribe, Arguments: map[string]any{"name": "fake_search"}})
		if err != nil || res.IsError || !strings.Contains(textOf(res), `"maxLength": 100`) {
			t.Errorf("%s: tool_describe = %+v, %v; want the input schema", v, res, err)
		}
		res, err = lean.CallTool(ctx, &mcp.CallToolParams{Name: ToolCall, Arguments: map[string]any{"name": "fake_search", "arguments": map[string]any{"query": "reef"}}})
		if err != nil || res.IsError || textOf(res) != `found {"query":"reef"}` {
			t.Errorf("%s: tool_call fake_search = %+v, %v", v, res, err)
		}
		res, err = lean.CallTool(ctx, &mcp.CallToolParams{Name: ToolCall, Arguments: map[string]any{"name": "fake_search", "arguments": map[string]any{"query": "x", "k": 99}}})
		if err != nil || !res.IsError || !strings.Contains(textOf(res), `argument "k" must be between 1 and 50`) {
			t.Errorf("%s: tool_call with bad arguments = %+v, %v; want the tool's own validation error", v, res, err)
		}
		res, err = reader.CallTool(ctx, &mcp.CallToolParams{Name: ToolCall, Arguments: map[string]any{"name": "fake_store", "arguments": map[string]any{}}})
		if err != nil || !res.IsError || !strings.Contains(textOf(res), "is an act tool") {
			t.Errorf("%s: reader's tool_call fake_store = %+v, %v; want the readonly refusal", v, res, err)
		}
		res, err = reader.CallTool(ctx, &mcp.CallToolParams{Name: ToolDescribe, Arguments: map[string]any{"name": "fake_store"}})
		if err != nil || !res.IsError {
			t.Errorf("%s: reader's tool_describe fake_store = %+v, %v; want it unavailable", v, res, err)
		}
	}
	counts := map[string]int{}
	for _, r := range a.all() {
		counts[r.Profile+" "+r.Tool+" "+r.Decision]++
	}
	// Per revision: one good call and one with bad arguments through
	// tool_call, under the tool's own name.
	for key, want := range map[string]int{
		"lean fake_search allowed":                  2,
		"lean fake_search denied:invalid_arguments": 2,
		"reader fake_store denied:readonly":         2,
		"lean tool_search allowed":                  2,
		"reader tool_describe allowed":              2, // a failed read: fake_store is unavailable to reader
	} {
		if counts[key] != want {
			t.Errorf("audit rows %q = %d, want %d (all: %v)", key, counts[key], want, counts)
		}
	}
	if n := counts["lean tool_call allowed"] + counts["reader tool_call allowed"]; n != 0 {
		t.Errorf("%d audit rows for tool_call itself; a call through it is audited under the tool's own name only", n)
	}
}

// TestDiscoveryConfirms: an act called through tool_call is confirmed as
// a direct call is, also over multi-round-trip results (2026-07-28), and
// the question names the tool itself.
func TestDiscoveryConfirms(t *testing.T) {
	t.Parallel()
	for _, v := range []string{"2026-07-28", "2025-11-25"} {
		t.Run(v, func(t *testing.T) {
			t.Parallel()
			pol := testPolicy(t, policy.Options{Level: policy.Supervised})
			lean := profilePolicy(t, pol, policy.Profile{Name: "lean"})
			a := &memAudit{}
			s := newFakeServer(t, &Options{
				Policy: pol, Audit: a, ConfirmActs: ConfirmWhenSupported, Profile: "lean",
				Profiles: map[string]*Profile{"lean": {Policy: lean, Discovery: true}},
			})
			var asked []string
			cs := connectVersion(t, s, "Claude Desktop", &mcp.ClientOptions{
				ElicitationHandler: func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
					asked = append(asked, req.Params.Message)
					return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"confirm": true}}, nil
				},
			}, v)
			res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: ToolCall, Arguments: map[string]any{"name": "fake_store", "arguments": map[string]any{"title": "t"}}})
			if err != nil || res.IsError || textOf(res) != "stored" {
				t.Fatalf("tool_call fake_store = %+v, %v", res, err)
			}
			if len(asked) != 1 || !strings.HasPrefix(asked[0], "Allow Claude Desktop to run fake_store?") {
				t.Errorf("asked %q, want one question naming fake_store", asked)
			}
			if rows := a.all(); len(rows) != 1 || rows[0].Tool != "fake_store" || rows[0].Decision != "allowed" || rows[0].Profile != "lean" {
				t.Errorf("audit rows = %+v, want one allowed fake_store row of lean", rows)
			}
		})
	}
}

// TestDiscoveryHidesUnconfirmableActs: under confirm_acts = "required",
// tool_search and tool_describe do not offer an act to a client that
// cannot be asked to confirm it, and tool_call is refused with the
// confirmation's own reason; a client that can confirm finds it.
func TestDiscoveryHidesUnconfirmableActs(t *testing.T) {
	t.Parallel()
	pol := testPolicy(t, policy.Options{Level: policy.Supervised})
	lean := profilePolicy(t, pol, policy.Profile{Name: "lean"})
	s := newFakeServer(t, &Options{
		Policy: pol, Audit: &memAudit{}, ConfirmActs: ConfirmRequired, Profile: "lean",
		Profiles: map[string]*Profile{"lean": {Policy: lean, Discovery: true}},
	})
	for _, v := range []string{"2026-07-28", "2025-11-25"} {
		mute := connectVersion(t, s, "plain client", &mcp.ClientOptions{}, v)
		asking := connectVersion(t, s, "asking client", &mcp.ClientOptions{
			ElicitationHandler: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
				return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"confirm": true}}, nil
			},
		}, v)
		search := map[string]any{"query": "store", "k": 20}
		res, err := mute.CallTool(t.Context(), &mcp.CallToolParams{Name: ToolSearch, Arguments: search})
		if err != nil || res.IsError || strings.Contains(textOf(res), "fake_store") {
			t.Errorf("%s: tool_search of a client that cannot confirm = %+v, %v; want no act tool", v, res, err)
		}
		res, err = mute.CallTool(t.Context(), &mcp.CallToolParams{Name: ToolDescribe, Arguments: map[string]any{"name": "fake_store"}})
		if err != nil || !res.IsError {
			t.Errorf("%s: tool_describe fake_store of a client that cannot confirm = %+v, %v; want an error", v, res, err)
		}
		res, err = mute.CallTool(t.Context(), &mcp.CallToolParams{Name: ToolCall, Arguments: map[string]any{"name": "fake_store", "arguments": map[string]any{"title": "t"}}})
		if err != nil || !res.IsError || !strings.Contains(textOf(res), `confirm_acts = "required" needs a client that can ask you`) {
			t.Errorf("%s: tool_call fake_store of a client that cannot confirm = %+v, %v; want the confirmation refusal", v, res, err)
		}
		res, err = asking.CallTool(t.Context(), &mcp.CallToolParams{Name: ToolSearch, Arguments: search})
		if err != nil || res.IsError || !strings.Contains(textOf(res), "fake_store") {
			t.Errorf("%s: tool_search of a client that can confirm = %+v, %v; want fake_store", v, res, err)
		}
	}
}
