// Package policy implements the host's SecurityPolicy: the gate every tool call passes after argument
// validation and before dispatch to a provider (DESIGN §4, step 4).
//
// A Policy is built once from the [autonomy] section of the config (level, max_actions_per_hour,
// allowed_tools, denied_tools) and answers one question per call through [Policy.Check]: may this tool, of
// this class, run now? Read tools run at every autonomy level; act tools are refused at "readonly" and count
// against an hourly budget kept as a real sliding window for the life of the process. Allow and deny lists
// are glob patterns, and a deny always wins over an allow. Anything the policy cannot classify is refused
// (fail closed).
//
// A refusal is a [*Denial]: a short machine reason for the audit log and a message that tells the user
// which rule refused the call and which config key changes it. Every Denial matches [ErrDenied] with
// errors.Is.
package policy
