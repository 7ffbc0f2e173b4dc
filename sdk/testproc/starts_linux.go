package testproc

import (
	"bytes"
	"fmt"
	"os"
	"slices"
	"strconv"
	"testing"
)

// RecordedPIDs returns the process IDs a test server recorded in dir, one
// empty file named by its process ID per start, sorted. A file of another
// name fails the test.
func RecordedPIDs(t testing.TB, dir string) []int {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			t.Fatalf("%s: a file not named by a process ID: %s", dir, e.Name())
		}
		out = append(out, pid)
	}
	slices.Sort(out)
	return out
}

// RunningPIDs returns those of the process IDs recorded in dir (see
// RecordedPIDs) whose processes still run: /proc shows them and they are
// not zombies. Sorted.
func RunningPIDs(t testing.TB, dir string) []int {
	t.Helper()
	var out []int
	for _, pid := range RecordedPIDs(t, dir) {
		stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil {
			continue
		}
		// pid (comm) state ...: the state follows the last ')'.
		if i := bytes.LastIndexByte(stat, ')'); i > 0 && i+2 < len(stat) && (stat[i+2] == 'Z' || stat[i+2] == 'X') {
			continue
		}
		out = append(out, pid)
	}
	return out
}
