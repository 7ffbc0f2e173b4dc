package upstream

import (
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// extraPathDirs are appended to a stdio server's PATH when missing, so that
// commands installed the usual ways are found: npm's global commands
// (npx.cmd in Node.js's folder, others in %APPDATA%\npm) and uv's and
// pipx's (~\.local\bin); "~" stands for the user's profile folder.
var extraPathDirs = []string{`C:\Program Files\nodejs`, `~/AppData/Roaming/npm`, `~/.local/bin`,
	`~/AppData/Local/Volta/bin`, `~/AppData/Roaming/fnm/aliases/default`, `~/AppData/Local/mise/shims`,
	`~/scoop/shims`, `~/.cargo/bin`, `~/.bun/bin`}

// homeVar names the variable that holds the home directory.
const homeVar = "USERPROFILE"

// envKey is the name variables are told apart by: Windows ignores case.
func envKey(k string) string { return strings.ToUpper(k) }

// hasDir reports whether command names a path rather than a name to look
// up on PATH.
func hasDir(command string) bool { return strings.ContainsAny(command, `/\:`) }

// candidates are the files command p may be: p with each extension of
// PATHEXT when it has none, else p.
func candidates(p string) []string {
	if filepath.Ext(p) != "" {
		return []string{p}
	}
	var out []string
	for _, ext := range pathExt() {
		out = append(out, p+ext)
	}
	return out
}

// runnable reports whether the file at p may be run: Windows has no execute
// bit, so its extension must be one of PATHEXT's.
func runnable(p string, _ fs.FileInfo) bool {
	return slices.Contains(pathExt(), strings.ToLower(filepath.Ext(p)))
}

// pathExt returns the lowercase extensions of runnable files, from PATHEXT
// or Windows' default.
func pathExt() []string {
	v := os.Getenv("PATHEXT")
	if v == "" {
		v = ".com;.exe;.bat;.cmd"
	}
	var out []string
	for e := range strings.SplitSeq(strings.ToLower(v), ";") {
		if e != "" && e[0] == '.' {
			out = append(out, e)
		}
	}
	return out
}
