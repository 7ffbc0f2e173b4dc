package upstream

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// lookCommand finds command the way the child's PATH would, and says how to
// install it when it is missing. On Windows a command without an extension
// is found with each of PATHEXT's (npx is npx.cmd there).
func lookCommand(command, path, cwd string) (string, error) {
	if hasDir(command) {
		p := command
		if !filepath.IsAbs(p) && cwd != "" {
			p = filepath.Join(cwd, p)
		}
		var first error
		for _, c := range candidates(p) {
			err := executable(c)
			if err == nil {
				if c == p {
					return command, nil
				}
				return c, nil
			}
			if first == nil {
				first = err
			}
		}
		return "", fmt.Errorf("command %s cannot be run: %v", command, first)
	}
	for _, dir := range filepath.SplitList(path) {
		if dir == "" {
			continue
		}
		for _, c := range candidates(filepath.Join(dir, command)) {
			if executable(c) == nil {
				return c, nil
			}
		}
	}
	hint := "install it (for npx: install Node.js; for uvx: install uv) or set command to its absolute path"
	return "", fmt.Errorf("command %s not found on PATH (%s); %s", command, path, hint)
}

// executable reports why p is not an executable regular file, or nil.
func executable(p string) error {
	fi, err := os.Stat(p)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return errors.New("no such file")
		}
		return err
	}
	if fi.IsDir() {
		return errors.New("it is a directory")
	}
	if !runnable(p, fi) {
		return errors.New("it is not executable")
	}
	return nil
}
