package memory

import (
	"context"
	"fmt"
	"strings"

	"github.com/openhuman/openhuman-host/sdk"
)

// forgetArgs are memory_forget's arguments. UpdatedBeforeMS is nil when
// the call leaves it out: 0 is a time.
type forgetArgs struct {
	ChunkIDs        []string `json:"chunk_ids,omitempty" jsonschema:"Chunk ids, from memory_search, memory_recall or tree_browse." schema:"maxItems=100,items.minLength=1,items.maxLength=256"`
	DocumentIDs     []string `json:"document_ids,omitempty" jsonschema:"Document ids, e.g. mcp/mcp-store-trip-plan or file:/home/ana/notes/a.md." schema:"maxItems=100,items.minLength=1,items.maxLength=4096"`
	SourceIDs       []string `json:"source_ids,omitempty" jsonschema:"Source ids from tree_list_sources, e.g. mcp:mcp or file:/home/ana/notes." schema:"maxItems=100,items.minLength=1,items.maxLength=4096"`
	Namespaces      []string `json:"namespaces,omitempty" jsonschema:"Namespaces, e.g. mcp (memory_store's default) or file (imported files)." schema:"maxItems=100,items.pattern=^[A-Za-z0-9_.-]{1,64}$"`
	Query           string   `json:"query,omitempty" jsonschema:"Remove the chunks that contain every word of this text (as memory_search matches)." schema:"minLength=1,maxLength=1024"`
	UpdatedBeforeMS *int64   `json:"updated_before_ms,omitempty" jsonschema:"Remove the chunks last changed before this time, Unix milliseconds." schema:"minimum=0,maximum=9007199254740991"`
	DryRun          bool     `json:"dry_run,omitempty" jsonschema:"Count what would be removed and change nothing." schema:"default=false"`
}

// forgetOutput is memory_forget's structured content.
type forgetOutput struct {
	DryRun bool `json:"dry_run" jsonschema:"True when nothing was deleted and the counts say what would have been."`
	forgetCounts
	// DocumentIDs lists the documents removed or shortened (at most 50).
	DocumentIDs []string `json:"document_ids" jsonschema:"Documents removed or shortened, sorted; at most 50." schema:"maxItems=50"`
	// DocumentsTouched counts every document removed or shortened.
	DocumentsTouched int64 `json:"documents_touched" jsonschema:"How many documents were removed or shortened in all." schema:"minimum=0"`
}

// validate checks the arguments and returns the selector.
func (a *forgetArgs) validate(sc scope) (forgetSelector, *argError) {
	var (
		sel  = forgetSelector{Scope: sc, UpdatedBeforeMS: a.UpdatedBeforeMS}
		aerr *argError
	)
	if sel.ChunkIDs, aerr = stringList("chunk_ids", a.ChunkIDs, nil); aerr != nil {
		return sel, aerr
	}
	if sel.DocumentIDs, aerr = stringList("document_ids", a.DocumentIDs, nil); aerr != nil {
		return sel, aerr
	}
	if sel.SourceIDs, aerr = stringList("source_ids", a.SourceIDs, nil); aerr != nil {
		return sel, aerr
	}
	sel.Namespaces, aerr = stringList("namespaces", a.Namespaces, func(ns string) string {
		if !sc.allows(ns) {
			return "is outside what this client may forget in (" + sc.describe() + ")"
		}
		return ""
	})
	if aerr != nil {
		return sel, aerr
	}
	q, aerr := optionalString("query", a.Query)
	if aerr != nil {
		return sel, aerr
	}
	if q != "" {
		terms := queryTerms(q)
		if len(terms) == 0 {
			return sel, argErrorf("argument \"query\" has no letters or digits to match")
		}
		sel.Match, sel.Terms = matchAll(terms), terms
	}
	if len(sel.ChunkIDs)+len(sel.DocumentIDs)+len(sel.SourceIDs)+len(sel.Namespaces) == 0 && sel.Match == "" && sel.UpdatedBeforeMS == nil {
		return sel, argErrorf("say what to forget: give chunk_ids, document_ids, source_ids, namespaces, query or updated_before_ms")
	}
	return sel, nil
}

func runForget(ctx context.Context, p *Provider, st *store, args forgetArgs) (*sdk.CallToolResult, forgetOutput, error) {
	sel, aerr := args.validate(scopeOf(ctx))
	if aerr != nil {
		return nil, forgetOutput{}, aerr
	}
	dry := args.DryRun
	res, err := st.forget(ctx, sel, dry)
	if err != nil {
		return nil, forgetOutput{}, fmt.Errorf("forget: %w", err)
	}
	if !dry && res.Chunks > 0 {
		p.logger.Info("forgot memory", "documents", res.Documents, "chunks", res.Chunks, "notes", res.Notes, "versions", res.Versions)
	}
	out := forgetOutput{DryRun: dry, forgetCounts: res.forgetCounts, DocumentIDs: res.DocumentIDs, DocumentsTouched: res.DocumentsTouched}
	if out.DocumentIDs == nil {
		out.DocumentIDs = []string{}
	}
	result := sdk.TextResult(forgetText(out))
	result.AuditRef = forgetAuditRef(out)
	return result, out, nil
}

// forgetSummary counts what a forget removed, in words.
func forgetSummary(o forgetOutput) string {
	parts := []string{plural(int(o.Documents), "document"), plural(int(o.Chunks), "chunk")}
	if o.Notes > 0 {
		parts = append(parts, plural(int(o.Notes), "note"))
	}
	if o.Versions > 0 {
		parts = append(parts, plural(int(o.Versions), "previous version"))
	}
	if o.Sources > 0 {
		parts = append(parts, plural(int(o.Sources), "source"))
	}
	if o.Embeddings > 0 {
		parts = append(parts, plural(int(o.Embeddings), "embedding"))
	}
	return strings.Join(parts, ", ")
}

// forgetText is memory_forget's text result.
func forgetText(o forgetOutput) string {
	if o.DocumentsTouched == 0 {
		return "Nothing matched what was given (among the namespaces the caller may use); nothing was forgotten."
	}
	ids := strings.Join(o.DocumentIDs, ", ")
	if o.DocumentsTouched > int64(len(o.DocumentIDs)) {
		ids += fmt.Sprintf(" and %d more", o.DocumentsTouched-int64(len(o.DocumentIDs)))
	}
	if o.DryRun {
		return fmt.Sprintf("Dry run: this would forget %s (documents removed or shortened: %s). Nothing was deleted; repeat the call without the dry run to forget them.",
			forgetSummary(o), ids)
	}
	return fmt.Sprintf("Forgot %s (documents removed or shortened: %s). Search, recall, browse and entities no longer find them.", forgetSummary(o), ids)
}

// forgetAuditRef is the audit row's account of a forget: counts and
// document ids, no content.
func forgetAuditRef(o forgetOutput) string {
	verb := "forgot"
	if o.DryRun {
		verb = "dry run, would forget"
	}
	ref := fmt.Sprintf("%s %s", verb, forgetSummary(o))
	if len(o.DocumentIDs) > 0 {
		ref += ": " + strings.Join(o.DocumentIDs, " ")
	}
	return ref
}

// forgetTool is memory_forget's catalog entry; its schemas come from
// forgetArgs and forgetOutput.
var forgetTool = sdk.Tool{
	Name:  ToolForget,
	Title: "Forget from memory",
	Description: "Forget what was stored: delete from memory, for good, chunks, whole documents or everything " +
		"stored about a topic. It removes one or more chunks, whole documents, everything of a source " +
		"or namespace, or the chunks that contain every word of a query or were last changed before a time. " +
		"The selectors combine with AND (the values inside one list are alternatives); give at least one. " +
		"With chunk_ids, query or updated_before_ms chunks are removed, and a document whose chunks are all " +
		"gone goes too; otherwise whole documents are. Notes about a removed chunk, the previous versions of " +
		"a removed document and the entities only it mentioned go with it, and search, recall and browse stop " +
		"finding it at once. Call with dry_run true first to see the counts and documents it would remove; " +
		"the result of the real call gives the counts removed. Files imported from a folder come back if " +
		"they are imported again while still on disk.",
	Annotations: actAnnotations("Forget from memory"),
	Class:       sdk.ClassAct,
}
