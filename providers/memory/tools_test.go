package memory

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
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
		{ToolSearch, sdk.ClassRead, sdk.Annotations{Title: "Search memory", ReadOnlyHint: yes, OpenWorldHint: no}},
		{ToolReadChunk, sdk.ClassRead, sdk.Annotations{Title: "Read a memory chunk", ReadOnlyHint: yes, OpenWorldHint: no}},
	}
	cat, err := New(nil).Describe(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var got []summary
	for _, tl := range cat.Tools {
		got = append(got, summary{tl.Name, tl.Class, tl.Annotations})
	}
	if diff := cmp.Diff(want, got); diff != "" {
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
				if diff := cmp.Diff(want, top); diff != "" {
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
		"store: not an object":      {ToolStore, `[1]`, `memory.store: arguments must be a JSON object`},
		"store: trailing data":      {ToolStore, `{"title":"a","content":"b"} {}`, `memory.store: arguments must be a single JSON object`},
		"store: unknown argument":   {ToolStore, `{"title":"a","content":"b","body":"c"}`, `memory.store: unknown argument "body"; accepted arguments: title, content, namespace, tags`},
		"store: wrong type":         {ToolStore, `{"title":5,"content":"b"}`, `memory.store: argument "title" must be a string, not a JSON number`},
		"store: tags wrong type":    {ToolStore, `{"title":"a","content":"b","tags":"x"}`, `memory.store: argument "tags" must be an array of strings, not a JSON string`},
		"store: missing title":      {ToolStore, `{"content":"b"}`, `memory.store: argument "title" is required`},
		"store: blank title":        {ToolStore, `{"title":" \t\n","content":"b"}`, `memory.store: argument "title" must not be blank`},
		"store: title too long":     {ToolStore, mustMarshal(t, map[string]any{"title": long(513), "content": "b"}), `memory.store: argument "title" must be at most 512 characters, got 513`},
		"store: missing content":    {ToolStore, `{"title":"a"}`, `memory.store: argument "content" is required`},
		"store: blank content":      {ToolStore, `{"title":"a","content":"  \n "}`, `memory.store: argument "content" must not be blank`},
		"store: content too large":  {ToolStore, mustMarshal(t, map[string]any{"title": "a", "content": long(500_001)}), `memory.store: argument "content" must be at most 1000000 bytes, got 1000002; split it into several documents`},
		"store: empty namespace":    {ToolStore, `{"title":"a","content":"b","namespace":""}`, `memory.store: argument "namespace" must match ^[A-Za-z0-9_.-]{1,64}$, got ""`},
		"store: bad namespace":      {ToolStore, `{"title":"a","content":"b","namespace":"a/b"}`, `memory.store: argument "namespace" must match ^[A-Za-z0-9_.-]{1,64}$, got "a/b"`},
		"store: too many tags":      {ToolStore, mustMarshal(t, map[string]any{"title": "a", "content": "b", "tags": tags51}), `memory.store: argument "tags" must have at most 50 items, got 51`},
		"store: blank tag":          {ToolStore, `{"title":"a","content":"b","tags":["x"," "]}`, `memory.store: argument "tags[1]" must not be blank`},
		"store: tag too long":       {ToolStore, mustMarshal(t, map[string]any{"title": "a", "content": "b", "tags": []string{long(129)}}), `memory.store: argument "tags[0]" must be at most 128 characters, got 129`},
		"search: missing query":     {ToolSearch, `{}`, `memory.search: argument "query" is required`},
		"search: null arguments":    {ToolSearch, `null`, `memory.search: argument "query" is required`},
		"search: blank query":       {ToolSearch, `{"query":"   "}`, `memory.search: argument "query" must not be blank`},
		"search: query too long":    {ToolSearch, mustMarshal(t, map[string]any{"query": long(1025)}), `memory.search: argument "query" must be at most 1024 characters, got 1025`},
		"search: k zero":            {ToolSearch, `{"query":"a","k":0}`, `memory.search: argument "k" must be an integer from 1 to 50, got 0`},
		"search: k negative":        {ToolSearch, `{"query":"a","k":-3}`, `memory.search: argument "k" must be an integer from 1 to 50, got -3`},
		"search: k above limit":     {ToolSearch, `{"query":"a","k":51}`, `memory.search: argument "k" must be an integer from 1 to 50, got 51`},
		"search: k fraction":        {ToolSearch, `{"query":"a","k":2.5}`, `memory.search: argument "k" must be an integer from 1 to 50, got 2.5`},
		"search: k string":          {ToolSearch, `{"query":"a","k":"5"}`, `memory.search: argument "k" must be a number, not a JSON string`},
		"search: unknown argument":  {ToolSearch, `{"query":"a","limit":5}`, `memory.search: unknown argument "limit"; accepted arguments: query, k`},
		"read_chunk: missing id":    {ToolReadChunk, `{}`, `tree.read_chunk: argument "chunk_id" is required`},
		"read_chunk: blank id":      {ToolReadChunk, `{"chunk_id":""}`, `tree.read_chunk: argument "chunk_id" must not be blank`},
		"read_chunk: id too long":   {ToolReadChunk, mustMarshal(t, map[string]any{"chunk_id": long(257)}), `tree.read_chunk: argument "chunk_id" must be at most 256 characters, got 257`},
		"read_chunk: unknown field": {ToolReadChunk, `{"chunk_id":"x","id":"y"}`, `tree.read_chunk: unknown argument "id"; accepted arguments: chunk_id`},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			got := callRaw(t, p, tc.tool, json.RawMessage(tc.args))
			if diff := cmp.Diff(sdk.ErrorResult("%s", tc.want), got); diff != "" {
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
