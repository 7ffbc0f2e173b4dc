package policy

import (
	"errors"
	"strings"
	"testing"
	"time"
)

func TestForProfile(t *testing.T) {
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	three, one := 3, 1
	base, err := New(Options{Level: Full, MaxActionsPerHour: &three, DeniedTools: []string{"pages_tag"}, Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	review, err := base.ForProfile(Profile{Name: "review", Level: ReadOnly, Tools: []string{"notes_*", "pages_*"}, ExcludeTools: []string{"notes_forget"}})
	if err != nil {
		t.Fatal(err)
	}
	agents, err := base.ForProfile(Profile{Name: "agents", MaxActionsPerHour: &one})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		p          *Policy
		tool       string
		class      Class
		wantReason string
		wantText   string
	}{
		{review, "notes_search", Read, "", ""},
		{review, "web_search", Read, ReasonProfile, "[profiles.review] tools"},
		{review, "notes_forget", Act, ReasonProfile, "[profiles.review] exclude_tools"},
		{review, "notes_store", Act, ReasonReadOnly, "[profiles.review]"},
		{review, "pages_tag", Read, ReasonDeniedTool, "[autonomy] denied_tools"},
		{agents, "notes_store", Act, "", ""},
		{agents, "notes_store", Act, ReasonBudget, "[profiles.agents] max_actions_per_hour = 1"},
		{base, "notes_store", Act, "", ""},
		{base, "notes_store", Act, "", ""},
		// The profile's act counted towards the cap of all acts too: 3 are used.
		{base, "notes_store", Act, ReasonBudget, "[autonomy] max_actions_per_hour = 3"},
	}
	for i, tc := range tests {
		err := tc.p.Check(tc.tool, tc.class)
		var d *Denial
		switch {
		case tc.wantReason == "" && err != nil:
			t.Errorf("%d: %s Check(%s) = %v, want allowed", i, tc.p.Profile(), tc.tool, err)
		case tc.wantReason != "" && (!errors.As(err, &d) || d.Reason != tc.wantReason || !strings.Contains(d.Message, tc.wantText)):
			t.Errorf("%d: %s Check(%s) = %v, want %s naming %s", i, tc.p.Profile(), tc.tool, err, tc.wantReason, tc.wantText)
		}
	}
	free := now.Add(90 * time.Second)
	for _, tc := range []struct {
		got  *Denial
		want string
	}{
		{base.BudgetDenial("notes_store", free),
			"notes_store would exceed [autonomy] max_actions_per_hour = 3; the next slot frees up at 2026-12-01T12:01:30Z (in 1m30s); wait until then or raise max_actions_per_hour"},
		{agents.ProfileBudgetDenial("notes_store", free),
			"notes_store would exceed [profiles.agents] max_actions_per_hour = 1; the next slot frees up at 2026-12-01T12:01:30Z (in 1m30s); wait until then or raise it"},
	} {
		if tc.got.Reason != ReasonBudget || tc.got.Message != tc.want || !tc.got.RetryAt.Equal(free) {
			t.Errorf("budget denial = %+v, want reason %s, retry at %s and message %q", tc.got, ReasonBudget, free, tc.want)
		}
	}
	if _, err := base.ForProfile(Profile{Name: "x", Level: "root"}); err == nil || !strings.Contains(err.Error(), "[profiles.x]") {
		t.Errorf("ForProfile(level root) = %v, want an error naming [profiles.x]", err)
	}
}
