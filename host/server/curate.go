package server

import (
	"github.com/openhuman/openhuman-host/host/catalog"
)

// ToolOverride replaces what clients are told about one tool ([tools.<name>]
// in the config): nil fields keep what the provider declared. The policy
// class is never overridden.
type ToolOverride struct {
	Title, Description *string
	ReadOnlyHint       *bool
	DestructiveHint    *bool
	IdempotentHint     *bool
	OpenWorldHint      *bool
}

// curated returns t as clients see it under overrides: a copy with the
// override of its name applied, or t itself when it has none.
func curated(t *catalog.Tool, overrides map[string]ToolOverride) *catalog.Tool {
	o, ok := overrides[t.Name]
	if !ok {
		return t
	}
	c := *t
	if o.Title != nil {
		c.Title = *o.Title
		c.Annotations.Title = *o.Title
	}
	if o.Description != nil {
		c.Description = *o.Description
	}
	if o.ReadOnlyHint != nil {
		c.Annotations.ReadOnlyHint = o.ReadOnlyHint
	}
	if o.DestructiveHint != nil {
		c.Annotations.DestructiveHint = o.DestructiveHint
	}
	if o.IdempotentHint != nil {
		c.Annotations.IdempotentHint = o.IdempotentHint
	}
	if o.OpenWorldHint != nil {
		c.Annotations.OpenWorldHint = o.OpenWorldHint
	}
	return &c
}
