package testproc

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"runtime"
	"sync"
	"time"

	"github.com/openhuman/openhuman-host/sdk/storage/filelock"
)

// Build returns the path of the binary of main package pkg (an import
// path, or a directory relative to the test's package such as
// "./testdata/server"), built with the go command, failing the test if it
// cannot be built. See [BuildBinary].
func Build(t T, pkg string) string {
	t.Helper()
	bin, err := BuildBinary(pkg)
	if err != nil {
		t.Fatalf("%v", err)
	}
	return bin
}

// BuildBinary returns the path of the binary of main package pkg, built
// once for every test binary of a go test run, and for later runs while
// its sources stay the same: the binary is kept in a cache directory under
// a hash of everything it is built from (the go command's version and
// target, and the files of every package outside the standard library
// that it imports), and a lock file makes test binaries running in
// parallel wait for one build instead of each running its own. Tests must
// not change the binary.
func BuildBinary(pkg string) (string, error) {
	built.mu.Lock()
	build, ok := built.builds[pkg]
	if !ok {
		// Builds of other packages go on meanwhile.
		build = sync.OnceValues(func() (string, error) {
			bin, err := buildCached(pkg)
			if err != nil {
				return "", fmt.Errorf("build %s: %w", pkg, err)
			}
			return bin, nil
		})
		built.builds[pkg] = build
	}
	built.mu.Unlock()
	return build()
}

// built remembers, within one test binary, what BuildBinary returned for
// each package.
var built = struct {
	mu     sync.Mutex
	builds map[string]func() (string, error)
}{builds: map[string]func() (string, error){}}

// lockWait bounds how long BuildBinary waits for another process's build:
// far more than a build takes, even on a loaded machine.
const lockWait = 10 * time.Minute

func buildCached(pkg string) (string, error) {
	key, name, err := sourceKey(pkg)
	if err != nil {
		return "", err
	}
	root, err := cacheRoot()
	if err != nil {
		return "", err
	}
	dir := filepath.Join(root, key)
	bin := filepath.Join(dir, name)
	if runtime.GOOS == "windows" {
		bin += ".exe"
	}
	if _, err := os.Stat(bin); err == nil {
		// Marks the binary as in use, so that pruning leaves it.
		now := time.Now()
		_ = os.Chtimes(dir, now, now)
		return bin, nil
	}
	prune(root)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	unlock, err := waitLock(filepath.Join(dir, "lock"))
	if err != nil {
		return "", err
	}
	defer unlock()
	// Another process may have built it while this one waited.
	if _, err := os.Stat(bin); err == nil {
		return bin, nil
	}
	// Built under another name and renamed, so that a binary at bin is
	// always complete.
	tmp := filepath.Join(dir, "building-"+filepath.Base(bin))
	if out, err := exec.Command("go", "build", "-o", tmp, pkg).CombinedOutput(); err != nil {
		return "", fmt.Errorf("%w\n%s", err, out)
	}
	if err := os.Rename(tmp, bin); err != nil {
		return "", err
	}
	return bin, nil
}

// waitLock takes the exclusive lock at lockPath, waiting while another
// process holds it.
func waitLock(lockPath string) (func(), error) {
	deadline := time.Now().Add(lockWait)
	for pause := time.Millisecond; ; pause = min(2*pause, 100*time.Millisecond) {
		unlock, err := filelock.Exclusive(lockPath)
		if !errors.Is(err, filelock.ErrLocked) {
			return unlock, err
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("another build still holds %s after %s", lockPath, lockWait)
		}
		time.Sleep(pause)
	}
}

// unused is how long a binary stays in the cache unused before a build
// of another removes it.
const unused = 7 * 24 * time.Hour

// prune removes the binaries no test has used for a while: those of
// sources since changed.
func prune(root string) {
	entries, err := os.ReadDir(root)
	if err != nil {
		return
	}
	for _, e := range entries {
		if info, err := e.Info(); err == nil && e.IsDir() && time.Since(info.ModTime()) > unused {
			_ = os.RemoveAll(filepath.Join(root, e.Name()))
		}
	}
}

// cacheRoot is the directory that holds the built binaries, one directory
// per key: in the user's cache directory, or else (none, or not writable)
// in the temporary directory.
func cacheRoot() (string, error) {
	var err error
	if base, uerr := os.UserCacheDir(); uerr == nil {
		root := filepath.Join(base, "openhuman-host", "testbin")
		if err = os.MkdirAll(root, 0o755); err == nil {
			return root, nil
		}
	}
	root := filepath.Join(os.TempDir(), fmt.Sprintf("openhuman-host-testbin-%d", os.Getuid()))
	if terr := os.MkdirAll(root, 0o755); terr != nil {
		return "", errors.Join(err, terr)
	}
	return root, nil
}

// listedPackage is what sourceKey reads of go list -json.
type listedPackage struct {
	ImportPath string
	Name       string
	Dir        string
	Standard   bool
	Module     *struct {
		Path    string
		Version string
		GoMod   string
		Replace *struct{ Path, Version string }
	}
	GoFiles, CgoFiles, CFiles, CXXFiles, HFiles, SFiles, SysoFiles, EmbedFiles []string
}

// sourceKey returns the hash of everything the binary of pkg is built
// from, and the binary's name.
func sourceKey(pkg string) (key, name string, err error) {
	h := sha256.New()
	env, err := exec.Command("go", "env", "GOVERSION", "GOOS", "GOARCH", "CGO_ENABLED", "GOFLAGS", "GOEXPERIMENT", "CC", "GOAMD64", "GOARM64").Output()
	if err != nil {
		return "", "", fmt.Errorf("go env: %w", err)
	}
	h.Write(env)
	fields := "ImportPath,Name,Dir,Standard,Module,GoFiles,CgoFiles,CFiles,CXXFiles,HFiles,SFiles,SysoFiles,EmbedFiles"
	var stderr bytes.Buffer
	cmd := exec.Command("go", "list", "-deps", "-json="+fields, pkg)
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return "", "", fmt.Errorf("go list: %w\n%s", err, stderr.Bytes())
	}
	hashed := map[string]bool{}
	dec := json.NewDecoder(bytes.NewReader(out))
	for dec.More() {
		var p listedPackage
		if err := dec.Decode(&p); err != nil {
			return "", "", fmt.Errorf("go list: %w", err)
		}
		// go list -deps lists pkg itself last.
		name = path.Base(p.ImportPath)
		if p.Name != "main" {
			name = ""
		}
		if p.Standard {
			continue // part of GOVERSION
		}
		fmt.Fprintf(h, "package %s %s\n", p.ImportPath, p.Dir)
		if m := p.Module; m != nil && m.Version != "" && (m.Replace == nil || m.Replace.Version != "") {
			// A module version's files never change.
			fmt.Fprintf(h, "module %s %s\n", m.Path, m.Version)
			continue
		}
		if m := p.Module; m != nil && m.GoMod != "" && !hashed[m.GoMod] {
			// The go and toolchain lines, and the versions of the
			// modules it requires.
			hashed[m.GoMod] = true
			line, err := fileLine(m.GoMod)
			if err != nil {
				return "", "", err
			}
			h.Write(line)
		}
		for _, list := range [][]string{p.GoFiles, p.CgoFiles, p.CFiles, p.CXXFiles, p.HFiles, p.SFiles, p.SysoFiles, p.EmbedFiles} {
			for _, f := range list {
				line, err := fileLine(filepath.Join(p.Dir, f))
				if err != nil {
					return "", "", err
				}
				h.Write(line)
			}
		}
	}
	if name == "" {
		return "", "", fmt.Errorf("%s is not a main package", pkg)
	}
	return fmt.Sprintf("%x", h.Sum(nil)[:16]), name, nil
}

// fileLine returns a line with file's name and the hash of its contents.
func fileLine(file string) ([]byte, error) {
	b, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	return fmt.Appendf(nil, "file %s %x\n", file, sha256.Sum256(b)), nil
}
