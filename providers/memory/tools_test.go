package memory

import (
	"context"
	"encoding/json"
	"fmt"
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
	for _, tl := range New(nil).tools.List() {
		t.Run(tl.Name, func(t *testing.T) {
			t.Parallel()
			if tl.Description == "" || tl.Title == "" {
				t.Error("missing title or description")
			}
			for kind, raw := range map[string]json.RawMessage{"input": tl.InputSchema, "output": tl.OutputSchema} {
				resolvedSchema(t, tl.Name, kind)
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

// TestSchemaLimits checks that the limits the schema tags state agree
// with the constants the handlers and the rest of the provider use.
func TestSchemaLimits(t *testing.T) {
	t.Parallel()
	prop := func(tool, kind string, path ...string) map[string]any {
		t.Helper()
		tl := toolSpec(t, tool)
		raw := tl.InputSchema
		if kind == "output" {
			raw = tl.OutputSchema
		}
		var s map[string]any
		if err := json.Unmarshal(raw, &s); err != nil {
			t.Fatal(err)
		}
		for _, p := range path {
			next, ok := s[p].(map[string]any)
			if !ok {
				t.Fatalf("%s %s schema has no %v", tool, kind, path)
			}
			s = next
		}
		return s
	}
	kinds := make([]any, len(sourceKinds))
	for i, k := range sourceKinds {
		kinds[i] = k
	}
	tests := []struct {
		name      string
		got, want any
	}{
		{"title maxLength", prop(ToolStore, "input", "properties", "title")["maxLength"], float64(maxTitleRunes)},
		{"content maxLength", prop(ToolStore, "input", "properties", "content")["maxLength"], float64(maxContentBytes)},
		{"note_text maxLength", prop(ToolNote, "input", "properties", "note_text")["maxLength"], float64(maxNoteBytes)},
		{"store tag maxLength", prop(ToolStore, "input", "properties", "tags", "items")["maxLength"], float64(maxTagBytes)},
		{"tree_tag tag maxLength", prop(ToolTag, "input", "properties", "tags", "items")["maxLength"], float64(maxTagBytes)},
		{"history offset maximum", prop(ToolHistory, "input", "properties", "offset")["maximum"], float64(maxContentBytes)},
		{"store namespace pattern", prop(ToolStore, "input", "properties", "namespace")["pattern"], namespacePattern},
		{"forget namespaces pattern", prop(ToolForget, "input", "properties", "namespaces", "items")["pattern"], namespacePattern},
		{"entity kind pattern", prop(ToolTopEntities, "input", "properties", "kind")["pattern"], entityKindPattern},
		{"browse source_kinds", prop(ToolBrowse, "input", "properties", "source_kinds", "items")["enum"], kinds},
		{"browse source_kinds maxItems", prop(ToolBrowse, "input", "properties", "source_kinds")["maxItems"], float64(len(sourceKinds))},
		{"sources source_kind", prop(ToolListSources, "output", "properties", "sources", "items", "properties", "source_kind")["enum"], kinds},
		{"search hit source_kind", prop(ToolSearch, "output", "properties", "chunks", "items", "properties", "source_kind")["enum"], kinds},
		{"recall mode", prop(ToolRecall, "output", "properties", "mode")["enum"], []any{recallHybrid, recallKeyword}},
		{"forget document_ids maxItems", prop(ToolForget, "output", "properties", "document_ids")["maxItems"], float64(forgetListed)},
	}
	for _, tc := range tests {
		if diff := diff(tc.want, tc.got); diff != "" {
			t.Errorf("%s (-want +got):\n%s", tc.name, diff)
		}
	}
}

// TestIntegralNumbers checks that a whole number written with a fraction
// or an exponent, an integer in JSON Schema, is taken as that integer.
func TestIntegralNumbers(t *testing.T) {
	t.Parallel()
	p, _ := newProvider(t)
	for i := range 3 {
		put(t, p, map[string]any{"title": fmt.Sprintf("reef %d", i), "content": fmt.Sprintf("coral reef notes, part %d", i)})
	}
	for _, k := range []string{"2.0", "2e0"} {
		res := call[searchResult](t, p, ToolSearch, json.RawMessage(`{"query":"reef","k":`+k+`}`))
		if len(res.Chunks) != 2 {
			t.Errorf("k %s: %d hits, want 2", k, len(res.Chunks))
		}
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

// TestArguments covers the arguments of every tool. What the input schema
// refuses never reaches a handler: sdk.AddTool checks a call that did not
// come through the host as the host does, with the host's messages. What
// the provider refuses itself is an isError result that names the tool,
// the argument and the bound.
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
		// Refused by the input schema, as the host refuses them.
		"store: not an object":     {ToolStore, `[1]`, `arguments must be a JSON object; memory_store takes: content, namespace, tags, title`},
		"store: trailing data":     {ToolStore, `{"title":"a","content":"b"} {}`, `arguments must be a JSON object: invalid character '{' after top-level value`},
		"store: unknown argument":  {ToolStore, `{"title":"a","content":"b","body":"c"}`, `unknown argument "body"; memory_store takes: content, namespace, tags, title`},
		"store: wrong type":        {ToolStore, `{"title":5,"content":"b"}`, `argument "title" must be of type string; got integer 5`},
		"store: tags wrong type":   {ToolStore, `{"title":"a","content":"b","tags":"x"}`, `argument "tags" must be of type array; got string (1 characters)`},
		"store: missing title":     {ToolStore, `{"content":"b"}`, `missing required argument "title"`},
		"store: blank title":       {ToolStore, `{"title":" \t\n","content":"b"}`, `argument "title" must not be blank`},
		"store: title too long":    {ToolStore, mustMarshal(t, map[string]any{"title": long(513), "content": "b"}), `argument "title" is 513 characters long; at most 512 allowed`},
		"store: missing content":   {ToolStore, `{"title":"a"}`, `missing required argument "content"`},
		"store: blank content":     {ToolStore, `{"title":"a","content":"  \n "}`, `argument "content" must not be blank`},
		"store: empty namespace":   {ToolStore, `{"title":"a","content":"b","namespace":""}`, `argument "namespace" must match the pattern ^[A-Za-z0-9_.-]{1,64}$`},
		"store: bad namespace":     {ToolStore, `{"title":"a","content":"b","namespace":"a/b"}`, `argument "namespace" must match the pattern ^[A-Za-z0-9_.-]{1,64}$`},
		"store: too many tags":     {ToolStore, mustMarshal(t, map[string]any{"title": "a", "content": "b", "tags": tags51}), `argument "tags" has 51 items; at most 50 allowed`},
		"store: tag too long":      {ToolStore, mustMarshal(t, map[string]any{"title": "a", "content": "b", "tags": []string{long(129)}}), `argument "tags" item 1 is 129 characters long; at most 128 allowed`},
		"search: missing query":    {ToolSearch, `{}`, `missing required argument "query"`},
		"search: null arguments":   {ToolSearch, `null`, `missing required argument "query"`},
		"search: blank query":      {ToolSearch, `{"query":"   "}`, `argument "query" must not be blank`},
		"search: query too long":   {ToolSearch, mustMarshal(t, map[string]any{"query": long(1025)}), `argument "query" is 1025 characters long; at most 1024 allowed`},
		"search: k zero":           {ToolSearch, `{"query":"a","k":0}`, `argument "k" must be between 1 and 50; got 0`},
		"search: k negative":       {ToolSearch, `{"query":"a","k":-3}`, `argument "k" must be between 1 and 50; got -3`},
		"search: k above limit":    {ToolSearch, `{"query":"a","k":51}`, `argument "k" must be between 1 and 50; got 51`},
		"search: k fraction":       {ToolSearch, `{"query":"a","k":2.5}`, `argument "k" must be of type integer; got number 2.5`},
		"search: k string":         {ToolSearch, `{"query":"a","k":"5"}`, `argument "k" must be of type integer; got string (1 characters)`},
		"search: unknown argument": {ToolSearch, `{"query":"a","limit":5}`, `unknown argument "limit"; memory_search takes: k, max_tokens, namespaces, query`},
		"search: bad namespace":    {ToolSearch, `{"query":"a","namespaces":["a/b"]}`, `invalid arguments for memory_search: validating /properties/namespaces: validating /properties/namespaces/items: pattern: "a/b" does not match regular expression "^(\\*|[A-Za-z0-9_.-]{1,64})$"`},
		"read_chunk: missing id":   {ToolReadChunk, `{}`, `missing required argument "chunk_id"`},
		"read_chunk: blank id":     {ToolReadChunk, `{"chunk_id":""}`, `argument "chunk_id" must not be blank`},
		"read_chunk: id too long":  {ToolReadChunk, mustMarshal(t, map[string]any{"chunk_id": long(257)}), `argument "chunk_id" is 257 characters long; at most 256 allowed`},
		"read_chunk: unknown":      {ToolReadChunk, `{"chunk_id":"x","id":"y"}`, `unknown argument "id"; tree_read_chunk takes: chunk_id, max_tokens`},
		"recall: missing query":    {ToolRecall, `{}`, `missing required argument "query"`},
		"recall: blank query":      {ToolRecall, `{"query":" "}`, `argument "query" must not be blank`},
		"recall: query too long":   {ToolRecall, mustMarshal(t, map[string]any{"query": long(1025)}), `argument "query" is 1025 characters long; at most 1024 allowed`},
		"recall: k above limit":    {ToolRecall, `{"query":"a","k":51}`, `argument "k" must be between 1 and 50; got 51`},
		"recall: k zero":           {ToolRecall, `{"query":"a","k":0}`, `argument "k" must be between 1 and 50; got 0`},
		"recall: k string":         {ToolRecall, `{"query":"a","k":"5"}`, `argument "k" must be of type integer; got string (1 characters)`},
		"recall: unknown":          {ToolRecall, `{"query":"a","mode":"x"}`, `unknown argument "mode"; memory_recall takes: k, max_tokens, namespaces, query`},
		"note: missing chunk_id":   {ToolNote, `{"note_text":"x"}`, `missing required argument "chunk_id"`},
		"note: missing text":       {ToolNote, `{"chunk_id":"chk_x"}`, `missing required argument "note_text"`},
		"note: blank text":         {ToolNote, `{"chunk_id":"chk_x","note_text":" \n"}`, `argument "note_text" must not be blank`},
		"note: unknown argument":   {ToolNote, `{"chunk_id":"x","note_text":"y","title":"z"}`, `unknown argument "title"; memory_note takes: chunk_id, note_text`},
		"tag: missing tags":        {ToolTag, `{"chunk_id":"chk_x"}`, `missing required argument "tags"`},
		"tag: empty tags":          {ToolTag, `{"chunk_id":"chk_x","tags":[]}`, `argument "tags" has 0 items; at least 1 required`},
		"tag: too many tags":       {ToolTag, mustMarshal(t, map[string]any{"chunk_id": "chk_x", "tags": tags51}), `argument "tags" has 51 items; at most 50 allowed`},
		"tag: tag too long":        {ToolTag, mustMarshal(t, map[string]any{"chunk_id": "chk_x", "tags": []string{"ok", strings.Repeat("x", 129)}}), `argument "tags" item 2 is 129 characters long; at most 128 allowed`},
		"tag: empty tag":           {ToolTag, `{"chunk_id":"chk_x","tags":[""]}`, `argument "tags" item 1 is 0 characters long; at least 1 required`},
		"tag: missing chunk_id":    {ToolTag, `{"tags":["a"]}`, `missing required argument "chunk_id"`},
		"history: offset too big":  {ToolHistory, `{"document_id":"mcp/x","version":1,"offset":1000001}`, `argument "offset" must be between 0 and 1000000; got 1000001`},
		"history: version zero":    {ToolHistory, `{"document_id":"mcp/x","version":0}`, `argument "version" must be at least 1; got 0`},
		"browse: k above limit":    {ToolBrowse, `{"k":51}`, `argument "k" must be between 1 and 50; got 51`},
		"browse: negative offset":  {ToolBrowse, `{"offset":-1}`, `argument "offset" must be between 0 and 1000000; got -1`},
		"browse: offset too big":   {ToolBrowse, `{"offset":1000001}`, `argument "offset" must be between 0 and 1000000; got 1000001`},
		"browse: bad kind":         {ToolBrowse, `{"source_kinds":["Notes"]}`, `argument "source_kinds" item 1 must be one of "chat", "email", "document", "note"`},
		"browse: too many kinds":   {ToolBrowse, `{"source_kinds":["note","note","note","note","note"]}`, `argument "source_kinds" has 5 items; at most 4 allowed`},
		"browse: entity too long":  {ToolBrowse, mustMarshal(t, map[string]any{"entity_ids": []string{long(301)}}), `argument "entity_ids" item 1 is 301 characters long; at most 300 allowed`},
		"browse: since fraction":   {ToolBrowse, `{"since_ms":1.5}`, `argument "since_ms" must be of type integer; got number 1.5`},
		"browse: since null":       {ToolBrowse, `{"since_ms":null}`, `argument "since_ms" must be of type integer; got null`},
		"browse: until negative":   {ToolBrowse, `{"until_ms":-1}`, `argument "until_ms" must be between 0 and 9007199254740991; got -1`},
		"browse: unknown":          {ToolBrowse, `{"limit":3}`, `unknown argument "limit"; tree_browse takes: entity_ids, k, max_tokens, namespaces, offset, query, since_ms, source_ids, source_kinds, until_ms`},
		"entities: bad kind":       {ToolTopEntities, `{"kind":"E-mail"}`, `argument "kind" must match the pattern ^[a-z][a-z0-9_]{0,31}$`},
		"entities: blank kind":     {ToolTopEntities, `{"kind":""}`, `argument "kind" must match the pattern ^[a-z][a-z0-9_]{0,31}$`},
		"entities: k above limit":  {ToolTopEntities, `{"k":100}`, `argument "k" must be between 1 and 50; got 100`},
		"sources: email too long":  {ToolListSources, mustMarshal(t, map[string]any{"user_email_hint": long(250) + "@x.io"}), `argument "user_email_hint" is 255 characters long; at most 254 allowed`},
		"sources: unknown":         {ToolListSources, `{"email":"a@b.c"}`, `unknown argument "email"; tree_list_sources takes: user_email_hint`},
		"forget: updated fraction": {ToolForget, `{"updated_before_ms":2.5}`, `argument "updated_before_ms" must be of type integer; got number 2.5`},

		// Refused by the provider, which names the tool.
		"store: content too large": {ToolStore, mustMarshal(t, map[string]any{"title": "a", "content": long(500_001)}), `memory_store: argument "content" must be at most 1000000 bytes, got 1000002; split it into several documents`},
		"store: blank tag":         {ToolStore, `{"title":"a","content":"b","tags":["x"," "]}`, `memory_store: argument "tags" item 2 must not be blank`},
		"store: tag too many bytes": {ToolStore, mustMarshal(t, map[string]any{"title": "a", "content": "b", "tags": []string{long(65)}}),
			`memory_store: argument "tags" item 1 must be at most 128 bytes, got 130`},
		"note: text too large": {ToolNote, mustMarshal(t, map[string]any{"chunk_id": "chk_x", "note_text": long(50_001)}), `memory_note: argument "note_text" must be at most 100000 bytes, got 100002`},
		"note: unknown chunk":  {ToolNote, `{"chunk_id":"no-such-chunk","note_text":"x"}`, `memory_note: no chunk has id "no-such-chunk"; get chunk ids from memory_search, memory_recall or tree_browse`},
		"tag: tag too many bytes": {ToolTag, mustMarshal(t, map[string]any{"chunk_id": "chk_x", "tags": []string{"ok", long(65)}}),
			`tree_tag: argument "tags" item 2 must be at most 128 bytes, got 130`},
		"tag: blank tag":            {ToolTag, `{"chunk_id":"chk_x","tags":[" "]}`, `tree_tag: argument "tags" item 1 must not be blank`},
		"tag: unknown chunk":        {ToolTag, `{"chunk_id":"chk_nope","tags":["a"]}`, `tree_tag: no chunk has id "chk_nope"; get chunk ids from memory_search, memory_recall or tree_browse`},
		"history: offset alone":     {ToolHistory, `{"document_id":"mcp/x","offset":5}`, `memory_history: argument "offset" reads a version's text: give version too`},
		"history: version too big":  {ToolHistory, `{"document_id":"mcp/x","version":3000000000}`, `memory_history: argument "version" must be an integer from 1 to 2147483647, got 3000000000`},
		"history: unknown document": {ToolHistory, `{"document_id":"mcp/x"}`, `memory_history: no document has id "mcp/x"; get document ids from memory_store, memory_search or tree_browse`},
		"browse: blank source":      {ToolBrowse, `{"source_ids":["mcp:mcp"," "]}`, `tree_browse: argument "source_ids" item 2 must not be blank`},
		"browse: source id bare":    {ToolBrowse, `{"source_ids":["work"]}`, `tree_browse: argument "source_ids" item 1 must be a source id such as mcp:<namespace> or file:<folder>, as tree_list_sources returns, got "work"`},
		"browse: entity id bare":    {ToolBrowse, `{"entity_ids":["ana@example.com"]}`, `tree_browse: argument "entity_ids" item 1 must be an entity id <kind>:<value> such as email:ana@example.com, as tree_top_entities returns, got "ana@example.com"`},
		"browse: entity kind bad":   {ToolBrowse, `{"entity_ids":["E-mail:a@b.c"]}`, `tree_browse: argument "entity_ids" item 1 must be an entity id <kind>:<value> such as email:ana@example.com, as tree_top_entities returns, got "E-mail:a@b.c"`},
		"browse: empty range":       {ToolBrowse, `{"since_ms":10,"until_ms":10}`, `tree_browse: argument "since_ms" (10) must be less than "until_ms" (10)`},
		"browse: blank query":       {ToolBrowse, `{"query":"  "}`, `tree_browse: argument "query" must not be blank`},
		"sources: bad email":        {ToolListSources, `{"user_email_hint":"ana"}`, `tree_list_sources: argument "user_email_hint" must be an email address such as ana@example.com, got "ana"`},
		"sources: email spaces":     {ToolListSources, `{"user_email_hint":"a b@c.d"}`, `tree_list_sources: argument "user_email_hint" must be an email address such as ana@example.com, got "a b@c.d"`},
		"sources: blank email":      {ToolListSources, `{"user_email_hint":"   "}`, `tree_list_sources: argument "user_email_hint" must not be blank`},
		"forget: nothing":           {ToolForget, `{"dry_run":true}`, `memory_forget: say what to forget: give chunk_ids, document_ids, source_ids, namespaces, query or updated_before_ms`},
		"forget: blank chunk id":    {ToolForget, `{"chunk_ids":[" "]}`, `memory_forget: argument "chunk_ids" item 1 must not be blank`},
		"forget: query no words":    {ToolForget, `{"query":"?!"}`, `memory_forget: argument "query" has no letters or digits to match`},
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
