package catalog

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/openhuman/openhuman-host/sdk"
)

func tool(name string, class sdk.PolicyClass, schema string) sdk.Tool {
	return sdk.Tool{Name: name, Description: "d", InputSchema: json.RawMessage(schema), Class: class}
}

const obj = `{"type":"object","additionalProperties":false}`

func TestValidateTool(t *testing.T) {
	t.Parallel()
	tests := map[string]struct {
		tool    sdk.Tool
		wantErr string
	}{
		"valid read":          {tool: tool("notes_search", sdk.ClassRead, obj)},
		"valid act":           {tool: tool("a_b-c.D9", sdk.ClassAct, obj)},
		"empty name":          {tool: tool("", sdk.ClassRead, obj), wantErr: `name "" must match`},
		"space in name":       {tool: tool("my tool", sdk.ClassRead, obj), wantErr: `name "my tool" must match`},
		"name too long":       {tool: tool(strings.Repeat("x", 129), sdk.ClassRead, obj), wantErr: "must match"},
		"slash in name":       {tool: tool("a/b", sdk.ClassRead, obj), wantErr: "must match"},
		"no class":            {tool: tool("t", "", obj), wantErr: `policy class "" must be "read" or "act"`},
		"unknown class":       {tool: tool("t", "write", obj), wantErr: `policy class "write"`},
		"no schema":           {tool: tool("t", sdk.ClassRead, ""), wantErr: "no input schema"},
		"schema not object":   {tool: tool("t", sdk.ClassRead, `{"type":"string"}`), wantErr: `must have "type": "object"`},
		"schema invalid JSON": {tool: tool("t", sdk.ClassRead, `{"type":`), wantErr: "input schema"},
		"unresolvable ref":    {tool: tool("t", sdk.ClassRead, `{"type":"object","properties":{"a":{"$ref":"#/$defs/missing"}}}`), wantErr: "does not resolve"},
		"output not object": {tool: func() sdk.Tool {
			x := tool("t", sdk.ClassRead, obj)
			x.OutputSchema = json.RawMessage(`{"type":"array"}`)
			return x
		}(), wantErr: "output schema must have"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			err := ValidateTool(tc.tool)
			if tc.wantErr == "" {
				if err != nil {
					t.Fatalf("unexpected error: %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) || !errors.Is(err, ErrInvalidTool) {
				t.Fatalf("error = %v, want one containing %q wrapping ErrInvalidTool", err, tc.wantErr)
			}
		})
	}
}

func TestBuildMergesInOrderAndRefusesCollisions(t *testing.T) {
	t.Parallel()
	c := Build(nil, []Source{
		{Provider: "first", Catalog: &sdk.Catalog{
			Tools:     []sdk.Tool{tool("shared.tool", sdk.ClassRead, obj), tool("bad tool", sdk.ClassRead, obj), tool("first.only", sdk.ClassAct, obj)},
			Resources: []sdk.Resource{{URI: "x://a", Name: "a"}, {URI: "", Name: "empty"}},
		}},
		{Provider: "second", Catalog: &sdk.Catalog{
			Tools:             []sdk.Tool{tool("shared.tool", sdk.ClassAct, obj), tool("second.only", sdk.ClassRead, obj)},
			Resources:         []sdk.Resource{{URI: "x://a", Name: "dup"}, {URI: "x://b", Name: "b"}},
			ResourceTemplates: []sdk.ResourceTemplate{{URITemplate: "x://{id}", Name: "t"}},
		}},
		{Provider: "nil catalog"},
	})
	type entry struct{ Name, Declared, Provider string }
	var got []entry
	for _, tl := range c.Tools() {
		got = append(got, entry{tl.Name, tl.Declared, tl.Provider})
	}
	want := []entry{{"shared_tool", "shared.tool", "first"}, {"first_only", "first.only", "first"}, {"second_only", "second.only", "second"}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("tools (-want +got):\n%s", diff)
	}
	var uris []entry
	for _, r := range c.Resources() {
		uris = append(uris, entry{Name: r.URI, Provider: r.Provider})
	}
	if diff := cmp.Diff([]entry{{Name: "x://a", Provider: "first"}, {Name: "x://b", Provider: "second"}}, uris); diff != "" {
		t.Errorf("resources (-want +got):\n%s", diff)
	}
	if r, ok := c.Resource("x://a"); !ok || r.Name != "a" {
		t.Errorf("Resource(x://a) = %+v, %v", r, ok)
	}
	if len(c.ResourceTemplates()) != 1 {
		t.Errorf("templates = %d, want 1", len(c.ResourceTemplates()))
	}
	if tl, ok := c.Tool("shared.tool"); !ok || tl.Class != sdk.ClassRead {
		t.Errorf("shared.tool = %+v, want the first provider's read tool", tl)
	}
	if _, ok := c.Tool("bad tool"); ok {
		t.Error("an invalid tool was accepted")
	}
}

func TestValidateArgumentsPassesValidInputThrough(t *testing.T) {
	t.Parallel()
	c := Build(nil, []Source{{Provider: "p", Catalog: &sdk.Catalog{Tools: []sdk.Tool{
		tool("t", sdk.ClassRead, `{"type":"object","properties":{"kind":{"type":"string","enum":["a","b"]},"n":{"type":"number","exclusiveMinimum":0},`+
			`"ns":{"type":"string","pattern":"^[a-z]+$"},"count":{"type":"integer","minimum":1,"maximum":50},`+
			`"deep":{"type":"object","properties":{"x":{"type":"integer"}}},`+
			`"kinds":{"type":"array","items":{"type":"string","enum":["a","b"]}}},"additionalProperties":false}`),
	}}}})
	tl, _ := c.Tool("t")
	tests := map[string]struct {
		args, want, wantErr string
	}{
		"empty is {}":                         {args: ``, want: `{}`},
		"null is {}":                          {args: `null`, want: `{}`},
		"kept byte for byte":                  {args: ` {"kind":"a", "n": 2.5} `, want: `{"kind":"a", "n": 2.5}`},
		"enum":                                {args: `{"kind":"c"}`, wantErr: `argument "kind" must be one of "a", "b"`},
		"nested rule by the schema validator": {args: `{"deep":{"x":"y"}}`, wantErr: "invalid arguments for t:"},
		"pattern":                             {args: `{"ns":"a b"}`, wantErr: `argument "ns" must match the pattern ^[a-z]+$`},
		"whole float is integer":              {args: `{"count":10.0}`, want: `{"count":10.0}`},
		"exponent is integer, bounds apply":   {args: `{"count":1e2}`, wantErr: `argument "count" must be between 1 and 50; got 1e2`},
		"huge integer":                        {args: `{"count":99999999999999999999}`, wantErr: `argument "count" must be between 1 and 50; got 99999999999999999999`},
		"string value not echoed":             {args: `{"ns":["secret body"]}`, wantErr: `argument "ns" must be of type string; got array (1 items)`},
		"exclusive minimum":                   {args: `{"n":0}`, wantErr: `argument "n" must be greater than 0; got 0`},
		"integer accepted as number":          {args: `{"n":3}`, want: `{"n":3}`},
		"not JSON":                            {args: `{`, wantErr: "arguments must be a JSON object"},
		"item enum":                           {args: `{"kinds":["a","file"]}`, wantErr: `argument "kinds" item 2 must be one of "a", "b"`},
		"item type":                           {args: `{"kinds":[1]}`, wantErr: `argument "kinds" item 1 must be of type string; got integer`},
		"items valid":                         {args: `{"kinds":["b","a"]}`, want: `{"kinds":["b","a"]}`},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			got, err := tl.ValidateArguments(json.RawMessage(tc.args))
			if tc.wantErr != "" {
				var ae *ArgumentError
				if !errors.As(err, &ae) || !strings.Contains(err.Error(), tc.wantErr) || !errors.Is(err, ErrInvalidArguments) {
					t.Fatalf("error = %v, want an ArgumentError containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil || string(got) != tc.want {
				t.Fatalf("got %s, %v; want %s", got, err, tc.want)
			}
		})
	}
}

func TestBuildWithClaims(t *testing.T) {
	t.Parallel()
	claim := func(provider, kind, name string) error {
		if kind == "tool" && name == "owned_tool" && provider != "owner" {
			return errors.New("owned by owner")
		}
		if kind == "resource" && name == "x://owned" && provider != "owner" {
			return errors.New("owned by owner")
		}
		return nil
	}
	c := BuildWith(nil, []Source{
		{Provider: "thief", Catalog: &sdk.Catalog{
			Tools:     []sdk.Tool{tool("owned.tool", sdk.ClassRead, obj), tool("thief.tool", sdk.ClassRead, obj)},
			Resources: []sdk.Resource{{URI: "x://owned", Name: "o"}},
		}},
		{Provider: "owner", Catalog: &sdk.Catalog{
			Tools:     []sdk.Tool{tool("owned.tool", sdk.ClassAct, obj)},
			Resources: []sdk.Resource{{URI: "x://owned", Name: "o"}},
		}},
	}, claim)
	if tl, ok := c.Tool("owned.tool"); !ok || tl.Provider != "owner" {
		t.Errorf("owned.tool = %+v, %v; want the owner's, though the thief came first", tl, ok)
	}
	if r, ok := c.Resource("x://owned"); !ok || r.Provider != "owner" {
		t.Errorf("x://owned = %+v, %v", r, ok)
	}
	if _, ok := c.Tool("thief.tool"); !ok {
		t.Error("the thief's own tool was refused")
	}
}

// TestClientSafeNames checks that every advertised tool and prompt name
// matches ^[a-zA-Z0-9_-]{1,64}$, that declared and dotted names still find
// them, and that two declared names with one client-safe name are not
// both served.
func TestClientSafeNames(t *testing.T) {
	t.Parallel()
	long := "kit." + strings.Repeat("very_long_name_", 6) + "end"
	c := Build(nil, []Source{
		{Provider: "first", Catalog: &sdk.Catalog{
			Tools:   []sdk.Tool{tool("kit.ping", sdk.ClassRead, obj), tool(long, sdk.ClassRead, obj), tool("plain_name", sdk.ClassAct, obj)},
			Prompts: []sdk.Prompt{{Name: "kit.summary"}},
		}},
		{Provider: "second", Catalog: &sdk.Catalog{
			// kit_ping is what kit.ping is advertised as: refused, not renamed.
			Tools:   []sdk.Tool{tool("kit_ping", sdk.ClassAct, obj), tool("second.tool", sdk.ClassRead, obj)},
			Prompts: []sdk.Prompt{{Name: "kit_summary"}},
		}},
	})
	type entry struct{ Name, Declared, Provider string }
	var tools []entry
	for _, tl := range c.Tools() {
		if !sdk.IsClientName(tl.Name) {
			t.Errorf("advertised tool name %q does not match ^[a-zA-Z0-9_-]{1,64}$", tl.Name)
		}
		tools = append(tools, entry{tl.Name, tl.Declared, tl.Provider})
	}
	longName := sdk.ClientName(long)
	want := []entry{
		{"kit_ping", "kit.ping", "first"},
		{longName, long, "first"},
		{"plain_name", "plain_name", "first"},
		{"second_tool", "second.tool", "second"},
	}
	if diff := cmp.Diff(want, tools); diff != "" {
		t.Errorf("tools (-want +got):\n%s", diff)
	}
	if len(longName) != 64 {
		t.Errorf("long name advertised as %q (%d bytes), want 64 bytes", longName, len(longName))
	}
	for _, name := range []string{"kit_ping", "kit.ping"} {
		if tl, ok := c.Tool(name); !ok || tl.Provider != "first" || tl.Declared != "kit.ping" {
			t.Errorf("Tool(%q) = %+v, %v; want first's kit.ping", name, tl, ok)
		}
	}
	if tl, ok := c.Tool(long); !ok || tl.Name != longName {
		t.Errorf("Tool(declared long name) = %+v, %v", tl, ok)
	}
	var prompts []entry
	for _, p := range c.Prompts() {
		prompts = append(prompts, entry{p.Name, p.Declared, p.Provider})
	}
	if diff := cmp.Diff([]entry{{"kit_summary", "kit.summary", "first"}}, prompts); diff != "" {
		t.Errorf("prompts (-want +got):\n%s", diff)
	}
	if p, ok := c.Prompt("kit.summary"); !ok || p.Name != "kit_summary" {
		t.Errorf("Prompt(kit.summary) = %+v, %v", p, ok)
	}
}
