package memory

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/openhuman/openhuman-host/sdk"
)

// storeArgs are memory_store's arguments; sdk.AddTool derives the input
// schema from them. The schema bounds content in characters;
// validate bounds it in bytes. Tags is nil when the call leaves them out,
// which keeps an existing document's tags.
type storeArgs struct {
	Title     string   `json:"title" jsonschema:"Short, specific title; it identifies the document: the same title updates it." schema:"minLength=1,maxLength=512"`
	Content   string   `json:"content" jsonschema:"The text to remember, at most 1000000 bytes of UTF-8." schema:"minLength=1,maxLength=1000000"`
	Namespace string   `json:"namespace,omitempty" jsonschema:"Groups documents; titles are unique within a namespace. Defaults to the client's namespace: \"mcp\" unless the operator gave this client a scope." schema:"pattern=^[A-Za-z0-9_.-]{1,64}$"`
	Tags      []string `json:"tags,omitempty" jsonschema:"Labels for the whole document (searchable like words); replaces its previous tags, while leaving tags out keeps them ([] removes them). At most 50, each at most 128 bytes." schema:"maxItems=50,items.minLength=1,items.maxLength=128"`
}

// storeResult is memory_store's structured content.
type storeResult struct {
	DocumentID string `json:"document_id" jsonschema:"<namespace>/<key>"`
	Namespace  string `json:"namespace"`
	Key        string `json:"key" jsonschema:"The document's upsert key, derived from its title."`
	ChunkCount int    `json:"chunk_count" schema:"minimum=1"`
	// ChunkIDs are the document's chunks in order, for tree_read_chunk,
	// memory_note and tree_tag.
	ChunkIDs []string `json:"chunk_ids" jsonschema:"The document's chunks in order, for tree_read_chunk, memory_note and tree_tag."`
	// Tags are the document's tags after the call.
	Tags []string `json:"tags" jsonschema:"The document's tags after this call."`
	// Replaced is set when the title named an existing document: what
	// changed, and under which version its previous text is kept.
	Replaced *replacement `json:"replaced,omitempty"`
}

// validate checks the arguments and returns the document to write.
func (a *storeArgs) validate(sc scope) (document, *argError) {
	title, content := strings.TrimSpace(a.Title), a.Content
	if aerr := maxBytes("content", content, maxContentBytes, "; split it into several documents"); aerr != nil {
		return document{}, aerr
	}
	namespace := sc.def
	if a.Namespace != "" {
		namespace = a.Namespace
		if !sc.allows(namespace) {
			return document{}, argErrorf(`namespace %s is outside what this client may write (%s)`, quoteShort(namespace), sc.describe())
		}
	}
	var tags []string // nil keeps an existing document's tags
	if a.Tags != nil {
		var aerr *argError
		if tags, aerr = validateTags("tags", a.Tags); aerr != nil {
			return document{}, aerr
		}
	}
	return document{
		SourceID:      sourceIDForNamespace(namespace),
		SourceKind:    SourceKindNote,
		SourceName:    "Stored with memory_store (namespace " + namespace + ")",
		Namespace:     namespace,
		KeyFromTitle:  true,
		Title:         title,
		Tags:          tags,
		Pieces:        splitChunks(content, maxChunkRunes),
		ContentSHA256: contentHash(content),
		KeepVersion:   true,
	}, nil
}

func runStore(ctx context.Context, p *Provider, st *store, args storeArgs) (*sdk.CallToolResult, storeResult, error) {
	doc, aerr := args.validate(scopeOf(ctx))
	if aerr != nil {
		return nil, storeResult{}, aerr
	}
	res, err := st.putDocument(ctx, doc)
	if errors.Is(err, errKeyCollision) {
		return nil, storeResult{}, argErrorf("another document already uses the key for this title; choose a different title")
	}
	if err != nil {
		return nil, storeResult{}, fmt.Errorf("store document: %w", err)
	}
	verb := "Updated"
	if res.Created {
		verb = "Stored"
	}
	tagText := "no tags"
	if len(res.Tags) > 0 {
		tagText = "tags: " + strings.Join(res.Tags, ", ")
	}
	if !res.Created && args.Tags == nil {
		tagText = "tags kept, " + tagText
	}
	p.afterWrite(ctx, res.Fresh)
	p.logger.Debug("stored document", "document_id", res.DocumentID, "chunks", len(doc.Pieces), "created", res.Created)
	text := fmt.Sprintf("%s %s (title %s, %s; %s). Chunk ids: %s.", verb, res.DocumentID, quoteShort(doc.Title),
		plural(len(doc.Pieces), "chunk"), tagText, strings.Join(res.ChunkIDs, ", "))
	if r := res.Replaced; r != nil {
		text = fmt.Sprintf("Replaced the existing document %s (title %s): %d → %d bytes; %d chunks kept, %d written, %d removed; %s. Chunk ids: %s.",
			res.DocumentID, quoteShort(doc.Title), r.PreviousBytes, r.Bytes, r.ChunksKept, r.ChunksAdded, r.ChunksRemoved, tagText,
			strings.Join(res.ChunkIDs, ", "))
		switch {
		case r.Version > 0:
			text += fmt.Sprintf(" The previous text is kept as version %d; memory_history reads it.", r.Version)
		case r.ChunksAdded == 0 && r.ChunksRemoved == 0:
			text += " The content did not change."
		default:
			text += " The previous text was not kept (keep_versions_days = 0)."
		}
	}
	return sdk.TextResult(text),
		storeResult{DocumentID: res.DocumentID, Namespace: doc.Namespace, Key: res.Key, ChunkCount: len(doc.Pieces), ChunkIDs: res.ChunkIDs, Tags: res.Tags, Replaced: res.Replaced},
		nil
}

// plural formats a count with a noun, adding "s" unless n is 1.
func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

// storeTool is memory_store's catalog entry; its schemas come from
// storeArgs and storeResult.
var storeTool = sdk.Tool{
	Name:  ToolStore,
	Title: "Store in memory",
	Description: "Remember something for later: save a titled note or document to long-term memory. It can be " +
		"found again, in this or any future conversation, with memory_search or memory_recall. Use it for " +
		"facts, decisions, plans, summaries or reference text worth keeping, and whenever the user asks to " +
		"remember, note or write down something. The content is split into chunks of about 512 " +
		"tokens and is searchable as soon as the call returns. Storing again with the same title " +
		"in the same namespace replaces that document's content (and its tags, when tags are given); a " +
		"different title never " +
		"overwrites another document, even if the titles look alike. Returns the document_id.",
	Annotations: actAnnotations("Store in memory"),
	Class:       sdk.ClassAct,
}
