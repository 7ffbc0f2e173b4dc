package server

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/openhuman/openhuman-host/host/policy"
	"github.com/openhuman/openhuman-host/sdk"
)

// profileServer serves testCatalog with two profiles: review (readonly,
// fake_search only, chosen by the client name "Cursor") and agents (one
// act an hour).
func profileServer(t *testing.T) (*Server, *memAudit, *policy.Policy) {
	t.Helper()
	pol := testPolicy(t, policy.Options{Level: policy.Supervised, SharedBudget: true})
	a := &memAudit{}
	s := newFakeServer(t, &Options{
		Policy: pol, Audit: a, RecordReads: true, Profiles: testProfiles(t, pol, []string{"fake_search"}),
	})
	return s, a, pol
}

func testProfiles(t *testing.T, pol *policy.Policy, reviewTools []string) map[string]*Profile {
	t.Helper()
	one := 1
	review := profilePolicy(t, pol, policy.Profile{Name: "review", Level: policy.ReadOnly, Tools: reviewTools})
	agents := profilePolicy(t, pol, policy.Profile{Name: "agents", MaxActionsPerHour: &one})
	return map[string]*Profile{"review": {Policy: review, Clients: []string{"Cursor"}}, "agents": {Policy: agents}}
}

// connectPath connects a client named name at protocol version to path
// of ts.
func connectPath(t *testing.T, ts *httptest.Server, path, name, version string, opts *mcp.ClientOptions) *mcp.ClientSession {
	t.Helper()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: name, Version: "1"}, opts).
		Connect(t.Context(), &mcp.StreamableClientTransport{Endpoint: ts.URL + path}, &mcp.ClientSessionOptions{ProtocolVersion: version})
	if err != nil {
		t.Fatalf("connect %s as %s (%s): %v", path, name, version, err)
	}
	t.Cleanup(func() { _ = cs.Close() })
	return cs
}

// TestProfilesOverHTTP: two profiles and no profile served at once, on
// both protocol revisions: each lists and may call its own tools, the
// client name selects a profile at /, audit rows carry the profile, and a
// profile's own act budget holds.
func TestProfilesOverHTTP(t *testing.T) {
	t.Parallel()
	s, a, _ := profileServer(t)
	ts := serveHTTP(t, s, nil)
	ctx := context.Background()
	for _, v := range []string{"2026-07-28", "2025-11-25"} {
		t.Run(v, func(t *testing.T) {
			review := connectPath(t, ts, "/profile/review", "Claude Desktop", v, nil)
			agents := connectPath(t, ts, "/profile/agents", "Claude Desktop", v, nil)
			plain := connectPath(t, ts, "/", "Claude Desktop", v, nil)
			cursor := connectPath(t, ts, "/", "Cursor", v, nil)
			for _, tc := range []struct {
				name string
				cs   *mcp.ClientSession
				want []string
			}{
				{"review", review, []string{"fake_search"}},
				{"agents", agents, []string{"fake_search", "fake_slow", "fake_store"}},
				{"no profile", plain, []string{"fake_search", "fake_slow", "fake_store"}},
				{"Cursor by name", cursor, []string{"fake_search"}},
			} {
				if got := listedTools(t, tc.cs); !slices.Equal(got, tc.want) {
					t.Errorf("%s: tools/list = %v, want %v", tc.name, got, tc.want)
				}
			}
			res, err := review.CallTool(ctx, &mcp.CallToolParams{Name: "fake_store", Arguments: map[string]any{}})
			if err != nil || !res.IsError || !strings.Contains(textOf(res), "[profiles.review]") {
				t.Errorf("review calling fake_store = %+v, %v; want a refusal naming [profiles.review]", res, err)
			}
			res, err = cursor.CallTool(ctx, &mcp.CallToolParams{Name: "fake_slow", Arguments: map[string]any{}})
			if err != nil || !res.IsError || !strings.Contains(textOf(res), "[profiles.review] tools") {
				t.Errorf("Cursor calling fake_slow = %+v, %v; want a refusal naming [profiles.review] tools", res, err)
			}
		})
	}
	// agents' one act an hour: the first act of either revision runs, the
	// second is refused by the profile's cap, while clients of no
	// profile still act.
	agents := connectPath(t, ts, "/profile/agents", "Claude Desktop", "2025-11-25", nil)
	plain := connectPath(t, ts, "/", "Claude Desktop", "2025-11-25", nil)
	for i, want := range []string{"stored", "[profiles.agents] max_actions_per_hour = 1"} {
		res, err := agents.CallTool(ctx, &mcp.CallToolParams{Name: "fake_store", Arguments: map[string]any{}})
		if err != nil || !strings.Contains(textOf(res), want) {
			t.Errorf("agents act %d = %+v, %v; want %q", i+1, res, err, want)
		}
	}
	if res, err := plain.CallTool(ctx, &mcp.CallToolParams{Name: "fake_store", Arguments: map[string]any{}}); err != nil || res.IsError {
		t.Errorf("act of no profile = %+v, %v; want it to run", res, err)
	}
	byProfile := map[string]int{}
	for _, r := range a.all() {
		byProfile[r.Profile+" "+r.Decision]++
	}
	want := map[string]int{
		// review's fake_store and Cursor's fake_slow, per revision: outside review's tools.
		"review denied:profile": 4,
		"agents allowed":        1, "agents denied:budget": 1, " allowed": 1,
	}
	for k, n := range want {
		if byProfile[k] != n {
			t.Errorf("audit rows %q = %d, want %d (all: %v)", k, byProfile[k], n, byProfile)
		}
	}

	if resp, _ := fetch(t, http.MethodPost, ts.URL+"/profile/nosuch", `{}`); resp.StatusCode != http.StatusNotFound {
		t.Errorf("POST /profile/nosuch = %d, want 404", resp.StatusCode)
	}
}

// TestProfileReloadNotifies: a reload that changes a profile's tools
// sends notifications/tools/list_changed, and its clients then list the
// new set.
func TestProfileReloadNotifies(t *testing.T) {
	t.Parallel()
	s, _, pol := profileServer(t)
	ts := serveHTTP(t, s, nil)
	changed := make(chan struct{}, 8)
	review := connectPath(t, ts, "/profile/review", "Claude Desktop", "2025-11-25", &mcp.ClientOptions{
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) { changed <- struct{}{} },
	})
	if got := listedTools(t, review); !slices.Equal(got, []string{"fake_search"}) {
		t.Fatalf("tools/list = %v", got)
	}
	s.Reconfigure(Options{Policy: pol, Profiles: testProfiles(t, pol, []string{"fake_s*"})})
	select {
	case <-changed:
	case <-time.After(time.Minute): // a guard against a hang, not a timing
		t.Fatal("no notifications/tools/list_changed after the profile's tools changed")
	}
	if got := listedTools(t, review); !slices.Equal(got, []string{"fake_search", "fake_slow"}) {
		t.Errorf("tools/list after the reload = %v, want fake_search and fake_slow", got)
	}
}

// TestServerProfileOption: Options.Profile (serve --profile) gives every
// client the profile, whatever its name.
func TestServerProfileOption(t *testing.T) {
	t.Parallel()
	pol := testPolicy(t, policy.Options{SharedBudget: true})
	s := newFakeServer(t, &Options{
		Policy: pol, Audit: &memAudit{}, Profile: "review", Profiles: testProfiles(t, pol, nil),
	})
	cs := connect(t, s, "Claude Desktop", nil)
	if got := listedTools(t, cs); !slices.Equal(got, []string{"fake_search", "fake_slow"}) {
		t.Errorf("tools/list under --profile review = %v, want the read tools", got)
	}
	if _, err := New(testCatalog(), nil, &Options{Policy: pol, Profile: "nosuch"}); err == nil {
		t.Error("New accepted a profile that is not configured")
	}
}

// TestNestedCallKeepsProfile: a call a provider makes within a client's
// call (a sub-agent's tool call) runs under the client's profile.
func TestNestedCallKeepsProfile(t *testing.T) {
	t.Parallel()
	pol := testPolicy(t, policy.Options{SharedBudget: true})
	var s *Server
	nesting := &fakeProvider{call: func(ctx context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
		if req.Name != "fake.search" {
			return defaultProvider().call(ctx, req)
		}
		caller := req.Caller
		caller.Depth++
		res, err := s.Call(ctx, Call{Tool: "fake_store", Arguments: json.RawMessage(`{}`), Caller: caller})
		if err != nil {
			return nil, err
		}
		return sdk.TextResult("nested: " + res.Text()), nil
	}}
	var err error
	s, err = New(testCatalog(), map[string]Dispatcher{"fake": nesting}, &Options{Policy: pol, Audit: &memAudit{}, Profiles: testProfiles(t, pol, nil)})
	if err != nil {
		t.Fatal(err)
	}
	ts := serveHTTP(t, s, nil)
	for path, want := range map[string]string{"/profile/review": "nested: fake_store is an act tool", "/": "nested: stored"} {
		cs := connectPath(t, ts, path, "Claude Desktop", "2025-11-25", nil)
		res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "fake_search", Arguments: map[string]any{"query": "x"}})
		if err != nil || !strings.HasPrefix(textOf(res), want) {
			t.Errorf("%s: nested act = %+v, %v; want %q", path, res, err, want)
		}
	}
}

// TestProfileResources: a profile lists and reads only the resources its
// globs serve.
func TestProfileResources(t *testing.T) {
	t.Parallel()
	pol := testPolicy(t, policy.Options{SharedBudget: true})
	open := profilePolicy(t, pol, policy.Profile{Name: "open"})
	closed := profilePolicy(t, pol, policy.Profile{Name: "closed"})
	s := newFakeServer(t, &Options{Policy: pol, Audit: &memAudit{},
		Profiles: map[string]*Profile{
			"open":   {Policy: open, Resources: []string{"fake://*"}},
			"closed": {Policy: closed, Resources: []string{"fake://*"}, ExcludeResources: []string{"*/doc"}},
		}})
	ts := serveHTTP(t, s, nil)
	for profile, want := range map[string]bool{"open": true, "closed": false} {
		cs := connectPath(t, ts, "/profile/"+profile, "Claude Desktop", "2025-11-25", nil)
		list, err := cs.ListResources(t.Context(), nil)
		if err != nil {
			t.Fatal(err)
		}
		if listed := len(list.Resources) == 1 && list.Resources[0].URI == "fake://doc"; listed != want {
			t.Errorf("%s: resources/list = %+v, want fake://doc listed: %v", profile, list.Resources, want)
		}
		_, err = cs.ReadResource(t.Context(), &mcp.ReadResourceParams{URI: "fake://doc"})
		if (err == nil) != want || !want && !strings.Contains(err.Error(), "[profiles.closed]") {
			t.Errorf("%s: resources/read = %v, want allowed: %v", profile, err, want)
		}
	}
}

func TestGlobMatch(t *testing.T) {
	for _, tc := range []struct {
		glob, s string
		want    bool
	}{
		{"fake://*", "fake://doc", true},
		{"fake://*", "fake://a/b/c", true},
		{"*/doc", "fake://doc", true},
		{"memory://doc?", "memory://doc1", true},
		{"memory://doc?", "memory://doc", false},
		{"a*b*c", "aXbYc", true},
		{"a*b*c", "aXbY", false},
		{"", "", true},
		{"*", "", true},
		{"x", "", false},
		{strings.Repeat("*a", 20) + "b", strings.Repeat("a", 60), false},
	} {
		if got := globMatch(tc.glob, tc.s); got != tc.want {
			t.Errorf("globMatch(%q, %q) = %v, want %v", tc.glob, tc.s, got, tc.want)
		}
	}
}
