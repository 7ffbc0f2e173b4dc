// Command release builds the openhuman-host release archives: one per
// platform, each holding the binary (with SQLite FTS5, so cgo and a C
// compiler for the target), the README and the licence notices, plus a
// SHA256SUMS file. `make release` runs it:
//
//	go run ./internal/release -version v0.3.0 -out dist
//
// Linux hosts build linux/amd64, linux/arm64 and windows/amd64 with the
// C compilers Debian packages as gcc, gcc-aarch64-linux-gnu and
// gcc-mingw-w64-x86-64; macOS hosts build darwin/amd64 and darwin/arm64
// with the Xcode command line tools' clang. -targets picks others. Every
// binary is then run with `version` (natively, under qemu-aarch64 or under
// wine, when installed) and must print the release version.
//
// Archives are reproducible: the files carry the commit's time
// (SOURCE_DATE_EPOCH when set), fixed owners and modes, and the binaries
// are built with -trimpath.
package main

import (
	"archive/tar"
	"archive/zip"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/openhuman/openhuman-host/internal/wineprefix"
)

// target is one platform a release is built for.
type target struct {
	goos, goarch string
	// cc is the C compiler for the target, with any flags it needs.
	cc []string
	// pkg is what provides cc, for the error when it is missing.
	pkg string
	// runner runs the target's binaries on this host ("" for natively,
	// nil when this host cannot run them).
	runner []string
}

func (t target) String() string { return t.goos + "/" + t.goarch }

// exe is the binary's file name on the target.
func (t target) exe() string {
	if t.goos == "windows" {
		return "openhuman-host.exe"
	}
	return "openhuman-host"
}

// knownTargets are the platforms a release can be built for, by host OS.
func knownTargets(hostOS, hostArch string) []target {
	switch hostOS {
	case "linux":
		amd64 := target{goos: "linux", goarch: "amd64", cc: []string{"x86_64-linux-gnu-gcc"}, pkg: "gcc-x86-64-linux-gnu", runner: []string{"qemu-x86_64", "-L", "/usr/x86_64-linux-gnu"}}
		arm64 := target{goos: "linux", goarch: "arm64", cc: []string{"aarch64-linux-gnu-gcc"}, pkg: "gcc-aarch64-linux-gnu and libc6-dev-arm64-cross", runner: []string{"qemu-aarch64", "-L", "/usr/aarch64-linux-gnu"}}
		switch hostArch {
		case "amd64":
			amd64.cc, amd64.pkg, amd64.runner = []string{"gcc"}, "gcc", []string{}
		case "arm64":
			arm64.cc, arm64.pkg, arm64.runner = []string{"gcc"}, "gcc", []string{}
		}
		return []target{amd64, arm64,
			{goos: "windows", goarch: "amd64", cc: []string{"x86_64-w64-mingw32-gcc"}, pkg: "gcc-mingw-w64-x86-64", runner: []string{"wine"}}}
	case "darwin":
		mac := func(arch, clangArch string) target {
			t := target{goos: "darwin", goarch: arch, cc: []string{"clang", "-arch", clangArch}, pkg: "the Xcode command line tools (xcode-select --install)"}
			if arch == hostArch || arch == "amd64" {
				// Apple silicon runs amd64 binaries through Rosetta 2.
				t.runner = []string{}
			}
			return t
		}
		return []target{mac("amd64", "x86_64"), mac("arm64", "arm64")}
	}
	return nil
}

// defaultTargets are the targets built when -targets is not given.
func defaultTargets(hostOS string) string {
	if hostOS == "darwin" {
		return "darwin/amd64,darwin/arm64"
	}
	return "linux/amd64,linux/arm64,windows/amd64"
}

// options are the command line.
type options struct {
	version string
	out     string
	targets []target
	// verify runs each binary's version command after the build.
	verify bool
}

func main() {
	if err := run(context.Background(), os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "release:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, args []string, stdout io.Writer) error {
	opts, err := parseFlags(args)
	if err != nil {
		return err
	}
	modTime, err := sourceDate(ctx)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(opts.out, 0o755); err != nil {
		return fmt.Errorf("create %s: %w", opts.out, err)
	}
	work, err := os.MkdirTemp("", "openhuman-release")
	if err != nil {
		return fmt.Errorf("create a build directory: %w", err)
	}
	defer os.RemoveAll(work)
	var archives []string
	for _, t := range opts.targets {
		bin := filepath.Join(work, t.String(), t.exe())
		fmt.Fprintf(stdout, "build %s\n", t)
		if err := build(ctx, t, opts.version, bin); err != nil {
			return err
		}
		if opts.verify {
			if err := verify(ctx, t, bin, opts.version, stdout); err != nil {
				return err
			}
		}
		name, err := archive(t, opts.version, bin, opts.out, modTime)
		if err != nil {
			return err
		}
		fmt.Fprintf(stdout, "wrote %s\n", filepath.Join(opts.out, name))
		archives = append(archives, name)
	}
	sums, err := writeChecksums(opts.out, archives)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "wrote %s\n", sums)
	return nil
}

func parseFlags(args []string) (options, error) {
	fs := flag.NewFlagSet("release", flag.ContinueOnError)
	var o options
	var targets string
	fs.StringVar(&o.version, "version", "", "release version stamped into the binaries and the archive names (required), such as v0.3.0")
	fs.StringVar(&o.out, "out", "dist", "directory the archives and SHA256SUMS are written to")
	fs.StringVar(&targets, "targets", defaultTargets(runtime.GOOS), "comma-separated GOOS/GOARCH pairs to build")
	fs.BoolVar(&o.verify, "verify", true, "run each binary's version command (natively, under qemu or wine) and check it")
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	if fs.NArg() > 0 {
		return o, fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	if o.version == "" || strings.ContainsAny(o.version, "/\\ \t\n") {
		return o, fmt.Errorf("-version %q: give a version such as v0.3.0, without slashes or spaces", o.version)
	}
	known := knownTargets(runtime.GOOS, runtime.GOARCH)
	for _, name := range strings.Split(targets, ",") {
		i := slices.IndexFunc(known, func(t target) bool { return t.String() == strings.TrimSpace(name) })
		if i < 0 {
			var names []string
			for _, t := range known {
				names = append(names, t.String())
			}
			return o, fmt.Errorf("-targets: %s cannot be built on %s/%s; choose from %s", name, runtime.GOOS, runtime.GOARCH, strings.Join(names, ", "))
		}
		o.targets = append(o.targets, known[i])
	}
	return o, nil
}

// sourceDate is the time archive entries carry: SOURCE_DATE_EPOCH, else
// the time of the checked-out commit, else now.
func sourceDate(ctx context.Context) (time.Time, error) {
	if v := os.Getenv("SOURCE_DATE_EPOCH"); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return time.Time{}, fmt.Errorf("SOURCE_DATE_EPOCH=%q is not a Unix time in seconds", v)
		}
		return time.Unix(n, 0).UTC(), nil
	}
	out, err := exec.CommandContext(ctx, "git", "log", "-1", "--format=%ct").Output()
	if n, perr := strconv.ParseInt(strings.TrimSpace(string(out)), 10, 64); err == nil && perr == nil {
		return time.Unix(n, 0).UTC(), nil
	}
	return time.Now().UTC().Truncate(time.Second), nil
}

// build compiles the host for t with the version stamped in.
func build(ctx context.Context, t target, version, out string) error {
	if _, err := exec.LookPath(t.cc[0]); err != nil {
		return fmt.Errorf("%s needs the C compiler %s (SQLite is C): install %s, or leave %s out of -targets", t, t.cc[0], t.pkg, t)
	}
	cmd := exec.CommandContext(ctx, "go", "build", "-trimpath", "-tags", "sqlite_fts5",
		"-ldflags", "-s -w -X main.version="+version, "-o", out, "./cmd/openhuman-host")
	cmd.Env = append(os.Environ(), "GOOS="+t.goos, "GOARCH="+t.goarch, "CGO_ENABLED=1", "CC="+strings.Join(t.cc, " "),
		// No C debug information: it is half of SQLite's compile time.
		"CGO_CFLAGS=-O2")
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("build %s: %w", t, err)
	}
	return nil
}

// verify runs `bin version` and checks that it prints version.
func verify(ctx context.Context, t target, bin, version string, stdout io.Writer) error {
	if t.runner == nil || (len(t.runner) > 0 && !onPath(t.runner[0])) {
		how := "this host cannot run it"
		if t.runner != nil {
			how = t.runner[0] + " is not installed"
		}
		fmt.Fprintf(stdout, "not run: %s binary (%s)\n", t, how)
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	argv := append(slices.Clone(t.runner), bin, "version")
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	if t.goos == "windows" {
		// A throwaway prefix, with what Go needs to start under Wine 8.
		dir, err := os.MkdirTemp("", "openhuman-release-wine")
		if err != nil {
			return fmt.Errorf("create a Wine prefix: %w", err)
		}
		defer os.RemoveAll(dir)
		launcher, _ := exec.LookPath(t.runner[0])
		prefix, err := wineprefix.New(ctx, launcher, t.cc[0], dir)
		// The prefix's wineserver runs even when New failed half-way.
		defer func() { _ = prefix.Close() }()
		if err != nil {
			return fmt.Errorf("check the %s binary: %w", t, err)
		}
		cmd = prefix.Command(ctx, bin, "version")
	}
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("run %s version: %w\n%s", t, err, errOut.String())
	}
	want := "openhuman-host " + version + " "
	if !strings.HasPrefix(out.String(), want) {
		return fmt.Errorf("%s binary prints %q, want it to start with %q", t, out.String(), want)
	}
	fmt.Fprintf(stdout, "checked: %s", out.String())
	return nil
}

func onPath(name string) bool {
	_, err := exec.LookPath(name)
	return err == nil
}

// archiveFile is one file an archive holds.
type archiveFile struct {
	name string // path inside the archive's top directory
	src  string
	mode int64
}

// archive writes t's archive (tar.gz, or zip for Windows) into dir and
// returns its file name. It holds one top directory named like the
// archive, with the binary, the README and the licence notices.
func archive(t target, version, bin, dir string, modTime time.Time) (string, error) {
	base := fmt.Sprintf("openhuman-host_%s_%s_%s", strings.TrimPrefix(version, "v"), t.goos, t.goarch)
	files := []archiveFile{{name: t.exe(), src: bin, mode: 0o755}, {name: "README.md", src: "README.md", mode: 0o644}}
	for _, extra := range []string{"LICENSE", "NOTICE"} {
		if _, err := os.Stat(extra); err == nil {
			files = append(files, archiveFile{name: extra, src: extra, mode: 0o644})
		}
	}
	name := base + ".tar.gz"
	write := writeTarGz
	if t.goos == "windows" {
		name, write = base+".zip", writeZip
	}
	path := filepath.Join(dir, name)
	f, err := os.Create(path)
	if err != nil {
		return "", fmt.Errorf("create %s: %w", path, err)
	}
	if err := write(f, base, files, modTime); err != nil {
		f.Close()
		return "", fmt.Errorf("write %s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		return "", fmt.Errorf("write %s: %w", path, err)
	}
	return name, nil
}

func writeTarGz(w io.Writer, top string, files []archiveFile, modTime time.Time) error {
	gz, err := gzip.NewWriterLevel(w, gzip.BestCompression)
	if err != nil {
		return err
	}
	tw := tar.NewWriter(gz)
	if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: top + "/", Mode: 0o755, ModTime: modTime, Format: tar.FormatPAX}); err != nil {
		return err
	}
	for _, f := range files {
		data, err := os.ReadFile(f.src)
		if err != nil {
			return err
		}
		hdr := &tar.Header{Typeflag: tar.TypeReg, Name: top + "/" + f.name, Mode: f.mode, Size: int64(len(data)), ModTime: modTime, Format: tar.FormatPAX}
		if err := tw.WriteHeader(hdr); err != nil {
			return err
		}
		if _, err := tw.Write(data); err != nil {
			return err
		}
	}
	return errors.Join(tw.Close(), gz.Close())
}

func writeZip(w io.Writer, top string, files []archiveFile, modTime time.Time) error {
	zw := zip.NewWriter(w)
	for _, f := range files {
		data, err := os.ReadFile(f.src)
		if err != nil {
			return err
		}
		hdr := &zip.FileHeader{Name: top + "/" + f.name, Method: zip.Deflate, Modified: modTime}
		hdr.SetMode(os.FileMode(f.mode))
		fw, err := zw.CreateHeader(hdr)
		if err != nil {
			return err
		}
		if _, err := fw.Write(data); err != nil {
			return err
		}
	}
	return zw.Close()
}

// writeChecksums writes dir/SHA256SUMS in the format sha256sum -c reads:
// the hex digest, two spaces and the file name, one archive a line,
// sorted by name.
func writeChecksums(dir string, archives []string) (string, error) {
	slices.Sort(archives)
	var b strings.Builder
	for _, name := range archives {
		f, err := os.Open(filepath.Join(dir, name))
		if err != nil {
			return "", err
		}
		h := sha256.New()
		_, err = io.Copy(h, f)
		f.Close()
		if err != nil {
			return "", fmt.Errorf("hash %s: %w", name, err)
		}
		fmt.Fprintf(&b, "%s  %s\n", hex.EncodeToString(h.Sum(nil)), name)
	}
	path := filepath.Join(dir, "SHA256SUMS")
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		return "", fmt.Errorf("write %s: %w", path, err)
	}
	return path, nil
}
