package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
)

// ToolSpec is a tool offered to the model.
type ToolSpec struct {
	// Name is the host tool name, e.g. "memory_search". A [Model] maps it to
	// whatever its API accepts and maps calls back to it.
	Name string
	// Description tells the model what the tool does and when to use it.
	Description string
	// Parameters is the JSON Schema of the tool's input, a JSON object.
	// Empty means a tool without parameters.
	Parameters json.RawMessage
}

// ToolCall is one tool call requested by the model.
type ToolCall struct {
	// ID pairs the call with its result message; it is the model's own
	// call id.
	ID string
	// Name is the host tool name, already mapped back from the model API's
	// name. A name the model made up is kept as the model sent it.
	Name string
	// Arguments is the call's input exactly as the model sent it; it may be
	// invalid JSON or not an object.
	Arguments string
}

// Message is one message of the conversation after the system prompt.
type Message struct {
	// Role is "user", "assistant" or "tool".
	Role string
	// Content is the message text. An assistant message that only calls
	// tools may leave it empty.
	Content string
	// ToolCalls are the calls an assistant message requested, in order.
	ToolCalls []ToolCall
	// ToolCallID is, for a "tool" message, the ID of the call it answers.
	ToolCallID string
	// IsError marks a "tool" message that reports a failure: the tool's
	// own error result, or a call the loop refused.
	IsError bool
}

// ModelRequest is one request to a [Model].
type ModelRequest struct {
	// System is the system prompt; empty sends none.
	System string
	// Messages is the conversation so far, oldest first.
	Messages []Message
	// Tools are the tools the model may call; none disables tool calling.
	Tools []ToolSpec
	// Model names the model; empty uses the Model implementation's default.
	Model string
	// Temperature is the sampling temperature; nil keeps the endpoint's
	// default.
	Temperature *float64
}

// ModelResponse is a model's answer to one [ModelRequest].
type ModelResponse struct {
	// Content is the model's text; with no ToolCalls it is the answer.
	Content string
	// ToolCalls are the tool calls the model requested, in order.
	ToolCalls []ToolCall
}

// Model is a chat model with native tool calling.
type Model interface {
	// Complete sends req and returns the model's next message. It honours
	// ctx: cancelling ctx aborts the request.
	Complete(ctx context.Context, req ModelRequest) (ModelResponse, error)
}

// ToolRunner runs one tool call through the host: result text for the
// model, isError, or err for a failure of the host connection itself.
// args is always a JSON object. A tool that fails (bad arguments, policy
// refusal, tool error) reports isError with its message in text; err ends
// the whole run.
type ToolRunner func(ctx context.Context, name string, args json.RawMessage) (text string, isError bool, err error)

// RunOptions bound and observe a [Run].
type RunOptions struct {
	// MaxIterations is the most model requests the run makes; required ≥ 1.
	MaxIterations int
	// OnIteration is called before each model request with the 1-based
	// iteration number and a one-line summary of the run so far, e.g. for
	// progress notifications. May be nil.
	OnIteration func(iteration int, summary string)
	// Allowed reports whether a tool is inside the agent's scope; a call
	// outside it is refused to the model without running. Nil allows every
	// tool in the request.
	Allowed func(tool string) bool
}

// Result is the outcome of a [Run].
type Result struct {
	// Response is the model's final answer, trimmed of surrounding space.
	Response string
	// Iterations is the number of model requests made.
	Iterations int
	// ToolCalls records every tool call the model requested, in order,
	// including calls that were refused without running.
	ToolCalls []ToolCallRecord
}

// ToolCallRecord is one tool call of a run.
type ToolCallRecord struct {
	// Name is the host tool name, or the name the model sent for a tool
	// that does not exist.
	Name string
	// IsError reports whether the model was told the call failed: the tool
	// reported an error, or the call was refused (unknown tool, outside
	// the scope, arguments not a JSON object).
	IsError bool
}

// ErrMaxIterations is wrapped by the error [Run] returns when the model
// still calls tools after MaxIterations model requests.
var ErrMaxIterations = errors.New("the agent reached its iteration limit")

// ErrEmptyAnswer is wrapped by the error [Run] returns when the model ends
// the run with neither tool calls nor text.
var ErrEmptyAnswer = errors.New("the model returned an empty answer")

// Run runs one single-turn agent loop: it sends req to m; while the model
// answers with tool calls, it appends the assistant message, runs each call
// in order through run and appends one "tool" message per call, then asks
// the model again. The first answer without tool calls ends the run.
//
// req.Messages is the conversation to start from, normally the user's
// prompt alone; Run does not modify the caller's slice.
//
// Calls are checked before they run. A tool not in req.Tools, a tool for
// which opts.Allowed returns false, and arguments that are not a JSON
// object are answered with an explanatory tool message and recorded as
// errors, without calling run. Empty arguments count as {}. A tool that
// reports isError is passed back to the model with the prefix "Error: ".
//
// Errors: invalid arguments to Run; a model request failing (its error is
// wrapped); run returning err (wrapped); ErrEmptyAnswer; ErrMaxIterations
// when the model still calls tools after opts.MaxIterations requests (those
// last calls are not run); ctx ending, which stops the run at once and
// wraps ctx.Err(). On error the Result still reports the iterations and
// tool calls made so far.
func Run(ctx context.Context, m Model, req ModelRequest, run ToolRunner, opts RunOptions) (Result, error) {
	var res Result
	if m == nil {
		return res, errors.New("agent run: no model")
	}
	if run == nil {
		return res, errors.New("agent run: no tool runner")
	}
	if opts.MaxIterations < 1 {
		return res, fmt.Errorf("agent run: max iterations must be at least 1, got %d", opts.MaxIterations)
	}

	known := make(map[string]bool, len(req.Tools))
	for _, t := range req.Tools {
		known[t.Name] = true
	}
	allowed := func(name string) bool { return opts.Allowed == nil || opts.Allowed(name) }

	req.Messages = append([]Message(nil), req.Messages...)
	var lastCalls []string
	for iteration := 1; ; iteration++ {
		if err := ctx.Err(); err != nil {
			return res, runStoppedError(res, err)
		}
		if opts.OnIteration != nil {
			opts.OnIteration(iteration, iterationSummary(iteration, opts.MaxIterations, lastCalls))
		}
		res.Iterations = iteration
		resp, err := m.Complete(ctx, req)
		if ctxErr := ctx.Err(); ctxErr != nil {
			return res, runStoppedError(res, ctxErr)
		}
		if err != nil {
			return res, fmt.Errorf("model request %d of at most %d failed: %w", iteration, opts.MaxIterations, err)
		}

		if len(resp.ToolCalls) == 0 {
			answer := strings.TrimSpace(resp.Content)
			if answer == "" {
				return res, fmt.Errorf("%w after %s and %s", ErrEmptyAnswer,
					countNoun(iteration, "model request"), countNoun(len(res.ToolCalls), "tool call"))
			}
			res.Response = answer
			return res, nil
		}
		if iteration >= opts.MaxIterations {
			return res, fmt.Errorf("%w: the model still called tools after %s "+
				"(max iterations %d, %s made); raise the agent's max_iterations or give it a narrower task",
				ErrMaxIterations, countNoun(iteration, "model request"), opts.MaxIterations, countNoun(len(res.ToolCalls), "tool call"))
		}

		calls := make([]ToolCall, len(resp.ToolCalls))
		for i, c := range resp.ToolCalls {
			if c.ID == "" {
				// Without an id the result could not be paired with its
				// call; give it one that is unique within the run.
				c.ID = fmt.Sprintf("call_%d_%d", iteration, i+1)
			}
			calls[i] = c
		}
		req.Messages = append(req.Messages, Message{Role: "assistant", Content: resp.Content, ToolCalls: calls})

		lastCalls = lastCalls[:0]
		for _, c := range calls {
			if err := ctx.Err(); err != nil {
				return res, runStoppedError(res, err)
			}
			lastCalls = append(lastCalls, c.Name)
			text, isError, err := runCall(ctx, c, req.Tools, known, allowed, run)
			if err != nil {
				if ctxErr := ctx.Err(); ctxErr != nil {
					return res, runStoppedError(res, ctxErr)
				}
				return res, fmt.Errorf("tool call %s could not be run through the host: %w", c.Name, err)
			}
			if ctxErr := ctx.Err(); ctxErr != nil {
				return res, runStoppedError(res, ctxErr)
			}
			res.ToolCalls = append(res.ToolCalls, ToolCallRecord{Name: c.Name, IsError: isError})
			req.Messages = append(req.Messages, Message{Role: "tool", Content: text, ToolCallID: c.ID, IsError: isError})
		}
	}
}

// runCall checks one tool call and runs it if it passes, returning the
// tool message for the model. A refusal is its explanation with isError; a
// tool's error result gets the prefix "Error: "; err is the runner's own
// failure.
func runCall(ctx context.Context, c ToolCall, tools []ToolSpec, known map[string]bool,
	allowed func(string) bool, run ToolRunner) (text string, isError bool, err error) {
	if !known[c.Name] {
		return unknownToolMessage(c.Name, tools, allowed), true, nil
	}
	if !allowed(c.Name) {
		return fmt.Sprintf("tool %s is outside this agent's scope", c.Name), true, nil
	}
	args, problem := objectArguments(c.Arguments)
	if problem != "" {
		return fmt.Sprintf("arguments for %s are not a JSON object: %s; send a JSON object matching the tool's parameters",
			c.Name, problem), true, nil
	}
	text, isError, err = run(ctx, c.Name, args)
	if err == nil && isError {
		text = "Error: " + text
	}
	return text, isError, err
}

// unknownToolMessage tells the model which tools it may call instead.
func unknownToolMessage(name string, tools []ToolSpec, allowed func(string) bool) string {
	var names []string
	for _, t := range tools {
		if allowed(t.Name) {
			names = append(names, t.Name)
		}
	}
	if len(names) == 0 {
		return fmt.Sprintf("unknown tool %s; there are no tools you can call, answer without tools", name)
	}
	return fmt.Sprintf("unknown tool %s; the tools you can call are: %s", name, strings.Join(names, ", "))
}

// objectArguments parses a call's arguments. It returns them as a JSON
// object, or a description of why they are not one. Empty arguments are the
// empty object, as some models send for tools without parameters.
func objectArguments(raw string) (json.RawMessage, string) {
	trimmed := strings.TrimSpace(raw)
	if trimmed == "" {
		return json.RawMessage("{}"), ""
	}
	var v any
	if err := json.Unmarshal([]byte(trimmed), &v); err != nil {
		return nil, strings.TrimPrefix(err.Error(), "json: ")
	}
	switch v.(type) {
	case map[string]any:
		return json.RawMessage(trimmed), ""
	case []any:
		return nil, "got an array"
	case string:
		return nil, "got a string"
	case float64:
		return nil, "got a number"
	case bool:
		return nil, "got a boolean"
	default:
		return nil, "got null"
	}
}

// iterationSummary is the progress line for a model request.
func iterationSummary(iteration, maxIterations int, lastCalls []string) string {
	s := fmt.Sprintf("model request %d of at most %d", iteration, maxIterations)
	if len(lastCalls) > 0 {
		s += " after calling " + strings.Join(lastCalls, ", ")
	}
	return s
}

// runStoppedError is the error of a run ended by its context.
func runStoppedError(res Result, err error) error {
	return fmt.Errorf("agent run stopped after %s and %s: %w",
		countNoun(res.Iterations, "model request"), countNoun(len(res.ToolCalls), "tool call"), err)
}

// countNoun formats n with noun, adding "s" unless n is 1.
func countNoun(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}
