package main

import (
	"archive/tar"
	"archive/zip"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// entry is one file of an archive as the tests compare it.
type entry struct {
	Name    string
	Mode    os.FileMode
	ModTime time.Time
	Body    string
}

func readTarGz(t *testing.T, path string) []entry {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	gz, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	tr := tar.NewReader(gz)
	var out []entry
	for {
		hdr, err := tr.Next()
		if err == io.EOF {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		body, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, entry{hdr.Name, hdr.FileInfo().Mode(), hdr.ModTime.UTC(), string(body)})
	}
}

func readZip(t *testing.T, path string) []entry {
	t.Helper()
	zr, err := zip.OpenReader(path)
	if err != nil {
		t.Fatal(err)
	}
	defer zr.Close()
	var out []entry
	for _, f := range zr.File {
		rc, err := f.Open()
		if err != nil {
			t.Fatal(err)
		}
		body, err := io.ReadAll(rc)
		rc.Close()
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, entry{f.Name, f.Mode(), f.Modified.UTC(), string(body)})
	}
	return out
}

// TestArchivesAndChecksums builds the archives of a Linux and a Windows
// target from stand-in files and checks their layout, modes, times and
// the SHA256SUMS lines.
func TestArchivesAndChecksums(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	if err := os.WriteFile("README.md", []byte("# readme\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "bin")
	if err := os.WriteFile(bin, []byte("binary"), 0o755); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "dist")
	if err := os.Mkdir(out, 0o755); err != nil {
		t.Fatal(err)
	}
	when := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)

	linux, err := archive(target{goos: "linux", goarch: "arm64"}, "v1.2.3", bin, out, when)
	if err != nil {
		t.Fatal(err)
	}
	win, err := archive(target{goos: "windows", goarch: "amd64"}, "v1.2.3", bin, out, when)
	if err != nil {
		t.Fatal(err)
	}
	if linux != "openhuman-host_1.2.3_linux_arm64.tar.gz" || win != "openhuman-host_1.2.3_windows_amd64.zip" {
		t.Fatalf("archive names %q, %q", linux, win)
	}
	top := "openhuman-host_1.2.3_linux_arm64/"
	want := []entry{
		{top, os.ModeDir | 0o755, when, ""},
		{top + "openhuman-host", 0o755, when, "binary"},
		{top + "README.md", 0o644, when, "# readme\n"},
	}
	if diff := cmp.Diff(want, readTarGz(t, filepath.Join(out, linux))); diff != "" {
		t.Errorf("tar.gz entries (-want +got):\n%s", diff)
	}
	top = "openhuman-host_1.2.3_windows_amd64/"
	want = []entry{
		{top + "openhuman-host.exe", 0o755, when, "binary"},
		{top + "README.md", 0o644, when, "# readme\n"},
	}
	if diff := cmp.Diff(want, readZip(t, filepath.Join(out, win))); diff != "" {
		t.Errorf("zip entries (-want +got):\n%s", diff)
	}

	// The same inputs give the same bytes.
	first, err := os.ReadFile(filepath.Join(out, linux))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := archive(target{goos: "linux", goarch: "arm64"}, "v1.2.3", bin, out, when); err != nil {
		t.Fatal(err)
	}
	if again, _ := os.ReadFile(filepath.Join(out, linux)); string(again) != string(first) {
		t.Error("building the same archive twice gave different bytes")
	}

	sums, err := writeChecksums(out, []string{win, linux})
	if err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(sums)
	if err != nil {
		t.Fatal(err)
	}
	var wantSums strings.Builder
	for _, name := range []string{linux, win} {
		data, err := os.ReadFile(filepath.Join(out, name))
		if err != nil {
			t.Fatal(err)
		}
		sum := sha256.Sum256(data)
		fmt.Fprintf(&wantSums, "%s  %s\n", hex.EncodeToString(sum[:]), name)
	}
	if diff := cmp.Diff(wantSums.String(), string(got)); diff != "" {
		t.Errorf("SHA256SUMS (-want +got):\n%s", diff)
	}
}

func TestParseFlags(t *testing.T) {
	tests := map[string]struct {
		args    []string
		wantErr string
	}{
		"no version":       {args: nil, wantErr: `-version "": give a version such as v0.3.0`},
		"slash in version": {args: []string{"-version", "a/b"}, wantErr: `-version "a/b"`},
		"unknown target":   {args: []string{"-version", "v1", "-targets", "plan9/386"}, wantErr: "-targets: plan9/386 cannot be built on"},
		"extra argument":   {args: []string{"-version", "v1", "now"}, wantErr: `unexpected arguments ["now"]`},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			_, err := parseFlags(tc.args)
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("parseFlags(%q) = %v, want an error containing %q", tc.args, err, tc.wantErr)
			}
		})
	}
	o, err := parseFlags([]string{"-version", "v1.0.0"})
	if err != nil {
		t.Fatal(err)
	}
	if len(o.targets) == 0 || o.out != "dist" || !o.verify {
		t.Errorf("defaults: %+v", o)
	}
}
