package audit

// Table is the SQL table that holds the audit log.
const Table = "mcp_audit"

// DecisionAllowed is the Record.Decision of a call the policy let through.
const DecisionAllowed = "allowed"

// ClassAct is the Record.Class of an act tool, the class [Log.Begin] counts for the act budget.
const ClassAct = "act"

// DecisionDenied returns the Record.Decision of a call the policy refused for reason (a policy.Denial
// reason such as "readonly" or "budget"): "denied:<reason>".
func DecisionDenied(reason string) string { return deniedPrefix + reason }

const deniedPrefix = "denied:"

// Record is one row of the audit log: one attempt to call one tool. Strings are stored as given (Error is
// cut to [MaxErrorBytes]), so callers pass redacted values: [SessionHash] for SessionHash and
// [SummarizeArgs] for ArgsSummary.
type Record struct {
	// ID is assigned by the database in insertion order; a value set before [Log.Record] is ignored.
	ID uint64 `gorm:"column:id;primaryKey;autoIncrement"`
	// TimeMs is when the call started, in UTC Unix milliseconds; 0 means the time of [Log.Record].
	TimeMs int64 `gorm:"column:time_ms;not null;index:idx_mcp_audit_time_ms;index:idx_mcp_audit_acts,priority:3"`
	// SessionHash identifies the MCP session without revealing its id ([SessionHash]); "" for none.
	SessionHash string `gorm:"column:session_hash;not null"`
	// SourceType is the caller's provenance, such as "mcp:claude-desktop", "cli" or "mcp:cursor/agent:coder".
	SourceType string `gorm:"column:source_type;not null;index:idx_mcp_audit_source_type"`
	// ClientName is the client's clientInfo.name as it announced it.
	ClientName string `gorm:"column:client_name;not null"`
	// ClientVersion is the client's clientInfo.version.
	ClientVersion string `gorm:"column:client_version;not null"`
	// Tool is the tool's advertised name, such as "notes_store", also when the client called it by
	// its old dotted name ("notes.store").
	Tool string `gorm:"column:tool;not null;index:idx_mcp_audit_tool"`
	// Provider is the name of the provider serving the tool; "" when the tool is unknown.
	Provider string `gorm:"column:provider;not null"`
	// Class is the tool's policy class, "read" or "act".
	Class string `gorm:"column:class;not null;index:idx_mcp_audit_acts,priority:1"`
	// Decision is [DecisionAllowed] or [DecisionDenied] ("denied:<reason>").
	Decision string `gorm:"column:decision;not null;index:idx_mcp_audit_acts,priority:2"`
	// Success is true when the call ran and its result was not an error; denied calls are unsuccessful.
	Success bool `gorm:"column:success;not null"`
	// Error is the error or isError text, at most [MaxErrorBytes] bytes ([TruncateError] is applied).
	Error string `gorm:"column:error;not null"`
	// DurationUs is how long the call took, in microseconds.
	DurationUs int64 `gorm:"column:duration_us;not null"`
	// ArgsSummary is the redacted arguments as a JSON object ([SummarizeArgs]).
	ArgsSummary string `gorm:"column:args_summary;not null"`
	// ResultRef names what the call produced or read, such as a document or chunk id; "" for none.
	ResultRef string `gorm:"column:result_ref;not null"`
	// Pending is true from when [Log.Begin] writes an act's row, before the call is dispatched, until
	// [Log.Complete] writes its outcome. A row still pending once its host has stopped means the host
	// stopped during the call: the act may or may not have taken effect. Rows written by [Log.Record]
	// are never pending.
	Pending bool `gorm:"column:pending;not null;default:false"`
	// Profile is the name of the caller's [profiles.<name>] table; "" for a caller of no profile.
	Profile string `gorm:"column:profile;not null;default:''"`
}

// TableName maps Record to the mcp_audit table for gorm.
func (Record) TableName() string { return Table }
