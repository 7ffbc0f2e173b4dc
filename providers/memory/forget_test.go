package memory

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/openhuman/openhuman-host/sdk"
)

// forget calls memory_forget and decodes its result.
func forget(t *testing.T, p *Provider, args map[string]any) forgetOutput {
	t.Helper()
	return call[forgetOutput](t, p, ToolForget, args)
}

// TestForgetDocument checks a dry run changes nothing and gives the counts
// the real run then removes, and that search, browse, entities, notes,
// versions and the source go with the document.
func TestForgetDocument(t *testing.T) {
	t.Parallel()
	p, clock := newProvider(t)
	doc := put(t, p, map[string]any{"title": "Trip", "content": "Ana flies to Lisbon, mail ana@example.com\n\n" + longText(4)})
	clock.Advance(time.Minute)
	doc = put(t, p, map[string]any{"title": "Trip", "content": "Ana flies to Porto, mail ana@example.com\n\n" + longText(4)})
	keep := put(t, p, map[string]any{"title": "Garden", "content": "Tomatoes need water", "namespace": "home"})
	call[map[string]any](t, p, ToolNote, map[string]any{"chunk_id": doc.ChunkIDs[0], "note_text": "Porto is confirmed"})

	dry := forget(t, p, map[string]any{"document_ids": []string{doc.DocumentID}, "dry_run": true})
	want := forgetOutput{DryRun: true, forgetCounts: forgetCounts{Documents: 2, Chunks: int64(doc.ChunkCount) + 1, Notes: 1, Versions: 1, Sources: 1},
		DocumentIDs: []string{"mcp/mcp-note-" + doc.ChunkIDs[0], doc.DocumentID}, DocumentsTouched: 2}
	if d := diff(want, dry, cmp.AllowUnexported(forgetOutput{})); d != "" {
		t.Fatalf("dry run (-want +got):\n%s", d)
	}
	if hits := search(t, p, "Porto", 0); len(hits) != 2 {
		t.Fatalf("after the dry run, search for Porto found %d chunks, want 2 (document and note)", len(hits))
	}

	res := callRaw(t, p, ToolForget, map[string]any{"document_ids": []string{doc.DocumentID}})
	var got forgetOutput
	if err := json.Unmarshal(res.StructuredContent, &got); err != nil {
		t.Fatal(err)
	}
	want.DryRun = false
	if d := diff(want, got, cmp.AllowUnexported(forgetOutput{})); d != "" {
		t.Fatalf("forget (-want +got):\n%s", d)
	}
	if !strings.HasPrefix(res.AuditRef, "forgot 2 documents, ") || !strings.Contains(res.AuditRef, doc.DocumentID) || strings.Contains(res.AuditRef, "Porto") {
		t.Errorf("audit ref = %q, want counts and ids without content", res.AuditRef)
	}
	for _, q := range []string{"Porto", "Lisbon", "Ana"} {
		if hits := search(t, p, q, 0); len(hits) != 0 {
			t.Errorf("search %q after forget found %v", q, hitDocs(hits))
		}
	}
	ents := call[topEntitiesResult](t, p, ToolTopEntities, map[string]any{})
	if len(ents.Entities) != 0 {
		t.Errorf("entities after forget: %+v", ents.Entities)
	}
	if hits := search(t, p, "tomatoes", 0); len(hits) != 1 || hits[0].DocumentID != keep.DocumentID {
		t.Errorf("the other namespace's document: %v", hitDocs(hits))
	}
	srcs := call[listSourcesResult](t, p, ToolListSources, map[string]any{})
	if len(srcs.Sources) != 1 || srcs.Sources[0].SourceID != "mcp:home" {
		t.Errorf("sources after forget: %+v, want mcp:home only", srcs.Sources)
	}
	again := forget(t, p, map[string]any{"document_ids": []string{doc.DocumentID}})
	if again.DocumentsTouched != 0 || again.Chunks != 0 {
		t.Errorf("forgetting again: %+v, want nothing", again)
	}
	checkIndexInStep(t, p)
}

// TestForgetChunks checks chunk-level selection: one chunk leaves the rest
// of its document, and a query removes matching chunks everywhere.
func TestForgetChunks(t *testing.T) {
	t.Parallel()
	p, clock := newProvider(t)
	long := put(t, p, map[string]any{"title": "Long", "content": "zebra one\n\n" + longText(12)})
	if long.ChunkCount < 3 {
		t.Fatalf("document has %d chunks, want at least 3", long.ChunkCount)
	}
	clock.Advance(time.Hour)
	cutoff := clock.Now().UnixMilli()
	clock.Advance(time.Hour)
	put(t, p, map[string]any{"title": "Zebras", "content": "zebra two"})

	got := forget(t, p, map[string]any{"chunk_ids": []string{long.ChunkIDs[0]}})
	if got.Chunks != 1 || got.Documents != 0 || got.DocumentsTouched != 1 {
		t.Fatalf("forget one chunk: %+v", got)
	}
	if ids := chunkIDs(t, p, long.DocumentID); len(ids) != long.ChunkCount-1 {
		t.Errorf("document keeps %d chunks, want %d", len(ids), long.ChunkCount-1)
	}
	hits := search(t, p, "zebra", 0)
	if len(hits) != 1 || hits[0].Title != "Zebras" {
		t.Errorf("zebra after forgetting the first chunk: %v", hitDocs(hits))
	}

	got = forget(t, p, map[string]any{"updated_before_ms": cutoff})
	if got.Documents != 1 || got.Chunks != int64(long.ChunkCount-1) {
		t.Errorf("forget older chunks: %+v, want the rest of Long and the document", got)
	}
	got = forget(t, p, map[string]any{"query": "zebra two"})
	if got.Documents != 1 || got.Chunks != 1 || got.Sources != 1 {
		t.Errorf("forget by query: %+v", got)
	}
	checkIndexInStep(t, p)
}

// TestForgetRefusesEmptySelection checks that a call without a selector is
// refused rather than read as "everything".
func TestForgetRefusesEmptySelection(t *testing.T) {
	t.Parallel()
	p := newProviderWith(t, map[string]any{"title": "Keep", "content": "kept"})
	for _, args := range []map[string]any{{}, {"dry_run": true}, {"query": "!!"}, {"namespaces": []string{"bad ns"}}} {
		res := callRaw(t, p, ToolForget, args)
		if !res.IsError {
			t.Errorf("forget %v: not refused: %s", args, res.Content[0].Text)
		}
	}
	if hits := search(t, p, "kept", 0); len(hits) != 1 {
		t.Errorf("document lost after refused calls")
	}
}

// TestHistory checks that replaced text is kept, listed and readable, and
// that versions expire after keep_versions_days.
func TestHistory(t *testing.T) {
	t.Parallel()
	p, clock := newProvider(t)
	put(t, p, map[string]any{"title": "Plan", "content": "first text"})
	clock.Advance(time.Hour)
	second := put(t, p, map[string]any{"title": "Plan", "content": "second text"})
	if second.Replaced == nil || second.Replaced.Version != 1 || second.Replaced.PreviousBytes != 10 {
		t.Fatalf("replaced = %+v", second.Replaced)
	}
	same := put(t, p, map[string]any{"title": "Plan", "content": "second text"})
	if same.Replaced == nil || same.Replaced.Version != 0 || same.Replaced.ChunksKept != 1 {
		t.Errorf("storing the same text again: replaced = %+v, want no new version", same.Replaced)
	}
	list := call[historyResult](t, p, ToolHistory, map[string]any{"document_id": second.DocumentID})
	if len(list.Versions) != 1 || list.Versions[0].Version != 1 || list.Versions[0].Content != "" || list.Versions[0].Bytes != 10 {
		t.Fatalf("history = %+v", list)
	}
	one := call[historyResult](t, p, ToolHistory, map[string]any{"document_id": second.DocumentID, "version": 1})
	if len(one.Versions) != 1 || one.Versions[0].Content != "first text" {
		t.Fatalf("version 1 = %+v", one)
	}
	if res := callRaw(t, p, ToolHistory, map[string]any{"document_id": second.DocumentID, "version": 2}); !res.IsError {
		t.Errorf("version 2 is not refused")
	}
	if res := callRaw(t, p, ToolHistory, map[string]any{"document_id": "mcp/nope"}); !res.IsError {
		t.Errorf("unknown document is not refused")
	}
	clock.Advance(31 * 24 * time.Hour)
	put(t, p, map[string]any{"title": "Other", "content": "x"})
	put(t, p, map[string]any{"title": "Other", "content": "y"})
	list = call[historyResult](t, p, ToolHistory, map[string]any{"document_id": second.DocumentID})
	if len(list.Versions) != 0 {
		t.Errorf("versions older than 30 days are kept: %+v", list.Versions)
	}
}

// scopedProvider configures a provider whose client "work-client" may use
// namespaces work and file only.
func scopedProvider(t *testing.T) *Provider {
	t.Helper()
	requireFTS5(t)
	p := New(&Options{Now: newTestClock().Now})
	cfg := `{"scopes":[{"clients":["work-client"],"namespaces":["work","file"]}]}`
	if err := p.Configure(context.Background(), configureRequest(t, t.TempDir(), json.RawMessage(cfg), nil)); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	return p
}

// callAs calls a tool as client and returns the result.
func callAs(t *testing.T, p *Provider, client, name string, args map[string]any) *sdk.CallToolResult {
	t.Helper()
	raw, _ := json.Marshal(args)
	res, err := p.CallTool(context.Background(), &sdk.CallToolRequest{Name: name, Arguments: raw, Caller: sdk.Caller{ClientName: client}})
	if err != nil {
		t.Fatalf("%s as %s: %v", name, client, err)
	}
	return res
}

// TestScopes checks that a scoped client writes to its namespace by
// default, sees and forgets only its namespaces, and that an unscoped
// client sees everything.
func TestScopes(t *testing.T) {
	t.Parallel()
	p := scopedProvider(t)
	res := callAs(t, p, "work-client", ToolStore, map[string]any{"title": "Budget", "content": "quarterly budget work"})
	var stored storeResult
	if err := json.Unmarshal(res.StructuredContent, &stored); err != nil || stored.Namespace != "work" {
		t.Fatalf("scoped store went to %q (%v), want work", stored.Namespace, err)
	}
	if res := callAs(t, p, "work-client", ToolStore, map[string]any{"title": "X", "content": "y", "namespace": "home"}); !res.IsError {
		t.Errorf("a scoped client wrote outside its namespaces")
	}
	home := callAs(t, p, "desktop", ToolStore, map[string]any{"title": "Budget home", "content": "household budget", "namespace": "home"})
	var homeDoc storeResult
	_ = json.Unmarshal(home.StructuredContent, &homeDoc)

	count := func(client, tool string, args map[string]any) int {
		t.Helper()
		res := callAs(t, p, client, tool, args)
		if res.IsError {
			t.Fatalf("%s as %s: %s", tool, client, res.Content[0].Text)
		}
		var out struct {
			Chunks   []json.RawMessage `json:"chunks"`
			Entities []json.RawMessage `json:"entities"`
			Sources  []json.RawMessage `json:"sources"`
		}
		_ = json.Unmarshal(res.StructuredContent, &out)
		return len(out.Chunks) + len(out.Entities) + len(out.Sources)
	}
	cases := []struct {
		client, tool string
		args         map[string]any
		want         int
	}{
		{"work-client", ToolSearch, map[string]any{"query": "budget"}, 1},
		{"work-client", ToolSearch, map[string]any{"query": "budget", "namespaces": []string{"*"}}, 1},
		{"work-client", ToolRecall, map[string]any{"query": "what is the budget"}, 1},
		{"work-client", ToolBrowse, map[string]any{}, 1},
		{"work-client", ToolListSources, map[string]any{}, 1},
		{"desktop", ToolSearch, map[string]any{"query": "budget"}, 2},
		{"desktop", ToolSearch, map[string]any{"query": "budget", "namespaces": []string{"home"}}, 1},
		{"desktop", ToolListSources, map[string]any{}, 2},
	}
	for _, c := range cases {
		if got := count(c.client, c.tool, c.args); got != c.want {
			t.Errorf("%s %v as %s: %d results, want %d", c.tool, c.args, c.client, got, c.want)
		}
	}
	if res := callAs(t, p, "work-client", ToolSearch, map[string]any{"query": "budget", "namespaces": []string{"home"}}); !res.IsError {
		t.Errorf("a scoped client searched a namespace outside its scope")
	}
	var read readChunkResult
	res = callAs(t, p, "work-client", ToolReadChunk, map[string]any{"chunk_id": homeDoc.ChunkIDs[0]})
	if err := json.Unmarshal(res.StructuredContent, &read); err != nil || read.Chunk != nil {
		t.Errorf("a scoped client read a chunk outside its scope: %s", res.Content[0].Text)
	}
	res = callAs(t, p, "work-client", ToolForget, map[string]any{"document_ids": []string{homeDoc.DocumentID}})
	var out forgetOutput
	if err := json.Unmarshal(res.StructuredContent, &out); err != nil || out.DocumentsTouched != 0 {
		t.Errorf("a scoped client forgot outside its scope: %+v %v", out, err)
	}
	if got := count("desktop", ToolSearch, map[string]any{"query": "household"}); got != 1 {
		t.Errorf("the home document is gone")
	}
}

// TestScopeConfig checks the scopes table is validated.
func TestScopeConfig(t *testing.T) {
	t.Parallel()
	for name, c := range map[string]struct{ cfg, want string }{
		"no clients":      {`{"scopes":[{"namespaces":["a"]}]}`, "clients must list at least one"},
		"no namespaces":   {`{"scopes":[{"clients":["a"]}]}`, "namespaces must list at least one"},
		"bad namespace":   {`{"scopes":[{"clients":["a"],"namespaces":["a b"]}]}`, `namespace "a b" must match`},
		"duplicate":       {`{"scopes":[{"clients":["a"],"namespaces":["x"]},{"clients":["a"],"namespaces":["y"]}]}`, `client "a" is named by an earlier entry`},
		"unknown key":     {`{"scopes":[{"clients":["a"],"namespaces":["x"],"read":["y"]}]}`, `unknown key "read"`},
		"not an array":    {`{"scopes":{"clients":["a"]}}`, "must be an array of tables"},
		"negative versus": {`{"keep_versions_days":-1}`, "keep_versions_days must be 0 to 3650"},
	} {
		if _, err := parseConfig(json.RawMessage(c.cfg)); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: parseConfig = %v, want an error containing %q", name, err, c.want)
		}
	}
}
