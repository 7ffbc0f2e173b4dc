//go:build !windows

package platform

// ReloadAdvice says how to make a running server take a fixed config, to
// follow "fix the config, then".
const ReloadAdvice = "send the server SIGHUP or restart it"
