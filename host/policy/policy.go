package policy

import (
	"errors"
	"fmt"
	"path"
	"slices"
	"sync"
	"time"

	"github.com/openhuman/openhuman-host/sdk"
)

// Level is the autonomy level set by [autonomy] level in the config.
type Level string

// The autonomy levels.
const (
	// ReadOnly allows read tools only; every act tool is refused.
	ReadOnly Level = "readonly"
	// Supervised allows read and act tools, acts within the hourly budget. It is the default level.
	Supervised Level = "supervised"
	// Full allows read and act tools, acts within the hourly budget. It differs from Supervised only in
	// what other components do (such as act confirmation); the policy itself treats both alike.
	Full Level = "full"
)

// Class is a tool's policy class, declared by its provider in Describe.
type Class string

// The policy classes.
const (
	// Read marks a tool that only reads state.
	Read Class = "read"
	// Act marks a tool that changes state or acts on the world; acts are refused at ReadOnly and count
	// against the hourly budget.
	Act Class = "act"
)

// Reasons a [Denial] carries. The audit log records a refusal as "denied:<reason>".
const (
	// ReasonUnknownClass: the tool's class is neither Read nor Act.
	ReasonUnknownClass = "unknown_class"
	// ReasonDeniedTool: the tool matches a pattern in denied_tools.
	ReasonDeniedTool = "denied_tool"
	// ReasonNotAllowed: allowed_tools is not empty and the tool matches none of its patterns.
	ReasonNotAllowed = "not_allowed"
	// ReasonReadOnly: the tool is an act and the level is ReadOnly.
	ReasonReadOnly = "readonly"
	// ReasonBudget: the hourly act budget is used up.
	ReasonBudget = "budget"
)

// budgetWindow is the length of the sliding window the act budget counts over.
const budgetWindow = time.Hour

// ErrDenied matches every [*Denial] with errors.Is.
var ErrDenied = errors.New("denied by security policy")

// Options configures a [Policy]. The zero value is the default policy: supervised, no act budget, every
// tool allowed.
type Options struct {
	// Level is the autonomy level ([autonomy] level). Default "" means Supervised; any other value than
	// the three levels is an error from New.
	Level Level
	// MaxActionsPerHour caps act tools allowed in any sliding hour ([autonomy] max_actions_per_hour).
	// Default nil means unlimited; 0 refuses every act; a negative value is an error from New.
	MaxActionsPerHour *int
	// AllowedTools are path.Match glob patterns (such as "notes_*") of the tools that may run
	// ([autonomy] allowed_tools), matched against advertised tool names. Dots in a pattern match "_"
	// ([sdk.ClientNameGlob]), so patterns written for the old dotted names ("notes.*") keep their
	// meaning. Default empty means every tool.
	AllowedTools []string
	// DeniedTools are path.Match glob patterns of tools that never run ([autonomy] denied_tools), checked
	// before AllowedTools: a deny wins over an allow. Dots match "_" as in AllowedTools. Default empty
	// means none.
	DeniedTools []string
	// Now is the clock the act budget reads. Default nil means time.Now.
	Now func() time.Time
	// SharedBudget leaves counting the hourly act budget to the caller, which counts the acts of every
	// process sharing the data directory: the host counts the act rows of its audit log in the same
	// transaction that writes the act's row (audit.Log.Begin), so CLI calls, several stdio servers and an
	// HTTP server share one budget. Check then refuses acts for the budget only when
	// MaxActionsPerHour is 0; [Policy.ActLimit] is the limit to count against and [Policy.BudgetDenial]
	// the refusal. Default false: Check counts the acts this Policy allowed.
	SharedBudget bool
}

// Policy decides whether a tool call may run. Build it with [New]; it is safe for concurrent use and keeps
// its act budget for its whole life, so the host holds one Policy per process.
type Policy struct {
	level   Level
	max     int // meaningful only when limited
	limited bool
	shared  bool
	allowed []pattern
	denied  []pattern
	now     func() time.Time

	mu   sync.Mutex
	acts []time.Time // times of the acts allowed in the current window, oldest first

	// Set by ForProfile: parent counts the acts of all profiles when acts
	// are counted here; profile names the profile, whose own rules are
	// the remaining fields.
	parent         *Policy
	profile        string
	profileTools   []pattern
	profileExclude []pattern
	profileLimited bool
	profileMax     int
	profileActs    []time.Time
}

// New validates opts and returns a Policy. It fails on an unknown level, a negative MaxActionsPerHour, or
// an empty or malformed glob pattern (the error names the pattern and its list).
func New(opts Options) (*Policy, error) {
	p := &Policy{
		level:   opts.Level,
		allowed: patterns(opts.AllowedTools),
		denied:  patterns(opts.DeniedTools),
		now:     opts.Now,
		shared:  opts.SharedBudget,
	}
	switch p.level {
	case "":
		p.level = Supervised
	case ReadOnly, Supervised, Full:
	default:
		return nil, fmt.Errorf("policy: unknown [autonomy] level %q: use %q, %q or %q",
			opts.Level, ReadOnly, Supervised, Full)
	}
	if opts.MaxActionsPerHour != nil {
		if *opts.MaxActionsPerHour < 0 {
			return nil, fmt.Errorf("policy: [autonomy] max_actions_per_hour is %d: use 0 or more, or leave it unset for no limit",
				*opts.MaxActionsPerHour)
		}
		p.limited = true
		p.max = *opts.MaxActionsPerHour
	}
	if err := validatePatterns("allowed_tools", p.allowed); err != nil {
		return nil, err
	}
	if err := validatePatterns("denied_tools", p.denied); err != nil {
		return nil, err
	}
	if p.now == nil {
		p.now = time.Now
	}
	return p, nil
}

// pattern is one allowed_tools or denied_tools entry: as written, for
// messages, and as matched against advertised tool names.
type pattern struct {
	written, glob string
}

func patterns(written []string) []pattern {
	out := make([]pattern, len(written))
	for i, w := range written {
		out[i] = pattern{written: w, glob: sdk.ClientNameGlob(w)}
	}
	return out
}

func validatePatterns(key string, patterns []pattern) error {
	for _, pat := range patterns {
		if pat.written == "" {
			return fmt.Errorf("policy: [autonomy] %s has an empty pattern", key)
		}
		if _, err := path.Match(pat.glob, ""); err != nil {
			return fmt.Errorf("policy: [autonomy] %s pattern %q: %w", key, pat.written, err)
		}
	}
	return nil
}

// Level returns the effective autonomy level.
func (p *Policy) Level() Level { return p.level }

// Inherit carries the acts old allowed within the last hour over into p, so
// that replacing a policy (a config reload) does not reset the hourly act
// budget. Acts beyond p's own limit stay counted: a lowered limit refuses
// acts until enough of them leave the window. A nil old does nothing.
func (p *Policy) Inherit(old *Policy) {
	if old == nil || old == p {
		return
	}
	old.mu.Lock()
	acts := slices.Clone(old.acts)
	old.mu.Unlock()
	cutoff := p.now().Add(-time.Hour)
	kept := acts[:0]
	for _, t := range acts {
		if t.After(cutoff) {
			kept = append(kept, t)
		}
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.acts = append(kept, p.acts...)
	slices.SortFunc(p.acts, func(a, b time.Time) int { return a.Compare(b) })
}

// Check reports whether tool, of the given class, may run now. It returns nil, or a [*Denial] (which
// matches [ErrDenied]). The rules apply in order: an unknown class is refused; a tool matching
// denied_tools is refused; when allowed_tools is set, a tool matching none of it is refused; read tools
// are allowed; act tools are refused at ReadOnly; an act is then allowed if the hourly budget has a free
// slot, and consumes it.
func (p *Policy) Check(tool string, class Class) error {
	if d := p.Refusal(tool, class); d != nil {
		return d
	}
	if class == Read {
		return nil
	}
	return p.spend(tool)
}

// Refusal returns the [*Denial] of tool, of the given class, by the rules that do not change from one
// call to the next (an unknown class, denied_tools, allowed_tools, the ReadOnly level, and
// max_actions_per_hour = 0), or nil when only the hourly budget can still refuse it. It consumes
// nothing. A tool it refuses can never run under p, so the host leaves it out of tools/list.
func (p *Policy) Refusal(tool string, class Class) *Denial {
	if class != Read && class != Act {
		return &Denial{
			Reason: ReasonUnknownClass,
			Message: fmt.Sprintf("%s has unknown policy class %q, so it is refused; its provider must declare class %q or %q",
				tool, class, Read, Act),
		}
	}
	if pat, ok := firstMatch(p.denied, tool); ok {
		return &Denial{
			Reason: ReasonDeniedTool,
			Message: fmt.Sprintf("%s matches %q in [autonomy] denied_tools; remove that pattern from denied_tools to allow it",
				tool, pat),
		}
	}
	if len(p.allowed) > 0 {
		if _, ok := firstMatch(p.allowed, tool); !ok {
			return &Denial{
				Reason: ReasonNotAllowed,
				Message: fmt.Sprintf("%s matches no pattern in [autonomy] allowed_tools; add it to allowed_tools to allow it",
					tool),
			}
		}
	}
	if d := p.profileRefusal(tool, class); d != nil && d.Reason == ReasonProfile {
		return d
	}
	if class == Read {
		return nil
	}
	if p.level == ReadOnly {
		where := "[autonomy] level"
		if p.profile != "" {
			where = fmt.Sprintf("level (of [profiles.%s], or [autonomy] when the profile leaves it out)", p.profile)
		}
		return &Denial{
			Reason: ReasonReadOnly,
			Message: fmt.Sprintf("%s is an act tool and %s is %q; set level = %q to allow it",
				tool, where, ReadOnly, Supervised),
		}
	}
	if d := p.profileRefusal(tool, class); d != nil {
		return d
	}
	if p.limited && p.max == 0 {
		return &Denial{
			Reason: ReasonBudget,
			Message: fmt.Sprintf("%s is an act tool and [autonomy] max_actions_per_hour is 0, which refuses every act; raise max_actions_per_hour to allow it",
				tool),
		}
	}
	return nil
}

// spend consumes one slot of the act budget, or refuses when the last hour already holds max acts.
func (p *Policy) spend(tool string) error {
	if p.shared {
		return nil
	}
	if p.parent != nil {
		return p.spendProfile(tool)
	}
	if !p.limited {
		return nil
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	now := p.now()
	p.acts = dropExpired(p.acts, now)
	if len(p.acts) < p.max {
		p.acts = append(p.acts, now)
		return nil
	}
	return p.budgetDenial(tool, p.acts[0].Add(budgetWindow), now)
}

// spendProfile consumes a slot of the profile's own budget and one of the parent's budget of all acts,
// or neither when either is used up.
func (p *Policy) spendProfile(tool string) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	now := p.now()
	if p.profileLimited {
		p.profileActs = dropExpired(p.profileActs, now)
		if len(p.profileActs) >= p.profileMax {
			return p.ProfileBudgetDenial(tool, p.profileActs[0].Add(budgetWindow))
		}
	}
	if err := p.parent.spend(tool); err != nil {
		return err
	}
	if p.profileLimited {
		p.profileActs = append(p.profileActs, now)
	}
	return nil
}

// dropExpired removes from acts, the times of acts in ascending order, those whose hour is over at
// now: an act at time t holds its slot during (t, t+1h]. It reuses acts' array.
func dropExpired(acts []time.Time, now time.Time) []time.Time {
	cutoff := now.Add(-budgetWindow)
	expired := 0
	for expired < len(acts) && !acts[expired].After(cutoff) {
		expired++
	}
	if expired == 0 {
		return acts
	}
	return append(acts[:0], acts[expired:]...)
}

// ActLimit is the act budget for a caller that counts it ([Options.SharedBudget]): the most acts
// allowed in any sliding hour, or -1 when there is no limit or this Policy counts acts itself.
func (p *Policy) ActLimit() int {
	if !p.shared || !p.limited {
		return -1
	}
	return p.max
}

// BudgetDenial is the refusal of tool when the act budget is used up and its next slot frees up at
// free; a caller that counts the budget ([Options.SharedBudget]) returns it as Check would.
func (p *Policy) BudgetDenial(tool string, free time.Time) *Denial {
	return p.budgetDenial(tool, free, p.now())
}

func (p *Policy) budgetDenial(tool string, free, now time.Time) *Denial {
	return budgetDenial(tool, "[autonomy]", p.max, free, now, "max_actions_per_hour")
}

// budgetDenial is the refusal of tool when the budget of max acts an hour set in table is used up
// and its next slot frees up at free; the message ends by saying to raise what.
func budgetDenial(tool, table string, max int, free, now time.Time, what string) *Denial {
	return &Denial{
		Reason: ReasonBudget,
		Message: fmt.Sprintf("%s would exceed %s max_actions_per_hour = %d; the next slot frees up at %s (in %s); wait until then or raise %s",
			tool, table, max, free.UTC().Format(time.RFC3339), ceilSecond(free.Sub(now)), what),
		RetryAt: free,
	}
}

// ceilSecond rounds d up to a whole second, so a wait is never shown shorter than it is.
func ceilSecond(d time.Duration) time.Duration {
	return (d + time.Second - 1).Truncate(time.Second)
}

// firstMatch returns the first of patterns (as written) that matches tool.
func firstMatch(patterns []pattern, tool string) (string, bool) {
	for _, pat := range patterns {
		// Patterns were validated in New, so Match cannot fail here.
		if ok, _ := path.Match(pat.glob, tool); ok {
			return pat.written, true
		}
	}
	return "", false
}

// Denial is the error [Policy.Check] returns when it refuses a call. It matches [ErrDenied].
type Denial struct {
	// Reason is a short machine code, one of the Reason constants; the audit log records
	// "denied:<Reason>".
	Reason string
	// Message says which rule refused the call and which config key changes that, for the user and the
	// model; it never holds arguments or secrets.
	Message string
	// RetryAt is when the next act budget slot frees up, for ReasonBudget with a non-zero budget;
	// zero otherwise.
	RetryAt time.Time
}

// Error returns the Message.
func (d *Denial) Error() string { return d.Message }

// Is reports whether target is [ErrDenied], so errors.Is(err, ErrDenied) holds for every Denial.
func (d *Denial) Is(target error) bool { return target == ErrDenied }

var _ error = (*Denial)(nil)
