package sdk

import "syscall"

// dupTo makes descriptor newfd refer to oldfd's file.
func dupTo(oldfd, newfd int) error { return syscall.Dup3(oldfd, newfd, 0) }
