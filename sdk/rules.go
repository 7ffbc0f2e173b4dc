package sdk

import (
	"encoding/json"
	"errors"
	"fmt"
	"regexp"

	"github.com/google/jsonschema-go/jsonschema"
)

// This file and rules_arguments.go are the one statement of what the host
// refuses in what a provider declares and in the arguments of a call: the
// host's catalog applies them when it loads a provider and before every
// dispatch, and sdktest applies them in providers' unit tests.

// ErrInvalidTool is wrapped by the errors [ValidateTool] and
// [NewArgumentValidator] return: the host leaves such a tool out of its
// catalog, with the error logged.
var ErrInvalidTool = errors.New("invalid tool spec")

// ErrInvalidPrompt is wrapped by the errors [ValidatePrompt] returns: the
// host leaves such a prompt out of its catalog, with the error logged.
var ErrInvalidPrompt = errors.New("invalid prompt spec")

// declaredName is what the host accepts as a declared tool or prompt name.
var declaredName = regexp.MustCompile(`^[A-Za-z0-9_.-]{1,128}$`)

// ValidateTool checks what the host requires of a tool spec: a name
// matching [A-Za-z0-9_.-]{1,128} (the host advertises it as [ClientName]
// of it), a policy class of "read" or "act", an input schema that is a
// JSON Schema with "type": "object" and resolves, and an output schema
// (when present) of type object. It returns nil for a tool the host takes,
// else an error wrapping [ErrInvalidTool] that names the tool and the
// problem, such as `invalid tool spec: t: no input schema`.
func ValidateTool(t Tool) error {
	_, err := NewArgumentValidator(t)
	return err
}

// ValidatePrompt checks what the host requires of a prompt: a name
// matching [A-Za-z0-9_.-]{1,128}, as tool names, and arguments with
// distinct, non-empty names. Errors wrap [ErrInvalidPrompt].
func ValidatePrompt(p Prompt) error {
	if !declaredName.MatchString(p.Name) {
		return fmt.Errorf("%w: name %q must match [A-Za-z0-9_.-]{1,128}", ErrInvalidPrompt, p.Name)
	}
	seen := map[string]bool{}
	for _, a := range p.Arguments {
		if a.Name == "" || seen[a.Name] {
			return fmt.Errorf("%w: %s: argument names must be non-empty and distinct, got %q twice or empty", ErrInvalidPrompt, p.Name, a.Name)
		}
		seen[a.Name] = true
	}
	return nil
}

// ArgumentValidator checks the arguments of calls to one tool as the host
// does before it dispatches them (see [ArgumentValidator.Validate]). It is
// immutable and safe for concurrent use.
type ArgumentValidator struct {
	// name is the tool's name as clients see it, for messages.
	name     string
	schema   *jsonschema.Schema
	resolved *jsonschema.Resolved
	required map[string]bool
	// closed is true when the schema sets "additionalProperties": false,
	// decided once here rather than on every call.
	closed bool
}

// NewArgumentValidator checks t as [ValidateTool] does and returns the
// validator of its arguments, with the input schema parsed and resolved
// once. Its messages name the tool as clients see it, [ClientName] of
// t.Name. Errors wrap [ErrInvalidTool].
func NewArgumentValidator(t Tool) (*ArgumentValidator, error) {
	return newArgumentValidator(t, nil, nil)
}

// newArgumentValidator is [NewArgumentValidator] for a tool whose input or
// output schema (when not nil) was derived from a Go type: that schema is
// taken as already parsed and resolved.
func newArgumentValidator(t Tool, input, output *derivedSchema) (*ArgumentValidator, error) {
	if !declaredName.MatchString(t.Name) {
		return nil, fmt.Errorf("%w: name %q must match [A-Za-z0-9_.-]{1,128}", ErrInvalidTool, t.Name)
	}
	if t.Class != ClassRead && t.Class != ClassAct {
		return nil, fmt.Errorf("%w: %s: policy class %q must be \"read\" or \"act\"", ErrInvalidTool, t.Name, t.Class)
	}
	if len(t.InputSchema) == 0 {
		return nil, fmt.Errorf("%w: %s: no input schema", ErrInvalidTool, t.Name)
	}
	schema, resolved := &jsonschema.Schema{}, (*jsonschema.Resolved)(nil)
	if input != nil {
		schema, resolved = input.schema, input.resolved
	} else if err := json.Unmarshal(t.InputSchema, schema); err != nil {
		return nil, fmt.Errorf("%w: %s: input schema: %v", ErrInvalidTool, t.Name, err)
	}
	if schema.Type != "object" {
		return nil, fmt.Errorf("%w: %s: input schema must have \"type\": \"object\"", ErrInvalidTool, t.Name)
	}
	if resolved == nil {
		var err error
		if resolved, err = schema.Resolve(nil); err != nil {
			return nil, fmt.Errorf("%w: %s: input schema does not resolve: %v", ErrInvalidTool, t.Name, err)
		}
	}
	if len(t.OutputSchema) > 0 {
		out := &jsonschema.Schema{}
		if output != nil {
			out = output.schema
		} else if err := json.Unmarshal(t.OutputSchema, out); err != nil {
			return nil, fmt.Errorf("%w: %s: output schema: %v", ErrInvalidTool, t.Name, err)
		}
		if out.Type != "object" {
			return nil, fmt.Errorf("%w: %s: output schema must have \"type\": \"object\"", ErrInvalidTool, t.Name)
		}
	}
	required := map[string]bool{}
	for _, r := range schema.Required {
		required[r] = true
	}
	return &ArgumentValidator{name: ClientName(t.Name), schema: schema, resolved: resolved, required: required,
		closed: isFalseSchema(schema.AdditionalProperties)}, nil
}
