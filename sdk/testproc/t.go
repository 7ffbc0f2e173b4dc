package testproc

// T is the part of *testing.T the functions use.
type T interface {
	Helper()
	Fatalf(format string, args ...any)
	Skip(args ...any)
}
