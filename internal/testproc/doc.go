// Package testproc does to processes what tests need and each operating
// system does its own way: stop one so that it hangs ([Freeze]).
package testproc
