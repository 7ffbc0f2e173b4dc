// Package prereq is how the end-to-end tests under test/ handle a missing
// prerequisite (a built binary, npm packages, Wine, a database server): a
// plain `go test` skips, and CI, which sets a OPENHUMAN_REQUIRE_* variable,
// fails, so that it can never pass by skipping.
package prereq

import (
	"os"
	"testing"
)

// Missing ends t because a prerequisite is missing: msg says which and how
// to provide it. It fails t when any of the environment variables in
// require is set (to anything but ""), naming the first such variable, and
// skips t otherwise.
func Missing(t testing.TB, msg string, require ...string) {
	t.Helper()
	for _, v := range require {
		if os.Getenv(v) != "" {
			t.Fatal(msg + " (" + v + " is set, so this is a failure)")
		}
	}
	t.Skip(msg)
}
