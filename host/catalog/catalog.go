// Package catalog merges the catalogs of the host's providers into the one
// tool and resource surface the host advertises.
//
// Every tool spec is checked before it is accepted (name, object input
// schema that resolves, known policy class); an invalid tool or a name that
// another provider already claimed is refused with a logged reason and the
// rest of the catalog is kept. Providers are merged in the order given, so
// the outcome of a collision is deterministic. Each accepted tool carries its
// resolved input schema, so arguments are validated without re-parsing.
//
// Tools and prompts are advertised under the client-safe name
// [sdk.ClientName] gives their declared name (matching
// ^[a-zA-Z0-9_-]{1,64}$, which Claude Desktop and OpenAI-style clients
// require); lookups accept the declared name too, and calls reach the
// provider under the name it declared.
package catalog

import (
	"encoding/json"
	"fmt"
	"slices"

	"github.com/hashicorp/go-hclog"

	"github.com/openhuman/openhuman-host/sdk"
)

// Source is one provider's contribution.
type Source struct {
	// Provider is the provider's name from the host config.
	Provider string
	// Catalog is what the provider's Describe returned.
	Catalog *sdk.Catalog
}

// Tool is one accepted tool. Its Name is the advertised, client-safe name
// ([sdk.ClientName] of the declared one).
type Tool struct {
	sdk.Tool
	// Provider is the name of the provider that serves the tool.
	Provider string
	// Declared is the name the provider declared in Describe, which the
	// host sends it in CallToolRequest.Name; it equals Name unless the
	// declared name is not client-safe ("hello.greet" for "hello_greet").
	Declared string

	args *sdk.ArgumentValidator
}

// Resource is one accepted resource.
type Resource struct {
	sdk.Resource
	// Provider is the name of the provider that serves the resource.
	Provider string
}

// ResourceTemplate is one accepted resource template.
type ResourceTemplate struct {
	sdk.ResourceTemplate
	// Provider is the name of the provider that serves the template.
	Provider string
}

// Prompt is one accepted prompt. Its Name is the advertised, client-safe
// name ([sdk.ClientName] of the declared one).
type Prompt struct {
	sdk.Prompt
	// Provider is the name of the provider that serves the prompt.
	Provider string
	// Declared is the name the provider declared, which the host sends it
	// in GetPromptRequest.Name and completion references.
	Declared string
}

// Catalog is the merged, validated catalog. It is immutable once built and
// safe for concurrent use.
type Catalog struct {
	tools     entries[*Tool]     // by advertised name
	resources entries[*Resource] // by URI
	templates []*ResourceTemplate
	prompts   entries[*Prompt] // by advertised name
}

// entries are a catalog's entries of one kind, in merge order and by key.
type entries[E any] struct {
	list []E
	by   map[string]E
}

// add appends e, to be found by key.
func (x *entries[E]) add(key string, e E) {
	if x.by == nil {
		x.by = map[string]E{}
	}
	x.by[key] = e
	x.list = append(x.list, e)
}

// ErrInvalidTool is wrapped by the errors [ValidateTool] returns; it is
// [sdk.ErrInvalidTool].
var ErrInvalidTool = sdk.ErrInvalidTool

// ArgumentError is a rejected tool argument; it is [sdk.ArgumentError].
type ArgumentError = sdk.ArgumentError

// ErrInvalidArguments is matched by every [ArgumentError] with errors.Is;
// it is [sdk.ErrInvalidArguments].
var ErrInvalidArguments = sdk.ErrInvalidArguments

// Build merges sources in order. Tools that fail [ValidateTool], and tools,
// prompts or resources whose advertised name or URI an earlier source
// already claimed, are left out and logged at warn level with the reason.
// A tool or prompt whose declared name is not client-safe is advertised
// under [sdk.ClientName] of it, logged at info level. log may be nil.
func Build(log hclog.Logger, sources []Source) *Catalog {
	return BuildWith(log, sources, nil)
}

// Claim decides whether provider may serve a tool name (kind "tool"),
// resource URI (kind "resource") or prompt name (kind "prompt"), names
// being the advertised ones; a non-nil error says why not. The host keeps
// names with the provider that first served them, so that a provider
// restarting with a new catalog cannot take over another's tools.
type Claim func(provider, kind, name string) error

// BuildWith is [Build] that also refuses, with the reason logged, every
// tool and resource that claim refuses. A nil claim allows everything.
func BuildWith(log hclog.Logger, sources []Source, claim Claim) *Catalog {
	if claim == nil {
		claim = func(string, string, string) error { return nil }
	}
	if log == nil {
		log = hclog.NewNullLogger()
	}
	c := &Catalog{}
	for _, src := range sources {
		if src.Catalog == nil {
			continue
		}
		for _, t := range src.Catalog.Tools {
			entry, err := newTool(src.Provider, t)
			if err != nil {
				log.Warn("tool refused", "provider", src.Provider, "tool", t.Name, "error", err)
				continue
			}
			if !admit(log, "tool", src.Provider, entry.Declared, entry.Name, claim, servedBy(c.tools.by, entry.Name)) {
				continue
			}
			c.tools.add(entry.Name, entry)
		}
		for _, r := range src.Catalog.Resources {
			if r.URI == "" {
				log.Warn("resource refused: empty uri", "provider", src.Provider, "name", r.Name)
				continue
			}
			if err := claim(src.Provider, "resource", r.URI); err != nil {
				log.Warn("resource refused", "provider", src.Provider, "uri", r.URI, "error", err)
				continue
			}
			if prev, ok := c.resources.by[r.URI]; ok {
				log.Warn("resource refused: uri already served by another provider", "provider", src.Provider, "uri", r.URI, "served_by", prev.Provider)
				continue
			}
			entry := &Resource{Resource: r, Provider: src.Provider}
			c.resources.add(r.URI, entry)
		}
		for _, rt := range src.Catalog.ResourceTemplates {
			if rt.URITemplate == "" {
				log.Warn("resource template refused: empty uri template", "provider", src.Provider, "name", rt.Name)
				continue
			}
			c.templates = append(c.templates, &ResourceTemplate{ResourceTemplate: rt, Provider: src.Provider})
		}
		for _, p := range src.Catalog.Prompts {
			if err := ValidatePrompt(p); err != nil {
				log.Warn("prompt refused", "provider", src.Provider, "prompt", p.Name, "error", err)
				continue
			}
			entry := &Prompt{Prompt: p, Provider: src.Provider, Declared: p.Name}
			entry.Name = sdk.ClientName(p.Name)
			if !admit(log, "prompt", src.Provider, entry.Declared, entry.Name, claim, servedBy(c.prompts.by, entry.Name)) {
				continue
			}
			c.prompts.add(entry.Name, entry)
		}
	}
	return c
}

func (t *Tool) provider() string   { return t.Provider }
func (p *Prompt) provider() string { return p.Provider }

// servedBy names the provider of the entry of m called name, "" for none.
func servedBy[E interface{ provider() string }](m map[string]E, name string) string {
	if prev, ok := m[name]; ok {
		return prev.provider()
	}
	return ""
}

// admit decides whether a tool or prompt (kind) that provider declared as
// declared, advertised as name, joins the catalog: claim must allow it and
// no earlier entry may have the same advertised name (servedBy names the
// provider of such an entry, "" for none). A refusal is logged with its
// reason; a name mapped by [sdk.ClientName] is logged at info level.
func admit(log hclog.Logger, kind, provider, declared, name string, claim Claim, servedBy string) bool {
	if err := claim(provider, kind, name); err != nil {
		log.Warn(kind+" refused", "provider", provider, kind, declared, "error", err)
		return false
	}
	if servedBy != "" {
		reason := fmt.Sprintf("the name %s is already served by provider %s; the first provider in config order keeps it", name, servedBy)
		if declared != name {
			reason = fmt.Sprintf("its client-safe name %s is already served by provider %s; the first provider in config order keeps it, so rename this %s", name, servedBy, kind)
		}
		log.Warn(kind+" refused", "provider", provider, kind, declared, "error", reason)
		return false
	}
	if declared != name {
		log.Info(kind+" advertised under its client-safe name", "provider", provider, kind, declared, "name", name)
	}
	return true
}

// ValidateTool checks what the host requires of a tool spec; it is
// [sdk.ValidateTool], the one statement of those rules. Errors wrap
// [ErrInvalidTool].
func ValidateTool(t sdk.Tool) error { return sdk.ValidateTool(t) }

// ErrInvalidPrompt is wrapped by the errors [ValidatePrompt] returns; it
// is [sdk.ErrInvalidPrompt].
var ErrInvalidPrompt = sdk.ErrInvalidPrompt

// ValidatePrompt checks what the host requires of a prompt; it is
// [sdk.ValidatePrompt]. Errors wrap [ErrInvalidPrompt].
func ValidatePrompt(p sdk.Prompt) error { return sdk.ValidatePrompt(p) }

func newTool(provider string, t sdk.Tool) (*Tool, error) {
	args, err := sdk.NewArgumentValidator(t)
	if err != nil {
		return nil, err
	}
	entry := &Tool{Tool: t, Provider: provider, Declared: t.Name, args: args}
	entry.Name = sdk.ClientName(t.Name)
	return entry, nil
}

// ValidateArguments checks raw against the tool's input schema and the
// host's rules and returns the arguments to forward, as
// [sdk.ArgumentValidator.Validate] does; the error is an *[ArgumentError]
// that names the tool by its advertised name.
func (t *Tool) ValidateArguments(raw json.RawMessage) (json.RawMessage, error) {
	return t.args.Validate(raw)
}

// Tool returns the tool with the given advertised name, or whose
// advertised name is [sdk.ClientName] of name: the declared and the old
// dotted names ("notes.store" for "notes_store") find the tool too.
func (c *Catalog) Tool(name string) (*Tool, bool) { return byClientName(c.tools.by, name) }

// byClientName returns the entry of m named name, or else the one named
// [sdk.ClientName] of name.
func byClientName[T any](m map[string]T, name string) (T, bool) {
	if v, ok := m[name]; ok {
		return v, true
	}
	v, ok := m[sdk.ClientName(name)]
	return v, ok
}

// Tools returns the accepted tools in merge order.
func (c *Catalog) Tools() []*Tool { return slices.Clone(c.tools.list) }

// Resource returns the resource with the given URI.
func (c *Catalog) Resource(uri string) (*Resource, bool) {
	r, ok := c.resources.by[uri]
	return r, ok
}

// Resources returns the accepted resources in merge order.
func (c *Catalog) Resources() []*Resource { return slices.Clone(c.resources.list) }

// ResourceTemplates returns the accepted resource templates in merge order.
func (c *Catalog) ResourceTemplates() []*ResourceTemplate { return slices.Clone(c.templates) }

// Prompt returns the prompt with the given advertised name, or whose
// advertised name is [sdk.ClientName] of name, as [Catalog.Tool] does.
func (c *Catalog) Prompt(name string) (*Prompt, bool) { return byClientName(c.prompts.by, name) }

// Prompts returns the accepted prompts in merge order.
func (c *Catalog) Prompts() []*Prompt { return slices.Clone(c.prompts.list) }
