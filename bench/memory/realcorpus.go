package main

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// The real corpus: Git's documentation as Debian packages it (git-doc),
// the AsciiDoc sources of Git's manual pages, guides, how-tos and
// technical notes, about 290 .txt files of English technical prose. The
// relevance judgments in quality/questions.json were made on this exact
// version; another version is used only when this one cannot be had, with
// a warning.
const (
	corpusPackage = "git-doc"
	corpusVersion = "1:2.39.5-0+deb12u3"
	// corpusSubdir is where the package puts the documents; judgments name
	// files relative to it.
	corpusSubdir = "usr/share/doc/git-doc"
	// corpusMarker is written into a cache entry once it is complete and
	// holds the version it has.
	corpusMarker = ".complete"
)

// realCorpus is the fetched corpus.
type realCorpus struct {
	// Root is the directory the judgments' paths are relative to.
	Root string
	// Version is the package version it came from.
	Version string
}

// fetchCorpus returns the real corpus from cacheDir, first downloading the
// pinned package with apt-get download (no root needed while apt's package
// lists are present; as root, the lists are fetched when the download
// fails) and unpacking it with dpkg-deb.
func fetchCorpus(ctx context.Context, cacheDir string, logf func(string, ...any)) (*realCorpus, error) {
	dest := filepath.Join(cacheDir, corpusPackage)
	if v, err := os.ReadFile(filepath.Join(dest, corpusMarker)); err == nil {
		return &realCorpus{Root: filepath.Join(dest, filepath.FromSlash(corpusSubdir)), Version: strings.TrimSpace(string(v))}, nil
	}
	for _, tool := range []string{"apt-get", "dpkg-deb"} {
		if _, err := exec.LookPath(tool); err != nil {
			return nil, fmt.Errorf("the real corpus is Debian's %s package, fetched with apt-get download and dpkg-deb: %s not found (use -quality=false on other systems)", corpusPackage, tool)
		}
	}
	if err := os.MkdirAll(cacheDir, 0o755); err != nil {
		return nil, err
	}
	tmp, err := os.MkdirTemp(cacheDir, corpusPackage+"-fetch-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)
	// apt drops root to its _apt user for downloads when it can write the
	// directory as that user; otherwise it warns and downloads as root.
	_ = os.Chmod(tmp, 0o755)

	download := func(spec string) error {
		cmd := exec.CommandContext(ctx, "apt-get", "download", "-q", spec)
		cmd.Dir = tmp
		out, err := cmd.CombinedOutput()
		if err != nil {
			return fmt.Errorf("apt-get download %s: %w: %s", spec, err, strings.TrimSpace(string(out)))
		}
		return nil
	}
	version := corpusVersion
	pinned := corpusPackage + "=" + corpusVersion
	logf("fetching the real corpus: apt-get download %s", pinned)
	err = download(pinned)
	if err != nil && os.Geteuid() == 0 {
		logf("%v; fetching apt's package lists (apt-get update) and trying again", err)
		if out, uerr := exec.CommandContext(ctx, "apt-get", "update", "-q").CombinedOutput(); uerr != nil {
			logf("apt-get update: %v: %s", uerr, strings.TrimSpace(string(out)))
		}
		err = download(pinned)
	}
	if err != nil {
		logf("%v; taking the version apt offers instead: the relevance judgments were made on %s", err, corpusVersion)
		if err2 := download(corpusPackage); err2 != nil {
			return nil, errors.Join(err, err2)
		}
		version = "unknown"
	}
	debs, _ := filepath.Glob(filepath.Join(tmp, "*.deb"))
	if len(debs) != 1 {
		return nil, fmt.Errorf("apt-get download left %d .deb files in %s, want 1", len(debs), tmp)
	}
	if version == "unknown" {
		if out, err := exec.CommandContext(ctx, "dpkg-deb", "-f", debs[0], "Version").Output(); err == nil {
			version = strings.TrimSpace(string(out))
		}
	}
	unpacked := filepath.Join(tmp, "unpacked")
	if out, err := exec.CommandContext(ctx, "dpkg-deb", "-x", debs[0], unpacked).CombinedOutput(); err != nil {
		return nil, fmt.Errorf("dpkg-deb -x %s: %w: %s", debs[0], err, strings.TrimSpace(string(out)))
	}
	if err := os.WriteFile(filepath.Join(unpacked, corpusMarker), []byte(version+"\n"), 0o644); err != nil {
		return nil, err
	}
	if err := os.RemoveAll(dest); err != nil {
		return nil, err
	}
	if err := os.Rename(unpacked, dest); err != nil {
		return nil, err
	}
	if version != corpusVersion {
		logf("warning: the real corpus is %s %s, not %s that the judgments were made on", corpusPackage, version, corpusVersion)
	}
	return &realCorpus{Root: filepath.Join(dest, filepath.FromSlash(corpusSubdir)), Version: version}, nil
}

// corpusFile is one document of the real corpus.
type corpusFile struct {
	// Rel is the path relative to the corpus root, with slashes.
	Rel  string
	Text string
}

// readCorpus reads every .txt file under the corpus root, the files an
// import of the root loads (hidden entries skipped, as the import does).
func readCorpus(root string) ([]corpusFile, error) {
	var files []corpusFile
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if path != root && strings.HasPrefix(d.Name(), ".") {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		if !d.Type().IsRegular() || !strings.EqualFold(filepath.Ext(path), ".txt") {
			return nil
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(root, path)
		if err != nil {
			return err
		}
		files = append(files, corpusFile{Rel: filepath.ToSlash(rel), Text: string(data)})
		return nil
	})
	if err != nil {
		return nil, err
	}
	if len(files) == 0 {
		return nil, fmt.Errorf("no .txt files under %s", root)
	}
	return files, nil
}
