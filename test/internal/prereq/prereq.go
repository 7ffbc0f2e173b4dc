// Package prereq is how the end-to-end tests under test/ handle a missing
// prerequisite (a built binary, npm packages, Wine, a database server): a
// plain `go test` skips, and CI, which sets a OPENHUMAN_REQUIRE_* variable,
// fails, so that it can never pass by skipping.
package prereq

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
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

// Executable returns the absolute path of the executable file that the
// environment variable env names; what says what the file is, such as
// "path of the built openhuman-host". The error, for [Missing], says why
// there is none: env is unset, or names no executable file.
func Executable(env, what string) (string, error) {
	name := os.Getenv(env)
	if name == "" {
		return "", fmt.Errorf("%s (%s) is not set", env, what)
	}
	abs, err := filepath.Abs(name)
	if err != nil {
		return "", fmt.Errorf("%s=%s: %w", env, name, err)
	}
	fi, err := os.Stat(abs)
	if err != nil {
		return "", fmt.Errorf("%s=%s: %w", env, name, err)
	}
	// Windows has no execute bits.
	if fi.IsDir() || runtime.GOOS != "windows" && fi.Mode()&0o111 == 0 {
		return "", fmt.Errorf("%s=%s is not an executable file", env, name)
	}
	return abs, nil
}
