package prereq_test

import (
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/openhuman/openhuman-host/test/internal/prereq"
)

// recorder is a testing.TB that records how Missing ended it; like
// testing.T, Fatal and Skip end the goroutine that calls them.
type recorder struct {
	testing.TB
	failed, skipped string
}

func (r *recorder) Helper() {}

func (r *recorder) Fatal(args ...any) {
	r.failed = args[0].(string)
	runtime.Goexit()
}

func (r *recorder) Skip(args ...any) {
	r.skipped = args[0].(string)
	runtime.Goexit()
}

func TestMissing(t *testing.T) {
	const a, b = "PREREQ_TEST_REQUIRE_A", "PREREQ_TEST_REQUIRE_B"
	for _, tc := range []struct {
		name            string
		env             map[string]string
		failed, skipped string
	}{
		{name: "none set skips", env: map[string]string{a: "", b: ""}, skipped: "no tool; install it"},
		{name: "second set fails", env: map[string]string{a: "", b: "1"},
			failed: "no tool; install it (PREREQ_TEST_REQUIRE_B is set, so this is a failure)"},
		{name: "first set is named", env: map[string]string{a: "1", b: "1"},
			failed: "no tool; install it (PREREQ_TEST_REQUIRE_A is set, so this is a failure)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for k, v := range tc.env {
				t.Setenv(k, v)
			}
			r := &recorder{TB: t}
			done := make(chan struct{})
			go func() {
				defer close(done)
				prereq.Missing(r, "no tool; install it", a, b)
			}()
			<-done
			if r.failed != tc.failed || r.skipped != tc.skipped {
				t.Errorf("failed %q, skipped %q; want failed %q, skipped %q", r.failed, r.skipped, tc.failed, tc.skipped)
			}
		})
	}
}

func TestExecutable(t *testing.T) {
	const env = "PREREQ_TEST_BIN"
	dir := t.TempDir()
	exe, plain := filepath.Join(dir, "tool"), filepath.Join(dir, "notes.txt")
	if err := os.WriteFile(exe, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(plain, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		value, want, err string
	}{
		{value: exe, want: exe},
		{value: "", err: "PREREQ_TEST_BIN (path of a tool) is not set"},
		{value: plain, err: "PREREQ_TEST_BIN=" + plain + " is not an executable file"},
		{value: dir, err: "PREREQ_TEST_BIN=" + dir + " is not an executable file"},
		{value: filepath.Join(dir, "gone"), err: "PREREQ_TEST_BIN=" + filepath.Join(dir, "gone") + ": stat "},
	} {
		if tc.value == plain && runtime.GOOS == "windows" {
			continue // no execute bits to check
		}
		t.Setenv(env, tc.value)
		got, err := prereq.Executable(env, "path of a tool")
		switch {
		case tc.err == "" && (err != nil || got != tc.want):
			t.Errorf("%s=%q: %q, %v; want %q", env, tc.value, got, err, tc.want)
		case tc.err != "" && (err == nil || !strings.HasPrefix(err.Error(), tc.err) || got != ""):
			t.Errorf("%s=%q: %q, %v; want an error starting %q", env, tc.value, got, err, tc.err)
		}
	}
}
