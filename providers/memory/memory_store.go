package memory

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/openhuman/openhuman-host/sdk"
)

// storeArgs are memory.store's arguments.
type storeArgs struct {
	Title     *string  `json:"title"`
	Content   *string  `json:"content"`
	Namespace *string  `json:"namespace"`
	Tags      []string `json:"tags"`
}

// storeResult is memory.store's structured content.
type storeResult struct {
	DocumentID string `json:"document_id"`
	Namespace  string `json:"namespace"`
	Key        string `json:"key"`
	ChunkCount int    `json:"chunk_count"`
}

// validate checks the arguments and returns the document to write.
func (a *storeArgs) validate() (document, *argError) {
	title, aerr := requiredString("title", a.Title, maxTitleRunes)
	if aerr != nil {
		return document{}, aerr
	}
	if a.Content == nil {
		return document{}, argErrorf(`argument "content" is required`)
	}
	content := *a.Content
	if strings.TrimSpace(content) == "" {
		return document{}, argErrorf(`argument "content" must not be blank`)
	}
	if len(content) > maxContentBytes {
		return document{}, argErrorf(`argument "content" must be at most %d bytes, got %d; split it into several documents`, maxContentBytes, len(content))
	}
	namespace := defaultNamespace
	if a.Namespace != nil {
		namespace = *a.Namespace
		if !namespaceRE.MatchString(namespace) {
			return document{}, argErrorf(`argument "namespace" must match %s, got %s`, namespacePattern, quoteShort(namespace))
		}
	}
	if len(a.Tags) > maxTags {
		return document{}, argErrorf(`argument "tags" must have at most %d items, got %d`, maxTags, len(a.Tags))
	}
	// Tags are a set: duplicates are dropped, first occurrence wins.
	tags := make([]string, 0, len(a.Tags))
	seen := make(map[string]bool, len(a.Tags))
	for i, t := range a.Tags {
		t = strings.TrimSpace(t)
		if t == "" {
			return document{}, argErrorf(`argument "tags[%d]" must not be blank`, i)
		}
		if n := utf8.RuneCountInString(t); n > maxTagRunes {
			return document{}, argErrorf(`argument "tags[%d]" must be at most %d characters, got %d`, i, maxTagRunes, n)
		}
		if !seen[t] {
			seen[t] = true
			tags = append(tags, t)
		}
	}
	return document{
		Namespace: namespace,
		Title:     title,
		Tags:      tags,
		Pieces:    splitChunks(content, maxChunkRunes),
	}, nil
}

func runStore(ctx context.Context, p *Provider, st *store, raw json.RawMessage) (*sdk.CallToolResult, error) {
	var args storeArgs
	if aerr := decodeArgs(raw, &args); aerr != nil {
		return sdk.ErrorResult("%s: %s", ToolStore, aerr), nil
	}
	doc, aerr := args.validate()
	if aerr != nil {
		return sdk.ErrorResult("%s: %s", ToolStore, aerr), nil
	}
	res, err := st.putDocument(ctx, doc)
	if errors.Is(err, errKeyCollision) {
		return sdk.ErrorResult("%s: another document already uses the key for this title; choose a different title", ToolStore), nil
	}
	if err != nil {
		return nil, fmt.Errorf("store document: %w", err)
	}
	verb := "Updated"
	if res.Created {
		verb = "Stored"
	}
	p.logger.Debug("stored document", "document_id", res.DocumentID, "chunks", len(doc.Pieces), "created", res.Created)
	return sdk.StructuredResult(
		fmt.Sprintf("%s %s (title %s, %s).", verb, res.DocumentID, quoteShort(doc.Title), plural(len(doc.Pieces), "chunk")),
		storeResult{DocumentID: res.DocumentID, Namespace: doc.Namespace, Key: res.Key, ChunkCount: len(doc.Pieces)},
	)
}

// plural formats a count with a noun, adding "s" unless n is 1.
func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}
