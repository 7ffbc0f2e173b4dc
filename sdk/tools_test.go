package sdk_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/openhuman/openhuman-host/sdk"
	"github.com/openhuman/openhuman-host/sdk/sdktest"
)

type searchIn struct {
	Query string   `json:"query" jsonschema:"What to look for." schema:"minLength=1,maxLength=50"`
	Limit int      `json:"limit,omitzero" schema:"minimum=1,maximum=20,default=5"`
	Kind  string   `json:"kind,omitempty" schema:"enum=a|b"`
	Tags  []string `json:"tags,omitempty" schema:"maxItems=2,items.pattern=^[a-z,]+$"`
}

type searchOut struct {
	Hits  []string `json:"hits"`
	Limit int      `json:"limit" schema:"minimum=1"`
	// Best is left out when nil, so its schema does not allow null; Note
	// is written as null.
	Best *float64 `json:"best,omitempty" schema:"minimum=0"`
	Note *string  `json:"note"`
}

// typed is a provider whose tools are all added with sdk.AddTool.
type typed struct{ tools sdk.Tools }

func newTyped() *typed {
	p := &typed{}
	sdk.AddTool(&p.tools, sdk.Tool{Name: "t_search", Description: "Searches.", Class: sdk.ClassRead},
		func(_ context.Context, _ *sdk.CallToolRequest, in searchIn) (*sdk.CallToolResult, searchOut, error) {
			switch in.Query {
			case "fail":
				return nil, searchOut{}, errors.New("the index is offline")
			case "late":
				return nil, searchOut{}, fmt.Errorf("waited: %w", context.DeadlineExceeded)
			case "bad output":
				return nil, searchOut{Hits: []string{}}, nil
			case "refuse":
				return sdk.ErrorResult("no %s here", in.Query), searchOut{}, nil
			}
			return sdk.TextResult(fmt.Sprintf("%d hits", in.Limit)), searchOut{Hits: []string{in.Query + in.Kind}, Limit: in.Limit}, nil
		})
	sdk.AddTool(&p.tools, sdk.Tool{Name: "t_ping", Description: "Pings.", Class: sdk.ClassAct},
		func(context.Context, *sdk.CallToolRequest, struct{}) (*sdk.CallToolResult, any, error) {
			return sdk.TextResult("pong"), nil, nil
		})
	return p
}

func (p *typed) Configure(context.Context, *sdk.ConfigureRequest) error { return nil }
func (p *typed) Describe(context.Context) (*sdk.Catalog, error) {
	return &sdk.Catalog{Name: "t", Tools: p.tools.List()}, nil
}
func (p *typed) CallTool(ctx context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
	return p.tools.Call(ctx, req)
}
func (p *typed) ReadResource(context.Context, *sdk.ReadResourceRequest) (*sdk.ReadResourceResult, error) {
	return nil, sdk.ErrResourceNotFound
}

func TestAddToolDerivesSchemas(t *testing.T) {
	t.Parallel()
	tools := newTyped().tools.List()
	if len(tools) != 2 || tools[0].Name != "t_search" || tools[1].Name != "t_ping" {
		t.Fatalf("tools = %+v", tools)
	}
	wantIn := `{"type":"object","properties":{"query":{"type":"string","description":"What to look for.","minLength":1,"maxLength":50},` +
		`"limit":{"type":"integer","default":5,"minimum":1,"maximum":20},"kind":{"type":"string","enum":["a","b"]},` +
		`"tags":{"type":"array","items":{"type":"string","pattern":"^[a-z,]+$"},"maxItems":2}},"required":["query"],"additionalProperties":false}`
	assertSameJSON(t, "t_search input", wantIn, tools[0].InputSchema)
	wantOut := `{"type":"object","properties":{"hits":{"type":"array","items":{"type":"string"}},"limit":{"type":"integer","minimum":1},` +
		`"best":{"type":"number","minimum":0},"note":{"type":["null","string"]}},"required":["hits","limit","note"],"additionalProperties":false}`
	assertSameJSON(t, "t_search output", wantOut, tools[0].OutputSchema)
	assertSameJSON(t, "t_ping input", `{"type":"object","additionalProperties":false}`, tools[1].InputSchema)
	if tools[1].OutputSchema != nil {
		t.Errorf("t_ping, whose Out is any, has the output schema %s", tools[1].OutputSchema)
	}
}

func assertSameJSON(t *testing.T, what, want string, got json.RawMessage) {
	t.Helper()
	var w, g any
	if err := json.Unmarshal([]byte(want), &w); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(got, &g); err != nil {
		t.Fatalf("%s: %v in %s", what, err, got)
	}
	if diff := cmp.Diff(w, g); diff != "" {
		t.Errorf("%s (-want +got):\n%s\ngot %s", what, diff, got)
	}
}

func TestAddToolCalls(t *testing.T) {
	t.Parallel()
	h := sdktest.Start(t, newTyped(), nil)
	ctx := context.Background()
	tests := []struct {
		args        string
		wantText    string
		wantIsError bool
		wantOut     string
	}{
		{`{"query":"x"}`, "5 hits", false, `{"hits":["x"],"limit":5,"note":null}`},
		{`{"query":"x","limit":2,"kind":"b"}`, "2 hits", false, `{"hits":["xb"],"limit":2,"note":null}`},
		{`{"query":"fail"}`, "the index is offline", true, ``},
		{`{"query":"refuse"}`, "no refuse here", true, ``},
		// What the host would refuse, sent past it: the host's messages.
		{`{"query":"  "}`, `argument "query" must not be blank`, true, ``},
		{`{"query":"x","limit":0}`, `argument "limit" must be between 1 and 20; got 0`, true, ``},
		{`{"query":"x","other":1}`, `unknown argument "other"; t_search takes: kind, limit, query, tags`, true, ``},
	}
	for _, tc := range tests {
		res, err := h.CallRaw(ctx, "t_search", json.RawMessage(tc.args))
		if err != nil {
			t.Errorf("%s: %v", tc.args, err)
			continue
		}
		if res.IsError != tc.wantIsError || len(res.Content) != 1 || res.Content[0].Text != tc.wantText || string(res.StructuredContent) != tc.wantOut {
			t.Errorf("%s: isError=%v %+v %s, want isError=%v %q %s", tc.args, res.IsError, res.Content, res.StructuredContent, tc.wantIsError, tc.wantText, tc.wantOut)
		}
	}
	if _, err := h.Call(ctx, "t_search", map[string]any{"query": "late"}); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("a handler's deadline error: %v, want it returned as the call's error", err)
	}
	// The SDK does not check outputs at run time; the harness does.
	if _, err := h.Call(ctx, "t_search", map[string]any{"query": "bad output"}); err == nil || !strings.Contains(err.Error(), "result does not match the tool's output schema") {
		t.Errorf("output breaking the schema: %v, want the harness to refuse it", err)
	}
	res, err := h.Call(ctx, "t_ping", nil)
	if err != nil || res.IsError || res.StructuredContent != nil || res.Content[0].Text != "pong" {
		t.Errorf("t_ping: %+v %v", res, err)
	}
	if _, err := h.CallRaw(ctx, "t_nope", nil); err == nil || !strings.Contains(err.Error(), `no tool "t_nope"; the provider serves t_search, t_ping`) {
		t.Errorf("unknown tool: %v", err)
	}
}

func TestAddToolPanicsOnBadTags(t *testing.T) {
	t.Parallel()
	type bad struct {
		N int `json:"n" schema:"minimum=one"`
	}
	if r := addToolPanic[bad](); r == nil || !strings.Contains(fmt.Sprint(r), `sdk.AddTool: tool "t_bad": input schema:`) {
		t.Errorf("recovered %v", r)
	}
}

// addToolPanic adds a tool t_bad taking In and returns what AddTool
// panicked with, nil if it did not.
func addToolPanic[In any]() (r any) {
	defer func() { r = recover() }()
	var ts sdk.Tools
	sdk.AddTool(&ts, sdk.Tool{Name: "t_bad", Class: sdk.ClassRead},
		func(context.Context, *sdk.CallToolRequest, In) (*sdk.CallToolResult, any, error) {
			return nil, nil, nil
		})
	return nil
}

// TestAddToolOptionalPointers derives an input whose optional pointer
// arguments tell a missing argument from a zero one: their schemas do not
// allow null, and a call decodes 0 into a pointer to 0 and a missing
// argument into nil.
func TestAddToolOptionalPointers(t *testing.T) {
	t.Parallel()
	type window struct {
		Since *int64  `json:"since,omitempty" schema:"minimum=0"`
		Until *int64  `json:"until,omitzero"`
		Note  *string `json:"note"`
	}
	var ts sdk.Tools
	sdk.AddTool(&ts, sdk.Tool{Name: "t_window", Description: "Windows.", Class: sdk.ClassRead},
		func(_ context.Context, _ *sdk.CallToolRequest, in window) (*sdk.CallToolResult, any, error) {
			show := func(p *int64) string {
				if p == nil {
					return "nil"
				}
				return fmt.Sprint(*p)
			}
			return sdk.TextResult(show(in.Since) + " " + show(in.Until)), nil, nil
		})
	wantIn := `{"type":"object","properties":{"since":{"type":"integer","minimum":0},"until":{"type":"integer"},"note":{"type":["null","string"]}},` +
		`"required":["note"],"additionalProperties":false}`
	assertSameJSON(t, "t_window input", wantIn, ts.List()[0].InputSchema)
	tests := []struct{ args, want string }{
		{`{"note":null,"since":0}`, "0 nil"},
		{`{"note":"x","until":5}`, "nil 5"},
		{`{"note":null,"since":null}`, `argument "since" must be of type integer; got null`},
	}
	for _, tc := range tests {
		res, err := ts.Call(context.Background(), &sdk.CallToolRequest{Name: "t_window", Arguments: json.RawMessage(tc.args)})
		if err != nil || len(res.Content) != 1 || res.Content[0].Text != tc.want {
			t.Errorf("%s: %+v %v, want %q", tc.args, res, err, tc.want)
		}
	}
}

// TestAddToolRawJSON derives json.RawMessage fields as any JSON value
// (the schema true), narrowed by a type tag, and passes raw values
// through to the result.
func TestAddToolRawJSON(t *testing.T) {
	t.Parallel()
	type rawIn struct {
		Value json.RawMessage `json:"value"`
	}
	type rawOut struct {
		Params json.RawMessage  `json:"params" schema:"type=object"`
		Any    json.RawMessage  `json:"any"`
		Maybe  *json.RawMessage `json:"maybe"`
	}
	var ts sdk.Tools
	sdk.AddTool(&ts, sdk.Tool{Name: "t_raw", Description: "Echoes.", Class: sdk.ClassRead},
		func(_ context.Context, _ *sdk.CallToolRequest, in rawIn) (*sdk.CallToolResult, rawOut, error) {
			return nil, rawOut{Params: in.Value, Any: in.Value}, nil
		})
	tool := ts.List()[0]
	assertSameJSON(t, "t_raw input", `{"type":"object","properties":{"value":true},"required":["value"],"additionalProperties":false}`, tool.InputSchema)
	assertSameJSON(t, "t_raw output", `{"type":"object","properties":{"params":{"type":"object"},"any":true,"maybe":true},`+
		`"required":["params","any","maybe"],"additionalProperties":false}`, tool.OutputSchema)
	res, err := ts.Call(context.Background(), &sdk.CallToolRequest{Name: "t_raw", Arguments: json.RawMessage(`{"value":{"a":[1,2]}}`)})
	if err != nil || res.IsError || string(res.StructuredContent) != `{"params":{"a":[1,2]},"any":{"a":[1,2]},"maybe":null}` {
		t.Errorf("object: %+v %v", res, err)
	}
	// Outputs are not checked against the output schema at run time (the
	// harness checks them in tests): the array passes through as it is.
	res, err = ts.Call(context.Background(), &sdk.CallToolRequest{Name: "t_raw", Arguments: json.RawMessage(`{"value":[1]}`)})
	if err != nil || res.IsError || string(res.StructuredContent) != `{"params":[1],"any":[1],"maybe":null}` {
		t.Errorf("an array where the output schema wants an object: %+v %v", res, err)
	}
}

func TestAddToolRefusesTypeOnTypedField(t *testing.T) {
	t.Parallel()
	type bad struct {
		N string `json:"n" schema:"type=object"`
	}
	if r := addToolPanic[bad](); r == nil || !strings.Contains(fmt.Sprint(r), "type narrows only a field that allows any JSON value") {
		t.Errorf("recovered %v", r)
	}
}

// TestInputSchemaFor adds a tool whose default follows a setting: the
// derived schema, changed, is the one advertised and the one whose
// default fills in a missing argument.
func TestInputSchemaFor(t *testing.T) {
	t.Parallel()
	schema := sdk.InputSchemaFor[searchIn]()
	schema.Properties["limit"].Default = json.RawMessage(`12`)
	raw, err := json.Marshal(schema)
	if err != nil {
		t.Fatal(err)
	}
	p := &typed{}
	sdk.AddTool(&p.tools, sdk.Tool{Name: "t_search", Description: "Searches.", Class: sdk.ClassRead, InputSchema: raw},
		func(_ context.Context, _ *sdk.CallToolRequest, in searchIn) (*sdk.CallToolResult, any, error) {
			return sdk.TextResult(fmt.Sprintf("%d hits", in.Limit)), nil, nil
		})
	h := sdktest.Start(t, p, nil)
	tool, _ := h.Tool("t_search")
	wantIn := `{"type":"object","properties":{"query":{"type":"string","description":"What to look for.","minLength":1,"maxLength":50},` +
		`"limit":{"type":"integer","default":12,"minimum":1,"maximum":20},"kind":{"type":"string","enum":["a","b"]},` +
		`"tags":{"type":"array","items":{"type":"string","pattern":"^[a-z,]+$"},"maxItems":2}},"required":["query"],"additionalProperties":false}`
	assertSameJSON(t, "t_search input", wantIn, tool.InputSchema)
	res, err := h.Call(context.Background(), "t_search", map[string]any{"query": "x"})
	if err != nil || res.IsError || res.Content[0].Text != "12 hits" {
		t.Errorf("call without limit: %+v %v, want the changed default", res, err)
	}
	if again := sdk.InputSchemaFor[searchIn](); string(again.Properties["limit"].Default) != "5" {
		t.Errorf("a second InputSchemaFor has the default %s, want a fresh schema with 5", again.Properties["limit"].Default)
	}
}
