package policy

import (
	"fmt"
	"time"
)

// ReasonProfile: the tool is outside the caller's profile ([profiles.<name>] tools or exclude_tools).
const ReasonProfile = "profile"

// Profile narrows a [Policy] for the clients of one [profiles.<name>] table of the config.
type Profile struct {
	// Name is the profile's name; messages name its table, [profiles.<Name>].
	Name string
	// Level replaces the policy's level for the profile; "" keeps it.
	Level Level
	// Tools are glob patterns, as in [Options.AllowedTools], of the tools the profile serves; empty
	// serves every tool the policy allows.
	Tools []string
	// ExcludeTools are glob patterns of tools the profile never serves; they win over Tools.
	ExcludeTools []string
	// MaxActionsPerHour caps the profile's own acts in any sliding hour, besides the policy's cap on
	// all acts. Nil means no cap of its own; 0 refuses every act; negative is an error.
	MaxActionsPerHour *int
}

// ForProfile returns the Policy for the clients of pr: p's rules (level, allowed and denied tools, the
// act budget of all acts, which it shares with p) narrowed by pr. It fails on an unknown level, a
// negative MaxActionsPerHour or a malformed pattern, naming the profile's table.
func (p *Policy) ForProfile(pr Profile) (*Policy, error) {
	key := fmt.Sprintf("[profiles.%s]", pr.Name)
	q := &Policy{
		level: p.level, max: p.max, limited: p.limited, shared: p.shared,
		allowed: p.allowed, denied: p.denied, now: p.now,
		parent: p, profile: pr.Name,
		profileTools: patterns(pr.Tools), profileExclude: patterns(pr.ExcludeTools),
	}
	switch pr.Level {
	case "":
	case ReadOnly, Supervised, Full:
		q.level = pr.Level
	default:
		return nil, fmt.Errorf("policy: unknown %s level %q: use %q, %q or %q", key, pr.Level, ReadOnly, Supervised, Full)
	}
	if pr.MaxActionsPerHour != nil {
		if *pr.MaxActionsPerHour < 0 {
			return nil, fmt.Errorf("policy: %s max_actions_per_hour is %d: use 0 or more, or leave it out", key, *pr.MaxActionsPerHour)
		}
		q.profileLimited, q.profileMax = true, *pr.MaxActionsPerHour
	}
	if err := validatePatterns(key+" tools", q.profileTools); err != nil {
		return nil, err
	}
	if err := validatePatterns(key+" exclude_tools", q.profileExclude); err != nil {
		return nil, err
	}
	return q, nil
}

// Profile returns the name of the profile p applies, "" for the policy of clients of no profile.
func (p *Policy) Profile() string { return p.profile }

// profileRefusal is the refusal of tool by p's profile, or nil.
func (p *Policy) profileRefusal(tool string, class Class) *Denial {
	if p.profile == "" {
		return nil
	}
	key := fmt.Sprintf("[profiles.%s]", p.profile)
	if pat, ok := firstMatch(p.profileExclude, tool); ok {
		return &Denial{
			Reason:  ReasonProfile,
			Message: fmt.Sprintf("%s matches %q in %s exclude_tools; remove that pattern to serve it to this profile", tool, pat, key),
		}
	}
	if len(p.profileTools) > 0 {
		if _, ok := firstMatch(p.profileTools, tool); !ok {
			return &Denial{
				Reason:  ReasonProfile,
				Message: fmt.Sprintf("%s matches no pattern in %s tools; add it there to serve it to this profile", tool, key),
			}
		}
	}
	if class == Act && p.profileLimited && p.profileMax == 0 {
		return &Denial{
			Reason:  ReasonBudget,
			Message: fmt.Sprintf("%s is an act tool and %s max_actions_per_hour is 0, which refuses every act of this profile; raise it to allow it", tool, key),
		}
	}
	return nil
}

// ProfileActLimit is the profile's own act budget for a caller that counts it ([Options.SharedBudget]),
// counted over the acts of this profile only: the most allowed in any sliding hour, or -1 when the
// profile has no cap of its own or this Policy counts acts itself.
func (p *Policy) ProfileActLimit() int {
	if !p.shared || !p.profileLimited {
		return -1
	}
	return p.profileMax
}

// ProfileBudgetDenial is the refusal of tool when the profile's own act budget is used up and its next
// slot frees up at free.
func (p *Policy) ProfileBudgetDenial(tool string, free time.Time) *Denial {
	return budgetDenial(tool, "[profiles."+p.profile+"]", p.profileMax, free, p.now(), "it")
}
