package plugins

import "testing"

// TestTimeoutKey: start errors name the key that raises the timeout, which
// is not a [providers.<name>] table for every provider.
func TestTimeoutKey(t *testing.T) {
	t.Parallel()
	if got := (Spec{Name: "memory"}).timeoutKey(); got != "[providers.memory] start_timeout_secs" {
		t.Errorf("timeoutKey() = %q", got)
	}
	if got := (Spec{Name: "upstream", TimeoutKey: "[server] provider_start_timeout_secs"}).timeoutKey(); got != "[server] provider_start_timeout_secs" {
		t.Errorf("timeoutKey() with TimeoutKey = %q", got)
	}
}
