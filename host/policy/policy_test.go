package policy

import (
	"errors"
	"fmt"
	"path"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/openhuman/openhuman-host/internal/fakeclock"
)

func ptr(n int) *int { return &n }

var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

func TestNew(t *testing.T) {
	t.Parallel()
	tests := map[string]struct {
		opts      Options
		wantLevel Level
		wantErr   string
	}{
		"zero value is supervised": {wantLevel: Supervised},
		"readonly":                 {opts: Options{Level: ReadOnly}, wantLevel: ReadOnly},
		"full":                     {opts: Options{Level: Full}, wantLevel: Full},
		"unknown level": {
			opts:    Options{Level: "yolo"},
			wantErr: `policy: unknown [autonomy] level "yolo": use "readonly", "supervised" or "full"`,
		},
		"negative budget": {
			opts:    Options{MaxActionsPerHour: ptr(-1)},
			wantErr: "policy: [autonomy] max_actions_per_hour is -1: use 0 or more, or leave it unset for no limit",
		},
		"bad allowed pattern": {
			opts:    Options{AllowedTools: []string{"pages.*", "notes.["}},
			wantErr: `policy: [autonomy] allowed_tools pattern "notes.[": syntax error in pattern`,
		},
		"bad denied pattern": {
			opts:    Options{DeniedTools: []string{`pages.\`}},
			wantErr: `policy: [autonomy] denied_tools pattern "pages.\\": syntax error in pattern`,
		},
		"empty pattern": {
			opts:    Options{DeniedTools: []string{""}},
			wantErr: "policy: [autonomy] denied_tools has an empty pattern",
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			p, err := New(tc.opts)
			if tc.wantErr != "" {
				if err == nil {
					t.Fatalf("New() succeeded, want error %q", tc.wantErr)
				}
				if diff := cmp.Diff(tc.wantErr, err.Error()); diff != "" {
					t.Fatalf("New() error (-want +got):\n%s", diff)
				}
				return
			}
			if err != nil {
				t.Fatalf("New() error: %v", err)
			}
			if diff := cmp.Diff(tc.wantLevel, p.Level()); diff != "" {
				t.Errorf("Level() (-want +got):\n%s", diff)
			}
		})
	}
}

func TestNewBadPatternIsErrBadPattern(t *testing.T) {
	t.Parallel()
	_, err := New(Options{AllowedTools: []string{"["}})
	if !errors.Is(err, path.ErrBadPattern) {
		t.Fatalf("New() error = %v, want it to wrap path.ErrBadPattern", err)
	}
}

type call struct {
	tool  string
	class Class
}

func TestCheck(t *testing.T) {
	t.Parallel()
	tests := map[string]struct {
		opts  Options
		calls []call
		want  []*Denial // one per call; nil means allowed
	}{
		"supervised allows read and act": {
			calls: []call{{"notes_search", Read}, {"notes_store", Act}},
			want:  []*Denial{nil, nil},
		},
		"full allows read and act": {
			opts:  Options{Level: Full},
			calls: []call{{"notes_search", Read}, {"notes_store", Act}},
			want:  []*Denial{nil, nil},
		},
		"readonly allows reads and refuses acts": {
			opts:  Options{Level: ReadOnly},
			calls: []call{{"notes_search", Read}, {"notes_store", Act}},
			want: []*Denial{nil, {
				Reason:  "readonly",
				Message: `notes_store is an act tool and [autonomy] level is "readonly"; set level = "supervised" to allow it`,
			}},
		},
		"unknown class fails closed even for allowed tools": {
			opts:  Options{AllowedTools: []string{"*"}},
			calls: []call{{"x.y", "write"}, {"x.y", ""}},
			want: []*Denial{{
				Reason:  "unknown_class",
				Message: `x.y has unknown policy class "write", so it is refused; its provider must declare class "read" or "act"`,
			}, {
				Reason:  "unknown_class",
				Message: `x.y has unknown policy class "", so it is refused; its provider must declare class "read" or "act"`,
			}},
		},
		"denied glob refuses reads too": {
			opts:  Options{DeniedTools: []string{"pages.*"}},
			calls: []call{{"pages_browse", Read}, {"notes_search", Read}, {"pageshouse", Read}},
			want: []*Denial{{
				Reason:  "denied_tool",
				Message: `pages_browse matches "pages.*" in [autonomy] denied_tools; remove that pattern from denied_tools to allow it`,
			}, nil, nil},
		},
		"deny wins over allow": {
			opts: Options{
				AllowedTools: []string{"notes.*"},
				DeniedTools:  []string{"notes_store"},
			},
			calls: []call{{"notes_store", Act}, {"notes_note", Act}},
			want: []*Denial{{
				Reason:  "denied_tool",
				Message: `notes_store matches "notes_store" in [autonomy] denied_tools; remove that pattern from denied_tools to allow it`,
			}, nil},
		},
		"allowed list refuses unmatched tools": {
			opts:  Options{AllowedTools: []string{"notes.*", "online_search"}},
			calls: []call{{"notes_recall", Read}, {"online_search", Read}, {"pages_tag", Act}, {"assist_run_subagent", Act}},
			want: []*Denial{nil, nil, {
				Reason:  "not_allowed",
				Message: "pages_tag matches no pattern in [autonomy] allowed_tools; add it to allowed_tools to allow it",
			}, {
				Reason:  "not_allowed",
				Message: "assist_run_subagent matches no pattern in [autonomy] allowed_tools; add it to allowed_tools to allow it",
			}},
		},
		"glob classes and single-character wildcards": {
			opts:  Options{AllowedTools: []string{"pages.[rb]*", "common.list_tool?"}},
			calls: []call{{"pages_read_chunk", Read}, {"pages_browse", Read}, {"pages_tag", Act}, {"common_list_tools", Read}},
			want: []*Denial{nil, nil, {
				Reason:  "not_allowed",
				Message: "pages_tag matches no pattern in [autonomy] allowed_tools; add it to allowed_tools to allow it",
			}, nil},
		},
		"zero budget refuses every act but not reads": {
			opts:  Options{MaxActionsPerHour: ptr(0)},
			calls: []call{{"notes_store", Act}, {"notes_search", Read}},
			want: []*Denial{{
				Reason:  "budget",
				Message: "notes_store is an act tool and [autonomy] max_actions_per_hour is 0, which refuses every act; raise max_actions_per_hour to allow it",
			}, nil},
		},
		"budget counts acts only": {
			opts:  Options{MaxActionsPerHour: ptr(2)},
			calls: []call{{"notes_store", Act}, {"notes_search", Read}, {"pages_tag", Act}, {"notes_search", Read}, {"notes_note", Act}},
			want: []*Denial{nil, nil, nil, nil, {
				Reason:  "budget",
				Message: "notes_note would exceed [autonomy] max_actions_per_hour = 2; the next slot frees up at 2026-03-01T13:00:00Z (in 1h0m0s); wait until then or raise max_actions_per_hour",
				RetryAt: t0.Add(time.Hour),
			}},
		},
		"refused acts do not consume the budget": {
			opts:  Options{MaxActionsPerHour: ptr(1), DeniedTools: []string{"pages_tag"}},
			calls: []call{{"pages_tag", Act}, {"notes_store", Act}},
			want: []*Denial{{
				Reason:  "denied_tool",
				Message: `pages_tag matches "pages_tag" in [autonomy] denied_tools; remove that pattern from denied_tools to allow it`,
			}, nil},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			opts := tc.opts
			opts.Now = func() time.Time { return t0 }
			p, err := New(opts)
			if err != nil {
				t.Fatalf("New() error: %v", err)
			}
			got := make([]*Denial, len(tc.calls))
			for i, c := range tc.calls {
				got[i] = asDenial(t, p.Check(c.tool, c.class))
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("Check() results (-want +got):\n%s", diff)
			}
		})
	}
}

func TestCheckSlidingWindow(t *testing.T) {
	t.Parallel()
	type step struct {
		at   time.Duration // since t0
		want *Denial
	}
	budget := func(msg string, retry time.Time) *Denial {
		return &Denial{Reason: "budget", Message: msg, RetryAt: retry}
	}
	tests := map[string]struct {
		max   int
		steps []step
	}{
		"one slot: 59 minutes later still refused, 61 minutes later allowed": {
			max: 1,
			steps: []step{
				{at: 0},
				{at: 59 * time.Minute, want: budget(
					"notes_store would exceed [autonomy] max_actions_per_hour = 1; the next slot frees up at 2026-03-01T13:00:00Z (in 1m0s); wait until then or raise max_actions_per_hour",
					t0.Add(time.Hour))},
				{at: 61 * time.Minute},
				{at: 62 * time.Minute, want: budget(
					"notes_store would exceed [autonomy] max_actions_per_hour = 1; the next slot frees up at 2026-03-01T14:01:00Z (in 59m0s); wait until then or raise max_actions_per_hour",
					t0.Add(121*time.Minute))},
			},
		},
		"slot frees exactly one hour after the act": {
			max: 1,
			steps: []step{
				{at: 0},
				{at: time.Hour - time.Nanosecond, want: budget(
					"notes_store would exceed [autonomy] max_actions_per_hour = 1; the next slot frees up at 2026-03-01T13:00:00Z (in 1s); wait until then or raise max_actions_per_hour",
					t0.Add(time.Hour))},
				{at: time.Hour},
			},
		},
		"window slides one act at a time": {
			max: 3,
			steps: []step{
				{at: 0},
				{at: 10 * time.Minute},
				{at: 20 * time.Minute},
				{at: 30 * time.Minute, want: budget(
					"notes_store would exceed [autonomy] max_actions_per_hour = 3; the next slot frees up at 2026-03-01T13:00:00Z (in 30m0s); wait until then or raise max_actions_per_hour",
					t0.Add(time.Hour))},
				{at: 61 * time.Minute},
				{at: 65 * time.Minute, want: budget(
					"notes_store would exceed [autonomy] max_actions_per_hour = 3; the next slot frees up at 2026-03-01T13:10:00Z (in 5m0s); wait until then or raise max_actions_per_hour",
					t0.Add(70*time.Minute))},
				{at: 81 * time.Minute},
				{at: 3 * time.Hour},
				{at: 3 * time.Hour},
				{at: 3 * time.Hour},
				{at: 3 * time.Hour, want: budget(
					"notes_store would exceed [autonomy] max_actions_per_hour = 3; the next slot frees up at 2026-03-01T16:00:00Z (in 1h0m0s); wait until then or raise max_actions_per_hour",
					t0.Add(4*time.Hour))},
			},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			clk := fakeclock.New(t0)
			p, err := New(Options{MaxActionsPerHour: ptr(tc.max), Now: clk.Now})
			if err != nil {
				t.Fatalf("New() error: %v", err)
			}
			for i, s := range tc.steps {
				clk.Set(t0.Add(s.at))
				got := asDenial(t, p.Check("notes_store", Act))
				if diff := cmp.Diff(s.want, got); diff != "" {
					t.Errorf("step %d (t0+%s): Check() (-want +got):\n%s", i, s.at, diff)
				}
			}
		})
	}
}

func TestCheckConcurrentBudget(t *testing.T) {
	t.Parallel()
	tests := map[string]struct {
		max, callers int
	}{
		"more callers than slots": {max: 7, callers: 64},
		"one slot":                {max: 1, callers: 32},
		"enough slots for all":    {max: 100, callers: 50},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			p, err := New(Options{MaxActionsPerHour: ptr(tc.max)})
			if err != nil {
				t.Fatalf("New() error: %v", err)
			}
			var allowed, denied atomic.Int64
			var wg sync.WaitGroup
			start := make(chan struct{})
			for range tc.callers {
				wg.Go(func() {
					<-start
					// Reads interleave with acts and must never consume a slot.
					if err := p.Check("notes_search", Read); err != nil {
						t.Errorf("read Check() error: %v", err)
					}
					switch err := p.Check("notes_store", Act); {
					case err == nil:
						allowed.Add(1)
					case errors.Is(err, ErrDenied):
						denied.Add(1)
					default:
						t.Errorf("act Check() unexpected error: %v", err)
					}
				})
			}
			close(start)
			wg.Wait()
			want := [2]int64{int64(min(tc.max, tc.callers)), int64(max(tc.callers-tc.max, 0))}
			got := [2]int64{allowed.Load(), denied.Load()}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("[allowed, denied] (-want +got):\n%s", diff)
			}
		})
	}
}

func TestDenialMatchesErrDenied(t *testing.T) {
	t.Parallel()
	p, err := New(Options{Level: ReadOnly})
	if err != nil {
		t.Fatalf("New() error: %v", err)
	}
	err = p.Check("notes_store", Act)
	wrapped := fmt.Errorf("call tool: %w", err)
	if !errors.Is(err, ErrDenied) || !errors.Is(wrapped, ErrDenied) {
		t.Fatalf("errors.Is(%v, ErrDenied) = false, want true", err)
	}
	var d *Denial
	if !errors.As(wrapped, &d) {
		t.Fatalf("errors.As(%v, *Denial) = false, want true", wrapped)
	}
	if diff := cmp.Diff(d.Message, err.Error()); diff != "" {
		t.Errorf("Error() (-Message +Error):\n%s", diff)
	}
	if errors.Is(errors.New("other"), ErrDenied) {
		t.Errorf("errors.Is(unrelated, ErrDenied) = true, want false")
	}
}

// asDenial converts a Check result for comparison: nil stays nil, a Denial is returned, anything else fails.
func asDenial(t *testing.T, err error) *Denial {
	t.Helper()
	if err == nil {
		return nil
	}
	var d *Denial
	if !errors.As(err, &d) {
		t.Fatalf("Check() returned %T %v, want *Denial", err, err)
	}
	return d
}

func TestInheritKeepsTheHourlyBudget(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	clock := func() time.Time { return now }
	max := 2
	old, err := New(Options{Level: Supervised, MaxActionsPerHour: &max})
	if err != nil {
		t.Fatal(err)
	}
	old.now = clock
	if err := old.Check("a", Act); err != nil {
		t.Fatal(err)
	}
	now = now.Add(30 * time.Minute)
	if err := old.Check("a", Act); err != nil {
		t.Fatal(err)
	}
	next, err := New(Options{Level: Supervised, MaxActionsPerHour: &max})
	if err != nil {
		t.Fatal(err)
	}
	next.now = clock
	next.Inherit(old)
	if err := next.Check("a", Act); !errors.Is(err, ErrDenied) {
		t.Fatalf("third act within the hour after Inherit: %v", err)
	}
	// The first act's hour ends: one slot frees.
	now = now.Add(31 * time.Minute)
	if err := next.Check("a", Act); err != nil {
		t.Errorf("act after the first left the window: %v", err)
	}
}
