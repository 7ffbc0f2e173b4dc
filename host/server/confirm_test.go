package server

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/openhuman/openhuman-host/host/policy"
	"github.com/openhuman/openhuman-host/sdk"
)

// TestConfirmActs covers confirm_acts × what the client does × tool class
// and level, through a scripted MCP client.
func TestConfirmActs(t *testing.T) {
	t.Parallel()
	type answer struct {
		action  string
		confirm any
		err     bool
	}
	accept := &answer{action: "accept", confirm: true}
	acceptNo := &answer{action: "accept", confirm: false}
	decline := &answer{action: "decline"}
	cancel := &answer{action: "cancel"}
	failing := &answer{err: true}
	tests := map[string]struct {
		mode         string
		version      string // the client's protocol version; default 2025-11-25
		level        policy.Level
		client       *answer // nil: the client cannot elicit
		tool         string
		wantAsked    bool
		wantDecision string
		wantText     string
	}{
		"off: not asked":                              {mode: ConfirmOff, client: accept, tool: "fake.store", wantDecision: "allowed", wantText: "stored"},
		"when_supported: accepted":                    {mode: ConfirmWhenSupported, client: accept, tool: "fake.store", wantAsked: true, wantDecision: "allowed", wantText: "stored"},
		"when_supported: accepted with no":            {mode: ConfirmWhenSupported, client: acceptNo, tool: "fake.store", wantAsked: true, wantDecision: "denied:not_confirmed", wantText: "fake_store was not run: you did not confirm it"},
		"when_supported: declined":                    {mode: ConfirmWhenSupported, client: decline, tool: "fake.store", wantAsked: true, wantDecision: "denied:not_confirmed", wantText: `confirm_acts = "when_supported" asks before every act tool when the client can ask; set it to "off" to stop asking`},
		"when_supported: cancelled":                   {mode: ConfirmWhenSupported, client: cancel, tool: "fake.store", wantAsked: true, wantDecision: "denied:not_confirmed", wantText: "you did not confirm it"},
		"when_supported: asking fails":                {mode: ConfirmWhenSupported, client: failing, tool: "fake.store", wantAsked: true, wantDecision: "denied:not_confirmed", wantText: "asking you to confirm it failed"},
		"when_supported: cannot elicit":               {mode: ConfirmWhenSupported, tool: "fake.store", wantDecision: "allowed", wantText: "stored"},
		"when_supported: reads not asked":             {mode: ConfirmWhenSupported, client: decline, tool: "fake.search", wantDecision: "allowed", wantText: "found"},
		"when_supported: full level":                  {mode: ConfirmWhenSupported, level: policy.Full, client: decline, tool: "fake.store", wantDecision: "allowed", wantText: "stored"},
		"required: accepted":                          {mode: ConfirmRequired, client: accept, tool: "fake.store", wantAsked: true, wantDecision: "allowed", wantText: "stored"},
		"required: declined":                          {mode: ConfirmRequired, client: decline, tool: "fake.store", wantAsked: true, wantDecision: "denied:not_confirmed", wantText: "you did not confirm it"},
		"required: cannot elicit":                     {mode: ConfirmRequired, tool: "fake.store", wantDecision: "denied:confirmation_unavailable", wantText: `fake_store refused: [autonomy] confirm_acts = "required" needs a client that can ask you to confirm act tools (one that declares the elicitation capability in form mode), and this one cannot; use such a client, or set confirm_acts = "when_supported" (ask when the client can) or "off"`},
		"required: 2026-07-28 accepted":               {mode: ConfirmRequired, version: "2026-07-28", client: accept, tool: "fake.store", wantAsked: true, wantDecision: "allowed", wantText: "stored"},
		"required: 2026-07-28 cannot elicit":          {mode: ConfirmRequired, version: "2026-07-28", tool: "fake.store", wantDecision: "denied:confirmation_unavailable", wantText: "and this one cannot"},
		"when_supported: 2026-07-28 declined":         {mode: ConfirmWhenSupported, version: "2026-07-28", client: decline, tool: "fake.store", wantAsked: true, wantDecision: "denied:not_confirmed", wantText: "you did not confirm it"},
		"when_supported: 2026-07-28 accepted with no": {mode: ConfirmWhenSupported, version: "2026-07-28", client: acceptNo, tool: "fake.store", wantAsked: true, wantDecision: "denied:not_confirmed", wantText: "you did not confirm it"},
		"when_supported: 2026-07-28 cannot elicit":    {mode: ConfirmWhenSupported, version: "2026-07-28", tool: "fake.store", wantDecision: "allowed", wantText: "stored"},
		"when_supported: 2025-06-18 asked":            {mode: ConfirmWhenSupported, version: "2025-06-18", client: decline, tool: "fake.store", wantAsked: true, wantDecision: "denied:not_confirmed", wantText: "you did not confirm it"},
		"required: reads run unasked":                 {mode: ConfirmRequired, tool: "fake.search", wantDecision: "allowed", wantText: "found"},
		"required: readonly refuses first":            {mode: ConfirmRequired, level: policy.ReadOnly, client: accept, tool: "fake.store", wantDecision: "denied:readonly", wantText: "level"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			pol := testPolicy(t, policy.Options{Level: tc.level}) // no level is supervised
			level := pol.Level()
			a := &memAudit{}
			s := newFakeServer(t, &Options{Policy: pol, Audit: a, RecordReads: true, ConfirmActs: tc.mode})
			var (
				mu    sync.Mutex
				asked []string
			)
			opts := &mcp.ClientOptions{}
			if tc.client != nil {
				opts.ElicitationHandler = func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
					mu.Lock()
					asked = append(asked, req.Params.Message)
					mu.Unlock()
					if tc.client.err {
						return nil, errors.New("the user's client crashed")
					}
					res := &mcp.ElicitResult{Action: tc.client.action}
					if tc.client.action == "accept" {
						res.Content = map[string]any{"confirm": tc.client.confirm}
					}
					return res, nil
				}
			}
			version := tc.version
			if version == "" {
				version = "2025-11-25"
			}
			cs := connectVersion(t, s, "Claude Desktop", opts, version)
			// A client that cannot confirm is not shown the acts that
			// confirm_acts = "required" refuses it; calling one anyway is
			// refused and audited below.
			lt, err := cs.ListTools(context.Background(), nil)
			if err != nil {
				t.Fatal(err)
			}
			listed := slices.ContainsFunc(lt.Tools, func(x *mcp.Tool) bool { return x.Name == "fake_store" })
			wantListed := level != policy.ReadOnly && (tc.mode != ConfirmRequired || tc.client != nil || level != policy.Supervised)
			if listed != wantListed || !slices.ContainsFunc(lt.Tools, func(x *mcp.Tool) bool { return x.Name == "fake_search" }) {
				t.Errorf("tools/list lists fake_store: %v, want %v (and fake_search always); got %d tools", listed, wantListed, len(lt.Tools))
			}
			args := map[string]any{"title": "Launch plan"}
			if tc.tool == "fake.search" {
				args = map[string]any{"query": "x"}
			}
			res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: tc.tool, Arguments: args})
			if err != nil {
				t.Fatal(err)
			}
			text := ""
			for _, c := range res.Content {
				if tc, ok := c.(*mcp.TextContent); ok {
					text += tc.Text
				}
			}
			if !strings.Contains(text, tc.wantText) {
				t.Errorf("result %q does not contain %q", text, tc.wantText)
			}
			mu.Lock()
			defer mu.Unlock()
			if (len(asked) == 1) != tc.wantAsked || len(asked) > 1 {
				t.Errorf("asked %d times, want asked %v", len(asked), tc.wantAsked)
			}
			if tc.wantAsked && len(asked) == 1 {
				want := "Allow Claude Desktop to run fake_store?"
				if !strings.HasPrefix(asked[0], want) || !strings.Contains(asked[0], "Arguments:\ntitle: \"Launch plan\"") {
					t.Errorf("question = %q", asked[0])
				}
			}
			rows := a.all()
			if len(rows) != 1 || rows[0].Decision != tc.wantDecision || rows[0].Success != (tc.wantDecision == "allowed") {
				t.Errorf("audit rows = %+v, want one with decision %s", rows, tc.wantDecision)
			}
		})
	}
}

// TestConfirmActsCLI: command-line calls are never asked, in any mode.
func TestConfirmActsCLI(t *testing.T) {
	t.Parallel()
	pol := testPolicy(t, policy.Options{Level: policy.Supervised})
	s := newFakeServer(t, &Options{Policy: pol, ConfirmActs: ConfirmRequired})
	res, err := s.Call(context.Background(), Call{Tool: "fake.store", Arguments: json.RawMessage(`{}`), Caller: sdk.Caller{SourceType: "cli"}})
	if err != nil || res.IsError {
		t.Errorf("cli act under required: %v %+v", err, res)
	}
}

// connectVersion runs s over in-memory transports and returns a client
// session of clientName (version 9.9) with opts, speaking protocol
// version ("" for the client's latest).
func connectVersion(t testing.TB, s *Server, clientName string, opts *mcp.ClientOptions, version string) *mcp.ClientSession {
	t.Helper()
	return connectClient(t, s, mcp.NewClient(&mcp.Implementation{Name: clientName, Version: "9.9"}, opts), version)
}

// connectClient runs s over in-memory transports and connects client to
// it, speaking protocol version ("" for the client's latest). Both ends
// are closed when the test ends.
func connectClient(t testing.TB, s *Server, client *mcp.Client, version string) *mcp.ClientSession {
	t.Helper()
	ct, st := mcp.NewInMemoryTransports()
	ctx := context.Background()
	ss, err := s.MCP().Connect(ctx, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ss.Close() })
	var sessionOpts *mcp.ClientSessionOptions
	if version != "" {
		sessionOpts = &mcp.ClientSessionOptions{ProtocolVersion: version}
	}
	cs, err := client.Connect(ctx, ct, sessionOpts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cs.Close() })
	return cs
}

func TestCanConfirm(t *testing.T) {
	t.Parallel()
	caps := func(e *mcp.ElicitationCapabilities) *mcp.ClientCapabilities {
		return &mcp.ClientCapabilities{Elicitation: e}
	}
	tests := map[string]struct {
		init *mcp.InitializeParams
		want bool
	}{
		"nil":              {nil, false},
		"no elicitation":   {&mcp.InitializeParams{ProtocolVersion: "2025-11-25", Capabilities: &mcp.ClientCapabilities{}}, false},
		"empty means form": {&mcp.InitializeParams{ProtocolVersion: "2025-11-25", Capabilities: caps(&mcp.ElicitationCapabilities{})}, true},
		"form":             {&mcp.InitializeParams{ProtocolVersion: "2025-11-25", Capabilities: caps(&mcp.ElicitationCapabilities{Form: &mcp.FormElicitationCapabilities{}})}, true},
		"url only":         {&mcp.InitializeParams{ProtocolVersion: "2025-11-25", Capabilities: caps(&mcp.ElicitationCapabilities{URL: &mcp.URLElicitationCapabilities{}})}, false},
		"form and url":     {&mcp.InitializeParams{ProtocolVersion: "2025-11-25", Capabilities: caps(&mcp.ElicitationCapabilities{Form: &mcp.FormElicitationCapabilities{}, URL: &mcp.URLElicitationCapabilities{}})}, true},
		"older protocol":   {&mcp.InitializeParams{ProtocolVersion: "2025-06-18", Capabilities: caps(&mcp.ElicitationCapabilities{})}, true},
		"multi-round-trip": {&mcp.InitializeParams{ProtocolVersion: "2026-07-28", Capabilities: caps(&mcp.ElicitationCapabilities{})}, false},
		// Initialize answers an unknown version with 2025-11-25.
		"negotiated down":     {&mcp.InitializeParams{ProtocolVersion: "2026-06-30", Capabilities: caps(&mcp.ElicitationCapabilities{})}, true},
		"no protocol version": {&mcp.InitializeParams{Capabilities: caps(&mcp.ElicitationCapabilities{})}, false},
	}
	for name, tc := range tests {
		if got := canConfirm(tc.init); got != tc.want {
			t.Errorf("%s: canConfirm = %v, want %v", name, got, tc.want)
		}
	}
}
