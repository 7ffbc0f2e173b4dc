package treeequal

import "testing"

func TestEqual(t *testing.T) {
	t.Parallel()
	leaf := func(a, b any) bool { return a == b }
	tree := func() any {
		return map[string]any{"a": []any{1, "x", map[string]any{"b": true}}, "c": nil}
	}
	for name, tc := range map[string]struct {
		a, b any
		want bool
	}{
		"same":                  {tree(), tree(), true},
		"key missing":           {tree(), map[string]any{"a": []any{1, "x", map[string]any{"b": true}}}, false},
		"other key":             {map[string]any{"a": 1}, map[string]any{"b": 1}, false},
		"element order":         {[]any{1, 2}, []any{2, 1}, false},
		"shorter array":         {[]any{1, 2}, []any{1}, false},
		"leaf differs deep":     {tree(), map[string]any{"a": []any{1, "x", map[string]any{"b": false}}, "c": nil}, false},
		"map against leaf":      {map[string]any{}, 1, false},
		"leaf against array":    {1, []any{1}, false},
		"leaves compared alone": {"x", "x", true},
	} {
		if got := Equal(tc.a, tc.b, leaf); got != tc.want {
			t.Errorf("%s: Equal = %v, want %v", name, got, tc.want)
		}
	}
}
