package testproc

import (
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
)

// TestBuild: the binary built works, parallel builds of one package share
// one binary, and a package that is not a main package fails to build.
func TestBuild(t *testing.T) {
	const pkg = "github.com/openhuman/openhuman-host/sdk/testproc/testdata/hello"
	bins := make([]string, 4)
	var wg sync.WaitGroup
	for i := range bins {
		wg.Go(func() {
			bin, err := buildCached(pkg)
			if err != nil {
				t.Errorf("build %d: %v", i, err)
			}
			bins[i] = bin
		})
	}
	wg.Wait()
	for _, bin := range bins[1:] {
		if bin != bins[0] {
			t.Fatalf("parallel builds gave %q", bins)
		}
	}
	out, err := exec.Command(Build(t, pkg)).Output()
	if err != nil || string(out) != "hello\n" {
		t.Errorf("the built binary printed %q, %v; want hello", out, err)
	}
	if again := Build(t, "./testdata/hello"); again != bins[0] {
		t.Errorf("built by directory at %s, by import path at %s", again, bins[0])
	}
	if _, err := os.Stat(bins[0]); err != nil {
		t.Error(err)
	}
	if _, err := BuildBinary("github.com/openhuman/openhuman-host/sdk/testproc"); err == nil || !strings.Contains(err.Error(), "not a main package") {
		t.Errorf("BuildBinary of a library: %v", err)
	}
}
