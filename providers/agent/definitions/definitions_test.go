package definitions

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

var defTestBuiltinIDs = []string{"archivist", "critic", "help", "orchestrator", "planner", "researcher", "summarizer"}

// defTestActTools are the write tools of the memory provider.
var defTestActTools = []string{"memory_store", "memory_note", "tree_tag"}

func TestBuiltinsParseAndValidate(t *testing.T) {
	defs := Builtins()
	var ids []string
	for _, d := range defs {
		ids = append(ids, d.ID)
	}
	if diff := cmp.Diff(defTestBuiltinIDs, ids); diff != "" {
		t.Fatalf("built-in ids (-want +got):\n%s", diff)
	}

	// Parse the embedded files again, reporting every error instead of
	// panicking on the first.
	sub, err := fs.Sub(builtinFiles, "builtin")
	if err != nil {
		t.Fatal(err)
	}
	_, errs, err := loadFS(sub, func(n string) string { return "builtin/" + n }, func(string) string { return BuiltinSource })
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range errs {
		t.Errorf("embedded definition: %v", e)
	}

	for _, d := range defs {
		if d.Source != BuiltinSource {
			t.Errorf("%s: Source = %q, want %q", d.ID, d.Source, BuiltinSource)
		}
		if !d.MCPRunnable {
			t.Errorf("%s: built-ins are all runnable by MCP clients", d.ID)
		}
		if d.Model != "" || d.Temperature != nil {
			t.Errorf("%s: built-ins leave model and temperature to the configured endpoint", d.ID)
		}
		if d.ID == "orchestrator" {
			if d.MaxIterations != 12 {
				t.Errorf("orchestrator: MaxIterations = %d, want 12", d.MaxIterations)
			}
		} else if d.MaxIterations < 6 || d.MaxIterations > 10 {
			t.Errorf("%s: MaxIterations = %d, want 6..10", d.ID, d.MaxIterations)
		}
		if d.DisplayName == "" || d.WhenToUse == "" || len(d.Prompt) < 500 {
			t.Errorf("%s: display name, when-to-use or prompt missing or too short", d.ID)
		}
		if !strings.HasPrefix(d.Prompt, "# ") {
			t.Errorf("%s: prompt should start with a Markdown heading", d.ID)
		}
		for _, tool := range d.Tools {
			if tool == "*" {
				t.Errorf("%s: built-ins name their tools; none uses \"*\"", d.ID)
			}
		}
	}
}

func TestBuiltinScopes(t *testing.T) {
	byID := map[string]Definition{}
	for _, d := range Builtins() {
		byID[d.ID] = d
	}
	readMemory := []string{"memory_search", "memory_recall", "tree_read_chunk", "tree_browse", "tree_list_sources", "tree_top_entities"}
	tests := []struct {
		id    string
		allow []string
		deny  []string
	}{
		{"orchestrator", append([]string{"agent_run_subagent", "agent_list_subagents", "core_list_tools"}, readMemory...),
			append([]string{"searxng_search", "core_tool_instructions"}, defTestActTools...)},
		{"researcher", append(append([]string{"searxng_search"}, readMemory...), defTestActTools...),
			[]string{"agent_run_subagent", "agent_list_subagents", "core_list_tools"}},
		{"archivist", []string{"memory_store", "memory_note", "tree_tag", "memory_search", "tree_read_chunk"},
			[]string{"memory_recall", "tree_browse", "searxng_search", "agent_run_subagent"}},
		{"summarizer", nil, append(append([]string{"searxng_search", "core_list_tools", "agent_run_subagent"}, readMemory...), defTestActTools...)},
		{"critic", readMemory, append([]string{"searxng_search", "agent_run_subagent"}, defTestActTools...)},
		{"planner", readMemory, append([]string{"searxng_search", "agent_run_subagent"}, defTestActTools...)},
		{"help", []string{"core_list_tools"}, append(append([]string{"core_tool_instructions", "agent_run_subagent", "searxng_search"}, readMemory...), defTestActTools...)},
	}
	for _, tt := range tests {
		d, ok := byID[tt.id]
		if !ok {
			t.Errorf("no built-in %q", tt.id)
			continue
		}
		for _, tool := range tt.allow {
			if !d.Allows(tool) {
				t.Errorf("%s: Allows(%q) = false, want true", tt.id, tool)
			}
		}
		for _, tool := range tt.deny {
			if d.Allows(tool) {
				t.Errorf("%s: Allows(%q) = true, want false", tt.id, tool)
			}
		}
	}
	if len(byID["summarizer"].Tools) != 0 {
		t.Errorf("summarizer has tools %q, want none", byID["summarizer"].Tools)
	}
	// The orchestrator's prompt introduces every other built-in.
	for _, id := range defTestBuiltinIDs {
		if id != "orchestrator" && !strings.Contains(byID["orchestrator"].Prompt, "`"+id+"`") {
			t.Errorf("orchestrator prompt does not mention `%s`", id)
		}
	}
}

func TestBuiltinsReturnsCopies(t *testing.T) {
	a := Builtins()
	a[0].Tools[0] = "changed"
	a[0].Prompt = "changed"
	b := Builtins()
	if b[0].Tools[0] == "changed" || b[0].Prompt == "changed" {
		t.Fatal("Builtins shares state between calls")
	}
}

func TestPromptResourcesMatchBuiltins(t *testing.T) {
	defs := Builtins()
	res := PromptResources(defs)
	wantFixed := []string{"openhuman://prompts/identity", "openhuman://prompts/soul", "openhuman://prompts/user"}
	if len(res) != len(wantFixed)+len(defs) {
		t.Fatalf("got %d resources, want %d", len(res), len(wantFixed)+len(defs))
	}
	for i, uri := range wantFixed {
		if res[i].URI != uri {
			t.Errorf("resource %d: URI %q, want %q", i, res[i].URI, uri)
		}
	}

	builtinIDs := map[string]Definition{}
	for _, d := range defs {
		builtinIDs[d.ID] = d
	}
	agentIDs := map[string]bool{}
	seen := map[string]bool{}
	for _, r := range res {
		if seen[r.URI] {
			t.Errorf("duplicate resource %s", r.URI)
		}
		seen[r.URI] = true
		if r.Name == "" || r.Title == "" || r.Description == "" || strings.TrimSpace(r.Text) == "" {
			t.Errorf("%s: name, title, description and text are all required: %+v", r.URI, r)
		}
		if r.URI != "openhuman://prompts/"+r.Name {
			t.Errorf("%s: Name %q does not match the URI", r.URI, r.Name)
		}
		id, ok := strings.CutPrefix(r.URI, "openhuman://prompts/agents/")
		if !ok {
			continue
		}
		agentIDs[id] = true
		d, ok := builtinIDs[id]
		if !ok {
			t.Errorf("resource %s has no built-in sub-agent", r.URI)
			continue
		}
		if r.Text != d.Prompt {
			t.Errorf("%s: text is not the sub-agent's prompt", r.URI)
		}
	}
	for id := range builtinIDs {
		if !agentIDs[id] {
			t.Errorf("built-in %q has no openhuman://prompts/agents/%s resource", id, id)
		}
	}
	// The order of the agents follows the definitions given.
	var order []string
	for _, r := range res[len(wantFixed):] {
		order = append(order, strings.TrimPrefix(r.Name, "agents/"))
	}
	if diff := cmp.Diff(defTestBuiltinIDs, order); diff != "" {
		t.Errorf("agent resource order (-want +got):\n%s", diff)
	}
}

func TestPromptResourcesFixedTexts(t *testing.T) {
	res := PromptResources(nil)
	if len(res) != 3 {
		t.Fatalf("got %d resources for no definitions, want 3", len(res))
	}
	for _, r := range res {
		if !strings.HasPrefix(r.Text, "# ") {
			t.Errorf("%s: text should start with a Markdown heading", r.URI)
		}
	}
	if !strings.Contains(res[2].Text, "memory_recall") || !strings.Contains(res[2].Text, "memory_search") {
		t.Error("the user template should say how to learn more through memory_search and memory_recall")
	}
}

// defTestWrite creates files (name → content) in a new directory; a name
// ending in "/" makes a directory.
func defTestWrite(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, content := range files {
		p := filepath.Join(dir, name)
		if strings.HasSuffix(name, "/") {
			if err := os.MkdirAll(p, 0o755); err != nil {
				t.Fatal(err)
			}
			continue
		}
		// Map order is random: a file may come before its directory.
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// defTestMessages returns the messages of the *DefinitionErrors err joins,
// failing on any other error.
func defTestMessages(t *testing.T, err error) []string {
	t.Helper()
	var out []string
	var walk func(error)
	walk = func(e error) {
		if j, ok := e.(interface{ Unwrap() []error }); ok {
			for _, x := range j.Unwrap() {
				walk(x)
			}
			return
		}
		var de *Error
		if !errors.As(e, &de) {
			t.Fatalf("error %v is a %T, not a *Error", e, e)
		}
		out = append(out, de.Error())
	}
	if err != nil {
		walk(err)
	}
	return out
}

const defTestHead = "display_name = \"Test\"\nwhen_to_use = \"Use for tests.\"\n"

func TestLoadDirErrors(t *testing.T) {
	const valid = defTestHead + "prompt = \"Do it.\"\n"
	const keys = "valid keys are display_name, id, max_iterations, mcp_runnable, model, prompt, temperature, tools, when_to_use"
	const toolsWant = `must be an array of tool names and patterns, such as ["memory_search", "tree_*"], or the string "*" for every tool`
	tests := []struct {
		name  string
		files map[string]string
		want  []string // "{dir}" stands for the directory
	}{
		{"unknown key with a likely meaning", map[string]string{"a.toml": valid + "displayname = \"x\"\n"},
			[]string{"{dir}/a.toml:4: displayname: unknown key (did you mean display_name?); " + keys}},
		{"unknown key and table", map[string]string{"a.toml": valid + "colour = \"red\"\n\n[extra]\nx = 1\n"},
			[]string{"{dir}/a.toml:4: colour: unknown key; " + keys, "{dir}/a.toml:6: extra: unknown key; " + keys}},
		{"bad id", map[string]string{"Bad Name.toml": valid},
			[]string{`{dir}/Bad Name.toml: id: "Bad Name" (the file name without .toml) is not a valid id: use 1 to 64 characters from a-z, 0-9, "_" and "-", starting with a letter; rename the file, for example to bad-name.toml`}},
		{"bad id without a suggestion", map[string]string{"_.toml": valid},
			[]string{`{dir}/_.toml: id: "_" (the file name without .toml) is not a valid id: use 1 to 64 characters from a-z, 0-9, "_" and "-", starting with a letter; rename the file`}},
		{"id not the stem", map[string]string{"a.toml": "id = \"b\"\n" + valid},
			[]string{`{dir}/a.toml:1: id: is "b" but the file is a.toml; the id must equal the file name without .toml: write id = "a", remove the key, or rename the file`}},
		{"id not a string", map[string]string{"a.toml": "id = 1\n" + valid},
			[]string{`{dir}/a.toml:1: id: must be a string equal to the file name without .toml ("a"); got an integer`}},
		{"prompt inline and in .md", map[string]string{"a.toml": valid, "a.md": "# A\n"},
			[]string{"{dir}/a.toml:3: prompt: set both here and in a.md; keep exactly one: remove the prompt key or the file a.md"}},
		{"no prompt", map[string]string{"a.toml": defTestHead},
			[]string{`{dir}/a.toml: prompt: missing; write prompt = """...""" in this file, or put the prompt in a.md beside it`}},
		{"empty prompt", map[string]string{"a.toml": defTestHead + "prompt = \"\"\"\n  \n\"\"\"\n"},
			[]string{"{dir}/a.toml:3: prompt: is empty; write the system prompt, or put it in a.md beside this file"}},
		{"empty .md", map[string]string{"a.toml": defTestHead, "a.md": "\n\n"},
			[]string{"{dir}/a.md: prompt: the file is empty; write the system prompt in it"}},
		{"orphan .md", map[string]string{"a.toml": valid, "b.md": "# B\n"},
			[]string{"{dir}/b.md: prompt file without a definition: add b.toml beside it (with display_name and when_to_use), or remove it"}},
		{"temperature 3", map[string]string{"a.toml": valid + "temperature = 3\n"},
			[]string{"{dir}/a.toml:4: temperature: is 3; use a number from 0 to 2, or remove the key for the endpoint's default"}},
		{"temperature negative float", map[string]string{"a.toml": valid + "temperature = -0.5\n"},
			[]string{"{dir}/a.toml:4: temperature: is -0.5; use a number from 0 to 2, or remove the key for the endpoint's default"}},
		{"temperature a string", map[string]string{"a.toml": valid + "temperature = \"0.5\"\n"},
			[]string{"{dir}/a.toml:4: temperature: must be a number from 0 to 2; got a string"}},
		{"max_iterations 0", map[string]string{"a.toml": valid + "max_iterations = 0\n"},
			[]string{"{dir}/a.toml:4: max_iterations: is 0; use an integer from 1 to 50, or remove the key for the default of 8"}},
		{"max_iterations 51", map[string]string{"a.toml": valid + "max_iterations = 51\n"},
			[]string{"{dir}/a.toml:4: max_iterations: is 51; use an integer from 1 to 50, or remove the key for the default of 8"}},
		{"max_iterations a float", map[string]string{"a.toml": valid + "max_iterations = 5.0\n"},
			[]string{"{dir}/a.toml:4: max_iterations: must be an integer from 1 to 50; got a float"}},
		{"tools an integer", map[string]string{"a.toml": valid + "tools = 5\n"},
			[]string{"{dir}/a.toml:4: tools: " + toolsWant + "; got an integer"}},
		{"tools a table", map[string]string{"a.toml": valid + "[tools]\nx = \"memory_search\"\n"},
			[]string{"{dir}/a.toml:4: tools: " + toolsWant + "; got a table"}},
		{"tools a string other than *", map[string]string{"a.toml": valid + "tools = \"memory_search\"\n"},
			[]string{"{dir}/a.toml:4: tools: " + toolsWant + `; got the string "memory_search": write tools = ["memory_search"]`}},
		{"tools elements", map[string]string{"a.toml": valid + "tools = [\n  \"memory_search\",\n  7,\n  \"\",\n  \"memory search\",\n  \"memory.[\",\n]\n"},
			[]string{
				"{dir}/a.toml:6: tools[1]: must be a string; got an integer",
				`{dir}/a.toml:7: tools[2]: is empty; write a tool name such as "memory_search" or a pattern such as "memory_*"`,
				`{dir}/a.toml:8: tools[3]: "memory search" contains white space, which no tool name has; write a tool name such as "memory_search" or a pattern such as "memory_*"`,
				`{dir}/a.toml:9: tools[4]: "memory.[" is not a valid pattern (check its [ ] brackets and \ escapes); write a tool name such as "memory_search" or a pattern such as "memory_*"`,
			}},
		{"display_name missing", map[string]string{"a.toml": "when_to_use = \"Use for tests.\"\nprompt = \"Do it.\"\n"},
			[]string{`{dir}/a.toml: display_name: missing; write display_name = "Research assistant"`}},
		{"display_name empty", map[string]string{"a.toml": "display_name = \"  \"\nwhen_to_use = \"Use for tests.\"\nprompt = \"Do it.\"\n"},
			[]string{`{dir}/a.toml:1: display_name: is empty; write display_name = "Research assistant"`}},
		{"display_name too long", map[string]string{"a.toml": "display_name = \"" + strings.Repeat("é", 81) + "\"\nwhen_to_use = \"Use for tests.\"\nprompt = \"Do it.\"\n"},
			[]string{"{dir}/a.toml:1: display_name: is 81 characters long; shorten it to at most 80"}},
		{"display_name two lines", map[string]string{"a.toml": "display_name = \"A\\nB\"\nwhen_to_use = \"Use for tests.\"\nprompt = \"Do it.\"\n"},
			[]string{"{dir}/a.toml:1: display_name: must be one line; move details to when_to_use"}},
		{"when_to_use too long", map[string]string{"a.toml": "display_name = \"A\"\nwhen_to_use = \"" + strings.Repeat("x", 1001) + "\"\nprompt = \"Do it.\"\n"},
			[]string{"{dir}/a.toml:2: when_to_use: is 1001 characters long; shorten it to at most 1000"}},
		{"when_to_use wrong type", map[string]string{"a.toml": "display_name = \"A\"\nwhen_to_use = [\"x\"]\nprompt = \"Do it.\"\n"},
			[]string{"{dir}/a.toml:2: when_to_use: must be a string; got an array"}},
		{"model empty", map[string]string{"a.toml": valid + "model = \"\"\n"},
			[]string{"{dir}/a.toml:4: model: is empty; write a model name, or remove the key to use [providers.agent.llm] model"}},
		{"mcp_runnable a string", map[string]string{"a.toml": valid + "mcp_runnable = \"yes\"\n"},
			[]string{"{dir}/a.toml:4: mcp_runnable: must be true or false; got a string"}},
		{"several errors in line order", map[string]string{"a.toml": "max_iterations = 0\ntemperature = 9\nwhen_to_use = \"x\"\n"},
			[]string{
				`{dir}/a.toml: display_name: missing; write display_name = "Research assistant"`,
				`{dir}/a.toml: prompt: missing; write prompt = """...""" in this file, or put the prompt in a.md beside it`,
				"{dir}/a.toml:1: max_iterations: is 0; use an integer from 1 to 50, or remove the key for the default of 8",
				"{dir}/a.toml:2: temperature: is 9; use a number from 0 to 2, or remove the key for the endpoint's default",
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := defTestWrite(t, tt.files)
			defs, err := LoadDir(dir)
			if err == nil {
				t.Fatalf("LoadDir succeeded with %+v", defs)
			}
			var want []string
			for _, w := range tt.want {
				want = append(want, strings.ReplaceAll(w, "{dir}/", dir+string(filepath.Separator)))
			}
			if diff := cmp.Diff(want, defTestMessages(t, err)); diff != "" {
				t.Errorf("errors (-want +got):\n%s", diff)
			}
			for _, d := range defs {
				if d.ID == "a" && tt.name != "orphan .md" {
					t.Errorf("invalid definition a was returned: %+v", d)
				}
			}
		})
	}
}

func TestLoadDirSyntaxError(t *testing.T) {
	dir := defTestWrite(t, map[string]string{"a.toml": defTestHead + "prompt = \"Do it.\"\ntools = [\"x\"\n"})
	_, err := LoadDir(dir)
	msgs := defTestMessages(t, err)
	prefix := filepath.Join(dir, "a.toml") + ":"
	if len(msgs) != 1 || !strings.HasPrefix(msgs[0], prefix) || !strings.Contains(msgs[0], "not valid TOML: ") {
		t.Fatalf("got %q, want one error starting %q about invalid TOML", msgs, prefix)
	}
	var de *Error
	if !errors.As(err, &de) || de.Line < 4 {
		t.Errorf("syntax error should carry its line: %+v", de)
	}
}

func TestLoadDirReturnsValidDefinitionsBesideInvalid(t *testing.T) {
	dir := defTestWrite(t, map[string]string{
		"good.toml": defTestHead + "prompt = \"Do it.\"\n",
		"bad.toml":  defTestHead + "prompt = \"Do it.\"\ntemperature = 3\n",
	})
	defs, err := LoadDir(dir)
	if len(defs) != 1 || defs[0].ID != "good" {
		t.Errorf("got %+v, want the good definition only", defs)
	}
	var de *Error
	if !errors.As(err, &de) || de.File != filepath.Join(dir, "bad.toml") || de.Line != 4 || de.Field != "temperature" {
		t.Errorf("got error %v (%+v), want bad.toml:4 temperature", err, de)
	}
}

func TestLoadDirUserDefinitions(t *testing.T) {
	dir := defTestWrite(t, map[string]string{
		"researcher.toml": `# My own researcher.
id = "researcher"
display_name = "Local researcher"
when_to_use = "Use for research that stays on this machine."
model = "llama3.1:8b"
temperature = 0.2
max_iterations = 20
tools = "*"
mcp_runnable = false
`,
		"researcher.md": "\n# Local researcher\n\nSearch memory only.\n\n",
		"translator.toml": `display_name = "Translator"
when_to_use = "Use to translate text between languages."
prompt = """
Translate the text you are given.
"""
temperature = 1
tools = ["memory_search", "tree.*", "agent_run_subagent"]
`,
		// Ignored: hidden files, other extensions, directories.
		".draft.toml":      "not = [valid",
		".hidden.md":       "# hidden",
		"notes.txt":        "x",
		"README":           "x",
		"backup.toml~":     "x",
		"folder.toml/":     "",
		"folder.toml/x.md": "x",
	})
	defs, err := LoadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	temp02, temp1 := 0.2, 1.0
	want := []Definition{
		{
			ID: "researcher", DisplayName: "Local researcher", WhenToUse: "Use for research that stays on this machine.",
			Prompt: "# Local researcher\n\nSearch memory only.", Model: "llama3.1:8b", Temperature: &temp02,
			MaxIterations: 20, Tools: []string{"*"}, MCPRunnable: false, Source: filepath.Join(dir, "researcher.toml"),
		},
		{
			ID: "translator", DisplayName: "Translator", WhenToUse: "Use to translate text between languages.",
			Prompt: "Translate the text you are given.", Temperature: &temp1, MaxIterations: 8,
			Tools:       []string{"memory_search", "tree.*", "agent_run_subagent"},
			MCPRunnable: true, Source: filepath.Join(dir, "translator.toml"),
		},
	}
	if diff := cmp.Diff(want, defs); diff != "" {
		t.Fatalf("definitions (-want +got):\n%s", diff)
	}

	merged := Merge(Builtins(), defs)
	var ids []string
	for _, d := range merged {
		ids = append(ids, d.ID)
	}
	wantIDs := append(slices.Clone(defTestBuiltinIDs), "translator")
	if diff := cmp.Diff(wantIDs, ids); diff != "" {
		t.Errorf("merged ids (-want +got):\n%s", diff)
	}
	for _, d := range merged {
		switch d.ID {
		case "researcher", "translator":
			if d.Source != filepath.Join(dir, d.ID+".toml") {
				t.Errorf("%s: Source %q, want the user's file", d.ID, d.Source)
			}
		default:
			if d.Source != BuiltinSource {
				t.Errorf("%s: Source %q, want %q", d.ID, d.Source, BuiltinSource)
			}
		}
	}
	// Merge copies: changing its result leaves the inputs alone.
	for i := range merged {
		if merged[i].ID == "translator" {
			merged[i].Tools[0] = "changed"
			*merged[i].Temperature = 2
		}
	}
	if defs[1].Tools[0] != "memory_search" || *defs[1].Temperature != 1 {
		t.Error("Merge's result shares memory with its input")
	}
}

func TestLoadDirMissingAndNotADirectory(t *testing.T) {
	defs, err := LoadDir(filepath.Join(t.TempDir(), "agents"))
	if defs != nil || err != nil {
		t.Errorf("missing dir: got %v, %v; want nil, nil", defs, err)
	}
	defs, err = LoadDir(t.TempDir())
	if defs != nil || err != nil {
		t.Errorf("empty dir: got %v, %v; want nil, nil", defs, err)
	}
	file := filepath.Join(t.TempDir(), "agents")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	defs, err = LoadDir(file)
	if defs != nil || err == nil || !strings.Contains(err.Error(), "is not a directory") {
		t.Errorf("file as dir: got %v, %v; want an error saying it is not a directory", defs, err)
	}
}

func TestAllows(t *testing.T) {
	tests := []struct {
		name  string
		tools []string
		allow []string
		deny  []string
	}{
		{"none", nil, nil, []string{"memory_search", "core_list_tools", "agent_run_subagent", ""}},
		{"star", []string{"*"},
			[]string{"memory_search", "memory_store", "searxng_search", "core_list_tools", "core_tool_instructions", "agent_list_subagents", "ext__tool"},
			[]string{"agent_run_subagent", ""}},
		{"star and run_subagent by name", []string{"*", "agent_run_subagent"},
			[]string{"memory_search", "agent_run_subagent"}, nil},
		{"exact", []string{"memory_search", "core_list_tools"},
			[]string{"memory_search", "core_list_tools"},
			[]string{"memory_store", "memory_search.x", "memory", "core_tool_instructions"}},
		{"glob", []string{"memory.*", "tree.read_*"},
			[]string{"memory_search", "memory_store", "tree_read_chunk"},
			[]string{"tree_tag", "tree_browse", "memorysearch", "searxng_search"}},
		{"glob never grants run_subagent", []string{"agent.*", "*.run_subagent", "agent.run_*"},
			[]string{"agent_list_subagents"},
			[]string{"agent_run_subagent"}},
		{"old dotted names", []string{"memory.search", "agent.run_subagent"},
			[]string{"memory_search", "agent_run_subagent"},
			[]string{"memory_store", "agent_list_subagents"}},
		{"client-safe glob", []string{"memory_*", "tree_read_*"},
			[]string{"memory_search", "memory_store", "tree_read_chunk"},
			[]string{"tree_tag", "searxng_search"}},
		{"run_subagent by name only", []string{"agent_run_subagent"},
			[]string{"agent_run_subagent"},
			[]string{"agent_list_subagents", "memory_search"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := Definition{ID: "x", Tools: tt.tools}
			for _, tool := range tt.allow {
				if !d.Allows(tool) {
					t.Errorf("Allows(%q) = false, want true", tool)
				}
			}
			for _, tool := range tt.deny {
				if d.Allows(tool) {
					t.Errorf("Allows(%q) = true, want false", tool)
				}
			}
		})
	}
}

func TestMergeUserWins(t *testing.T) {
	builtins := []Definition{{ID: "b", Source: BuiltinSource}, {ID: "a", Source: BuiltinSource}}
	user := []Definition{{ID: "c", Source: "/u/c.toml"}, {ID: "a", Source: "/u/a.toml"}}
	got := Merge(builtins, user)
	want := []Definition{{ID: "a", Source: "/u/a.toml"}, {ID: "b", Source: BuiltinSource}, {ID: "c", Source: "/u/c.toml"}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Merge (-want +got):\n%s", diff)
	}
	if len(Merge(nil, nil)) != 0 {
		t.Error("Merge of nothing should be empty")
	}
}

func TestDefinitionErrorFormat(t *testing.T) {
	tests := []struct {
		err  Error
		want string
	}{
		{Error{File: "a.toml", Line: 3, Field: "tools", Message: "bad"}, "a.toml:3: tools: bad"},
		{Error{File: "a.toml", Field: "prompt", Message: "missing"}, "a.toml: prompt: missing"},
		{Error{File: "b.md", Message: "orphan"}, "b.md: orphan"},
	}
	for _, tt := range tests {
		if got := tt.err.Error(); got != tt.want {
			t.Errorf("got %q, want %q", got, tt.want)
		}
	}
}

func TestLoadDirBOMAndSize(t *testing.T) {
	t.Parallel()
	dir := defTestWrite(t, map[string]string{
		"bom.toml": "\xef\xbb\xbfdisplay_name = \"B\"\nwhen_to_use = \"w\"\nprompt = \"p\"\n",
		"big.toml": "display_name = \"Big\"\nwhen_to_use = \"w\"\n",
		"big.md":   strings.Repeat("x", maxFileBytes+1),
	})
	defs, err := LoadDir(dir)
	if len(defs) != 1 || defs[0].ID != "bom" {
		t.Errorf("definitions = %+v", defs)
	}
	if err == nil || !strings.Contains(err.Error(), "big.md") || !strings.Contains(err.Error(), "larger than 1024 KiB") {
		t.Errorf("error = %v", err)
	}
}
