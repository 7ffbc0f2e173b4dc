// Package definitions loads and validates the agent provider's sub-agent
// definitions: the built-ins embedded in the binary ([Builtins]), the
// user's own `<id>.toml` files ([LoadDir]), the two merged ([Merge]), and
// the Markdown prompt documents served as MCP resources
// ([PromptResources]). Invalid files are reported as [Error] values naming
// the file, line and key.
package definitions

import (
	"bytes"
	"embed"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"

	"github.com/pelletier/go-toml/v2"
	"github.com/pelletier/go-toml/v2/unstable"

	"github.com/openhuman/openhuman-host/providers/agent/agenttool"
	"github.com/openhuman/openhuman-host/sdk"
)

// Definition is one sub-agent: who it is, the system prompt it runs with, the
// limits of its loop and the host tools it may call.
//
// Definitions come from `<id>.toml` files (and an optional `<id>.md` beside
// each holding the prompt): the built-ins embedded in the binary (Builtins)
// and the user's own directory (LoadDir). Every Definition returned by this
// package has passed validation, so its fields hold the documented values.
type Definition struct {
	// ID names the sub-agent in agent_run_subagent's agent_id: the file name
	// without ".toml", matching ^[a-z][a-z0-9_-]{0,63}$.
	ID string
	// DisplayName is a short human-readable name: one line, 1 to 80
	// characters.
	DisplayName string
	// WhenToUse tells the orchestrating model when to pick this sub-agent, in
	// one or two sentences: 1 to 1000 characters.
	WhenToUse string
	// Prompt is the system prompt, in Markdown; never empty. Leading and
	// trailing white space is removed.
	Prompt string
	// Model overrides the model of [providers.agent.llm] for this sub-agent;
	// empty means the configured model.
	Model string
	// Temperature is the sampling temperature, 0 to 2; nil leaves it to the
	// endpoint's default.
	Temperature *float64
	// MaxIterations bounds the model requests of one run: 1 to 50, 8 when the
	// file does not set it.
	MaxIterations int
	// Tools is the tool scope, as written in the file: "*" for every host
	// tool, exact tool names ("memory_store") or path.Match patterns
	// ("memory_*"); dots match "_" ([sdk.ClientNameGlob]), so entries
	// written with the old dotted names ("memory.*") keep their meaning.
	// Empty (nil) means the sub-agent calls no tools. See Allows for how it
	// is applied.
	Tools []string
	// MCPRunnable reports whether agent_run_subagent may run this sub-agent
	// for an MCP client; false keeps it for other sub-agents only. True when
	// the file does not set it.
	MCPRunnable bool
	// Source is BuiltinSource for a built-in, else the path of the
	// definition's TOML file.
	Source string
}

// BuiltinSource is the Source of every built-in Definition.
const BuiltinSource = "builtin"

// Error is one problem with a definition file. LoadDir returns
// these, joined with errors.Join when there are several, ordered by file and
// line; use errors.As (or the Unwrap() []error of the joined error) to read
// them one by one.
type Error struct {
	// File is the path of the file at fault: a definition's .toml, or a .md
	// prompt file.
	File string
	// Line is the 1-based line in File, 0 when the problem has no line (a
	// missing key, a whole file).
	Line int
	// Field is the definition key at fault, such as "temperature" or
	// "tools[2]"; empty when the problem is the file itself.
	Field string
	// Message says what is wrong and what to write instead.
	Message string
}

// Error formats e as "file:line: field: message", leaving out the line when
// it is 0 and the field when it is empty.
func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString(e.File)
	if e.Line > 0 {
		b.WriteString(":")
		b.WriteString(strconv.Itoa(e.Line))
	}
	if e.Field != "" {
		b.WriteString(": ")
		b.WriteString(e.Field)
	}
	b.WriteString(": ")
	b.WriteString(e.Message)
	return b.String()
}

// Limits and defaults of a definition file.
const (
	defaultIterations  = 8
	maxIterationsLimit = 50
	maxDisplayName     = 80
	maxWhenToUse       = 1000
	maxTemperature     = 2.0
	// nestingTool is the one tool a scope must name exactly: "*"
	// and patterns never grant it.
	nestingTool = agenttool.RunSubagent
)

var idPattern = regexp.MustCompile(`^[a-z][a-z0-9_-]{0,63}$`)

// knownKeys lists the keys a definition file may hold, sorted.
var knownKeys = []string{
	"display_name", "id", "max_iterations", "mcp_runnable", "model",
	"prompt", "temperature", "tools", "when_to_use",
}

//go:embed builtin/*.toml builtin/*.md
var builtinFiles embed.FS

// builtinDefs parses the embedded definitions once.
var builtinDefs = sync.OnceValue(func() []Definition {
	sub, err := fs.Sub(builtinFiles, "builtin")
	if err != nil {
		panic("agent: built-in definitions: " + err.Error())
	}
	defs, errs, err := loadFS(sub,
		func(name string) string { return "builtin/" + name },
		func(string) string { return BuiltinSource })
	if err != nil {
		panic("agent: built-in definitions: " + err.Error())
	}
	if len(errs) > 0 {
		panic("agent: invalid built-in definitions: " + joinErrors(errs).Error())
	}
	return defs
})

// Builtins returns the sub-agents built into openhuman-host, sorted by ID,
// with Source BuiltinSource. They are parsed from the embedded files the
// first time it is called; each call returns a fresh copy the caller may
// modify. It panics only if an embedded file is invalid, which the package's
// tests rule out.
func Builtins() []Definition {
	return cloneAll(builtinDefs())
}

// LoadDir reads the user's definitions from the files directly inside dir
// (subdirectories are not read) and returns the valid ones sorted by ID, with
// Source set to each TOML file's path.
//
// A definition is `<id>.toml`, optionally with its prompt in `<id>.md` beside
// it. Hidden files (names starting with ".") and files whose names end in
// neither ".toml" nor ".md" are ignored. A missing dir gives (nil, nil). Every
// invalid file is reported as a *Error, joined with errors.Join,
// while the valid definitions are still returned; any other failure (dir
// unreadable or not a directory) returns a nil slice and that error.
func LoadDir(dir string) ([]Definition, error) {
	info, err := os.Stat(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("agent definitions: %w", err)
	}
	if !info.IsDir() {
		return nil, fmt.Errorf("agent definitions: %s is not a directory", dir)
	}
	defs, errs, err := loadFS(os.DirFS(dir),
		func(name string) string { return filepath.Join(dir, name) },
		func(file string) string { return file })
	if err != nil {
		return nil, fmt.Errorf("agent definitions: %s: %w", dir, err)
	}
	if len(errs) > 0 {
		return defs, joinErrors(errs)
	}
	return defs, nil
}

// Merge returns builtins and user together, sorted by ID: a user definition
// replaces the built-in with the same ID. Neither argument is modified; the
// result shares nothing with them.
func Merge(builtins, user []Definition) []Definition {
	byID := make(map[string]Definition, len(builtins)+len(user))
	for _, d := range builtins {
		byID[d.ID] = d
	}
	for _, d := range user {
		byID[d.ID] = d
	}
	out := make([]Definition, 0, len(byID))
	for _, d := range byID {
		out = append(out, clone(d))
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}

// Allows reports whether the sub-agent's scope lets it call the host tool
// named tool (the name the host advertises, such as "memory_search").
//
// An entry "*" allows every tool, an exact name allows that tool, and any
// other entry is a path.Match pattern ("memory_*", "tree_read_*"); dots in
// an entry match "_", so "memory.search" and "memory.*" work too. The one
// exception keeps nesting deliberate: agent_run_subagent, which starts
// another sub-agent, is allowed only by an entry naming it exactly, never by
// "*" or a pattern such as "agent_*". Other agent_* and core_* tools follow
// the scope like any tool. An empty tool name is never allowed.
func (d Definition) Allows(tool string) bool {
	if tool == "" {
		return false
	}
	for _, entry := range d.Tools {
		entry = sdk.ClientNameGlob(entry)
		if entry == tool {
			return true
		}
		if tool == nestingTool {
			continue
		}
		if entry == "*" {
			return true
		}
		if ok, err := path.Match(entry, tool); ok && err == nil {
			return true
		}
	}
	return false
}

func clone(d Definition) Definition {
	d.Tools = slices.Clone(d.Tools)
	if d.Temperature != nil {
		t := *d.Temperature
		d.Temperature = &t
	}
	return d
}

func cloneAll(defs []Definition) []Definition {
	if defs == nil {
		return nil
	}
	out := make([]Definition, len(defs))
	for i, d := range defs {
		out[i] = clone(d)
	}
	return out
}

// joinErrors orders errs by file, then line, and joins them.
func joinErrors(errs []*Error) error {
	sort.SliceStable(errs, func(i, j int) bool {
		if errs[i].File != errs[j].File {
			return errs[i].File < errs[j].File
		}
		return errs[i].Line < errs[j].Line
	})
	out := make([]error, len(errs))
	for i, e := range errs {
		out[i] = e
	}
	return errors.Join(out...)
}

// loadFS parses the definitions at the top of fsys. display turns
// a file name into the path used in errors; source turns a TOML file's
// display path into the Definition's Source. The error result is for an
// unreadable directory only.
func loadFS(fsys fs.FS, display func(name string) string, source func(file string) string) ([]Definition, []*Error, error) {
	entries, err := fs.ReadDir(fsys, ".")
	if err != nil {
		return nil, nil, err
	}
	tomls := map[string]string{} // stem → file name
	mds := map[string]string{}
	for _, e := range entries {
		name := e.Name()
		if strings.HasPrefix(name, ".") {
			continue
		}
		ext := path.Ext(name)
		if ext != ".toml" && ext != ".md" {
			continue
		}
		if !e.Type().IsRegular() {
			// Follow links; skip directories and special files.
			info, err := fs.Stat(fsys, name)
			if err != nil || !info.Mode().IsRegular() {
				continue
			}
		}
		stem := strings.TrimSuffix(name, ext)
		if ext == ".toml" {
			tomls[stem] = name
		} else {
			mds[stem] = name
		}
	}

	var errs []*Error
	for stem, md := range mds {
		if _, ok := tomls[stem]; !ok {
			errs = append(errs, &Error{
				File: display(md),
				Message: fmt.Sprintf("prompt file without a definition: add %s.toml beside it "+
					"(with display_name and when_to_use), or remove it", stem),
			})
		}
	}

	var defs []Definition
	for stem, name := range tomls {
		file := display(name)
		p := &parser{file: file, stem: stem}
		data, err := readFile(fsys, name)
		if err != nil {
			p.fail("", 0, "cannot read the file: %v", pathless(err))
			errs = append(errs, p.errs...)
			continue
		}
		// A byte order mark carries no meaning (and TOML allows none).
		data = bytes.TrimPrefix(data, []byte("\xef\xbb\xbf"))
		var md *markdown
		if mdName, ok := mds[stem]; ok {
			text, err := readFile(fsys, mdName)
			md = &markdown{name: mdName, file: display(mdName), text: bytes.TrimPrefix(text, []byte("\xef\xbb\xbf")), err: err}
		}
		d, ok := p.parse(data, md)
		errs = append(errs, p.errs...)
		if ok {
			d.Source = source(file)
			defs = append(defs, d)
		}
	}
	sort.Slice(defs, func(i, j int) bool { return defs[i].ID < defs[j].ID })
	return defs, errs, nil
}

// maxFileBytes caps one definition or prompt file: 1 MiB, far
// above any useful prompt, which is sent with every model request.
const maxFileBytes = 1 << 20

// readFile reads a file of at most maxFileBytes.
func readFile(fsys fs.FS, name string) ([]byte, error) {
	f, err := fsys.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxFileBytes+1))
	if err != nil {
		return nil, err
	}
	if len(data) > maxFileBytes {
		return nil, fmt.Errorf("larger than %d KiB; prompts are sent with every model request, so keep them short", maxFileBytes>>10)
	}
	return data, nil
}

// pathless drops the path from a *fs.PathError, which the error's
// File already names.
func pathless(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// markdown is the .md prompt file beside a definition.
type markdown struct {
	name string // file name, such as "researcher.md"
	file string // path for errors
	text []byte
	err  error // reading it failed
}

// parser validates one definition file, collecting its errors.
type parser struct {
	file  string
	stem  string
	lines map[string]int // top-level key → line
	errs  []*Error
}

func (p *parser) fail(field string, line int, format string, args ...any) {
	p.errs = append(p.errs, &Error{File: p.file, Line: line, Field: field, Message: fmt.Sprintf(format, args...)})
}

func (p *parser) parse(data []byte, md *markdown) (Definition, bool) {
	var raw map[string]any
	if err := toml.Unmarshal(data, &raw); err != nil {
		var de *toml.DecodeError
		if errors.As(err, &de) {
			line, _ := de.Position()
			p.fail(strings.Join(de.Key(), "."), line, "not valid TOML: %s",
				strings.TrimPrefix(de.Error(), "toml: "))
		} else {
			p.fail("", 0, "not valid TOML: %s", strings.TrimPrefix(err.Error(), "toml: "))
		}
		return Definition{}, false
	}
	p.lines = keyLines(data)

	var unknown []string
	for key := range raw {
		if !slices.Contains(knownKeys, key) {
			unknown = append(unknown, key)
		}
	}
	sort.Slice(unknown, func(i, j int) bool { return p.lines[unknown[i]] < p.lines[unknown[j]] })
	for _, key := range unknown {
		msg := "unknown key"
		if s := suggest(key); s != "" {
			msg += fmt.Sprintf(" (did you mean %s?)", s)
		}
		p.fail(key, p.lines[key], "%s; valid keys are %s", msg, strings.Join(knownKeys, ", "))
	}

	d := Definition{MaxIterations: defaultIterations, MCPRunnable: true}
	p.id(raw, &d)
	if s, ok := p.text(raw, "display_name", maxDisplayName, `display_name = "Research assistant"`); ok {
		if strings.ContainsAny(s, "\r\n") {
			p.fail("display_name", p.lines["display_name"], "must be one line; move details to when_to_use")
		} else {
			d.DisplayName = s
		}
	}
	if s, ok := p.text(raw, "when_to_use", maxWhenToUse,
		`when_to_use = "Use for ..." (one or two sentences for the orchestrating model)`); ok {
		d.WhenToUse = s
	}
	p.prompt(raw, md, &d)
	if v, ok := raw["model"]; ok {
		s, isStr := v.(string)
		switch {
		case !isStr:
			p.fail("model", p.lines["model"], "must be a string, such as \"gpt-4o-mini\"; got %s", sdk.DescribeValue(v))
		case strings.TrimSpace(s) == "":
			p.fail("model", p.lines["model"], "is empty; write a model name, or remove the key to use [providers.agent.llm] model")
		default:
			d.Model = strings.TrimSpace(s)
		}
	}
	p.temperature(raw, &d)
	p.maxIterations(raw, &d)
	p.tools(raw, &d)
	if v, ok := raw["mcp_runnable"]; ok {
		if b, isBool := v.(bool); isBool {
			d.MCPRunnable = b
		} else {
			p.fail("mcp_runnable", p.lines["mcp_runnable"], "must be true or false; got %s", sdk.DescribeValue(v))
		}
	}
	return d, len(p.errs) == 0
}

func (p *parser) id(raw map[string]any, d *Definition) {
	line := p.lines["id"]
	v, present := raw["id"]
	if present {
		s, ok := v.(string)
		if !ok {
			p.fail("id", line, "must be a string equal to the file name without .toml (%q); got %s", p.stem, sdk.DescribeValue(v))
			return
		}
		if s != p.stem {
			p.fail("id", line, "is %q but the file is %s.toml; the id must equal the file name without .toml: "+
				"write id = %q, remove the key, or rename the file", s, p.stem, p.stem)
			return
		}
	}
	if !idPattern.MatchString(p.stem) {
		msg := fmt.Sprintf("%q (the file name without .toml) is not a valid id: use 1 to 64 characters "+
			"from a-z, 0-9, \"_\" and \"-\", starting with a letter; rename the file", p.stem)
		if s := suggestID(p.stem); s != "" {
			msg += fmt.Sprintf(", for example to %s.toml", s)
		}
		p.fail("id", line, "%s", msg)
		return
	}
	d.ID = p.stem
}

// text reads a required one-string key of at most limit characters.
func (p *parser) text(raw map[string]any, key string, limit int, example string) (string, bool) {
	line := p.lines[key]
	v, present := raw[key]
	if !present {
		p.fail(key, 0, "missing; write %s", example)
		return "", false
	}
	s, ok := v.(string)
	if !ok {
		p.fail(key, line, "must be a string; got %s", sdk.DescribeValue(v))
		return "", false
	}
	s = strings.TrimSpace(s)
	if s == "" {
		p.fail(key, line, "is empty; write %s", example)
		return "", false
	}
	if n := utf8.RuneCountInString(s); n > limit {
		p.fail(key, line, "is %d characters long; shorten it to at most %d", n, limit)
		return "", false
	}
	return s, true
}

func (p *parser) prompt(raw map[string]any, md *markdown, d *Definition) {
	line := p.lines["prompt"]
	v, inline := raw["prompt"]
	switch {
	case inline && md != nil:
		p.fail("prompt", line, "set both here and in %s; keep exactly one: remove the prompt key or the file %s",
			md.name, md.name)
	case !inline && md == nil:
		p.fail("prompt", 0, "missing; write prompt = \"\"\"...\"\"\" in this file, or put the prompt in %s.md beside it",
			p.stem)
	case inline:
		s, ok := v.(string)
		if !ok {
			p.fail("prompt", line, "must be a string (a multi-line \"\"\"...\"\"\" string suits a prompt); got %s",
				sdk.DescribeValue(v))
			return
		}
		if strings.TrimSpace(s) == "" {
			p.fail("prompt", line, "is empty; write the system prompt, or put it in %s.md beside this file", p.stem)
			return
		}
		d.Prompt = strings.TrimSpace(s)
	default:
		switch {
		case md.err != nil:
			p.errs = append(p.errs, &Error{File: md.file, Field: "prompt",
				Message: fmt.Sprintf("cannot read the file: %v", pathless(md.err))})
		case !utf8.Valid(md.text):
			p.errs = append(p.errs, &Error{File: md.file, Field: "prompt",
				Message: "is not valid UTF-8 text; save the file as UTF-8"})
		case len(bytes.TrimSpace(md.text)) == 0:
			p.errs = append(p.errs, &Error{File: md.file, Field: "prompt",
				Message: "the file is empty; write the system prompt in it"})
		default:
			d.Prompt = strings.TrimSpace(string(md.text))
		}
	}
}

func (p *parser) temperature(raw map[string]any, d *Definition) {
	v, present := raw["temperature"]
	if !present {
		return
	}
	line := p.lines["temperature"]
	var t float64
	switch n := v.(type) {
	case float64:
		t = n
	case int64:
		t = float64(n)
	default:
		p.fail("temperature", line, "must be a number from 0 to 2; got %s", sdk.DescribeValue(v))
		return
	}
	if math.IsNaN(t) || t < 0 || t > maxTemperature {
		p.fail("temperature", line, "is %s; use a number from 0 to 2, or remove the key for the endpoint's default",
			strconv.FormatFloat(t, 'g', -1, 64))
		return
	}
	d.Temperature = &t
}

func (p *parser) maxIterations(raw map[string]any, d *Definition) {
	v, present := raw["max_iterations"]
	if !present {
		return
	}
	line := p.lines["max_iterations"]
	n, ok := v.(int64)
	if !ok {
		p.fail("max_iterations", line, "must be an integer from 1 to %d; got %s", maxIterationsLimit, sdk.DescribeValue(v))
		return
	}
	if n < 1 || n > maxIterationsLimit {
		p.fail("max_iterations", line, "is %d; use an integer from 1 to %d, or remove the key for the default of %d",
			n, maxIterationsLimit, defaultIterations)
		return
	}
	d.MaxIterations = int(n)
}

func (p *parser) tools(raw map[string]any, d *Definition) {
	v, present := raw["tools"]
	if !present {
		return
	}
	line := p.lines["tools"]
	const want = `must be an array of tool names and patterns, such as ["memory_search", "tree_*"], or the string "*" for every tool`
	switch t := v.(type) {
	case string:
		if t == "*" {
			d.Tools = []string{"*"}
			return
		}
		p.fail("tools", line, "%s; got the string %q: write tools = [%q]", want, t, t)
	case []any:
		tools := make([]string, 0, len(t))
		bad := false
		for i, e := range t {
			field := fmt.Sprintf("tools[%d]", i)
			line := line
			if l, ok := p.lines[field]; ok {
				line = l
			}
			s, ok := e.(string)
			if !ok {
				p.fail(field, line, "must be a string; got %s", sdk.DescribeValue(e))
				bad = true
				continue
			}
			if msg := checkToolEntry(s); msg != "" {
				p.fail(field, line, "%s", msg)
				bad = true
				continue
			}
			tools = append(tools, s)
		}
		if !bad && len(tools) > 0 {
			d.Tools = tools
		}
	default:
		p.fail("tools", line, "%s; got %s", want, sdk.DescribeValue(v))
	}
}

// checkToolEntry returns what is wrong with one tools entry, or "".
func checkToolEntry(s string) string {
	const example = `a tool name such as "memory_search" or a pattern such as "memory_*"`
	if strings.TrimSpace(s) == "" {
		return "is empty; write " + example
	}
	if strings.IndexFunc(s, unicode.IsSpace) >= 0 {
		return fmt.Sprintf("%q contains white space, which no tool name has; write %s", s, example)
	}
	if _, err := path.Match(s, ""); err != nil {
		return fmt.Sprintf("%q is not a valid pattern (check its [ ] brackets and \\ escapes); write %s", s, example)
	}
	return ""
}

// keyLines maps each top-level key of a TOML document to the line
// it first appears on; table headers count as the key of their first part.
func keyLines(data []byte) map[string]int {
	lines := map[string]int{}
	var p unstable.Parser
	p.Reset(data)
	inTable := false
	for p.NextExpression() {
		e := p.Expression()
		switch e.Kind {
		case unstable.Table, unstable.ArrayTable:
			inTable = true
		case unstable.KeyValue:
			if inTable {
				continue
			}
		default:
			continue
		}
		it := e.Key()
		if !it.Next() {
			continue
		}
		n := it.Node()
		key := string(n.Data)
		if _, seen := lines[key]; seen {
			continue
		}
		line := lineAt(data, int(n.Raw.Offset))
		lines[key] = line
		if e.Kind != unstable.KeyValue || it.Next() {
			continue // a table header or a dotted key
		}
		if v := e.Value(); v.Kind == unstable.Array {
			// Elements on lines of their own are reported there.
			elems := v.Children()
			for i := 0; elems.Next(); {
				el := elems.Node()
				if el.Kind == unstable.Comment {
					continue
				}
				l := line
				if el.Raw.Length > 0 {
					l = lineAt(data, int(el.Raw.Offset))
				}
				lines[fmt.Sprintf("%s[%d]", key, i)] = l
				i++
			}
		}
	}
	return lines
}

// lineAt returns the 1-based line of a byte offset in data.
func lineAt(data []byte, offset int) int {
	return bytes.Count(data[:min(max(offset, 0), len(data))], []byte("\n")) + 1
}

// suggest returns the valid key closest to an unknown one, when it
// is close enough to be a likely typo, or "".
func suggest(key string) string {
	norm := strings.ToLower(strings.ReplaceAll(key, "-", "_"))
	best, bestDist := "", 3
	for _, k := range knownKeys {
		if dist := editDistance(norm, k); dist < bestDist && 2*dist < utf8.RuneCountInString(norm) {
			best, bestDist = k, dist
		}
	}
	return best
}

// editDistance is the Levenshtein distance between a and b.
func editDistance(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	prev := make([]int, len(rb)+1)
	cur := make([]int, len(rb)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(ra); i++ {
		cur[0] = i
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(rb)]
}

// suggestID turns an invalid file stem into a valid id, or "".
func suggestID(stem string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(stem) {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9', r == '_', r == '-':
			b.WriteRune(r)
		case r == ' ' || r == '.':
			b.WriteRune('-')
		}
	}
	s := strings.TrimLeft(b.String(), "0123456789_-")
	if len(s) > 64 {
		s = s[:64]
	}
	if !idPattern.MatchString(s) || s == stem {
		return ""
	}
	return s
}

// PromptMIMEType is the MIME type of every PromptResource.
const PromptMIMEType = "text/markdown"

// PromptResource is one Markdown document the agent provider serves as an
// MCP resource; its MIME type is always PromptMIMEType.
type PromptResource struct {
	// URI is the resource's address, such as "openhuman://prompts/soul" or
	// "openhuman://prompts/agents/researcher".
	URI string
	// Name is the URI's path below openhuman://prompts/: "identity", "soul",
	// "user" or "agents/<id>".
	Name string
	// Title is a short human-readable title.
	Title string
	// Description says what the document is for, in a sentence or two.
	Description string
	// Text is the Markdown document.
	Text string
}

//go:embed prompts/*.md
var promptFiles embed.FS

// promptURIPrefix starts the URI of every PromptResource.
const promptURIPrefix = "openhuman://prompts/"

// PromptResources returns the prompt documents: openhuman://prompts/identity,
// openhuman://prompts/soul and openhuman://prompts/user (embedded in the
// binary), then openhuman://prompts/agents/<id> for each of defs in the order
// given, whose Text is that definition's Prompt. Pass Builtins() to serve the
// built-ins' prompts; defs is not modified.
func PromptResources(defs []Definition) []PromptResource {
	fixed := []struct{ name, title, description string }{
		{"identity", "Identity",
			"Who the assistant is inside openhuman-host and what it can reach through MCP: a personal memory store, sub-agents and web search."},
		{"soul", "Soul",
			"The assistant's values and working style: honest about uncertainty, citing where facts came from, asking before acting for the user, respecting policy refusals."},
		{"user", "User",
			"A template for what the assistant knows about its user and how to learn more from memory; it holds no personal data."},
	}
	out := make([]PromptResource, 0, len(fixed)+len(defs))
	for _, f := range fixed {
		text, err := promptFiles.ReadFile("prompts/" + f.name + ".md")
		if err != nil {
			panic("agent: embedded prompt " + f.name + ": " + err.Error())
		}
		out = append(out, PromptResource{
			URI: promptURIPrefix + f.name, Name: f.name, Title: f.title,
			Description: f.description, Text: string(text),
		})
	}
	for _, d := range defs {
		name := "agents/" + d.ID
		out = append(out, PromptResource{
			URI:         promptURIPrefix + name,
			Name:        name,
			Title:       d.DisplayName + " (sub-agent prompt)",
			Description: fmt.Sprintf("System prompt of the %q sub-agent. When to use it: %s", d.ID, d.WhenToUse),
			Text:        d.Prompt,
		})
	}
	return out
}
