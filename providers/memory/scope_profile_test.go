package memory

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/openhuman/openhuman-host/sdk"
)

// TestScopeByProfile: a scope entry naming a host profile applies to the
// callers of that profile, whatever their client name, and before a
// scope of their client name.
func TestScopeByProfile(t *testing.T) {
	t.Parallel()
	requireFTS5(t)
	p := New(&Options{Now: newTestClock().Now})
	cfg := `{"scopes":[{"profiles":["review"],"namespaces":["reviews"]},{"clients":["desktop"],"namespaces":["home"]}]}`
	if err := p.Configure(context.Background(), &sdk.ConfigureRequest{Config: json.RawMessage(cfg), DataDir: t.TempDir()}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	store := func(client, profile string) string {
		t.Helper()
		raw, _ := json.Marshal(map[string]any{"title": "Note " + client + profile, "content": "text"})
		res, err := p.CallTool(context.Background(), &sdk.CallToolRequest{Name: ToolStore, Arguments: raw,
			Caller: sdk.Caller{ClientName: client, Profile: profile}})
		if err != nil || res.IsError {
			t.Fatalf("store as %s/%s: %v %+v", client, profile, err, res)
		}
		var out storeResult
		if err := json.Unmarshal(res.StructuredContent, &out); err != nil {
			t.Fatal(err)
		}
		return out.Namespace
	}
	for _, tc := range []struct{ client, profile, want string }{
		{"desktop", "review", "reviews"},
		{"Cursor", "review", "reviews"},
		{"desktop", "", "home"},
		{"desktop", "other", "home"},
		{"Cursor", "", defaultNamespace},
	} {
		if got := store(tc.client, tc.profile); got != tc.want {
			t.Errorf("a store by %s of profile %q went to %q, want %q", tc.client, tc.profile, got, tc.want)
		}
	}
	if _, err := parseConfig(json.RawMessage(`{"scopes":[{"profiles":["a"],"namespaces":["x"]},{"profiles":["a"],"namespaces":["y"]}]}`)); err == nil {
		t.Error("a profile named by two scope entries was accepted")
	}
}
