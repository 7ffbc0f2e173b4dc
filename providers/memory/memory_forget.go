package memory

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/openhuman/openhuman-host/sdk"
)

// forgetArgs are memory_forget's arguments.
type forgetArgs struct {
	ChunkIDs        []string `json:"chunk_ids"`
	DocumentIDs     []string `json:"document_ids"`
	SourceIDs       []string `json:"source_ids"`
	Namespaces      []string `json:"namespaces"`
	Query           *string  `json:"query"`
	UpdatedBeforeMS *float64 `json:"updated_before_ms"`
	DryRun          *bool    `json:"dry_run"`
}

// forgetOutput is memory_forget's structured content.
type forgetOutput struct {
	DryRun bool `json:"dry_run"`
	forgetCounts
	// DocumentIDs lists the documents removed or shortened (at most 50).
	DocumentIDs []string `json:"document_ids"`
	// DocumentsTouched counts every document removed or shortened.
	DocumentsTouched int64 `json:"documents_touched"`
}

// validate checks the arguments and returns the selector.
func (a *forgetArgs) validate(sc scope) (forgetSelector, bool, *argError) {
	var (
		sel  = forgetSelector{Scope: sc}
		aerr *argError
	)
	if sel.ChunkIDs, aerr = stringList("chunk_ids", a.ChunkIDs, maxFilterItems, maxChunkIDRunes, nil); aerr != nil {
		return sel, false, aerr
	}
	if sel.DocumentIDs, aerr = stringList("document_ids", a.DocumentIDs, maxFilterItems, maxSourceIDRunes, nil); aerr != nil {
		return sel, false, aerr
	}
	if sel.SourceIDs, aerr = stringList("source_ids", a.SourceIDs, maxFilterItems, maxSourceIDRunes, nil); aerr != nil {
		return sel, false, aerr
	}
	sel.Namespaces, aerr = stringList("namespaces", a.Namespaces, maxFilterItems, 64, func(ns string) string {
		if !namespaceRE.MatchString(ns) {
			return "must match " + namespacePattern
		}
		if !sc.allows(ns) {
			return "is outside what this client may forget in (" + sc.describe() + ")"
		}
		return ""
	})
	if aerr != nil {
		return sel, false, aerr
	}
	if a.Query != nil {
		q, aerr := requiredString("query", a.Query, maxQueryRunes)
		if aerr != nil {
			return sel, false, aerr
		}
		terms := queryTerms(q)
		if len(terms) == 0 {
			return sel, false, argErrorf("argument \"query\" has no letters or digits to match")
		}
		sel.Match, sel.Terms = matchAll(terms), terms
	}
	if sel.UpdatedBeforeMS, aerr = optionalInt64("updated_before_ms", a.UpdatedBeforeMS, 0, maxSafeInteger); aerr != nil {
		return sel, false, aerr
	}
	if len(sel.ChunkIDs)+len(sel.DocumentIDs)+len(sel.SourceIDs)+len(sel.Namespaces) == 0 && sel.Match == "" && sel.UpdatedBeforeMS == nil {
		return sel, false, argErrorf("say what to forget: give chunk_ids, document_ids, source_ids, namespaces, query or updated_before_ms")
	}
	dry := a.DryRun != nil && *a.DryRun
	return sel, dry, nil
}

func runForget(ctx context.Context, p *Provider, st *store, raw json.RawMessage) (*sdk.CallToolResult, error) {
	var args forgetArgs
	if aerr := decodeArgs(raw, &args); aerr != nil {
		return nil, aerr
	}
	sel, dry, aerr := args.validate(scopeOf(ctx))
	if aerr != nil {
		return nil, aerr
	}
	res, err := st.forget(ctx, sel, dry)
	if err != nil {
		return nil, fmt.Errorf("forget: %w", err)
	}
	if !dry && res.Chunks > 0 {
		p.logger.Info("forgot memory", "documents", res.Documents, "chunks", res.Chunks, "notes", res.Notes, "versions", res.Versions)
	}
	out := forgetOutput{DryRun: dry, forgetCounts: res.forgetCounts, DocumentIDs: res.DocumentIDs, DocumentsTouched: res.DocumentsTouched}
	if out.DocumentIDs == nil {
		out.DocumentIDs = []string{}
	}
	result, err := sdk.StructuredResult(forgetText(out), out)
	if err != nil {
		return nil, err
	}
	result.AuditRef = forgetAuditRef(out)
	return result, nil
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

// forgetCountsSchema is the JSON Schema of forgetCounts's fields.
func forgetCountsSchema() map[string]any {
	count := func(desc string) map[string]any {
		return map[string]any{"type": "integer", "minimum": 0, "description": desc}
	}
	return map[string]any{
		"documents":  count("Documents removed whole (notes included)."),
		"chunks":     count("Chunks removed, those of removed documents included."),
		"notes":      count("memory_note notes removed: notes about a removed chunk go with it."),
		"versions":   count("Previous versions of removed documents, removed with them."),
		"sources":    count("Sources left empty and removed."),
		"embeddings": count("Embeddings removed with their chunks."),
	}
}

var forgetTool = tool{
	spec: sdk.Tool{
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
		InputSchema: mustJSON(objectSchema(nil, map[string]any{
			"chunk_ids": map[string]any{
				"type": "array", "maxItems": maxFilterItems,
				"items":       map[string]any{"type": "string", "minLength": 1, "maxLength": maxChunkIDRunes},
				"description": "Chunk ids, from memory_search, memory_recall or tree_browse.",
			},
			"document_ids": map[string]any{
				"type": "array", "maxItems": maxFilterItems,
				"items":       map[string]any{"type": "string", "minLength": 1, "maxLength": maxSourceIDRunes},
				"description": "Document ids, e.g. mcp/mcp-store-trip-plan or file:/home/ana/notes/a.md.",
			},
			"source_ids": map[string]any{
				"type": "array", "maxItems": maxFilterItems,
				"items":       map[string]any{"type": "string", "minLength": 1, "maxLength": maxSourceIDRunes},
				"description": "Source ids from tree_list_sources, e.g. mcp:mcp or file:/home/ana/notes.",
			},
			"namespaces": map[string]any{
				"type": "array", "maxItems": maxFilterItems,
				"items":       map[string]any{"type": "string", "pattern": namespacePattern},
				"description": "Namespaces, e.g. mcp (memory_store's default) or file (imported files).",
			},
			"query": map[string]any{
				"type": "string", "minLength": 1, "maxLength": maxQueryRunes,
				"description": "Remove the chunks that contain every word of this text (as memory_search matches).",
			},
			"updated_before_ms": map[string]any{
				"type": "integer", "minimum": 0, "maximum": maxSafeInteger,
				"description": "Remove the chunks last changed before this time, Unix milliseconds.",
			},
			"dry_run": map[string]any{
				"type": "boolean", "default": false,
				"description": "Count what would be removed and change nothing.",
			},
		})),
		OutputSchema: mustJSON(func() map[string]any {
			props := forgetCountsSchema()
			props["dry_run"] = map[string]any{"type": "boolean", "description": "True when nothing was deleted and the counts say what would have been."}
			props["document_ids"] = map[string]any{
				"type": "array", "items": map[string]any{"type": "string"}, "maxItems": forgetListed,
				"description": "Documents removed or shortened, sorted; at most 50.",
			}
			props["documents_touched"] = map[string]any{"type": "integer", "minimum": 0, "description": "How many documents were removed or shortened in all."}
			return objectSchema([]string{"dry_run", "documents", "chunks", "notes", "versions", "sources", "embeddings", "document_ids", "documents_touched"}, props)
		}()),
		Annotations: actAnnotations("Forget from memory"),
		Class:       sdk.ClassAct,
	},
	run: runForget,
}

// replacementSchema is the JSON Schema of a replacement.
func replacementSchema() map[string]any {
	n := func(desc string) map[string]any {
		return map[string]any{"type": "integer", "minimum": 0, "description": desc}
	}
	return objectSchema([]string{"title_changed", "previous_bytes", "bytes", "chunks_kept", "chunks_added", "chunks_removed"}, map[string]any{
		"version":        map[string]any{"type": "integer", "minimum": 1, "description": "The previous text is kept as this version (memory_history reads it); absent when it was not kept."},
		"title_changed":  map[string]any{"type": "boolean"},
		"previous_bytes": n("Size of the previous content, bytes of UTF-8."),
		"bytes":          n("Size of the new content, bytes of UTF-8."),
		"chunks_kept":    n("Chunks whose text and position did not change."),
		"chunks_added":   n("Chunks written."),
		"chunks_removed": n("Chunks of the previous content deleted."),
	})
}
