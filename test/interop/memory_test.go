package interop_test

import (
	"bytes"
	"database/sql"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	_ "github.com/mattn/go-sqlite3"

	"github.com/openhuman/openhuman-host/providers/memory/memorytool"
	"github.com/openhuman/openhuman-host/sdk/testwait"
)

// memoryClientName is the clientInfo.name client-memory.mjs announces,
// which [[providers.memory.scopes]] entries match.
const memoryClientName = "openhuman-memory-interop"

// memoryStep is one call of a client-memory.mjs plan. A string argument
// "${step.path}" is replaced by that earlier step's structuredContent value.
type memoryStep struct {
	Name      string         `json:"name"`
	Tool      string         `json:"tool"`
	Arguments map[string]any `json:"arguments"`
}

// stepResult is what the client saw of one call.
type stepResult struct {
	IsError       bool            `json:"isError"`
	Text          string          `json:"text"`
	Data          json.RawMessage `json:"data"`
	ProtocolError string          `json:"protocol_error"`
}

// memoryRun is client-memory.mjs's output.
type memoryRun struct {
	Server          struct{ Name string } `json:"server"`
	Results         map[string]stepResult `json:"results"`
	TransportErrors []string              `json:"transport_errors"`
	Failure         string                `json:"failure"`
}

// step returns the result of the step named name; it fails the test when
// the call was refused at the protocol level or, unless wantError, when it
// returned an error result.
func (r *memoryRun) step(t *testing.T, name string, wantError bool) stepResult {
	t.Helper()
	res, ok := r.Results[name]
	switch {
	case !ok:
		t.Fatalf("step %s did not run", name)
	case res.ProtocolError != "":
		t.Fatalf("step %s: protocol error %s", name, res.ProtocolError)
	case res.IsError != wantError:
		t.Fatalf("step %s: isError %v, want %v; text: %s", name, res.IsError, wantError, res.Text)
	}
	return res
}

// decode unmarshals the step's structuredContent into v.
func (r *memoryRun) decode(t *testing.T, name string, v any) {
	t.Helper()
	res := r.step(t, name, false)
	if err := json.Unmarshal(res.Data, v); err != nil {
		t.Fatalf("step %s: structuredContent %s: %v", name, res.Data, err)
	}
}

// searchOut is [memorytool.Search]'s structured content, as far as checked.
type searchOut struct {
	Chunks []struct {
		ChunkID    string `json:"chunk_id"`
		DocumentID string `json:"document_id"`
		Title      string `json:"title"`
		Namespace  string `json:"namespace"`
		Snippet    string `json:"snippet"`
	} `json:"chunks"`
}

// documents returns the distinct document ids of the hits, in order.
func (s searchOut) documents() []string {
	var ids []string
	for _, c := range s.Chunks {
		if len(ids) == 0 || ids[len(ids)-1] != c.DocumentID {
			ids = append(ids, c.DocumentID)
		}
	}
	return ids
}

// storeOut is [memorytool.Store]'s structured content, as far as checked.
type storeOut struct {
	DocumentID string `json:"document_id"`
	Namespace  string `json:"namespace"`
	ChunkCount int    `json:"chunk_count"`
	Replaced   *struct {
		Version int `json:"version"`
	} `json:"replaced"`
}

// forgetOut is [memorytool.Forget]'s structured content.
type forgetOut struct {
	DryRun           bool     `json:"dry_run"`
	Documents        int      `json:"documents"`
	Chunks           int      `json:"chunks"`
	Versions         int      `json:"versions"`
	Sources          int      `json:"sources"`
	DocumentIDs      []string `json:"document_ids"`
	DocumentsTouched int      `json:"documents_touched"`
}

// historyOut is [memorytool.History]'s structured content.
type historyOut struct {
	DocumentID string `json:"document_id"`
	Versions   []struct {
		Version int    `json:"version"`
		Title   string `json:"title"`
		Bytes   int    `json:"bytes"`
		Content string `json:"content"`
	} `json:"versions"`
}

// runMemoryPlan runs client-memory.mjs with steps against `serve` over
// stdio in sb, checks that the server and its providers exit once the
// client closes, and returns what the client saw.
func runMemoryPlan(t *testing.T, p prereqs, sb *sandbox, steps []memoryStep) *memoryRun {
	t.Helper()
	const script = "client-memory.mjs"
	dir := clientDir(t, p, sb, script)
	plan, err := json.Marshal(map[string]any{"client_name": memoryClientName, "steps": steps})
	if err != nil {
		t.Fatal(err)
	}
	planPath := filepath.Join(dir, "plan.json")
	if err := os.WriteFile(planPath, plan, 0o644); err != nil {
		t.Fatal(err)
	}

	r := runNode(t, p, sb, dir, true, nil, script, planPath, p.bin, "serve")
	if r.overdue {
		t.Fatalf("%s did not finish by the test's deadline; stderr:\n%s", script, indent(r.stderr))
	}
	var run memoryRun
	if err := json.Unmarshal(bytes.TrimSpace([]byte(r.stdout)), &run); err != nil {
		t.Fatalf("%s printed no result (%v, exit %v); stdout:\n%s\nstderr (client and server):\n%s",
			script, err, r.err, indent(r.stdout), indent(r.stderr))
	}
	if r.err != nil || run.Failure != "" {
		t.Fatalf("%s failed (%v): %s; stderr (client and server):\n%s", script, r.err, run.Failure, indent(r.stderr))
	}
	if run.Server.Name != "openhuman-host" {
		t.Errorf("serverInfo.name %q", run.Server.Name)
	}
	if len(run.TransportErrors) > 0 {
		t.Errorf("transport errors: %q", run.TransportErrors)
	}
	r.tree.requireExited(t)
	return &run
}

// runHost runs the openhuman-host binary with args in sb (its config and
// data directory) and returns its stdout; a non-zero exit fails the test.
func runHost(t *testing.T, p prereqs, sb *sandbox, args ...string) string {
	t.Helper()
	var stdout, stderr testwait.Buffer
	cmd := exec.CommandContext(testwait.Context(t), p.bin, args...)
	cmd.Dir = sb.dir
	cmd.Env = sb.environ("")
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	cmd.WaitDelay = 5 * time.Second
	if err := cmd.Run(); err != nil {
		t.Fatalf("openhuman-host %s: %v; stdout:\n%s\nstderr:\n%s", strings.Join(args, " "), err, indent(stdout.String()), indent(stderr.String()))
	}
	return stdout.String()
}

// callHostJSON runs `openhuman-host tools call --json TOOL ARGS` in sb
// (client name "openhuman-host") and decodes the result's
// structuredContent into v.
func callHostJSON(t *testing.T, p prereqs, sb *sandbox, tool string, args map[string]any, v any) {
	t.Helper()
	raw, err := json.Marshal(args)
	if err != nil {
		t.Fatal(err)
	}
	out := runHost(t, p, sb, "tools", "call", "--json", tool, string(raw))
	var res struct {
		IsError           bool            `json:"isError"`
		StructuredContent json.RawMessage `json:"structuredContent"`
	}
	if err := json.Unmarshal([]byte(out), &res); err != nil || res.IsError {
		t.Fatalf("tools call %s: isError %v (%v): %s", tool, res.IsError, err, out)
	}
	if err := json.Unmarshal(res.StructuredContent, v); err != nil {
		t.Fatalf("tools call %s: structuredContent %s: %v", tool, res.StructuredContent, err)
	}
}

// uniqueWord returns a word found in no other test's documents.
func uniqueWord(t *testing.T, stem string) string {
	return stem + randomToken(t)[:12]
}

// auditRow is one mcp_audit row, as far as checked.
type auditRow struct {
	ClientName, Decision, ArgsSummary, ResultRef, Error string
	Success, Pending                                    bool
}

// auditRows reads the rows of tool from the audit database at path,
// oldest first, through SQL on a read-only connection.
func auditRows(t *testing.T, path, tool string) []auditRow {
	t.Helper()
	db, err := sql.Open("sqlite3", "file:"+path+"?mode=ro")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	rows, err := db.QueryContext(testwait.Context(t),
		`SELECT client_name, decision, args_summary, result_ref, error, success, pending FROM mcp_audit WHERE tool = ? ORDER BY id`, tool)
	if err != nil {
		t.Fatalf("read %s: %v", path, err)
	}
	defer rows.Close()
	var out []auditRow
	for rows.Next() {
		var r auditRow
		if err := rows.Scan(&r.ClientName, &r.Decision, &r.ArgsSummary, &r.ResultRef, &r.Error, &r.Success, &r.Pending); err != nil {
			t.Fatal(err)
		}
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestMemoryForget: the TypeScript SDK client stores a document, finds it,
// forgets it with dry_run (counts, nothing deleted), then for real, after
// which search no longer finds it. The audit row of the forget names the
// document and the counts, never its text.
func TestMemoryForget(t *testing.T) {
	p := requireInterop(t)
	t.Parallel()
	sb := newSandbox(t)
	word := uniqueWord(t, "quokka")
	secret := "the locker code is 4711"
	content := fmt.Sprintf("Gym note: %s for the %s bag; %s.", word, word, secret)
	old := fmt.Sprintf("Gym note: the %s bag hangs by the door.", word)

	run := runMemoryPlan(t, p, sb, []memoryStep{
		{"first", memorytool.Store, map[string]any{"title": "Gym locker", "content": old}},
		{"store", memorytool.Store, map[string]any{"title": "Gym locker", "content": content}},
		{"found", memorytool.Search, map[string]any{"query": word}},
		{"dry", memorytool.Forget, map[string]any{"document_ids": []any{"${store.document_id}"}, "dry_run": true}},
		{"still", memorytool.Search, map[string]any{"query": word}},
		{"forget", memorytool.Forget, map[string]any{"document_ids": []any{"${store.document_id}"}}},
		{"gone", memorytool.Search, map[string]any{"query": word}},
		{"history", memorytool.History, map[string]any{"document_id": "${store.document_id}"}},
	})

	var stored storeOut
	run.decode(t, "store", &stored)
	doc := stored.DocumentID
	if doc != "mcp/mcp-store-gym-locker" || stored.Namespace != "mcp" || stored.ChunkCount != 1 || stored.Replaced == nil || stored.Replaced.Version != 1 {
		t.Fatalf(memorytool.Store+": %+v", stored)
	}
	for _, name := range []string{"found", "still"} {
		var s searchOut
		run.decode(t, name, &s)
		if got := s.documents(); len(got) != 1 || got[0] != doc {
			t.Errorf("%s: "+memorytool.Search+" %q found documents %q, want [%s]", name, word, got, doc)
		}
	}

	var dry forgetOut
	run.decode(t, "dry", &dry)
	// The document, its chunk, its previous version and its source, which
	// it leaves empty.
	wantCounts := forgetOut{Documents: 1, Chunks: 1, Versions: 1, Sources: 1, DocumentIDs: []string{doc}, DocumentsTouched: 1}
	wantDry := wantCounts
	wantDry.DryRun = true
	if fmt.Sprint(dry) != fmt.Sprint(wantDry) {
		t.Errorf("dry run: %+v, want %+v", dry, wantDry)
	}
	if text := run.step(t, "dry", false).Text; !strings.HasPrefix(text, "Dry run: this would forget 1 document, 1 chunk, 1 previous version, 1 source") || !strings.Contains(text, doc) {
		t.Errorf("dry run text: %s", text)
	}

	var forgot forgetOut
	run.decode(t, "forget", &forgot)
	if fmt.Sprint(forgot) != fmt.Sprint(wantCounts) {
		t.Errorf("forget: %+v, want %+v", forgot, wantCounts)
	}
	var gone searchOut
	run.decode(t, "gone", &gone)
	if len(gone.Chunks) != 0 {
		t.Errorf(memorytool.Search+" %q after the forget: %+v", word, gone.Chunks)
	}
	if text := run.step(t, "history", true).Text; !strings.Contains(text, doc) {
		t.Errorf(memorytool.History+" of the forgotten document: %s", text)
	}

	// The server has exited, so every audit row is written.
	rows := auditRows(t, filepath.Join(sb.data, "openhuman-host", "audit.db"), memorytool.Forget)
	if len(rows) != 2 {
		t.Fatalf("%d "+memorytool.Forget+" audit rows, want 2 (dry run, forget): %+v", len(rows), rows)
	}
	dryRow, row := rows[0], rows[1]
	t.Logf("audit result_ref of the dry run: %q; of the forget: %q", dryRow.ResultRef, row.ResultRef)
	if !dryRow.Success || !strings.HasPrefix(dryRow.ResultRef, "dry run, would forget 1 document") {
		t.Errorf("dry run audit row: %+v", dryRow)
	}
	if !row.Success || row.Pending || row.Decision != "allowed" || row.ClientName != memoryClientName || row.Error != "" {
		t.Errorf("forget audit row: %+v", row)
	}
	if !strings.HasPrefix(row.ResultRef, "forgot 1 document") || !strings.Contains(row.ResultRef, doc) {
		t.Errorf("forget audit result_ref %q, want it to start \"forgot 1 document\" and name %s", row.ResultRef, doc)
	}
	for _, r := range rows {
		for _, field := range []string{r.ResultRef, r.ArgsSummary, r.Error} {
			if strings.Contains(field, word) || strings.Contains(field, secret) || strings.Contains(field, "door") {
				t.Errorf("an audit row of "+memorytool.Forget+" holds the document's text: %+v", r)
			}
		}
	}
}

// TestMemoryExportImport: documents stored through the TypeScript SDK
// client, one replaced once, go through `memory export` to a JSON Lines
// file and `memory import` into a fresh data directory named by a second
// config; a server on it finds both under the same ids, and
// [memorytool.History] returns the replaced text.
func TestMemoryExportImport(t *testing.T) {
	p := requireInterop(t)
	t.Parallel()
	wordA, wordB := uniqueWord(t, "ferry"), uniqueWord(t, "orchard")
	draft1 := fmt.Sprintf("First draft: the %s leaves at nine from pier two.", wordA)
	draft2 := fmt.Sprintf("Second draft: the %s leaves at ten from pier four.", wordA)
	orchard := fmt.Sprintf("The %s trees bloom in April; prune them in March.", wordB)

	from := newSandbox(t)
	run := runMemoryPlan(t, p, from, []memoryStep{
		{"a1", memorytool.Store, map[string]any{"title": "Harbour timetable", "content": draft1}},
		{"a2", memorytool.Store, map[string]any{"title": "Harbour timetable", "content": draft2}},
		{"b", memorytool.Store, map[string]any{"title": "Orchard notes", "content": orchard, "namespace": "garden", "tags": []any{"spring"}}},
		{"history", memorytool.History, map[string]any{"document_id": "${a1.document_id}", "version": "${a2.replaced.version}"}},
	})
	var a1, a2, b storeOut
	run.decode(t, "a1", &a1)
	run.decode(t, "a2", &a2)
	run.decode(t, "b", &b)
	if a2.DocumentID != a1.DocumentID || a2.Replaced == nil || a2.Replaced.Version != 1 {
		t.Fatalf("replacing %s: %+v", a1.DocumentID, a2)
	}
	if b.Namespace != "garden" || b.DocumentID == a1.DocumentID {
		t.Fatalf("second document: %+v", b)
	}
	var before historyOut
	run.decode(t, "history", &before)
	if len(before.Versions) != 1 || before.Versions[0].Content != draft1 {
		t.Fatalf(memorytool.History+" before the export: %+v", before)
	}

	export := filepath.Join(from.dir, "memory.jsonl")
	out := runHost(t, p, from, "memory", "export", export)
	if !strings.HasPrefix(out, "exported 2 documents") {
		t.Errorf("memory export printed %q", out)
	}
	counts := exportRecordCounts(t, export)
	if counts["document"] != 2 || counts["version"] != 1 || counts["chunk"] != 2 || counts["header"] != 1 || counts["end"] != 1 {
		t.Errorf("export records by type: %v", counts)
	}

	// A second config whose data directory is a fresh folder.
	to := newSandbox(t)
	restored := filepath.Join(to.dir, "restored-data")
	to.writeConfig(t, fmt.Sprintf("[server]\ndata_dir = %q\n", restored))
	out = runHost(t, p, to, "memory", "import", export)
	if !strings.Contains(out, "2 documents (2 new, 0 replaced)") {
		t.Errorf("memory import printed %q", out)
	}
	if _, err := os.Stat(filepath.Join(restored, "memory", "memory.db")); err != nil {
		t.Errorf("the import did not write to the config's data_dir: %v", err)
	}

	run = runMemoryPlan(t, p, to, []memoryStep{
		{"a", memorytool.Search, map[string]any{"query": wordA}},
		{"b", memorytool.Search, map[string]any{"query": wordB}},
		{"list", memorytool.History, map[string]any{"document_id": a1.DocumentID}},
		{"v1", memorytool.History, map[string]any{"document_id": a1.DocumentID, "version": 1}},
	})
	for name, want := range map[string]storeOut{"a": a1, "b": b} {
		var s searchOut
		run.decode(t, name, &s)
		if len(s.Chunks) != 1 || s.Chunks[0].DocumentID != want.DocumentID || s.Chunks[0].Namespace != want.Namespace {
			t.Errorf(memorytool.Search+" after the import (%s): %+v, want document %s in %s", name, s.Chunks, want.DocumentID, want.Namespace)
		}
	}
	var a searchOut
	run.decode(t, "a", &a)
	if len(a.Chunks) == 1 && !strings.Contains(a.Chunks[0].Snippet, "Second draft") {
		t.Errorf("the restored document is not the replacement: snippet %q", a.Chunks[0].Snippet)
	}
	var list, v1 historyOut
	run.decode(t, "list", &list)
	if len(list.Versions) != 1 || list.Versions[0].Version != 1 || list.Versions[0].Title != "Harbour timetable" || list.Versions[0].Bytes != len(draft1) {
		t.Errorf(memorytool.History+" list after the import: %+v", list)
	}
	run.decode(t, "v1", &v1)
	if len(v1.Versions) != 1 || v1.Versions[0].Content != draft1 {
		t.Errorf(memorytool.History+" version 1 after the import: %+v, want content %q", v1, draft1)
	}
}

// exportRecordCounts counts the records of a JSON Lines export by type.
func exportRecordCounts(t *testing.T, path string) map[string]int {
	t.Helper()
	counts := map[string]int{}
	eachLine(t, path, func(line string) {
		var rec struct{ Type string }
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Fatalf("%s: line %q: %v", path, line, err)
		}
		counts[rec.Type]++
	})
	return counts
}

// TestMemoryScopes: with the TypeScript SDK client scoped to namespace
// work, a document the command line stored in namespace home is invisible
// to it and cannot be forgotten by it, asking for namespace home is an
// error, and what it stores lands in work.
func TestMemoryScopes(t *testing.T) {
	p := requireInterop(t)
	t.Parallel()
	sb := newSandbox(t)
	sb.writeConfig(t, fmt.Sprintf("[[providers.memory.scopes]]\nclients = [%q]\nnamespaces = [\"work\"]\n", memoryClientName))
	homeWord, workWord := uniqueWord(t, "lantern"), uniqueWord(t, "roadmap")

	var home storeOut
	callHostJSON(t, p, sb, memorytool.Store, map[string]any{
		"title": "Attic inventory", "content": fmt.Sprintf("The %s is in the attic, left of the window.", homeWord), "namespace": "home",
	}, &home)
	if home.Namespace != "home" {
		t.Fatalf(memorytool.Store+" from the command line: %+v", home)
	}

	run := runMemoryPlan(t, p, sb, []memoryStep{
		{"search_home", memorytool.Search, map[string]any{"query": homeWord}},
		{"store", memorytool.Store, map[string]any{"title": "Quarter plan", "content": fmt.Sprintf("The %s review is on Friday.", workWord)}},
		{"search_work", memorytool.Search, map[string]any{"query": workWord}},
		{"search_ns_home", memorytool.Search, map[string]any{"query": homeWord, "namespaces": []any{"home"}}},
		{"store_home", memorytool.Store, map[string]any{"title": "Sneaky", "content": "x", "namespace": "home"}},
		{"history_home", memorytool.History, map[string]any{"document_id": home.DocumentID}},
		{"forget_home", memorytool.Forget, map[string]any{"document_ids": []any{home.DocumentID}}},
	})

	var s searchOut
	run.decode(t, "search_home", &s)
	if len(s.Chunks) != 0 {
		t.Errorf("the client scoped to work found the home document: %+v", s.Chunks)
	}
	var stored storeOut
	run.decode(t, "store", &stored)
	if stored.Namespace != "work" || !strings.HasPrefix(stored.DocumentID, "work/") {
		t.Errorf(memorytool.Store+" without a namespace from the client scoped to work: %+v", stored)
	}
	run.decode(t, "search_work", &s)
	if got := s.documents(); len(got) != 1 || got[0] != stored.DocumentID || s.Chunks[0].Namespace != "work" {
		t.Errorf(memorytool.Search+" for the work document: %+v", s.Chunks)
	}
	if text := run.step(t, "search_ns_home", true).Text; !strings.Contains(text, "home") {
		t.Errorf(memorytool.Search+" in namespace home: %s", text)
	}
	if text := run.step(t, "store_home", true).Text; !strings.Contains(text, "home") {
		t.Errorf(memorytool.Store+" in namespace home: %s", text)
	}
	if text := run.step(t, "history_home", true).Text; strings.Contains(text, homeWord) {
		t.Errorf(memorytool.History+" of the home document showed its text: %s", text)
	}
	var forgot forgetOut
	run.decode(t, "forget_home", &forgot)
	if forgot.DocumentsTouched != 0 || forgot.Documents != 0 || forgot.Chunks != 0 || len(forgot.DocumentIDs) != 0 {
		t.Errorf(memorytool.Forget+" of the home document from the client scoped to work: %+v", forgot)
	}

	// The command line, unrestricted, still finds the home document.
	callHostJSON(t, p, sb, memorytool.Search, map[string]any{"query": homeWord}, &s)
	if got := s.documents(); len(got) != 1 || got[0] != home.DocumentID {
		t.Errorf(memorytool.Search+" from the command line after the forget: %+v, want %s", s.Chunks, home.DocumentID)
	}
}
