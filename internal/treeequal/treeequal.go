// Package treeequal compares decoded trees of maps and slices, such as
// encoding/json and go-toml produce, leaving the comparison of their
// leaves to the caller.
package treeequal

// Equal reports whether a and b are the same tree: map[string]any values
// with the same keys whose values are Equal, []any values of the same
// length whose elements are Equal in order, and other values for which
// leaf reports true. leaf is called with a's and b's leaves; it must
// report false when b is not of a's kind.
func Equal(a, b any, leaf func(a, b any) bool) bool {
	switch a := a.(type) {
	case map[string]any:
		b, ok := b.(map[string]any)
		if !ok || len(a) != len(b) {
			return false
		}
		for k, av := range a {
			bv, ok := b[k]
			if !ok || !Equal(av, bv, leaf) {
				return false
			}
		}
		return true
	case []any:
		b, ok := b.([]any)
		if !ok || len(a) != len(b) {
			return false
		}
		for i := range a {
			if !Equal(a[i], b[i], leaf) {
				return false
			}
		}
		return true
	}
	switch b.(type) {
	case map[string]any, []any:
		return false
	}
	return leaf(a, b)
}
