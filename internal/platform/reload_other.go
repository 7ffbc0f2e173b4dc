//go:build !windows

package platform

// ReloadAdvice says how to make a running server take a fixed config, to
// follow "fix the config, then".
const ReloadAdvice = "send the server SIGHUP or restart it"

// ReloadNotice tells when running servers take a config change.
const ReloadNotice = "Running servers load it on SIGHUP (or at once with serve --watch)."
