package testproc

// Freeze would stop process pid; Windows has no signal for it, so the
// test is skipped.
func Freeze(t T, _ int) {
	t.Helper()
	t.Skip("Windows has no SIGSTOP to make a process hang")
}
