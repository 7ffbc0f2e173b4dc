// Package testproc gives tests the processes they run: the binaries,
// built once for all the test binaries of a go test run ([Build]), and
// what each operating system does its own way, such as stopping a process
// so that it hangs ([Freeze]), and a free port for a server process to
// listen on ([FreePort]). It is for tests only, such as a provider's
// tests that run the provider's binary as a host would.
package testproc
