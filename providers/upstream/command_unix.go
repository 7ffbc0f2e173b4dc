//go:build !windows

package upstream

import (
	"io/fs"
	"strings"
)

// extraPathDirs are appended to a stdio server's PATH when missing, so that
// commands installed the usual ways (npx, uvx, pipx, Homebrew, and the
// version managers volta, fnm, mise, asdf, nvm and rustup's cargo) are
// found as they would be from a login shell, though an MCP client started
// from a desktop has none of them on its PATH; "~" stands for the home
// directory, and a "*" picks the newest of the folders it matches (nvm
// keeps one per Node.js version).
var extraPathDirs = []string{"/usr/local/bin", "/usr/bin", "/bin", "~/.local/bin", "~/.npm-global/bin", "/opt/homebrew/bin",
	"~/.volta/bin", "~/.local/share/fnm/aliases/default/bin", "~/Library/Application Support/fnm/aliases/default/bin",
	"~/.local/share/mise/shims", "~/.asdf/shims", "~/.nvm/versions/node/*/bin", "~/.cargo/bin", "~/.bun/bin"}

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
