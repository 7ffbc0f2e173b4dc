package memory

import (
	"context"
	"errors"
	"fmt"
	"regexp"

	"github.com/openhuman/openhuman-host/sdk"
)

// Limits the handlers enforce beyond the input schemas, which state the
// other bounds in their schema tags: the schemas count characters, these
// count bytes. TestSchemaLimits checks that the two agree.
const (
	maxTitleRunes    = 512
	maxContentBytes  = 1_000_000
	maxTagBytes      = 128
	maxNoteBytes     = 100_000
	defaultNamespace = "mcp"
)

// namespacePattern is what a namespace must match.
const namespacePattern = `^[A-Za-z0-9_.-]{1,64}$`

var namespaceRE = regexp.MustCompile(namespacePattern)

// toolFunc runs one tool against an open store, with its arguments checked
// against the input schema and decoded. Refusals the schema cannot express
// and references to things that do not exist are returned as *argError,
// which becomes an isError result naming the tool; any other error is an
// internal failure, logged and returned as an isError result too.
type toolFunc[In, Out any] func(ctx context.Context, p *Provider, st *store, in In) (*sdk.CallToolResult, Out, error)

// addTools adds the provider's tools to p.tools, in the order Describe
// lists them.
func (p *Provider) addTools() {
	addTool(p, storeTool, runStore)
	addTool(p, forgetTool, runForget)
	addTool(p, noteTool, runNote)
	addTool(p, tagTool, runTag)
	addTool(p, searchTool, runSearch)
	addTool(p, recallTool, runRecall)
	addTool(p, readChunkTool, runReadChunk)
	addTool(p, historyTool, runHistory)
	addTool(p, browseTool, runBrowse)
	addTool(p, topEntitiesTool, runTopEntities)
	addTool(p, listSourcesTool, runListSources)
}

// addTool adds the tool spec, run by f, to p's tools; sdk.AddTool derives
// its schemas from In and Out.
func addTool[In, Out any](p *Provider, spec sdk.Tool, f toolFunc[In, Out]) {
	sdk.AddTool(&p.tools, spec, func(ctx context.Context, _ *sdk.CallToolRequest, in In) (*sdk.CallToolResult, Out, error) {
		var none Out
		st := p.openStore()
		if st == nil {
			return nil, none, errNotConfigured
		}
		res, out, err := f(ctx, p, st, in)
		var aerr *argError
		if errors.As(err, &aerr) {
			// Bad input is the model's to fix: an isError result naming
			// the tool.
			return sdk.ErrorResult("%s: %s", spec.Name, aerr), none, nil
		}
		if err != nil {
			p.logger.Error("tool failed", "tool", spec.Name, "error", err)
			return nil, none, fmt.Errorf("%s: %w", spec.Name, err)
		}
		return res, out, nil
	})
}

// readAnnotations are the annotations of a memory tool that only reads:
// read-only, closed world.
func readAnnotations(title string) sdk.Annotations {
	return sdk.Annotations{Title: title, ReadOnlyHint: sdk.Bool(true), OpenWorldHint: sdk.Bool(false)}
}

// actAnnotations are the annotations of a memory tool that writes: it
// replaces what it writes (destructive), writing the same again changes
// nothing more (idempotent), closed world.
func actAnnotations(title string) sdk.Annotations {
	return sdk.Annotations{
		Title:           title,
		ReadOnlyHint:    sdk.Bool(false),
		DestructiveHint: sdk.Bool(true),
		IdempotentHint:  sdk.Bool(true),
		OpenWorldHint:   sdk.Bool(false),
	}
}
