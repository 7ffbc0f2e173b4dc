// Package policy implements the host's SecurityPolicy: the gate every tool call passes after argument
// validation and before dispatch to a provider (step 3 of the call pipeline in docs/architecture.md).
//
// A Policy is built once from the [autonomy] section of the config (level, max_actions_per_hour,
// allowed_tools, denied_tools) and answers one question per call through [Policy.Check]: may this tool, of
// this class, run now? Read tools run at every autonomy level; act tools are refused at "readonly" and count
// against an hourly budget, a real sliding window. A Policy counts the acts it allowed itself, or, with
// [Options.SharedBudget] (what the host uses), leaves the counting to its caller: the host counts act rows in
// the audit log, so every process on one data directory or database shares the budget. Allow and deny lists
// are glob patterns, and a deny always wins over an allow. Anything the policy cannot classify is refused
// (fail closed).
//
// A refusal is a [*Denial]: a short machine reason for the audit log and a message that tells the user
// which rule refused the call and which config key changes it. Every Denial matches [ErrDenied] with
// errors.Is.
package policy
