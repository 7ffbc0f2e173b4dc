//go:build !linux

package main

import (
	"fmt"
	"os"
)

func main() {
	fmt.Fprintln(os.Stderr, "restart: runs on Linux only (it finds the provider's process in /proc)")
	os.Exit(2)
}
