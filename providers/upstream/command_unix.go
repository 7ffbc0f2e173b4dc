//go:build !windows

package upstream

import (
	"io/fs"
	"strings"
)

// extraPathDirs are appended to a stdio server's PATH when missing, so that
// commands installed the usual ways (npx, uvx, pipx, Homebrew) are found
// as they would be from a login shell; "~" stands for the home directory.
var extraPathDirs = []string{"/usr/local/bin", "/usr/bin", "/bin", "~/.local/bin", "~/.npm-global/bin", "/opt/homebrew/bin"}

// homeVar names the variable that holds the home directory.
const homeVar = "HOME"

// envKey is the name variables are told apart by: the name itself.
func envKey(k string) string { return k }

// hasDir reports whether command names a path rather than a name to look
// up on PATH.
func hasDir(command string) bool { return strings.Contains(command, "/") }

// candidates are the files command p may be: p itself.
func candidates(p string) []string { return []string{p} }

// runnable reports whether the file at p, described by fi, may be run: an
// execute permission bit is set.
func runnable(_ string, fi fs.FileInfo) bool { return fi.Mode()&0o111 != 0 }
