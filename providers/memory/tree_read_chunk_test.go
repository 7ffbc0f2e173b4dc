package memory

import (
	"testing"

	"github.com/openhuman/openhuman-host/sdk"
)

// TestStoreSearchReadRoundTrip is the basic flow: store, find it, read the
// chunk the search returned.
func TestStoreSearchReadRoundTrip(t *testing.T) {
	t.Parallel()
	p, _ := newProvider(t)
	stored := put(t, p, map[string]any{"title": "Router password", "content": "The router admin page is at 192.168.1.1.", "tags": []string{"home", "network"}})
	hits := search(t, p, "router admin", 0)
	if len(hits) != 1 || hits[0].DocumentID != stored.DocumentID {
		t.Fatalf("hits = %+v", hits)
	}
	got := callRaw(t, p, ToolReadChunk, map[string]any{"chunk_id": hits[0].ChunkID})
	chunk := &chunkView{
		chunkRef: chunkRef{
			ChunkID: hits[0].ChunkID, DocumentID: stored.DocumentID, Title: "Router password", Namespace: "mcp", SourceID: "mcp:mcp",
			SourceKind: "note", Seq: 0, UpdatedMS: startMS,
		},
		Content: "The router admin page is at 192.168.1.1.", Tags: []string{}, DocumentTags: []string{"home", "network"},
		Notes: []noteView{}, CreatedMS: startMS,
	}
	want, err := sdk.StructuredResult(
		"Chunk "+hits[0].ChunkID+`, seq 0 of mcp/mcp-store-router-password (title "Router password"):`+
			"\n\nThe router admin page is at 192.168.1.1.\n\nDocument tags: home, network",
		readChunkResult{Chunk: chunk})
	if err != nil {
		t.Fatal(err)
	}
	if diff := diff(want, got); diff != "" {
		t.Errorf("read_chunk (-want +got):\n%s", diff)
	}
}

func TestReadChunkUnknown(t *testing.T) {
	t.Parallel()
	p := newProviderWith(t, map[string]any{"title": "Something", "content": "exists"})
	tests := map[string]struct {
		id       string
		wantText string
	}{
		"well-formed but unknown": {id: "chk_000000000000000000000000", wantText: `No chunk has id "chk_000000000000000000000000"; chunk ids come from memory_search, memory_recall or tree_browse.`},
		"not a chunk id":          {id: "mcp/mcp-store-something", wantText: `No chunk has id "mcp/mcp-store-something"; chunk ids come from memory_search, memory_recall or tree_browse.`},
		"surrounding spaces":      {id: "  chk_x  ", wantText: `No chunk has id "chk_x"; chunk ids come from memory_search, memory_recall or tree_browse.`},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			got := callRaw(t, p, ToolReadChunk, map[string]any{"chunk_id": tc.id})
			if diff := diff(`{"chunk":null}`, string(got.StructuredContent)); diff != "" {
				t.Errorf("structured content (-want +got):\n%s", diff)
			}
			want, err := sdk.StructuredResult(tc.wantText, readChunkResult{})
			if err != nil {
				t.Fatal(err)
			}
			if diff := diff(want, got); diff != "" {
				t.Errorf("result (-want +got):\n%s", diff)
			}
		})
	}
}
