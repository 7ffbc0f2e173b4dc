package memory

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/openhuman/openhuman-host/sdk"
)

func TestDescribe(t *testing.T) {
	t.Parallel()
	type summary struct {
		Name        string
		Class       sdk.PolicyClass
		Annotations sdk.Annotations
	}
	yes, no := sdk.Bool(true), sdk.Bool(false)
	want := []summary{
		{ToolStore, sdk.ClassAct, sdk.Annotations{Title: "Store in memory", ReadOnlyHint: no, DestructiveHint: yes, IdempotentHint: yes, OpenWorldHint: no}},
		{ToolForget, sdk.ClassAct, sdk.Annotations{Title: "Forget from memory", ReadOnlyHint: no, DestructiveHint: yes, IdempotentHint: yes, OpenWorldHint: no}},
		{ToolNote, sdk.ClassAct, sdk.Annotations{Title: "Annotate a memory chunk", ReadOnlyHint: no, DestructiveHint: yes, IdempotentHint: yes, OpenWorldHint: no}},
		{ToolTag, sdk.ClassAct, sdk.Annotations{Title: "Tag a memory chunk", ReadOnlyHint: no, DestructiveHint: yes, IdempotentHint: yes, OpenWorldHint: no}},
		{ToolSearch, sdk.ClassRead, sdk.Annotations{Title: "Search memory", ReadOnlyHint: yes, OpenWorldHint: no}},
		{ToolRecall, sdk.ClassRead, sdk.Annotations{Title: "Recall from memory", ReadOnlyHint: yes, OpenWorldHint: no}},
		{ToolReadChunk, sdk.ClassRead, sdk.Annotations{Title: "Read a memory chunk", ReadOnlyHint: yes, OpenWorldHint: no}},
		{ToolHistory, sdk.ClassRead, sdk.Annotations{Title: "Previous versions of a memory document", ReadOnlyHint: yes, OpenWorldHint: no}},
		{ToolBrowse, sdk.ClassRead, sdk.Annotations{Title: "Browse memory", ReadOnlyHint: yes, OpenWorldHint: no}},
		{ToolTopEntities, sdk.ClassRead, sdk.Annotations{Title: "Top entities in memory", ReadOnlyHint: yes, OpenWorldHint: no}},
		{ToolListSources, sdk.ClassRead, sdk.Annotations{Title: "List memory sources", ReadOnlyHint: yes, OpenWorldHint: no}},
	}
	cat, err := New(nil).Describe(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var got []summary
	for _, tl := range cat.Tools {
		got = append(got, summary{tl.Name, tl.Class, tl.Annotations})
	}
	if diff := diff(want, got); diff != "" {
		t.Errorf("tools (-want +got):\n%s", diff)
	}
	if cat.Name != "memory" || cat.Version == "" || cat.Instructions == "" {
		t.Errorf("catalog identity = %q %q %q", cat.Name, cat.Version, cat.Instructions)
	}
}

func TestToolSchemas(t *testing.T) {
	t.Parallel()
	for _, tl := range tools {
		t.Run(tl.spec.Name, func(t *testing.T) {
			t.Parallel()
			if tl.spec.Description == "" || tl.spec.Title == "" {
				t.Error("missing title or description")
			}
			for kind, raw := range map[string]json.RawMessage{"input": tl.spec.InputSchema, "output": tl.spec.OutputSchema} {
				resolvedSchema(t, tl.spec.Name, kind)
				var s map[string]any
				if err := json.Unmarshal(raw, &s); err != nil {
					t.Fatalf("%s schema is not a JSON object: %v", kind, err)
				}
				top := map[string]any{"type": s["type"], "additionalProperties": s["additionalProperties"]}
				want := map[string]any{"type": "object", "additionalProperties": false}
				if diff := diff(want, top); diff != "" {
					t.Errorf("%s schema top level (-want +got):\n%s", kind, diff)
				}
			}
		})
	}
}

// TestInputSchemas checks what the input schemas accept, as the host will
// apply them before calling the provider.
func TestInputSchemas(t *testing.T) {
	t.Parallel()
	tests := map[string]struct {
		tool  string
		args  string
		valid bool
	}{
		"store: minimal":            {ToolStore, `{"title":"t","content":"c"}`, true},
		"store: everything":         {ToolStore, `{"title":"t","content":"c","namespace":"a.b_c-1","tags":["x","y"]}`, true},
		"store: extra argument":     {ToolStore, `{"title":"t","content":"c","x":1}`, false},
		"store: no content":         {ToolStore, `{"title":"t"}`, false},
		"store: empty title":        {ToolStore, `{"title":"","content":"c"}`, false},
		"store: namespace slash":    {ToolStore, `{"title":"t","content":"c","namespace":"a/b"}`, false},
		"store: namespace too long": {ToolStore, `{"title":"t","content":"c","namespace":"` + strings.Repeat("n", 65) + `"}`, false},
		"store: empty tag":          {ToolStore, `{"title":"t","content":"c","tags":[""]}`, false},
		"store: tags not strings":   {ToolStore, `{"title":"t","content":"c","tags":[1]}`, false},
		"search: query only":        {ToolSearch, `{"query":"q"}`, true},
		"search: k 50":              {ToolSearch, `{"query":"q","k":50}`, true},
		"search: k 51":              {ToolSearch, `{"query":"q","k":51}`, false},
		"search: k 0":               {ToolSearch, `{"query":"q","k":0}`, false},
		"search: k fraction":        {ToolSearch, `{"query":"q","k":1.5}`, false},
		"read_chunk: id":            {ToolReadChunk, `{"chunk_id":"chk_x"}`, true},
		"read_chunk: none":          {ToolReadChunk, `{}`, false},
		"recall: query":             {ToolRecall, `{"query":"q","k":3}`, true},
		"recall: k 51":              {ToolRecall, `{"query":"q","k":51}`, false},
		"note: both":                {ToolNote, `{"chunk_id":"c","note_text":"n"}`, true},
		"note: empty text":          {ToolNote, `{"chunk_id":"c","note_text":""}`, false},
		"tag: one":                  {ToolTag, `{"chunk_id":"c","tags":["a"]}`, true},
		"tag: none":                 {ToolTag, `{"chunk_id":"c","tags":[]}`, false},
		"tag: 129 characters":       {ToolTag, `{"chunk_id":"c","tags":["` + strings.Repeat("x", 129) + `"]}`, false},
		"browse: nothing":           {ToolBrowse, `{}`, true},
		"browse: everything":        {ToolBrowse, `{"source_kinds":["note"],"source_ids":["mcp:mcp"],"entity_ids":["email:a@b.c"],"since_ms":0,"until_ms":5,"query":"x","k":5,"offset":10}`, true},
		"browse: kind not allowed":  {ToolBrowse, `{"source_kinds":["web"]}`, false},
		"browse: negative offset":   {ToolBrowse, `{"offset":-1}`, false},
		"entities: kind":            {ToolTopEntities, `{"kind":"email","k":50}`, true},
		"entities: kind upper":      {ToolTopEntities, `{"kind":"Email"}`, false},
		"sources: hint":             {ToolListSources, `{"user_email_hint":"a@b.c"}`, true},
		"sources: nothing":          {ToolListSources, `{}`, true},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			var v any
			if err := json.Unmarshal([]byte(tc.args), &v); err != nil {
				t.Fatal(err)
			}
			err := resolvedSchema(t, tc.tool, "input").Validate(v)
			if (err == nil) != tc.valid {
				t.Errorf("Validate(%s) = %v, want valid %v", tc.args, err, tc.valid)
			}
		})
	}
}

func TestCallToolErrors(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	unconfigured := New(nil)
	if _, err := unconfigured.CallTool(ctx, &sdk.CallToolRequest{Name: ToolSearch, Arguments: json.RawMessage(`{"query":"x"}`)}); err == nil {
		t.Error("CallTool before Configure: want an error")
	}
	p, _ := newProvider(t)
	if _, err := p.CallTool(ctx, &sdk.CallToolRequest{Name: "memory.nope"}); err == nil {
		t.Error("unknown tool: want an error")
	}
	if _, err := p.ReadResource(ctx, &sdk.ReadResourceRequest{URI: "openhuman://x"}); err == nil {
		t.Error("ReadResource: want an error")
	}
}

// TestArguments covers argument decoding and bounds for every tool: each
// problem is an isError result that names the argument and the bound.
func TestArguments(t *testing.T) {
	t.Parallel()
	p, _ := newProvider(t)
	long := func(n int) string {
		b := make([]rune, n)
		for i := range b {
			b[i] = 'é'
		}
		return string(b)
	}
	tags51 := make([]string, 51)
	for i := range tags51 {
		tags51[i] = "t"
	}
	tests := map[string]struct {
		tool string
		args string
		want string
	}{
		"store: not an object":      {ToolStore, `[1]`, `memory_store: arguments must be a JSON object`},
		"store: trailing data":      {ToolStore, `{"title":"a","content":"b"} {}`, `memory_store: arguments must be a single JSON object`},
		"store: unknown argument":   {ToolStore, `{"title":"a","content":"b","body":"c"}`, `memory_store: unknown argument "body"; accepted arguments: title, content, namespace, tags`},
		"store: wrong type":         {ToolStore, `{"title":5,"content":"b"}`, `memory_store: argument "title" must be a string, not a JSON number`},
		"store: tags wrong type":    {ToolStore, `{"title":"a","content":"b","tags":"x"}`, `memory_store: argument "tags" must be an array of strings, not a JSON string`},
		"store: missing title":      {ToolStore, `{"content":"b"}`, `memory_store: argument "title" is required`},
		"store: blank title":        {ToolStore, `{"title":" \t\n","content":"b"}`, `memory_store: argument "title" must not be blank`},
		"store: title too long":     {ToolStore, mustMarshal(t, map[string]any{"title": long(513), "content": "b"}), `memory_store: argument "title" must be at most 512 characters, got 513`},
		"store: missing content":    {ToolStore, `{"title":"a"}`, `memory_store: argument "content" is required`},
		"store: blank content":      {ToolStore, `{"title":"a","content":"  \n "}`, `memory_store: argument "content" must not be blank`},
		"store: content too large":  {ToolStore, mustMarshal(t, map[string]any{"title": "a", "content": long(500_001)}), `memory_store: argument "content" must be at most 1000000 bytes, got 1000002; split it into several documents`},
		"store: empty namespace":    {ToolStore, `{"title":"a","content":"b","namespace":""}`, `memory_store: argument "namespace" must match ^[A-Za-z0-9_.-]{1,64}$, got ""`},
		"store: bad namespace":      {ToolStore, `{"title":"a","content":"b","namespace":"a/b"}`, `memory_store: argument "namespace" must match ^[A-Za-z0-9_.-]{1,64}$, got "a/b"`},
		"store: too many tags":      {ToolStore, mustMarshal(t, map[string]any{"title": "a", "content": "b", "tags": tags51}), `memory_store: argument "tags" must have at most 50 items, got 51`},
		"store: blank tag":          {ToolStore, `{"title":"a","content":"b","tags":["x"," "]}`, `memory_store: argument "tags" item 2 must not be blank`},
		"store: tag too long":       {ToolStore, mustMarshal(t, map[string]any{"title": "a", "content": "b", "tags": []string{long(129)}}), `memory_store: argument "tags" item 1 must be at most 128 bytes, got 258`},
		"search: missing query":     {ToolSearch, `{}`, `memory_search: argument "query" is required`},
		"search: null arguments":    {ToolSearch, `null`, `memory_search: argument "query" is required`},
		"search: blank query":       {ToolSearch, `{"query":"   "}`, `memory_search: argument "query" must not be blank`},
		"search: query too long":    {ToolSearch, mustMarshal(t, map[string]any{"query": long(1025)}), `memory_search: argument "query" must be at most 1024 characters, got 1025`},
		"search: k zero":            {ToolSearch, `{"query":"a","k":0}`, `memory_search: argument "k" must be an integer from 1 to 50, got 0`},
		"search: k negative":        {ToolSearch, `{"query":"a","k":-3}`, `memory_search: argument "k" must be an integer from 1 to 50, got -3`},
		"search: k above limit":     {ToolSearch, `{"query":"a","k":51}`, `memory_search: argument "k" must be an integer from 1 to 50, got 51`},
		"search: k fraction":        {ToolSearch, `{"query":"a","k":2.5}`, `memory_search: argument "k" must be an integer from 1 to 50, got 2.5`},
		"search: k string":          {ToolSearch, `{"query":"a","k":"5"}`, `memory_search: argument "k" must be a number, not a JSON string`},
		"search: unknown argument":  {ToolSearch, `{"query":"a","limit":5}`, `memory_search: unknown argument "limit"; accepted arguments: query, k, namespaces, max_tokens`},
		"read_chunk: missing id":    {ToolReadChunk, `{}`, `tree_read_chunk: argument "chunk_id" is required`},
		"read_chunk: blank id":      {ToolReadChunk, `{"chunk_id":""}`, `tree_read_chunk: argument "chunk_id" must not be blank`},
		"read_chunk: id too long":   {ToolReadChunk, mustMarshal(t, map[string]any{"chunk_id": long(257)}), `tree_read_chunk: argument "chunk_id" must be at most 256 characters, got 257`},
		"read_chunk: unknown field": {ToolReadChunk, `{"chunk_id":"x","id":"y"}`, `tree_read_chunk: unknown argument "id"; accepted arguments: chunk_id, max_tokens`},

		"recall: missing query":   {ToolRecall, `{}`, `memory_recall: argument "query" is required`},
		"recall: blank query":     {ToolRecall, `{"query":" "}`, `memory_recall: argument "query" must not be blank`},
		"recall: query too long":  {ToolRecall, mustMarshal(t, map[string]any{"query": long(1025)}), `memory_recall: argument "query" must be at most 1024 characters, got 1025`},
		"recall: k above limit":   {ToolRecall, `{"query":"a","k":51}`, `memory_recall: argument "k" must be an integer from 1 to 50, got 51`},
		"recall: k zero":          {ToolRecall, `{"query":"a","k":0}`, `memory_recall: argument "k" must be an integer from 1 to 50, got 0`},
		"recall: k string":        {ToolRecall, `{"query":"a","k":"5"}`, `memory_recall: argument "k" must be a number, not a JSON string`},
		"recall: unknown":         {ToolRecall, `{"query":"a","mode":"x"}`, `memory_recall: unknown argument "mode"; accepted arguments: query, k, namespaces, max_tokens`},
		"note: missing chunk_id":  {ToolNote, `{"note_text":"x"}`, `memory_note: argument "chunk_id" is required`},
		"note: missing text":      {ToolNote, `{"chunk_id":"chk_x"}`, `memory_note: argument "note_text" is required`},
		"note: blank text":        {ToolNote, `{"chunk_id":"chk_x","note_text":" \n"}`, `memory_note: argument "note_text" must not be blank`},
		"note: text too large":    {ToolNote, mustMarshal(t, map[string]any{"chunk_id": "chk_x", "note_text": long(50_001)}), `memory_note: argument "note_text" must be at most 100000 bytes, got 100002`},
		"note: unknown chunk":     {ToolNote, `{"chunk_id":"no-such-chunk","note_text":"x"}`, `memory_note: no chunk has id "no-such-chunk"; get chunk ids from memory_search, memory_recall or tree_browse`},
		"note: unknown argument":  {ToolNote, `{"chunk_id":"x","note_text":"y","title":"z"}`, `memory_note: unknown argument "title"; accepted arguments: chunk_id, note_text`},
		"tag: missing tags":       {ToolTag, `{"chunk_id":"chk_x"}`, `tree_tag: argument "tags" is required`},
		"tag: empty tags":         {ToolTag, `{"chunk_id":"chk_x","tags":[]}`, `tree_tag: argument "tags" must have at least 1 item, got 0`},
		"tag: too many tags":      {ToolTag, mustMarshal(t, map[string]any{"chunk_id": "chk_x", "tags": tags51}), `tree_tag: argument "tags" must have at most 50 items, got 51`},
		"tag: tag too long":       {ToolTag, mustMarshal(t, map[string]any{"chunk_id": "chk_x", "tags": []string{"ok", strings.Repeat("x", 129)}}), `tree_tag: argument "tags" item 2 must be at most 128 bytes, got 129`},
		"tag: blank tag":          {ToolTag, `{"chunk_id":"chk_x","tags":[""]}`, `tree_tag: argument "tags" item 1 must not be blank`},
		"tag: unknown chunk":      {ToolTag, `{"chunk_id":"chk_nope","tags":["a"]}`, `tree_tag: no chunk has id "chk_nope"; get chunk ids from memory_search, memory_recall or tree_browse`},
		"tag: missing chunk_id":   {ToolTag, `{"tags":["a"]}`, `tree_tag: argument "chunk_id" is required`},
		"browse: k above limit":   {ToolBrowse, `{"k":51}`, `tree_browse: argument "k" must be an integer from 1 to 50, got 51`},
		"browse: negative offset": {ToolBrowse, `{"offset":-1}`, `tree_browse: argument "offset" must be an integer from 0 to 1000000, got -1`},
		"browse: offset too big":  {ToolBrowse, `{"offset":1000001}`, `tree_browse: argument "offset" must be an integer from 0 to 1000000, got 1000001`},
		"browse: bad kind":        {ToolBrowse, `{"source_kinds":["Notes"]}`, `tree_browse: argument "source_kinds" item 1 must be one of chat, email, document, note, got "Notes"`},
		"browse: too many kinds":  {ToolBrowse, `{"source_kinds":["note","note","note","note","note"]}`, `tree_browse: argument "source_kinds" must have at most 4 items, got 5`},
		"browse: blank source":    {ToolBrowse, `{"source_ids":["mcp:mcp"," "]}`, `tree_browse: argument "source_ids" item 2 must not be blank`},
		"browse: entity too long": {ToolBrowse, mustMarshal(t, map[string]any{"entity_ids": []string{long(301)}}), `tree_browse: argument "entity_ids" item 1 must be at most 300 characters, got 301`},
		"browse: source id bare":  {ToolBrowse, `{"source_ids":["work"]}`, `tree_browse: argument "source_ids" item 1 must be a source id such as mcp:<namespace> or file:<folder>, as tree_list_sources returns, got "work"`},
		"browse: entity id bare":  {ToolBrowse, `{"entity_ids":["ana@example.com"]}`, `tree_browse: argument "entity_ids" item 1 must be an entity id <kind>:<value> such as email:ana@example.com, as tree_top_entities returns, got "ana@example.com"`},
		"browse: entity kind bad": {ToolBrowse, `{"entity_ids":["E-mail:a@b.c"]}`, `tree_browse: argument "entity_ids" item 1 must be an entity id <kind>:<value> such as email:ana@example.com, as tree_top_entities returns, got "E-mail:a@b.c"`},
		"browse: since fraction":  {ToolBrowse, `{"since_ms":1.5}`, `tree_browse: argument "since_ms" must be an integer from 0 to 9007199254740991, got 1.5`},
		"browse: until negative":  {ToolBrowse, `{"until_ms":-1}`, `tree_browse: argument "until_ms" must be an integer from 0 to 9007199254740991, got -1`},
		"browse: empty range":     {ToolBrowse, `{"since_ms":10,"until_ms":10}`, `tree_browse: argument "since_ms" (10) must be less than "until_ms" (10)`},
		"browse: blank query":     {ToolBrowse, `{"query":"  "}`, `tree_browse: argument "query" must not be blank`},
		"browse: unknown":         {ToolBrowse, `{"limit":3}`, `tree_browse: unknown argument "limit"; accepted arguments: source_kinds, source_ids, entity_ids, since_ms, until_ms, query, k, offset, namespaces, max_tokens`},
		"entities: bad kind":      {ToolTopEntities, `{"kind":"E-mail"}`, `tree_top_entities: argument "kind" must be a kind such as email, url, handle, hashtag or date (lower-case letters, digits and _), got "E-mail"`},
		"entities: blank kind":    {ToolTopEntities, `{"kind":""}`, `tree_top_entities: argument "kind" must not be blank`},
		"entities: k above limit": {ToolTopEntities, `{"k":100}`, `tree_top_entities: argument "k" must be an integer from 1 to 50, got 100`},
		"sources: bad email":      {ToolListSources, `{"user_email_hint":"ana"}`, `tree_list_sources: argument "user_email_hint" must be an email address such as ana@example.com, got "ana"`},
		"sources: email spaces":   {ToolListSources, `{"user_email_hint":"a b@c.d"}`, `tree_list_sources: argument "user_email_hint" must be an email address such as ana@example.com, got "a b@c.d"`},
		"sources: email too long": {ToolListSources, mustMarshal(t, map[string]any{"user_email_hint": long(250) + "@x.io"}), `tree_list_sources: argument "user_email_hint" must be at most 254 characters, got 255`},
		"sources: unknown":        {ToolListSources, `{"email":"a@b.c"}`, `tree_list_sources: unknown argument "email"; accepted arguments: user_email_hint`},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			got := callRaw(t, p, tc.tool, json.RawMessage(tc.args))
			if diff := diff(sdk.ErrorResult("%s", tc.want), got); diff != "" {
				t.Errorf("result (-want +got):\n%s", diff)
			}
		})
	}
}

func mustMarshal(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
