package memory

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// FuzzImportWalk builds a folder from a script (one entry per line: "f
// NAME", "d NAME" or "l NAME TARGET", TARGET being any path: relative,
// absolute, into /proc, out of the folder) and checks what the import
// walker would read: with links confined, only regular files inside the
// folder; with FollowLinks, any regular file but never one under /proc,
// /sys or /dev; never a path both read and skipped.
func FuzzImportWalk(f *testing.F) {
	for _, seed := range []string{
		"f a.md\nl b.md a.md",
		"l env.txt /proc/self/environ\nl up.md ../outside/secret.md",
		"d sub\nf sub/x.txt\nl sub/y.md ../sub/x.txt\nl loop.md loop.md",
		"d sub\nl sub/link sub\nl deep.md sub/link/../../outside/secret.md",
		"l dev.md /dev/zero\nl abs.md /etc/hostname\nl dot.md .",
		"l a.md b.md\nl b.md ../outside/secret.md",
	} {
		f.Add(seed, false)
		f.Add(seed, true)
	}
	f.Fuzz(func(t *testing.T, script string, follow bool) {
		base := t.TempDir()
		tree := filepath.Join(base, "tree")
		if err := os.MkdirAll(filepath.Join(base, "outside"), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(base, "outside", "secret.md"), []byte("outside"), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.MkdirAll(tree, 0o700); err != nil {
			t.Fatal(err)
		}
		for i, line := range strings.Split(script, "\n") {
			if i >= 32 {
				break
			}
			fields := strings.Fields(line)
			if len(fields) < 2 || !filepath.IsLocal(fields[1]) || len(fields[1]) > 64 {
				continue
			}
			path := filepath.Join(tree, fields[1])
			_ = os.MkdirAll(filepath.Dir(path), 0o700)
			switch {
			case fields[0] == "f":
				_ = os.WriteFile(path, []byte("text"), 0o600)
			case fields[0] == "d":
				_ = os.MkdirAll(path, 0o700)
			case fields[0] == "l" && len(fields) == 3:
				_ = os.Symlink(fields[2], path)
			}
		}

		var sum ImportSummary
		files, _, err := collectImportFiles([]string{tree}, follow, &sum)
		if err != nil {
			t.Fatalf("collectImportFiles: %v", err)
		}
		realTree, err := filepath.EvalSymlinks(tree)
		if err != nil {
			t.Fatal(err)
		}
		skipped := map[string]bool{}
		for _, s := range sum.Skipped {
			skipped[s.Path] = true
		}
		for _, file := range files {
			if skipped[file.path] {
				t.Errorf("%s is both read and skipped", file.path)
			}
			if systemPath(file.target) {
				t.Errorf("%s leads into a system folder: %s", file.path, file.target)
			}
			if !follow && !within(realTree, file.target) {
				t.Errorf("%s leads out of the folder to %s", file.path, file.target)
			}
			info, err := os.Stat(file.target)
			if err != nil || !info.Mode().IsRegular() {
				t.Errorf("%s leads to %s, which is not a regular file (%v)", file.path, file.target, err)
			}
			if !within(tree, file.path) {
				t.Errorf("%s was found outside the folder walked", file.path)
			}
		}
	})
}
