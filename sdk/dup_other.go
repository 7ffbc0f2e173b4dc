//go:build unix && !linux

package sdk

import "syscall"

// dupTo makes descriptor newfd refer to oldfd's file.
func dupTo(oldfd, newfd int) error { return syscall.Dup2(oldfd, newfd) }
