package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"

	"github.com/openhuman/openhuman-host/sdk"
	"github.com/openhuman/openhuman-host/sdk/sdktest"
)

func TestCatalog(t *testing.T) {
	t.Parallel()
	h := sdktest.Start(t, newHello(nil), nil)
	type tool struct {
		Name  string
		Class sdk.PolicyClass
		Hints sdk.Annotations
	}
	var got []tool
	for _, tl := range h.Catalog.Tools {
		got = append(got, tool{tl.Name, tl.Class, tl.Annotations})
	}
	f, tr := sdk.Bool(false), sdk.Bool(true)
	want := []tool{
		{"hello_greet", sdk.ClassRead, sdk.Annotations{ReadOnlyHint: tr, OpenWorldHint: f}},
		{"hello_count", sdk.ClassAct, sdk.Annotations{ReadOnlyHint: f, DestructiveHint: f, IdempotentHint: f, OpenWorldHint: f}},
	}
	if !reflect.DeepEqual(want, got) {
		t.Errorf("tools = %+v, want %+v", got, want)
	}
	wantRes := []sdk.Resource{{URI: "hello://readme", Name: "readme", Title: "provider-hello README",
		Description: "What hello_greet and hello_count do and take.", MIMEType: "text/markdown", Size: int64(len(readme))}}
	if !reflect.DeepEqual(wantRes, h.Catalog.Resources) {
		t.Errorf("resources = %+v, want %+v", h.Catalog.Resources, wantRes)
	}
}

func TestGreet(t *testing.T) {
	t.Parallel()
	plain := sdktest.Start(t, newHello(nil), nil)
	smiley := sdktest.Start(t, newHello(nil), &sdktest.Options{Config: map[string]any{"greeting_suffix": " :)"}})
	tests := []struct {
		h    *sdktest.Harness
		args map[string]any
		want string
	}{
		{plain, map[string]any{"name": "Ada"}, "Hello, Ada!"},
		{plain, map[string]any{"name": "Ada", "language": "en"}, "Hello, Ada!"},
		{plain, map[string]any{"name": "Ada", "language": "fr"}, "Bonjour, Ada!"},
		{plain, map[string]any{"name": "Ada", "language": "de"}, "Hallo, Ada!"},
		{plain, map[string]any{"name": "  Grace Hopper \n"}, "Hello, Grace Hopper!"},
		{smiley, map[string]any{"name": "Ada"}, "Hello, Ada! :)"},
		{smiley, map[string]any{"name": "Émilie", "language": "fr"}, "Bonjour, Émilie! :)"},
	}
	for _, tc := range tests {
		res, err := tc.h.Call(context.Background(), "hello_greet", tc.args)
		if err != nil {
			t.Errorf("%v: %v", tc.args, err)
			continue
		}
		structured, _ := json.Marshal(map[string]string{"greeting": tc.want})
		want := &sdk.CallToolResult{Content: []sdk.Content{sdk.TextContent(tc.want)}, StructuredContent: structured}
		if !reflect.DeepEqual(want, res) {
			t.Errorf("%v = %+v, want %+v", tc.args, res, want)
		}
	}
}

func TestArgumentsTheHostRejects(t *testing.T) {
	t.Parallel()
	h := sdktest.Start(t, newHello(nil), nil)
	tests := []struct {
		tool string
		args any
		want string
	}{
		{"hello_greet", map[string]any{}, `missing required argument "name"`},
		{"hello_greet", map[string]any{"name": " \t "}, `argument "name" must not be blank`},
		{"hello_greet", map[string]any{"name": strings.Repeat("a", 101)}, `argument "name" is 101 characters long; at most 100 allowed`},
		{"hello_greet", map[string]any{"name": "Ada", "language": "es"}, `argument "language" must be one of "en", "fr", "de"`},
		{"hello_greet", map[string]any{"name": "Ada", "lang": "fr"}, `unknown argument "lang"; hello_greet takes: language, name`},
		{"hello_count", map[string]any{"by": 0}, `argument "by" must be between 1 and 1000; got 0`},
		{"hello_count", map[string]any{"by": 1001}, `argument "by" must be between 1 and 1000; got 1001`},
		{"hello_count", map[string]any{"by": 1.5}, `argument "by" must be of type integer; got number 1.5`},
		{"hello_count", map[string]any{"by": "2"}, `argument "by" must be of type integer; got string (1 characters)`},
	}
	for _, tc := range tests {
		_, err := h.Call(context.Background(), tc.tool, tc.args)
		var argErr *sdktest.ArgumentError
		if !errors.As(err, &argErr) || argErr.Message != tc.want {
			t.Errorf("%s %v: error %v, want the message %q", tc.tool, tc.args, err, tc.want)
		}
	}
	// Nothing reached hello_count.
	if _, err := os.Stat(filepath.Join(h.DataDir, countFile)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("counter file exists after rejected calls: %v", err)
	}
}

// TestOwnArgumentChecks sends what the host would never send, to check the
// provider's own defences.
func TestOwnArgumentChecks(t *testing.T) {
	t.Parallel()
	h := sdktest.Start(t, newHello(nil), nil)
	tests := []struct {
		tool string
		args string
		want string
	}{
		// sdk.AddTool checks the arguments as the host does.
		{"hello_greet", `{"name":"   "}`, `argument "name" must not be blank`},
		{"hello_greet", `{"name":"Ada","language":"es"}`, `argument "language" must be one of "en", "fr", "de"`},
		{"hello_greet", `{"name":5}`, `argument "name" must be of type string; got integer 5`},
		{"hello_count", `{"by":0}`, `argument "by" must be between 1 and 1000; got 0`},
	}
	for _, tc := range tests {
		res, err := h.CallRaw(context.Background(), tc.tool, json.RawMessage(tc.args))
		if err != nil {
			t.Errorf("%s %s: %v", tc.tool, tc.args, err)
			continue
		}
		if !res.IsError || len(res.Content) != 1 || res.Content[0].Text != tc.want {
			t.Errorf("%s %s: %+v, want an error result %q", tc.tool, tc.args, res, tc.want)
		}
	}
	if _, err := h.CallRaw(context.Background(), "hello.wave", json.RawMessage(`{}`)); err == nil ||
		err.Error() != `call hello.wave: no tool "hello.wave"; the provider serves hello_greet, hello_count` {
		t.Errorf("unknown tool: %v", err)
	}
}

func TestCount(t *testing.T) {
	t.Parallel()
	h := sdktest.Start(t, newHello(nil), nil)
	ctx := context.Background()
	for _, step := range []struct {
		args any
		want int
	}{{nil, 1}, {map[string]any{"by": 5}, 6}, {map[string]any{}, 7}, {map[string]any{"by": 1000}, 1007}} {
		res, events, err := h.CallWithEvents(ctx, "hello_count", step.args)
		if err != nil {
			t.Fatalf("count %v: %v", step.args, err)
		}
		want := &sdk.CallToolResult{
			Content:           []sdk.Content{sdk.TextContent(fmt.Sprintf("The count is %d.", step.want))},
			StructuredContent: json.RawMessage(fmt.Sprintf(`{"count":%d}`, step.want)),
		}
		if !reflect.DeepEqual(want, res) {
			t.Errorf("count %v = %+v, want %+v", step.args, res, want)
		}
		wantEvents := sdktest.Events{Progress: []sdk.Progress{{Progress: 1, Total: 1, Message: "counter saved"}}}
		if !reflect.DeepEqual(wantEvents, events) {
			t.Errorf("count %v events = %+v, want %+v", step.args, events, wantEvents)
		}
	}
	saved, err := os.ReadFile(filepath.Join(h.DataDir, countFile))
	if err != nil || string(saved) != "{\"count\":1007}\n" {
		t.Errorf("count.json = %q (%v)", saved, err)
	}

	// A new provider process on the same data dir continues the count.
	again := sdktest.Start(t, newHello(nil), &sdktest.Options{DataDir: h.DataDir})
	res, err := again.Call(ctx, "hello_count", map[string]any{"by": 3})
	if err != nil || string(res.StructuredContent) != `{"count":1010}` {
		t.Errorf("count after restart: %v %s", err, res.StructuredContent)
	}
}

func TestConcurrentCountsAreNotLost(t *testing.T) {
	t.Parallel()
	h := sdktest.Start(t, newHello(nil), nil)
	const callers, each = 8, 10
	var wg sync.WaitGroup
	errs := make(chan error, callers*each)
	for range callers {
		wg.Go(func() {
			for range each {
				if _, err := h.Call(context.Background(), "hello_count", nil); err != nil {
					errs <- err
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	res, err := h.Call(context.Background(), "hello_count", map[string]any{"by": 1})
	if err != nil || string(res.StructuredContent) != fmt.Sprintf(`{"count":%d}`, callers*each+1) {
		t.Errorf("final count: %v %s", err, res.StructuredContent)
	}
	entries, err := os.ReadDir(h.DataDir)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 1 || entries[0].Name() != countFile {
		var names []string
		for _, e := range entries {
			names = append(names, e.Name())
		}
		t.Errorf("data dir holds %v, want only %s (no temporary files left)", names, countFile)
	}
}

func TestCorruptCounterFile(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, countFile), []byte("not json"), 0o600); err != nil {
		t.Fatal(err)
	}
	h := sdktest.Start(t, newHello(nil), &sdktest.Options{DataDir: dir})
	// A tool's error reaches the model as an error result.
	res, err := h.Call(context.Background(), "hello_count", nil)
	want := "counter file " + filepath.Join(dir, countFile) + " is corrupt"
	if err != nil || !res.IsError || !strings.HasPrefix(res.Content[0].Text, want) || !strings.HasSuffix(res.Content[0].Text, "; delete it to start again from 0") {
		t.Errorf("result = %+v, %v, want an error result %q...", res, err, want)
	}
}

func TestReadme(t *testing.T) {
	t.Parallel()
	h := sdktest.Start(t, newHello(nil), nil)
	got, err := h.Read(context.Background(), "hello://readme")
	if err != nil {
		t.Fatal(err)
	}
	want := &sdk.ReadResourceResult{Contents: []sdk.ResourceContents{{URI: "hello://readme", MIMEType: "text/markdown", Text: readme}}}
	if !reflect.DeepEqual(want, got) {
		t.Errorf("got %+v, want %+v", got, want)
	}
	for _, s := range []string{"# provider-hello", "`hello_greet` (read)", "`hello_count` (act)", "`greeting_suffix`"} {
		if !strings.Contains(got.Contents[0].Text, s) {
			t.Errorf("readme does not mention %q", s)
		}
	}
	_, err = h.Read(context.Background(), "hello://missing")
	if !errors.Is(err, sdk.ErrResourceNotFound) || !strings.Contains(err.Error(), "hello://missing") {
		t.Errorf("unknown resource: %v", err)
	}
}

func TestConfigureErrors(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	tests := map[string]struct {
		config  string
		dataDir string
		want    string
	}{
		"suffix not a string": {`{"greeting_suffix":5}`, dir, "providers.hello.greeting_suffix must be a string of at most 20 characters, not a number"},
		"suffix null":         {`{"greeting_suffix":null}`, dir, "providers.hello.greeting_suffix must be a string of at most 20 characters, not null"},
		"suffix too long":     {`{"greeting_suffix":"` + strings.Repeat("é", 21) + `"}`, dir, "providers.hello.greeting_suffix must be at most 20 characters; got 21"},
		"unknown setting":     {`{"colour":"blue"}`, dir, `[providers.hello] has unknown key "colour"; the valid keys are greeting_suffix`},
		"not an object":       {`[]`, dir, "[providers.hello] must be a table, not an array"},
		"no data dir":         {`{}`, "", "no data directory: the host passes one in Configure"},
	}
	for name, tc := range tests {
		err := newHello(nil).Configure(context.Background(), &sdk.ConfigureRequest{Config: json.RawMessage(tc.config), DataDir: tc.dataDir})
		if err == nil || err.Error() != tc.want {
			t.Errorf("%s: error = %v, want %q", name, err, tc.want)
		}
	}
	if err := newHello(nil).Configure(context.Background(), &sdk.ConfigureRequest{
		Config: json.RawMessage(`{"greeting_suffix":"` + strings.Repeat("é", 20) + `"}`), DataDir: dir,
	}); err != nil {
		t.Errorf("20-character suffix refused: %v", err)
	}

	// Through the gRPC adapter, as the host sees it.
	h := sdktest.Start(t, newHello(nil), nil)
	err := h.Provider.Configure(context.Background(), &sdk.ConfigureRequest{Config: json.RawMessage(`{"greeting_suffix":true}`), DataDir: dir})
	if err == nil || err.Error() != "configure: providers.hello.greeting_suffix must be a string of at most 20 characters, not a boolean" {
		t.Errorf("configure over gRPC: %v", err)
	}
}
